"""`cuport verify --bench`: interleaving order, statistics, isolation of crashing cases (lavapipe / PoCL), reports."""
import argparse
import json
import os

import numpy as np
import pytest

from porter.verify import bench, cli, worker
from porter.verify.backends import Variant, cuda, opencl, vulkan
from porter.verify.runner import Runner
from verify_fixtures.helpers import LAVAPIPE_ICD, SPEC, by_key, cases

needs_vulkan = pytest.mark.skipif(not vulkan.available()[0] or not os.path.exists(LAVAPIPE_ICD),
                                  reason="needs Vulkan on lavapipe")
needs_opencl = pytest.mark.skipif(not opencl.available()[0], reason="needs an OpenCL platform (PoCL)")


@pytest.fixture(autouse=True)
def lavapipe(monkeypatch):
    if os.path.exists(LAVAPIPE_ICD):
        monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)


def _args(*argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


# -- order --------------------------------------------------------------------------------------

def test_rounds_interleave_targets_forward_reverse_and_alternating():
    assert "".join(bench.schedule(list("ABC"), 3, "forward")) == "ABCABCABC"
    assert "".join(bench.schedule(list("ABC"), 2, "reverse")) == "CBACBA"
    assert "".join(bench.schedule(list("ABC"), 3, "alternate")) == "ABCCBAABC"
    assert bench.schedule(list("ABC"), 0, "forward") == []
    with pytest.raises(ValueError, match="unknown bench order 'sideways'"):
        bench.round_order(list("ABC"), 0, "sideways")


class _FakeWorker:
    """Stands in for a worker process: answers set-up and launches, logging which lane launched when."""
    log: list = []

    def __init__(self, request, env, target):
        self.target, self.pending, self.proc = target, [{"status": "pass", "message": "ok", "device": "fake"}], None

    def send(self, obj):
        if "n" in obj:
            _FakeWorker.log.append(self.target)
            self.pending.append({"times": [{"a": 1.0, "b": 2.0, "c": 4.0}[self.target]] * obj["n"]})

    def get(self, timeout):
        return self.pending.pop(0)

    def stop(self):
        pass


@pytest.mark.parametrize("order, expected", [("forward", "abc"), ("reverse", "cba")])
def test_bench_case_launches_interleaved_after_warm_up(monkeypatch, order, expected):
    monkeypatch.setattr(bench, "_Worker", _FakeWorker)
    _FakeWorker.log = []
    (case,) = cases("saxpy")
    lanes = [bench.Lane(t, Variant()) for t in "abc"]
    opts = bench.Options(rounds=10, orders=(order,), warmup_min_s=0.0)
    (rec,) = bench.bench_case(case, {"n": 4096}, lanes, opts)
    # constant times settle after 2K warm-up rounds; then 10 timed rounds, each one launch per lane in order
    assert rec["warmup_rounds"] == 2 * bench.SETTLE_K and rec["warmup_settled"]
    assert "".join(_FakeWorker.log) == expected * (2 * bench.SETTLE_K + 10)
    by = {ln["target"]: ln for ln in rec["lanes"]}
    assert rec["baseline"] == "a" and "ratio" not in by["a"]            # no CUDA lane: the first target
    assert by["b"]["ratio"] == pytest.approx(0.5) and by["c"]["ratio"] == pytest.approx(0.25)
    assert by["c"]["n"] == 10 and by["c"]["iqr_ms"] == 0.0
    assert by["a"]["gbps"] == pytest.approx(12 * 4096 / 1e-3 / 1e9)


# -- statistics ---------------------------------------------------------------------------------

def test_settled_needs_two_windows_of_close_medians():
    assert not bench.settled([1.0] * 9)                        # fewer than 2K launches
    assert bench.settled([1.0] * 10)
    assert bench.settled([2.0] * 5 + [1.0] * 10)               # only the last two windows count
    assert not bench.settled([1.0] * 5 + [1.05] * 5)           # 5% apart: still ramping
    assert bench.settled([1.0] * 5 + [1.015] * 5)


def test_summary_and_ratio_with_bootstrap_interval():
    s = bench.summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (s["n"], s["median_ms"], s["q1_ms"], s["q3_ms"], s["iqr_ms"]) == (5, 3.0, 2.0, 4.0, 2.0)
    rng = np.random.default_rng(7)
    base = list(1.0 + 0.01 * rng.standard_normal(30))
    slow = list(1.25 + 0.01 * rng.standard_normal(30))
    ratio, lo, hi = bench.speed_ratio(base, slow)
    assert ratio == pytest.approx(0.8, abs=0.01) and lo < ratio < hi and hi - lo < 0.02
    assert bench.speed_ratio(base, slow) == (ratio, lo, hi)                   # fixed seed: reproducible
    same = bench.speed_ratio(base, base)
    assert same[0] == 1.0 and same[1] <= 1.0 <= same[2]
    assert bench.speed_ratio([2.0] * 10, [2.0] * 10) == (1.0, 1.0, 1.0)


# -- isolation on real backends -----------------------------------------------------------------

@needs_opencl
@needs_vulkan
def test_a_crashing_case_costs_only_its_own_lane(tmp_path):
    # saxpy_segv's OpenCL kernel kills PoCL; its Vulkan lane and the next case run in their own processes
    doc = bench.run([*cases("saxpy_segv"), *cases("saxpy")], ["opencl", "vulkan"], bench.Options(rounds=10),
                    subgroups=[8])
    lanes = {(rec["case"], ln["label"]): ln for rec in doc["cases"] for ln in rec["lanes"]}
    crashed = lanes[("saxpy_segv", "opencl")]
    assert crashed["status"] == "crash" and "SIGSEGV" in crashed["message"] and "times_ms" in crashed
    assert crashed["times_ms"] == []
    assert lanes[("saxpy_segv", "vulkan/sg8")]["status"] == "pass"
    for label in ("opencl", "vulkan/sg8"):
        ln = lanes[("saxpy", label)]
        assert ln["status"] == "pass" and ln["n"] == 10 and ln["median_ms"] > 0
    base = {rec["case"]: rec["baseline"] for rec in doc["cases"]}
    assert "ratio" in lanes[("saxpy", "vulkan/sg8")] and base == {"saxpy_segv": "vulkan/sg8", "saxpy": "opencl"}
    assert [rec["case"] for rec in doc["cases"]] == ["saxpy_segv", "saxpy"]
    assert doc["summary"] == {"crash": 1, "pass": 3} and bench.exit_code(doc) == 1


@needs_vulkan
def test_a_crash_during_timing_is_reported_and_the_next_case_runs(monkeypatch):
    monkeypatch.setenv(worker.CRASH_HOOK, "saxpy:launch:4")      # SIGSEGV at the 4th launch (warm-up)
    doc = bench.run(cases("saxpy", "reduce_subgroup_half"), ["vulkan"], bench.Options(rounds=10), subgroups=[8])
    first, second = (rec["lanes"][0] for rec in doc["cases"])
    assert first["status"] == "crash" and "SIGSEGV" in first["message"] and len(first["warmup_ms"]) == 3
    assert second["status"] == "pass" and second["n"] == 10


@needs_vulkan
def test_verify_runner_gives_a_crashed_case_its_own_process(monkeypatch):
    monkeypatch.setenv(worker.CRASH_HOOK, "saxpy:run")
    res = by_key(Runner(["vulkan"], subgroups=[8]).run(cases("saxpy", "reduce_subgroup_half")))
    assert res[("saxpy", "vulkan", "sg8", 1000)].status == "crash"
    assert "SIGSEGV" in res[("saxpy", "vulkan", "sg8", 1000)].message
    assert res[("reduce_subgroup_half", "vulkan", "sg8", 1000)].status == "pass"
    monkeypatch.delenv(worker.CRASH_HOOK)
    res = by_key(Runner(["vulkan"], subgroups=[8]).run(cases("saxpy")))
    assert res[("saxpy", "vulkan", "sg8", 1000)].status == "pass"


def test_gpu_backends_isolate_after_a_failure_lavapipe_does_not():
    assert worker.isolates(cuda, {}) and worker.isolates(vulkan, {"lavapipe": False})
    assert not worker.isolates(vulkan, {"lavapipe": True}) and not worker.isolates(opencl, {})


# -- command line and reports -------------------------------------------------------------------

@needs_vulkan
@needs_opencl
def test_cli_bench_reverse_order_writes_json_and_plot(tmp_path, capsys):
    js, svg = tmp_path / "b.json", tmp_path / "b.svg"
    rc = cli.main(_args(str(SPEC), "--targets", "opencl,vulkan", "--subgroup-sizes", "16", "--kernels", "saxpy",
                        "--bench", "--repeat", "12", "--bench-order", "forward,reverse", "--bench-json", str(js),
                        "--bench-plot", str(svg)))
    out, err = capsys.readouterr()
    assert rc == 0, out
    doc = json.loads(js.read_text())
    assert doc["bench"]["orders"] == ["forward", "reverse"] and doc["bench"]["rounds"] == 12
    assert [rec["order"] for rec in doc["cases"]] == ["forward", "reverse"]      # one set-up, timed both ways
    for rec in doc["cases"]:
        assert [ln["label"] for ln in rec["lanes"]] == ["opencl", "vulkan/sg16"]
        assert all(ln["n"] == 12 and len(ln["times_ms"]) == 12 for ln in rec["lanes"])
    assert "vs baseline [95%]" in out.splitlines()[0] and "vs opencl" in out
    assert "bench: saxpy [forward]: opencl " in err and "bench: saxpy [reverse]: opencl " in err
    plot = svg.read_text()
    assert plot.startswith("<svg") and ">saxpy</text>" in plot and ">reverse</text>" in plot
    assert [bench.by_order(doc)[i][0] for i in (0, 1)] == ["forward", "reverse"]


def test_big_outputs_are_checked_on_a_strided_sample(monkeypatch):
    (case,) = cases("saxpy")
    monkeypatch.setattr(worker, "CHECK_MAX", 1000)
    sizes = {"n": 4096}
    args = case.make_args(sizes)
    right = {"y": args["a"] * args["x"] + args["y"]}
    status, message = worker.verdict(case, args, sizes, right)
    assert status == "pass" and "every 5th element checked" in message
    wrong = {"y": right["y"].copy()}
    wrong["y"][5 * 17] += 1.0                                  # a sampled element
    status, message = worker.verdict(case, args, sizes, wrong)
    assert status == "FAIL" and "1 of 820 elements differ" in message and "[17]" in message
    wrong = {"y": right["y"].copy()}
    wrong["y"][5 * 17 + 1] += 1.0                              # between samples: not seen, as documented
    assert worker.verdict(case, args, sizes, wrong)[0] == "pass"


def test_cli_refuses_zero_rounds(capsys):
    with pytest.raises(SystemExit) as e:
        _args(str(SPEC), "--bench", "--repeat", "0")
    assert e.value.code == 2 and "expected a positive integer" in capsys.readouterr().err


def _doc(order, ratio):
    lane = {"target": "vulkan", "variant": "sg32", "label": "vulkan", "status": "pass", "median_ms": 2.0,
            "iqr_ms": 0.01, "n": 30, "gbps": 1500.0, "ratio": ratio, "ratio_lo": ratio - 0.01,
            "ratio_hi": ratio + 0.02}
    base = {"target": "cuda", "variant": "-", "label": "cuda", "status": "pass", "median_ms": 1.8,
            "iqr_ms": 0.01, "n": 30, "gflops": 33600.0}
    return {"bench": {"order": order}, "cases": [{"case": "k<1>", "spec": "s", "sizes": {"n": 4}, "baseline": "cuda",
                                                  "lanes": [base, lane]}]}


def test_markdown_table_and_svg_from_two_runs():
    docs = [("forward", _doc("forward", 0.9)), ("reverse", _doc("reverse", 0.8))]
    table = bench.markdown_table(docs).splitlines()
    assert table[0].startswith("| kernel (size) | target | forward: median ms (IQR)")
    assert table[2] == "| k<1> (n=4) | cuda | 1.8 (0.01), 33.6 TFLOP/s | (baseline) | 1.8 (0.01), 33.6 TFLOP/s " \
                       "| (baseline) |"
    assert "0.900 [0.890, 0.920]" in table[3] and "0.800 [0.790, 0.820]" in table[3]
    svg = bench.svg_plot(docs)
    assert svg.count("<circle") == 2 and svg.count("<rect") >= 2       # forward circles (+legend), reverse squares
    assert "k&lt;1&gt;" in svg and svg.count('stroke="#d62728"') == 2     # two error bars in Vulkan red


def test_plot_command_line(tmp_path, capsys):
    run = tmp_path / "r.json"
    run.write_text(json.dumps(_doc("forward", 0.97)))
    out = tmp_path / "p.svg"
    assert bench.main(["plot", str(out), f"forward={run}"]) == 0 and "<svg" in out.read_text()
    assert bench.main(["table", f"fwd={run}"]) == 0 and "| fwd: vs CUDA [95%] |" in capsys.readouterr().out
    assert bench.main(["plot", str(out), str(tmp_path / "missing.json")]) == 2
    assert "cuport: error:" in capsys.readouterr().err
    assert bench.main([]) == 2
