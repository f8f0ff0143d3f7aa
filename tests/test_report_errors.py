"""`cuport report` never reports an incomplete picture with exit 0: clang errors and bodies too deep to model are
CP000 lines (stderr and the JSON `errors` field) and exit 1; a file clang crashes on still has its JSON entry."""
import json
import subprocess
import sys

ROOT = __file__.rsplit("/tests/", 1)[0]


def _report(tmp_path, *files, fmt="json"):
    p = subprocess.run([sys.executable, "-m", "porter", "report", "--format", fmt, "--registers", "32", *files],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    return p


GOOD = "__global__ void good(float* a) { a[threadIdx.x] = 1.0f; }\nint main() { good<<<1, 64>>>(0); }\n"


def test_parse_error_is_cp000_and_exit_1_the_other_file_still_reported(tmp_path):
    (tmp_path / "bad.cu").write_text("__global__ void k(float* a) {\n  a[0] = 1 +;\n}\n")
    (tmp_path / "good.cu").write_text(GOOD)
    p = _report(tmp_path, "bad.cu", "good.cu")
    assert p.returncode == 1
    assert "bad.cu:2:13: CP000 parse error: expected expression" in p.stderr
    reps = {r["file"]: r for r in json.loads(p.stdout)}
    assert reps["bad.cu"]["errors"] == ["bad.cu:2:13: CP000 parse error: expected expression"]
    assert reps["good.cu"]["errors"] == []
    assert [k["kernel"] for k in reps["good.cu"]["kernels"]] == ["good"]


def test_clean_file_exits_0(tmp_path):
    (tmp_path / "good.cu").write_text(GOOD)
    p = _report(tmp_path, "good.cu")
    assert p.returncode == 0 and json.loads(p.stdout)["errors"] == []


def test_kernel_too_deep_to_model_is_not_silently_missing(tmp_path):
    n = 210      # past the model's nesting limit (200), under clang's bracket limit (256)
    body = "if (a[0]) {" * n + "x++;" + "}" * n
    (tmp_path / "deep.cu").write_text("__global__ void deep(int* a) { int x = 0; " + body + " a[1] = x; }\n")
    p = _report(tmp_path, "deep.cu")
    assert p.returncode == 1
    rep = json.loads(p.stdout)
    assert rep["kernels"] == []
    assert len(rep["errors"]) == 1 and "CP000 nesting deeper than 200 levels: `deep` is not analysed" in rep["errors"][0]


def test_many_parse_errors_are_capped_with_a_count(tmp_path):
    (tmp_path / "many.cu").write_text("".join(f"__global__ void k{i}(float* a) {{ a[0] = 1 +; }}\n" for i in range(15)))
    p = _report(tmp_path, "many.cu")
    errors = json.loads(p.stdout)["errors"]
    assert p.returncode == 1 and len(errors) == 11
    assert errors[-1] == "many.cu:1:1: CP000 15 parse errors in all (10 shown)"


def test_table_after_a_clang_crash_names_the_file(tmp_path):
    terms = " + ".join(f"a[{i % 7}]" for i in range(30000))    # libclang 18 overflows its parser stack here
    (tmp_path / "crash.cu").write_text(f"__global__ void k(float* a) {{ a[0] = {terms}; }}\n")
    (tmp_path / "good.cu").write_text(GOOD)
    p = _report(tmp_path, "crash.cu", "good.cu", fmt="table")
    assert p.returncode == 1
    assert "crash.cu:1:1: CP000" in p.stderr
    assert "crash.cu: no kernels" in p.stdout and "good  (good.cu:1)" in p.stdout
