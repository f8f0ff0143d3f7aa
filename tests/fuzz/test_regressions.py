"""Every minimized fuzz failure, kept: tests/fuzz/regressions/NAME.cu with NAME.json saying which subcommands
(groups) and options found it. Each must now keep every invariant; `xfail` names a fix another change owns."""
import glob
import json
import os

import pytest

from fuzzlib.check import GROUPS, Runner, check_input

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions")
CASES = sorted(glob.glob(os.path.join(HERE, "*.cu")))


def _params():
    for path in CASES:
        with open(path[:-3] + ".json") as fh:
            meta = json.load(fh)
        marks = [pytest.mark.xfail(strict=False, reason=meta["xfail"])] if meta.get("xfail") else []
        yield pytest.param(path, meta, marks=marks, id=os.path.basename(path)[:-3])


@pytest.mark.parametrize("path, meta", list(_params()))
def test_fuzz_regression(path, meta):
    with open(path, "rb") as fh:
        data = fh.read()
    assert meta["group"] in GROUPS and meta["kind"]
    fails = check_input(Runner(timeout=120), data, meta.get("opts", {}), groups=[meta["group"]])
    assert fails == [], f"{meta['kind']} ({meta.get('found', '')}): " + "; ".join(
        f"[{f.kind}] {f.step}: {f.detail[:300]}" for f in fails)


def test_every_fixture_has_its_metadata():
    assert CASES, "no regression fixtures"
    for path in CASES:
        meta = json.load(open(path[:-3] + ".json"))
        assert {"kind", "group", "found"} <= set(meta), path


SHIFT = """__global__ void k(float* out) {{
    __shared__ float s[32];
    s[{index}] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[0];
}}
void launch(float* out) {{ k<<<1, 32>>>(out); }}
"""


@pytest.mark.parametrize("index, expect", [
    ("(threadIdx.x << 1)", {("CP703", 3)}),             # folded: lanes 16..31 write past s[31]
    ("(threadIdx.x << 0xffffffff) & 31", set()),       # undefined shift: opaque, no finding and no crash
    ("(threadIdx.x << 70) & 31", set()),
    ("(1 << 62) & 31", set()),                          # a real 64-bit constant still folds (to 0)
])
def test_shift_amounts_past_64_bits_are_opaque(index, expect):
    from porter.lint.checker import lint_source
    from porter.source import SourceFile
    res = lint_source(SourceFile("k.cu", SHIFT.format(index=index)))   # conftest: a rule error raises
    assert {(d.code, d.row) for d in res.diagnostics if d.code in ("CP702", "CP703")} == expect
