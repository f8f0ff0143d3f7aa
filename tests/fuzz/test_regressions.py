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
