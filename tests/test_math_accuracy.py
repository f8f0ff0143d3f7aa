"""bench/math_accuracy.py: its ulp measure (CUDA's: the distance to the correctly rounded result) on known values,
and the precision notes of rules/kernel/intrinsics.csv that it writes from bench/results/math_accuracy.json."""
import csv
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import math_accuracy as ma  # noqa: E402

RESULTS = os.path.join(ROOT, "bench", "results", "math_accuracy.json")
f32, f64, LD = np.float32, np.float64, np.longdouble


def d32(got, exact):
    return ma.ulp_distance(np.array(got, f32), np.array(exact, LD)).tolist()


def test_ulp_distance_counts_floats_between_the_result_and_the_rounded_exact_value():
    one_up = np.nextafter(f32(1), f32(2))
    assert d32([1.0, one_up, 1.0, 2.0], [1.0, 1.0, 1.5, 1.0]) == [0, 1, 2 ** 22, 2 ** 23]
    # across a binade: the float below 1 is 1 ulp from 1 (its ulp is half of 1's)
    assert d32([np.nextafter(f32(1), f32(0))], [1.0]) == [1]
    # exact value rounded first: 1 + 0.4 ulp rounds to 1, so 1 is 0 ulps off and the next float 1
    assert d32([1.0, one_up], [1 + 0.4 * 2 ** -23] * 2) == [0, 1]
    # across zero and the subnormals: -min_subnormal .. +min_subnormal is 2; +0 and -0 are equal
    tiny = np.float32(1e-45)
    assert d32([-tiny, -0.0, 0.0], [tiny, 0.0, -0.0]) == [2, 0, 0]
    # overflow: an exact value beyond the largest float rounds to infinity, the largest float is 1 ulp from it
    assert d32([np.inf, 3.4028235e38, np.inf], [1e39, 1e39, -1e39]) == [0, 1, pytest.approx(2 ** 32 - 2 ** 24, rel=1e-6)]
    # NaN: both NaN is right, one of them NaN is infinitely wrong
    assert d32([np.nan, np.nan, 1.0], [np.nan, 1.0, np.nan]) == [0, np.inf, np.inf]


def test_ulp_distance_accepts_either_neighbour_of_an_exact_halfway_value():
    # 1 + 2^-24 is halfway between 1 and the next float: a reference rounded to its own precision can land there
    assert d32([1.0, np.nextafter(f32(1), f32(2)), np.nextafter(f32(1), f32(0))], [1 + 2 ** -24] * 3) == [0, 0, 1]
    # double results against long double references
    x = np.array([1.0, np.nextafter(1.0, 2.0), 1.0], f64)
    exact = np.array([1, 1, 1], LD) + np.array([0, 0, 2 ** -53], LD)
    assert ma.ulp_distance(x, exact).tolist() == [0, 1, 0]
    assert ma.ulp_distance(np.array([3.0], f64), np.array([1.0], f64)).tolist() == [2 ** 52 + 2 ** 51]


def test_references_are_exact_where_the_function_is():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997], f32)
    assert ma._round_away(x).astype(f32).tolist() == [1, 2, 3, -1, -3, 0]
    assert ma._sinpi(np.array([1.0, -2.0, 0.5], f32)).astype(f32).tolist() == [0, 0, 1]
    assert ma._cospi(np.array([0.5, 1.5, 1.0], f32)).astype(f32).tolist() == [0, 0, -1]
    assert ma._logb(np.array([1.0, 0.75, 1e-45, 8.0], f32)).tolist() == [0, -1, -149, 3]
    a, b, c = (np.array([v], f64) for v in (1 + 2 ** -30, 1 - 2 ** -30, -1.0))
    assert ma._fma(a, b, c).tolist() == [-2.0 ** -60]            # a * b + c in one rounding: not 0


def _rows():
    with open(ma.CSV, newline="", encoding="utf-8") as fh:
        return {r["cuda"]: r for r in csv.DictReader(fh) if r["kind"] == "math"}


@pytest.mark.skipif(not os.path.exists(RESULTS), reason="run bench/math_accuracy.py")
def test_every_measured_row_has_its_note_from_the_results():
    with open(RESULTS, encoding="utf-8") as fh:
        results = json.load(fh)
    rows = _rows()
    assert set(results["f32"]) <= set(rows)
    assert {"acos", "sin", "exp", "log", "pow", "fmod", "erf", "logb"} <= set(results["f32"])
    for name in results["f32"]:
        p = rows[name]["precision"]
        assert ma.MARK in p and p.endswith(ma.note(name, results)), name
        ok = [b for b in ("vulkan", "opencl") if "max_ulp" in results["f32"][name].get(b, {})]
        assert not ok or f"CUDA {results['f32'][name]['cuda']}" in p, name
    # a row the script did not measure keeps its note, without a measurement
    assert ma.MARK not in rows["erfinv"]["precision"] and rows["erfinv"]["precision"]
    # the note of a row with a note of its own keeps it in front
    assert rows["atan2"]["precision"].startswith("GLSL helper: that atan of min / max, placed by quadrant")
    assert "; measured: ulps float lavapipe " in rows["atan2"]["precision"]


def test_update_csv_changes_only_the_measured_part(tmp_path):
    path = tmp_path / "intrinsics.csv"
    path.write_text("cuda,kind,glsl,opencl,glsl_f64,extension,precision\n"
                    "acos,math,acos,acos,no,,\"old; measured: ulps float lavapipe 9\"\n"
                    "__hadd,int,x,hadd,,,\"exact: (x + y) >> 1 without overflow\"\n", encoding="utf-8")
    results = {"f32": {"acos": {"cuda": 2, "vulkan_bound": "4096 ulp", "vulkan": {
        "max_ulp": 7.0, "normal_max_ulp": 7.0, "regions": [{"region": "near 1", "max_ulp": 7.0}]},
        "opencl": {"refused": "CP907: no"}}}, "f64": {}}
    assert ma.update_csv(results, str(path)) == 1
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1] == ('acos,math,acos,acos,no,,"old; measured: ulps float lavapipe 7 (near 1), CUDA 2; '
                        'Vulkan requires 4096 ulp (docs/intrinsics.md)"')
    assert lines[2] == '__hadd,int,x,hadd,,,"exact: (x + y) >> 1 without overflow"'      # quoting kept
    assert ma.update_csv(results, str(path)) == 0
