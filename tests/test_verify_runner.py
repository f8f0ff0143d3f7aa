"""Isolation, skips and the command line of `cuport verify`."""
import argparse
import json
import os

import pytest

from porter.verify import cli
from porter.verify.backends import cuda, opencl, vulkan
from porter.verify.runner import Runner, exit_code
from verify_fixtures.helpers import LAVAPIPE_ICD, SPEC, by_key, cases, run

needs_vulkan = pytest.mark.skipif(not vulkan.available()[0] or not os.path.exists(LAVAPIPE_ICD),
                                  reason="needs Vulkan on lavapipe")


@pytest.fixture(autouse=True)
def lavapipe(monkeypatch):
    if os.path.exists(LAVAPIPE_ICD):
        monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)


@needs_vulkan
def test_hang_times_out_and_the_run_goes_on_compile_error_fails_its_case():
    res = by_key(run(["saxpy_hang", "saxpy_broken"], ["vulkan"], subgroups=[8], timeout=4))
    hung = res[("saxpy_hang", "vulkan", "sg8", 1001)]
    assert hung.status == "timeout" and "worker killed" in hung.message
    assert res[("saxpy_hang", "vulkan", "sg8", 1000)].status == "pass"      # a fresh worker took over
    broken = res[("saxpy_broken", "vulkan", "sg8", 1000)]
    assert broken.status == "FAIL" and "compile error: glslangValidator" in broken.message
    assert "undefined_function" in broken.message


def test_unavailable_backends_are_skipped_with_their_reason(monkeypatch):
    monkeypatch.setattr(vulkan, "available", lambda: (False, "no Vulkan loader (test)"))
    monkeypatch.setattr(opencl, "available", lambda: (False, "pyopencl not installed (test)"))
    monkeypatch.setattr(cuda, "available", lambda: (False, "CuPy not installed (test)"))
    results = Runner(["vulkan", "opencl", "cuda"]).run(cases("saxpy"))
    assert [(r.target, r.status, r.message) for r in results] == [
        ("vulkan", "skipped", "no Vulkan loader (test)"),
        ("opencl", "skipped", "pyopencl not installed (test)"),
        ("cuda", "skipped", "CuPy not installed (test)"),
    ]
    assert exit_code(results) == 0


def test_an_unavailable_backend_is_skipped_where_cuport_translates_the_case(monkeypatch):
    # no hand-written .cl: the translator gives it, and the missing backend still skips it (was a crash:
    # `cuport verify` with the default targets on a machine without CuPy, "'NoneType' object is not iterable")
    monkeypatch.setattr(opencl, "available", lambda: (False, "pyopencl not installed (test)"))
    (r,) = Runner(["opencl"]).run(cases("reduce_subgroup_half"))
    assert (r.status, r.message) == ("skipped", "pyopencl not installed (test)")


def test_missing_translation_is_a_skip_not_a_failure(monkeypatch):
    from porter.translate import api
    monkeypatch.setattr(opencl, "available", lambda: (True, ""))
    # a translator target that is not installed: the case is skipped with the reason, not failed
    monkeypatch.setattr(api, "TARGETS", {k: v for k, v in api.TARGETS.items() if k != "opencl"})
    (r,) = Runner(["opencl"]).run(cases("reduce_subgroup_half"))      # no hand-written .cl for it
    assert r.status == "skipped" and "no opencl translation" in r.message


def test_unknown_target_is_refused():
    with pytest.raises(ValueError, match="unknown target"):
        Runner(["metal"])


def _args(*argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


@needs_vulkan
def test_cli_expected_failures_and_exit_codes(capsys):
    rc = cli.main(_args(str(SPEC), "--targets", "vulkan", "--subgroup-sizes", "8",
                        "--kernels", "reduce_offset16_xfail,reduce_subgroup_half"))
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "xfail" in out and "expected failure (FAIL)" in out and "1 pass, 1 xfail" in out
    rc = cli.main(_args(str(SPEC), "--targets", "vulkan", "--subgroup-sizes", "8", "--kernels", "saxpy_xpass",
                        "--sizes", "n=300", "--output-format", "json"))
    data = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert [(r["status"], r["sizes"]) for r in data["results"]] == [("XPASS", {"n": 300})]
    assert data["summary"] == {"XPASS": 1}


@needs_vulkan
def test_cli_bench_reports_bandwidth(capsys):
    rc = cli.main(_args(str(SPEC), "--targets", "vulkan", "--subgroup-sizes", "16", "--kernels", "saxpy",
                        "--bench", "--repeat", "3"))
    out = capsys.readouterr().out
    assert rc == 0, out
    header, _, row = out.splitlines()[:3]
    assert "GB/s" in header and "GFLOP/s" in header and "n=4096" in row and "pass" in row


def test_cli_reports_spec_errors(tmp_path, capsys):
    bad = tmp_path / "verify_spec.py"
    bad.write_text("from porter.verify.spec import Case\n"
                   "KERNELS = [Case(kernel='k', source='k.cu', signature='x: f32[n] in,,', grid='1', block='1',"
                   " reference=lambda x: x, sizes=[{'n': 1}])]\n")
    assert cli.main(_args(str(tmp_path))) == 2
    err = capsys.readouterr().err
    assert "signature: unexpected ','" in err and "column 14" in err


def test_cli_kernels_names_a_case_or_else_every_case_of_a_kernel(tmp_path, monkeypatch):
    # `--kernels saxpy` beside cases named saxpy_hang...: the plain case only; a name no case has is a kernel's,
    # all its named cases (breadth's --kernels kernelGuidance on dpid's spec, whose cases are named by size)
    from porter.verify import runner as runner_mod
    spec = tmp_path / "verify_spec.py"
    spec.write_text("from porter.verify.spec import Case\n"
                    "C = dict(source='k.cu', signature='x: f32[n] inout', grid='1', block='1', sizes=[{'n': 1}],"
                    " reference=lambda n, x: {'x': x})\n"
                    "KERNELS = [Case(kernel='saxpy', **C), Case(kernel='saxpy', name='saxpy_hang', **C),\n"
                    "           Case(kernel='g', name='g_30x6', **C), Case(kernel='g', name='g_16x4', **C),\n"
                    "           Case(kernel='h', name='h_1', **C)]\n")
    seen = []
    monkeypatch.setattr(runner_mod.Runner, "run", lambda self, cases: seen.append([c.id for c in cases]) or [])
    for wanted, ids in (("saxpy", ["saxpy"]), ("saxpy_hang", ["saxpy_hang"]), ("g", ["g_30x6", "g_16x4"]),
                        ("g_16x4,h", ["g_16x4", "h_1"])):
        cli.main(_args(str(spec), "--targets", "vulkan", "--kernels", wanted))
        assert seen.pop() == ids, wanted
