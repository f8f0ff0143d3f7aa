"""`cuport verify --sanitize`: the OpenCL translation under Oclgrind; a memory error fails the case at its CUDA
line even when the numbers come out right (issue 10.7)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from porter.verify.backends import oclgrind
from porter.verify.runner import Runner
from porter.verify.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "sanitize"

# The simulator's log, as Oclgrind 21.10 writes it (two pyopencl device queries it does not know, then a
# kernel error whose line came from a #line directive).
LOG = """
Oclgrind - OpenCL runtime error detected
\tFunction: clGetDeviceInfo
\tError:    CL_INVALID_VALUE
\tFor argument 'param_name'

Invalid read of size 4 at local memory address 0x1000000000100
\tKernel: shift_read
\tEntity: Global(63,0,0) Local(63,0,0) Group(0,0,0)
\t  %5 = load float, float addrspace(3)* %arrayidx8, align 4, !dbg !40
\tAt line 10 (column 19) of sanitize.cu:
\t  (source not available)

Index (64) exceeds static array size (64)
\tKernel: shift_read
\tAt line 10 (column 19) of sanitize.cu:

Read-write data race at local memory address 0x100000000007c
\tKernel: missing_barrier
\t
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
\tAt line 20 (column 18) of sanitize.cu:
\tSecond entity: Global(62,0,0) Local(62,0,0) Group(0,0,0)
\tAt line 19 (column 10) of sanitize.cu:
"""


def test_parse_reports_keeps_kernel_errors_and_drops_device_queries():
    reports = oclgrind.parse_reports(LOG)
    assert [r["kind"] for r in reports] == [
        "Invalid read of size 4 at local memory address 0x1000000000100",
        "Index (64) exceeds static array size (64)",
        "Read-write data race at local memory address 0x100000000007c"]
    assert reports[0]["kernel"] == "shift_read" and reports[0]["locations"] == [("sanitize.cu", 10, 19)]
    assert reports[2]["locations"] == [("sanitize.cu", 20, 18), ("sanitize.cu", 19, 10)]
    line = oclgrind.summarize(reports, str(FIX / "sanitize.cu"))
    assert line.startswith("oclgrind: Invalid read of size 4")
    assert "sanitize.cu:10:19" in line and "[Index (64) exceeds static array size (64)]" in line
    assert line.endswith("(+2 more reports)")


def test_parse_reports_of_a_clean_run_is_empty():
    assert oclgrind.parse_reports(LOG.split("Invalid read")[0]) == []


def test_summary_without_a_source_line_names_the_kernel():
    reports = [{"kind": "Invalid write of size 4 at local memory address 0x10", "kernel": "k",
                "locations": [("k.cu", 0, 0)], "text": ""}]
    assert oclgrind.summarize(reports, "k.cu") == ("oclgrind: Invalid write of size 4 at local memory address "
                                                    "0x10 in kernel k (source line not recorded)")


def test_line_directives_name_the_cuda_lines():
    from porter.translate.api import translate_file
    plain = translate_file(str(FIX / "sanitize.cu"), "opencl").text
    marked = translate_file(str(FIX / "sanitize.cu"), "opencl", line_directives=True).text
    assert "#line" not in plain
    assert '#line 10 "sanitize.cu"' in marked
    # the statement after the directive is the CUDA statement on that line
    after = marked.split('#line 10 "sanitize.cu"', 1)[1].strip().splitlines()[0]
    assert "tile[t + 1]" in after
    # directives change nothing else
    assert _code(marked) == _code(plain)


def _code(text):
    return [ln.split("//")[0].rstrip() for ln in text.splitlines()
            if not ln.startswith("#line") and ln.split("//")[0].strip()]


ok, why = oclgrind.available()
needs_oclgrind = pytest.mark.skipif(not ok, reason=why)


def _results():
    cases = load_spec(FIX / "verify_spec.py")
    results = Runner(["opencl", "oclgrind"], jobs=2).run(cases)
    return {(r.case, r.target, r.variant): r for r in results}


@pytest.fixture(scope="module")
def results():
    return _results()


@needs_oclgrind
def test_out_of_bounds_read_fails_although_the_numbers_are_right(results):
    # what the stray read returns depends on the memory behind the tile (PoCL has passed with it; under the
    # simulator it has been 0 and NaN): the verdict must not depend on it
    assert results[("shift_read", "opencl", "-")].status in ("pass", "FAIL")
    for check in ("bounds+races", "uninit"):
        r = results[("shift_read", "oclgrind", check)]
        assert r.status == "FAIL", r.message
        assert "Invalid read of size 4 at local memory" in r.message
        assert "sanitize.cu:10:19" in r.message                          # the CUDA line of `tile[t + 1]`
        assert "; numbers right" in r.message or "; numbers wrong: " in r.message


@needs_oclgrind
def test_missing_barrier_is_a_data_race_at_its_cuda_line(results):
    r = results[("missing_barrier", "oclgrind", "bounds+races")]
    assert r.status == "FAIL"
    assert "data race at local memory" in r.message and "sanitize.cu:20:" in r.message
    assert r.info["sanitizer"][0]["kernel"] == "missing_barrier"


@needs_oclgrind
def test_correct_kernel_passes_every_check(results):
    for check in ("bounds+races", "uninit"):
        r = results[("in_bounds", "oclgrind", check)]
        assert r.status == "pass", r.message
        assert r.device.startswith("Oclgrind")
        assert r.sizes == {"n": 128}


@needs_oclgrind
def test_cli_sanitize_adds_the_target_and_the_seed_sgemm_fails_with_right_numbers():
    """The seed's optimised SGEMM indexes 8-row shared tiles with 16 rows: on PoCL its numbers can come out
    right; the simulator reports the out-of-bounds write (the spec expects this case to fail: xfail)."""
    p = subprocess.run([sys.executable, "-m", "porter", "verify", str(ROOT / "examples" / "sgemm"), "--targets",
                        "opencl", "--sanitize", "--output-format", "json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr          # xfail and pass only
    rows = {(r["case"], r["target"], r["variant"]): r for r in json.loads(p.stdout)["results"]}
    bad = rows[("sgemm_optimized", "oclgrind", "bounds+races")]
    assert bad["status"] == "xfail"
    assert "Invalid write of size 4 at local memory" in bad["message"]
    assert "Index (8) exceeds static array size (8)" in bad["message"]
    assert "; numbers right" in bad["message"] or "; numbers wrong: " in bad["message"]
    assert rows[("sgemm_fixed", "oclgrind", "bounds+races")]["status"] == "pass"
    # the simulator's uninitialised-value plugin cannot interpret LLVM `freeze`: a skip that says so, not a pass
    un = rows[("sgemm_fixed", "oclgrind", "uninit")]
    assert un["status"] in ("pass", "skipped")
    if un["status"] == "skipped":
        assert "does not support the LLVM instruction `freeze`" in un["message"]
