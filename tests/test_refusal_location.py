"""A refusal raised where the emitter has no node at hand (a conversion, a type) points at the statement being
translated, not at the start of the file (rsmt-cuda's ballot stored in an `int`)."""
from kernel_helpers import refusal, translate_text

BALLOT = """\
__global__ void k(int *out) {
    int lane = threadIdx.x % 32;
    int b = __ballot_sync(0xffffffff, lane & 1);
    out[threadIdx.x] = lane;
    out[threadIdx.x] += b & 3;
}
"""


def test_ballot_as_integer_is_refused_at_its_statement(tmp_path):
    d = refusal(translate_text(tmp_path, "glsl", BALLOT))
    assert (d.row, d.column) == (5, 5)
    assert "a subgroup ballot used as a 32-bit integer" in d.message


def test_ballot_tested_as_a_bool_is_translated(tmp_path):
    res = translate_text(tmp_path, "glsl", BALLOT.replace("b & 3", "(b ? 1 : 0)"))
    assert not [d for d in res.diagnostics if d.severity == "error"], [d.message for d in res.diagnostics]
    assert "subgroupBallotBitCount(" in res.shaders["k"]
