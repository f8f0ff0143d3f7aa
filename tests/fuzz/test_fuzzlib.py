"""The harness itself: each invariant is detected (a fake CLI misbehaves on purpose), parsers agree on real
output, the mutators and the reducer do what they say."""
import os
import random

import pytest

from fuzzlib import gen, mutate
from fuzzlib.campaign import make_input, seed_files
from fuzzlib.check import (PARSERS, Runner, check_input, findings_concise, findings_full, findings_github,
                           findings_json)
from fuzzlib.reduce import minimize

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake")


def fake_check(src: bytes, groups, timeout=20.0, opts=None):
    return check_input(Runner(timeout=timeout, tree=FAKE), src, opts or {}, groups=groups)


@pytest.mark.parametrize("src, group, kind, step", [
    (b"segv", "report", "signal", "report"),
    (b"hang", "report", "hang", "report"),
    (b"trace", "hip", "internal error", "translate --to hip"),
    (b"internal", "glsl", "internal error", "translate --to glsl"),
    (b"nohip", "hip", "bad exit", "translate --to hip"),
    (b"exit3", "opencl", "bad exit", "translate --to opencl"),
    (b"silent2", "report", "bad exit", "report"),
    (b"zero", "lint", "bad exit", "lint json (cold cache)"),
    (b"cache", "lint", "cache mismatch", "lint json (warm cache)"),
    (b"mismatch", "lint", "format mismatch", "lint concise"),
    (b"growfix", "fix", "fix not idempotent", "lint --fix (second)"),
    (b"breakfix", "fix", "fix breaks parse", "lint --fix"),
])
def test_checker_reports_each_kind_of_failure(src, group, kind, step):
    fails = fake_check(src, [group], timeout=3.0 if src == b"hang" else 20.0)
    assert [(f.kind, f.step) for f in fails if f.kind == kind] == [(kind, step)]


def test_checker_passes_a_well_behaved_cli():
    # the fake reports CP102 at 1:5 in every format, exit 1, and its --fix changes nothing
    assert fake_check(b"fine", ["lint", "fix", "hip", "glsl", "opencl", "report"]) == []


def test_format_parsers_agree_on_real_output(tmp_path):
    """The real CLI on a real example: every format's parser finds the same (code, row, col) multiset."""
    src = os.path.join(os.path.dirname(FAKE), "..", "..", "examples", "warp_reduce", "warp_reduce.cu")
    (tmp_path / "k.cu").write_bytes(open(src, "rb").read())
    runner = Runner(timeout=120)
    got = {fmt: PARSERS[fmt](runner.run(["lint", "--isolated", "--no-cache", "--output-format", fmt, "k.cu"],
                                        str(tmp_path)).out) for fmt in PARSERS}
    assert ("CP102", 11, 16) in got["json"] and sum(got["json"].values()) >= 5
    for fmt, found in got.items():
        assert found == got["json"], fmt


def test_parsers_ignore_other_files_and_prose():
    assert findings_concise("x.cu:1:1: CP102 m\nk.cu:2:3: CP202 [*] m\nFound 2 errors.\n") == {("CP202", 2, 3): 1}
    assert findings_full("CP101 m\n --> other.cu:1:1\nCP000 bad\n  --> k.cu:4:1\n") == {("CP000", 4, 1): 1}
    assert findings_github("::warning title=cuport (CP801),file=k.cu,line=9,col=2,endLine=9::m") == \
        {("CP801", 9, 2): 1}
    assert findings_json("[]") == {}


def test_inputs_are_reproducible_from_seed_and_index():
    seeds = seed_files()
    assert any(s.endswith("examples/warp_reduce/warp_reduce.cu") for s in seeds)
    assert any("/tests/fixtures/rules/CP102.cu" in s for s in seeds)
    a, b, c = make_input(5, 17, seeds), make_input(5, 17, seeds), make_input(5, 18, seeds)
    assert a == b and a["data"] != c["data"]


def test_mutators_produce_what_they_name():
    r = random.Random(1)
    data = b"__global__ void k(int* o) {\n    o[threadIdx.x & 31] = 1;\n}\n"
    assert mutate.encoding(random.Random(3), data) != data
    crlf = data.replace(b"\n", b"\r\n")
    assert any(mutate.encoding(random.Random(s), data) == crlf for s in range(60))
    assert any(mutate.encoding(random.Random(s), data).startswith(b"\xef\xbb\xbf") for s in range(60))
    assert any(mutate.encoding(random.Random(s), data)[:2] in (b"\xff\xfe", b"\xfe\xff") for s in range(60))
    assert data.startswith(mutate.truncate(r, data))
    assert len(mutate.huge(r, data)) >= mutate.MAX_HUGE // 4 - len(data)
    assert gen.macro_bomb(3).count("#define") == 4 and "M3" in gen.macro_bomb(3)
    assert gen.nested_ifs(5).count("if (") == 5
    assert gen.nested_ternary(4).count("?") == 4


def test_generated_kernels_are_mostly_valid_cuda_shapes():
    r = random.Random(7)
    progs = [gen.program(r) for _ in range(20)]
    assert all("__global__ void k0(" in p and "<<<" in p for p in progs)
    assert len(set(progs)) == 20


def test_reducer_keeps_the_failure_and_drops_the_rest():
    data = b"".join(b"line %d\n" % j for j in range(200)).replace(b"line 137\n", b"line BAD 137\n")
    small, tests = minimize(data, lambda d: b"BAD" in d, max_tests=2000)
    assert small == b"BAD"
    assert tests < 2000
    # one long line is cut by words
    line = b"x = " + b" + ".join([b"a"] * 3000) + b" + BAD + a;\n"
    small, _ = minimize(line, lambda d: b"BAD" in d and d.count(b"a") >= 10, max_tests=2000)
    assert b"BAD" in small and small.count(b"a") == 10 and len(small) < 100
    # a predicate that never holds leaves the input as it is
    assert minimize(b"a\nb\n", lambda d: False)[0] == b"a\nb\n"


def test_damaged_cache_entries_are_checked_against_the_cold_run():
    src = os.path.join(os.path.dirname(FAKE), "..", "..", "examples", "warp_reduce", "warp_sum.cu")
    data = open(src, "rb").read()
    runner = Runner(timeout=120)
    assert check_input(runner, data, {"corrupt_cache": "foreign"}, groups=["lint"]) == []
    assert runner.invocations == 8          # cold, warm, five formats, then the run over the damaged entry
    runner = Runner(timeout=120)
    assert check_input(runner, data, {}, groups=["lint"]) == [] and runner.invocations == 7
