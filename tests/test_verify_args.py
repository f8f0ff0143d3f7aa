"""`cuport verify --args "A B ..."` (porter/verify/derive_args.py): the program's command-line arguments give the
sizes its host reads with `atoi(argv[K])`, capped as bench/breadth.py caps them (porter/verify/sizecap.py);
the Makefile's `run:` arguments (porter/frontend/makeflags.run_line); and bench/breadth.py's retry at those
arguments for a kernel the assumed sizes (1000) leave empty, unreached or out of bounds."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from porter.frontend.makeflags import run_line
from porter.verify.backends import opencl, vulkan
from porter.verify.derive import derive_file
from porter.verify.nospec import derived_cases
from verify_fixtures.helpers import LAVAPIPE_ICD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_cpu_targets = pytest.mark.skipif(
    not (vulkan.available()[0] and os.path.exists(LAVAPIPE_ICD) and opencl.available()[0]),
    reason="needs Vulkan on lavapipe and OpenCL (PoCL)")

# adjacent's shape: a grid of whole tiles of 256 * 4 elements, empty at the 1000 elements assumed for argv[1]
TILES = """#include <cstdlib>
#include <cuda_runtime.h>
__global__ void tiles(const int *in, int *out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = 0; j < 4; j++) {
    int i = t * 4 + j;
    out[i] = in[i] * 3 + j;
  }
}
int main(int argc, char **argv) {
  if (argc != 3) return 1;
  const int n = atoi(argv[1]);
  const int repeat = atoi(argv[2]);
  int *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, n * sizeof(int));
  for (int r = 0; r < repeat; r++)
    tiles<<<n / (256 * 4), 256>>>(d_in, d_out, n);
  return 0;
}
"""

# ert's shape: a global the program assigns from argv in main; a default replaced when argc says the argument is
# there; one replaced under another condition (not the argument's alone: the default stays)
GLOBALS = """#include <cstdlib>
#include <cuda_runtime.h>
int blocks;
__global__ void fill(float *a, int m, int q) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) a[i] = (float)(i + q);
}
int main(int argc, char *argv[]) {
  int m = 1000;
  if (argc > 2) m = atoi(argv[2]);
  int q = 7;
  int mode = atoi(argv[3]);
  if (mode > 1) q = atoi(argv[4]);
  blocks = atoi(argv[1]);
  float *d_a;
  cudaMalloc(&d_a, blocks * 128 * sizeof(float));
  fill<<<blocks, 128>>>(d_a, m, q);
  return 0;
}
"""

# a buffer the program fixes beside one the arguments size: no halving brings 2^24 floats under the cap
FIXED = """#include <cstdlib>
#include <cuda_runtime.h>
__global__ void both(float *big, float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { x[i] = big[i] + 1.0f; }
}
int main(int argc, char **argv) {
  const int n = atoi(argv[1]);
  float *big, *x;
  cudaMalloc(&big, (1 << 24) * sizeof(float));
  cudaMalloc(&x, n * sizeof(float));
  both<<<(n + 255) / 256, 256>>>(big, x, n);
  return 0;
}
"""


def _file(tmp_path, text, name="main.cu"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _one(path, args=None, kernel=None):
    ds = [d for d in derive_file(path, args) if kernel is None or d.kernel == kernel]
    assert len(ds) == 1
    return ds[0]


def test_an_argument_replaces_the_assumed_1000(tmp_path):
    path = _file(tmp_path, TILES)
    d = _one(path)                      # without --args: 1000 assumed, the grid 1000 // 1024 is empty
    assert d.sizes["n"] == 1000 and [p.what for p in d.problems] == ["grid"]
    assert "is empty at the derived sizes" in d.problems[0].message
    d = _one(path, ["4096", "10"])
    assert d.problems == [] and d.sizes == {"n": 4096} and d.grid == "n // 1024"
    assert any("n is decided at run time (line 12): 4096, the program's argument 1 (--args)" in n for n in d.notes)
    # too few arguments: argument 1 still missing -> the guess, and its problem, as without --args
    d = _one(path, [])
    assert d.sizes["n"] == 1000 and [p.what for p in d.problems] == ["grid"]
    # an argument that is too small is the program's own: the grid is empty at it too, said the same way
    d = _one(path, ["8", "1"])
    assert d.sizes["n"] == 8 and [p.what for p in d.problems] == ["grid"]


def test_a_file_name_where_the_program_reads_a_size_is_a_problem_naming_it(tmp_path):
    d = _one(_file(tmp_path, TILES), ["StoneRGB.ppm", "10"])
    # every place the size is needed says so: the parameter, the grid, the buffers it sizes
    assert [p.what for p in d.problems] == ["n", "grid", "in", "out"]
    assert all("`n` is read from the program's argument 1, `StoneRGB.ppm` (--args), which is not a number" in
               p.message for p in d.problems)


def test_globals_written_in_main_and_defaults_replaced_under_argc(tmp_path):
    path = _file(tmp_path, GLOBALS)
    d = _one(path)
    assert (d.sizes["blocks"], d.sizes["m"], d.sizes["q"]) == (1000, 1000, 7)
    d = _one(path, ["16", "300", "2", "9"])
    assert d.problems == [] and d.grid == "blocks" and (d.sizes["blocks"], d.sizes["m"]) == (16, 300)
    assert d.sizes["q"] == 7               # `if (mode > 1) q = atoi(argv[4])`: not the argument's alone
    assert d.signature == "a: f32[blocks * 128] out, m: i32, q: i32"
    # a file name where the default is replaced, or where the global is read: the kernel refused, naming it
    d = _one(path, ["16", "in.txt", "2", "9"])
    assert [(p.what, p.message) for p in d.problems] == [
        ("m", "'m': `m` is read from the program's argument 2, `in.txt` (--args), which is not a number")]
    d = _one(path, ["x.ppm", "3"])
    assert [p.what for p in d.problems] == ["grid", "a"] and d.sizes["m"] == 3


def test_verify_caps_the_sizes_the_arguments_give_or_refuses(tmp_path, capsys):
    path = _file(tmp_path, TILES)
    found, refused = derived_cases(path, True, args=["100000000", "10"])
    (case,) = found[0][1]
    err = capsys.readouterr().err
    assert not refused and case.sizes[0]["n"] <= 1 << 20 and case.sizes[0]["n"] % 256 == 0
    assert f"brought under 1048576 elements per buffer and threads per launch: n={case.sizes[0]['n']}" in err
    # --sizes given: the user's sizes decide, nothing capped here
    found, _ = derived_cases(path, True, args=["100000000", "10"], sizes_given=True)
    assert found[0][1][0].sizes[0]["n"] == 100000000
    # under the cap already: as given
    found, _ = derived_cases(path, True, args=["4096", "10"])
    assert found[0][1][0].sizes[0] == {"n": 4096}
    # a buffer the program fixes over the cap: refused with the reason, never allocated
    found, refused = derived_cases(_file(tmp_path, FIXED, "fixed.cu"), True, args=["5000"])
    err = capsys.readouterr().err
    assert found == [] and refused
    assert "both: cannot bring the buffers or the launch under 1048576 elements" in err
    # arguments no size reads: said
    found, _ = derived_cases(_file(tmp_path, FIXED.replace("atoi(argv[1])", "3000"), "const.cu"), True,
                             args=["5000"])
    assert found and "--args: no size of the kernels verified is read from the program's arguments" in \
        capsys.readouterr().err


def cuport(*args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    if os.path.exists(LAVAPIPE_ICD):
        env["VK_ICD_FILENAMES"] = LAVAPIPE_ICD
    return subprocess.run([sys.executable, "-m", "porter", "verify", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@needs_cpu_targets
def test_cli_args_verify_a_kernel_the_assumed_sizes_leave_empty(tmp_path):
    path = _file(tmp_path, TILES)
    p = cuport(path, "--targets", "vulkan,opencl", "--output-format", "json", "-j", "1", "--portability-fixes")
    assert p.returncode == 1 and "is empty at the derived sizes" in p.stderr
    p = cuport(path, "--targets", "vulkan,opencl", "--output-format", "json", "-j", "1", "--portability-fixes",
               "--args", "3072 10")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert {r["status"] for r in doc["results"]} == {"pass"} and len(doc["results"]) == 4
    assert all(r["sizes"] == {"n": 3072} for r in doc["results"])
    assert doc["differential"] and all(q["ok"] for q in doc["differential"])


def test_cli_args_with_a_spec_or_unsplittable_are_errors(tmp_path):
    path = _file(tmp_path, TILES)
    (tmp_path / "verify_spec.py").write_text(
        "from porter.verify.spec import Case\nCASES = [Case(source='main.cu', kernel='tiles', signature='in: "
        "i32[n] in, out: i32[n] out, n: i32', grid='n // 1024', block='256', reference=None, sizes=[{'n': 2048}])]\n")
    for where in (str(tmp_path), path):  # the spec's sizes= decide: never silently ignore the option
        p = cuport(where, "--targets", "opencl", "--args", "4096 1")
        assert p.returncode == 2 and "--args sizes derived cases (no verify_spec.py)" in p.stderr, p.stderr
    p = cuport(path, "--targets", "opencl", "--no-spec", "--args", "'4096")
    assert p.returncode == 2 and "cannot split" in p.stderr


# ------------------------------------------------------------------------------ the Makefile's run line

def test_run_line_reads_the_run_targets_arguments(tmp_path):
    (tmp_path / "main.cu").write_text("")
    mk = tmp_path / "Makefile"
    mk.write_text("program = main\nLAUNCHER =\n\nall: $(program)\n\n$(program): main.o\n\t$(CC) -o $@ $^\n\n"
                  "run: $(program)\n\t$(LAUNCHER) ./$(program) 1000000 1000 \\\n\t  11 1\n\nclean:\n\trm -f main\n")
    r = run_line(str(tmp_path / "main.cu"))
    assert r.args == ["1000000", "1000", "11", "1"] and r.path == str(mk) and r.why is None
    mk.write_text("run: main\n\tCUDA_VISIBLE_DEVICES=0 ./main 16384 8192 > out.txt\n")
    assert run_line(str(tmp_path)).args == ["16384", "8192"]
    mk.write_text("run: main\n\t./main StoneRGB.ppm 1000\n")
    assert run_line(str(tmp_path)).args == ["StoneRGB.ppm", "1000"]
    # negative: no arguments, no run target, no ./program, make variables as arguments
    mk.write_text("run: main\n\t$(LAUNCHER) ./$(program)\n")
    assert run_line(str(tmp_path)).args == []
    mk.write_text("all: main\n\t./main 5\n")
    assert run_line(str(tmp_path)).why == "no `run:` target"
    mk.write_text("run: main\n\techo done\n")
    assert run_line(str(tmp_path)).why == "its `run:` target runs no `./PROGRAM` command"
    mk.write_text("N = 64\nrun: main\n\t./main $(N) 3\n")
    r = run_line(str(tmp_path))
    assert r.args is None and "name make variables" in r.why
    os.remove(mk)
    assert run_line(str(tmp_path)).why == "no Makefile"


# ------------------------------------------------------------------------------ bench/breadth.py's retry

def _breadth():
    spec = importlib.util.spec_from_file_location("breadth", os.path.join(ROOT, "bench", "breadth.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _prog(tmp_path, run):
    prog = tmp_path / "tiles-cuda"
    prog.mkdir()
    (prog / "main.cu").write_text(TILES)
    (prog / "Makefile").write_text(f"program = main\n\nrun: $(program)\n\t$(LAUNCHER) ./$(program) {run}\n")
    return prog


def test_the_retry_takes_only_failures_of_the_assumed_sizes():
    b = _breadth()
    assert b._sizes_failure({"verdict": "underived", "why": "grid: the grid `n // 1024` of the launch at line 9 "
                                                             "is empty at the derived sizes (n=1000): ..."})
    assert b._sizes_failure({"verdict": "underived", "why": "launch: the launch at line 98 runs only while `a < b`, "
                                                             "false at the derived sizes (...)"})
    assert b._sizes_failure({"verdict": "failed", "why": "k<64>: out of bounds under the derived sizes (Oclgrind"})
    assert b._sizes_failure({"verdict": "failed", "why": "sizes {}: SpecError: ga: empty launch grid=[0, 1, 1]"})
    # real results and other failures are left as they are
    assert not b._sizes_failure({"verdict": "agree", "file": "main.cu"})
    assert not b._sizes_failure({"verdict": "disagree", "why": "vulkan/sg4 vs opencl: out of bounds under the "
                                                               "derived sizes"})
    assert not b._sizes_failure({"verdict": "failed", "why": "cannot bring the buffers or the launch under 1048576"})
    assert not b._sizes_failure({"verdict": "underived", "why": "x: read back from the device"})


@pytest.mark.parametrize("run,why", [
    ("StoneRGB.ppm 10", "skipped: Makefile: its run line passes `StoneRGB.ppm`, not a number"),
    ("", "skipped: Makefile: its run line passes no arguments"),
    ("$(N) 10", "skipped: Makefile: its `run:` arguments name make variables: not read")])
def test_the_retry_is_skipped_with_a_reason_when_the_run_line_gives_no_sizes(tmp_path, monkeypatch, run, why):
    b = _breadth()
    prog = _prog(tmp_path, run)
    monkeypatch.setattr(b, "verify_kernel", lambda *a, **k: pytest.fail("nothing is run"))
    row = {"file": "main.cu", "verdict": "underived", "why": "grid: ... is empty at the derived sizes (n=1000)"}
    out = b.run_args_retry(str(prog), str(prog / "main.cu"), "tiles", row, ["vulkan", "opencl"], 60)
    assert out == {**row, "program_args_run": why}


def test_the_retry_keeps_the_row_when_the_arguments_do_not_derive_either(tmp_path, monkeypatch):
    b = _breadth()
    prog = _prog(tmp_path, "512 10")          # 512 // 1024: still empty
    monkeypatch.setattr(b, "verify_kernel", lambda *a, **k: pytest.fail("nothing is run"))
    row = {"file": "main.cu", "verdict": "underived", "why": "grid: ... is empty at the derived sizes (n=1000)"}
    out = b.run_args_retry(str(prog), str(prog / "main.cu"), "tiles", row, ["vulkan", "opencl"], 60)
    assert out["verdict"] == "underived" and out["program_args_run"].startswith("underived: grid: ")
    assert "(n=512" in out["program_args_run"] and "program_args" not in out


@needs_cpu_targets
def test_verify_program_retries_an_empty_launch_at_the_programs_run_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    b = _breadth()
    prog = _prog(tmp_path, "100000000 1000")  # adjacent's run line: capped to <= 2^20 elements
    res = {t: {"kernels": {"tiles": "valid"}} for t in ("glsl", "opencl")}
    rows = b.verify_program(str(prog), res, 120)
    row = rows["tiles"]
    assert row["verdict"] == "agree" and row["program_args"] == "100000000 1000", row
    assert row["sizes"]["n"] <= 1 << 20 and row["file"] == "main.cu"
    assert row["why"].startswith("agree at the program's run arguments `100000000 1000` (Makefile `run:`: "
                                 "$(LAUNCHER) ./$(program) 100000000 1000); at the assumed sizes: underived: grid: ")
    assert row["bounds"].startswith("checked at n=")
    tot = b.verify_totals({"tiles-cuda": {**res, "verify": rows}})
    assert tot[b.RUN_ARGS] == 1 and tot["agree"] == 1
    assert "at the program's run arguments (its Makefile's `run:`) only: 1" in \
        b.verify_markdown({"tiles-cuda": {**res, "verify": rows}})


def test_verify_run_args_runs_every_kernel_at_the_run_arguments_only(tmp_path, monkeypatch):
    # a GPU has no Oclgrind to find the assumed sizes out of bounds: the lead runs such kernels at the arguments
    b = _breadth()
    prog = _prog(tmp_path, "4096 10")
    seen = []

    def fake(path, case, targets, timeout, label=None, args=None):
        seen.append((case["sizes"][0], targets, args))
        return {"file": "main.cu", "sizes": case["sizes"][0], "targets": targets, "verdict": "agree"}
    monkeypatch.setattr(b, "verify_kernel", fake)
    res = {t: {"kernels": {"tiles": "valid"}} for t in ("glsl", "opencl")}
    rows = b.verify_program(str(prog), res, 60, ("cuda", "opencl"), run_args=True)
    assert seen == [({"n": 4096}, ["cuda", "opencl"], ["4096", "10"])]
    assert rows["tiles"]["verdict"] == "agree" and rows["tiles"]["program_args"] == "4096 10"
    assert rows["tiles"]["why"].startswith("agree at the program's run arguments `4096 10`")
    # without it: the assumed sizes first; this launch is empty there, so the retry runs the same arguments
    seen.clear()
    rows = b.verify_program(str(prog), res, 60, ("vulkan", "opencl"))
    assert seen == [({"n": 4096}, ["vulkan", "opencl"], ["4096", "10"])] and rows["tiles"]["program_args"]


def _union_module():
    spec = importlib.util.spec_from_file_location("breadth_union", os.path.join(ROOT, "bench", "breadth_union.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_union_counts_a_gpu_agreement_at_the_run_arguments_only_where_oclgrind_found_them_in_bounds(tmp_path):
    u = _union_module()
    oob = "out of bounds under the derived sizes (Oclgrind at M=56,N=56: invalid read of size 16)"

    def write(name, rows):
        path = tmp_path / name
        path.write_text(json.dumps({"results": {"v": {"verify": rows}}}))
        return str(path)
    cpu = write("cpu.json", {
        "clean": {"verdict": "failed", "why": oob, "program_args_run":
                  "failed at 16384 8192 100: fewer than two runs to compare (bounds checked at M=64,N=64)"},
        "dirty": {"verdict": "failed", "why": oob, "program_args_run":
                  "failed at 8 8: out of bounds under the derived sizes (Oclgrind at M=8,N=8: invalid read)"},
        "plain": {"verdict": "failed", "why": oob}})
    at_args = "agree at the program's run arguments `16384 8192 100` (Makefile `run:`: ./main 16384 8192 100)"
    gpu = write("gpu.json", {k: {"verdict": "agree", "why": at_args} for k in ("clean", "dirty", "plain")} |
                {"assumed": {"verdict": "agree", "why": ""}})
    cpu2 = write("cpu2.json", {"assumed": {"verdict": "failed", "why": oob, "program_args_run":
                                           "failed at 1 2: x (bounds checked at M=64,N=64)"}})
    got = u.union(u.latest([cpu]), u.latest([gpu]))
    assert got[("v", "clean")] == "gpu"
    assert got[("v", "dirty")].startswith("CPU: failed out of bounds")   # out of bounds at the arguments too
    assert got[("v", "plain")].startswith("CPU: failed out of bounds")   # never checked at the arguments
    # a GPU agreement at the assumed sizes stays vetoed: the case it ran is the one out of bounds
    got = u.union(u.latest([cpu2]), u.latest([gpu]))
    assert got[("v", "assumed")].startswith("CPU: failed out of bounds")
