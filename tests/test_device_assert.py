"""Device `assert` (issue 14, translate/kernel/asserts.py, verify/asserts.py): CUDA stops the failing thread and
the host sees cudaErrorAssert. The GLSL / OpenCL translations check the condition and record a failure in a
hidden `cuport_assert` buffer ([0] failing threads, [1] first line) that the manifest names; verify zeroes it,
reads it back and compares the outcome (a translation that fired where another did not, or that lost its
asserts, disagrees). Under NDEBUG the assert is gone, as in CUDA; HIP keeps `assert` as it is."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernel_helpers import LAVAPIPE_ICD, can_validate, refusal, translate_text
from porter.translate.api import translate_file
from porter.verify import asserts, differential
from porter.verify.backends import cuda, opencl, vulkan
from porter.verify.derive import case_from_dict, derive_file
from porter.verify.runner import Result

ROOT = Path(__file__).resolve().parents[1]

KERNEL = """#include <assert.h>
__global__ void k(const int *in, int *out, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  assert(in[i] < 100);
  out[i] = in[i] * 2;
}
int main() { int *a, *b; k<<<4, 64>>>(a, b, 256); }
"""

# asserts that fire in some threads and not in others; one in a device function, one before a barrier, one in a
# kernel without parameters (its asserts are all it does)
PROGRAM = """#include <assert.h>
#define N 256

__global__ void fires(const int *in, int *out, int n, int limit)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  assert(i < limit);
  out[i] = in[i] + 1;
}

__global__ void quiet(const int *in, int *out, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  assert(i < n);
  out[i] = 2 * in[i];
}

__global__ void only_assert()
{
  assert(threadIdx.x < 48);
}

__device__ int checked(int v, int i)
{
  assert(i % 5 != 3);
  return v - 1;
}

__global__ void in_function(const int *in, int *out, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = checked(in[i], i);
}

__global__ void before_barrier(const int *in, int *out)
{
  __shared__ int s[64];
  int t = threadIdx.x;
  assert(t != 17);
  s[t] = in[blockIdx.x * 64 + t];
  __syncthreads();
  out[blockIdx.x * 64 + t] = s[63 - t];
}

int main()
{
  int *in, *out;
  cudaMalloc(&in, N * sizeof(int));
  cudaMalloc(&out, N * sizeof(int));
  fires<<<N / 64, 64>>>(in, out, N, 200);
  quiet<<<N / 64, 64>>>(in, out, N);
  only_assert<<<2, 64>>>();
  in_function<<<N / 64, 64>>>(in, out, N);
  before_barrier<<<N / 64, 64>>>(in, out);
  cudaDeviceSynchronize();
  return 0;
}
"""

needs_cpu_targets = pytest.mark.skipif(
    not (vulkan.available()[0] and os.path.exists(LAVAPIPE_ICD) and opencl.available()[0]),
    reason="needs Vulkan on lavapipe and OpenCL (PoCL)")


# ---------------------------------------------------------------------------------------------- translation

def test_glsl_checks_the_assert_and_names_the_buffer(tmp_path):
    res = translate_text(tmp_path, "glsl", KERNEL)
    assert not res.failed_kernels, res.failed_kernels
    s = res.shaders["k"]
    assert "layout(std430, set = 0, binding = 2) buffer cuport_assert_buf { uint cuport_assert[]; };" in s
    check = s[s.index("if (!((in_[i] < 100))) {"):]
    assert check.index("atomicAdd(cuport_assert[0], 1u);") < check.index("atomicCompSwap(cuport_assert[1], 0u, 6u);") \
        < check.index("return;") < check.index("out_[i] = in_[i] * 2;")
    man = res.manifests["k"]
    assert man["assert"]["binding"] == 2 and man["assert"]["count"] == 2 and man["assert"]["init"] == [0, 0]
    assert man["assert"]["sites"] == [{"line": 6, "stops_thread": True}]
    hidden = [b for b in man["buffers"] if b.get("hidden") == "assert"]
    assert hidden == [{"name": "cuport_assert", "set": 0, "binding": 2, "type": "uint", "elem_size": 4,
                       "access": "readwrite", "restrict": False, "hidden": "assert"}]
    assert [p["name"] for p in man["params"]] == ["in", "out", "n"]       # not a CUDA parameter


def test_opencl_checks_the_assert_in_a_hidden_argument(tmp_path):
    res = translate_text(tmp_path, "opencl", KERNEL)
    assert not res.failed_kernels, res.failed_kernels
    t = res.text
    assert "    int n,\n    __global uint* cuport_assert)\n{" in t
    assert "if (!((in[i] < 100))) {\n        atomic_inc(&cuport_assert[0]);\n" \
           "        atomic_cmpxchg(&cuport_assert[1], 0u, 6u);\n        return;" in t
    man = res.manifests["k"]
    assert man["assert"]["index"] == 3 and man["assert"]["sites"] == [{"line": 6, "stops_thread": True}]
    assert man["params"][-1] == {"name": "cuport_assert", "kind": "assert", "index": 3, "type": "uint", "count": 2}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_where_the_failing_thread_goes(tmp_path, target):
    """It returns in a kernel's own body; in a device function (a return leaves only the function) and before a
    barrier (the others would wait for it) it records the failure and goes on."""
    src = tmp_path / "k.cu"
    src.write_text(PROGRAM)
    res = translate_file(str(src), target, validate=can_validate(target))
    assert not res.failed_kernels, res.failed_kernels
    sites = {k: res.manifests[k]["assert"]["sites"] for k in res.manifests}
    assert sites == {"fires": [{"line": 8, "stops_thread": True}], "quiet": [{"line": 16, "stops_thread": True}],
                     "only_assert": [{"line": 22, "stops_thread": True}],
                     "in_function": [{"line": 27, "stops_thread": False}],
                     "before_barrier": [{"line": 41, "stops_thread": False}]}
    text = res.text if target == "opencl" else res.shaders["in_function"]
    fn = text[text.index("int checked("):]
    fn = fn[:fn.index("\n}")]
    assert "0u, 27u);" in fn and "return;" not in fn
    if target == "opencl":     # the buffer goes down to the device function as an argument
        assert "int checked(int v, int i, __global uint* cuport_assert) {" in text
        assert "checked(in[i], i, cuport_assert);" in text
    bar = res.text[res.text.index("void before_barrier("):] if target == "opencl" else res.shaders["before_barrier"]
    assert "0u, 41u);\n    }\n" in bar and "CUDA stops the thread" not in bar


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("how", ["define", "option"])
def test_ndebug_compiles_the_assert_out(tmp_path, target, how):
    code = ("#define NDEBUG\n" if how == "define" else "") + KERNEL
    res = translate_text(tmp_path, target, code, **({"defines": ["NDEBUG"]} if how == "option" else {}))
    assert not res.failed_kernels, res.failed_kernels
    text = res.text if target == "opencl" else res.shaders["k"]
    assert "cuport_assert" not in text and "100" not in text and "assert" not in res.manifests["k"]
    assert "out" in text


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_an_assert_inside_an_expression_is_refused(tmp_path, target):
    code = ("#include <assert.h>\n__global__ void k(int *o, int n)\n{\n"
            "  o[threadIdx.x] = (assert(n > 0), n);\n}\n")
    res = translate_text(tmp_path, target, code)
    d = refusal(res)
    assert "k" in res.failed_kernels and d.row == 4 and "an `assert` inside an expression" in d.message, d.message


def test_assert_without_including_assert_h(tmp_path):
    """nvcc's cuda_runtime.h includes <assert.h>: a .cu file may use assert without it."""
    res = translate_text(tmp_path, "opencl", KERNEL.replace("#include <assert.h>\n", ""))
    assert not res.failed_kernels and res.manifests["k"]["assert"]["sites"][0]["line"] == 5


def test_hip_keeps_assert(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    res = translate_file(str(tmp_path / "k.cu"), "hip")
    assert "  assert(in[i] < 100);\n" in res.text and "cuport_assert" not in res.text


# ---------------------------------------------------------------------------------------------- verify

def _outcome(n, line):
    return {asserts.KEY: np.array([n, line], np.uint32)}


def _judge(tmp_path, runs, signature="y: i32[n] out, n: i32"):
    case = case_from_dict({"path": "/x/k.cu", "kernel": "k", "signature": signature, "grid": "1", "block": "4",
                           "sizes": [{"n": 4}]})
    results = []
    for i, (target, variant, outs) in enumerate(runs):
        r = Result("k", "k", "/x/k.cu", target, variant, {"n": 4}, "pass")
        path = tmp_path / f"{i}.npz"
        np.savez(path, **outs)
        r.info["dump"] = str(path)
        results.append(r)
    pairs = differential.apply(results, [case])
    return {differential.label(r): r for r in results}, pairs


Y = np.array([1, 2, 3, 4], np.int32)


@pytest.mark.parametrize("a, b, ok, fragment", [
    # a translation that dropped the assert disagrees with one that keeps it, fired or not
    (_outcome(3, 12), {}, False, "assert fired in 3 thread(s), first at line 12"),
    (_outcome(0, 0), {}, False, "one translation lost its asserts"),
    (_outcome(3, 12), _outcome(0, 0), False, "no assert fired"),
    (_outcome(3, 12), _outcome(2, 12), False, "in 2 thread(s)"),
    (_outcome(3, 12), _outcome(3, 12), True, "assert fired in 3 thread(s), first at line 12 on both"),
    (_outcome(0, 0), _outcome(0, 0), True, "no assert fired"),
])
def test_two_translations_compare_their_assert_outcomes(tmp_path, a, b, ok, fragment):
    rows, pairs = _judge(tmp_path, [("vulkan", "sg4", {"y": Y, **a}), ("opencl", "-", {"y": Y, **b})])
    assert len(pairs) == 1 and pairs[0].ok is ok and fragment in pairs[0].message, pairs[0].message


def test_both_fired_the_buffers_are_still_compared(tmp_path):
    _, pairs = _judge(tmp_path, [("vulkan", "sg4", {"y": Y, **_outcome(3, 12)}),
                                 ("opencl", "-", {"y": Y + 1, **_outcome(3, 12)})])
    assert not pairs[0].ok and "y: 4 of 4 elements differ" in pairs[0].message, pairs[0].message


def test_nothing_to_compare_is_no_agreement(tmp_path):
    """A kernel without outputs whose translations check no assert: agreeing on nothing is not agreement."""
    _, pairs = _judge(tmp_path, [("vulkan", "sg4", {"x": Y}), ("opencl", "-", {"x": Y})], signature="n: i32")
    assert not pairs[0].ok and "no output buffer and no assert checked" in pairs[0].message


@pytest.mark.parametrize("orig, other, ok, fragment", [
    (asserts.original(True), _outcome(56, 8), True, "assert fired in 56 thread(s), first at line 8 on both (CUDA"),
    (asserts.original(True), {"y": Y}, False, "cuda: assert fired; opencl: checks no assert"),
    (asserts.original(True), {"y": Y, **_outcome(0, 0)}, False, "opencl: no assert fired"),
    (asserts.original(False), {"y": Y, **_outcome(1, 8)}, False, "cuda: no assert fired; opencl: assert fired"),
    (asserts.original(False), {"y": Y}, True, "agree (max abs"),     # a kernel without asserts
])
def test_the_cuda_original_is_compared_on_its_assert_outcome(tmp_path, orig, other, ok, fragment):
    cuda_outs = {asserts.KEY: orig, **({} if orig[0] else {"y": Y})}
    rows, pairs = _judge(tmp_path, [("cuda", "-", cuda_outs), ("opencl", "-", other)])
    assert pairs[0].ok is ok and fragment in pairs[0].message, pairs[0].message
    assert rows["opencl"].status == ("pass" if ok else "FAIL")


class _Raises:
    def __init__(self, exc):
        self.exc = exc

    def __call__(self, *a, **k):
        raise self.exc

    def record(self):
        pass


def _session(exc):
    s = object.__new__(cuda.NvrtcSession)
    s.assert_fired, s.info, s.grid, s.block, s.args, s.shared = False, {}, (1, 1, 1), (1, 1, 1), (), 0
    s.start = s.stop = _Raises(None)
    s.kernel = _Raises(exc)
    return s


def test_the_cuda_backend_reports_a_device_assert_as_its_outcome():
    s = _session(RuntimeError("CUDA_ERROR_ASSERT: device-side assert triggered"))
    assert s.launch() == 0.0 and s.info == {"assert_fired": True} and s.launch() == 0.0
    out = s.outputs()
    assert list(out) == [asserts.KEY] and out[asserts.KEY].tolist() == [asserts.UNKNOWN, asserts.UNKNOWN]
    with pytest.raises(RuntimeError, match="ILLEGAL_ADDRESS"):       # another error is still a crash
        _session(RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")).launch()


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("asserts")
    (d / "k.cu").write_text(PROGRAM)
    return d / "k.cu"


@needs_cpu_targets
def test_verify_compares_assert_outcomes_on_lavapipe_and_pocl(program):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VK_ICD_FILENAMES": LAVAPIPE_ICD}
    p = subprocess.run([sys.executable, "-m", "porter", "verify", str(program), "--portability-fixes",
                        "--targets", "vulkan,opencl", "--output-format", "json", "-j", "1"],
                       capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    kernels = ("fires", "quiet", "only_assert", "in_function", "before_barrier")
    assert sorted((r["case"], r["target"], r["variant"], r["status"]) for r in doc["results"]) == sorted(
        (k, t, v, "pass") for k in kernels for t, v in (("vulkan", "sg4"), ("vulkan", "sg8"), ("vulkan", "sg16"),
                                                        ("opencl", "-")))
    by = {}
    for d in doc["differential"]:
        assert d["ok"], d
        by.setdefault(d["case"], set()).add(d["message"])
    # the count and the line read back from the hidden buffer: threads 200..255; 16 of each block of 64; every
    # i with i % 5 == 3 of 256 (51); thread 17 of each of 4 blocks
    assert by == {"fires": {"agree (assert fired in 56 thread(s), first at line 8 on both; max abs difference 0)"},
                  "quiet": {"agree (no assert fired; max abs difference 0)"},
                  "only_assert": {"agree (assert fired in 32 thread(s), first at line 22 on both; max abs "
                                  "difference 0)"},
                  "in_function": {"agree (assert fired in 51 thread(s), first at line 27 on both; max abs "
                                  "difference 0)"},
                  "before_barrier": {"agree (assert fired in 4 thread(s), first at line 41 on both; max abs "
                                     "difference 0)"}}


@pytest.mark.skipif(not opencl.available()[0], reason="needs OpenCL (PoCL)")
def test_a_translation_that_drops_the_assert_disagrees(program):
    """The same kernel run on PoCL with its assert kept and with it compiled out: the outcomes differ."""
    (d,) = [d for d in derive_file(str(program)) if d.kernel == "fires"]
    assert d.asserts
    case = case_from_dict(d.as_dict(portability_fixes=True))
    sizes = case.sizes[0]
    args = case.make_args(sizes)
    runs = {}
    for label, defines in (("kept", []), ("dropped", ["NDEBUG"])):
        res = translate_file(str(program), "opencl", defines=defines)
        mine = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
        runs[label] = opencl.run(case, res.text, res.manifests["fires"], sizes, mine).outputs
    assert runs["kept"][asserts.KEY].tolist() == [56, 8] and asserts.KEY not in runs["dropped"]
    ok, why = asserts.compare("kept", runs["kept"], "dropped", runs["dropped"], True)
    assert ok is False and why == "kept: assert fired in 56 thread(s), first at line 8; dropped: checks no assert"
    # the threads that failed stopped before writing `out`; without the assert they wrote it
    assert (runs["kept"]["out"][200:] == args["out"][200:]).all()
    assert (runs["dropped"]["out"][200:] == args["in"][200:] + 1).all()
    assert (runs["kept"]["out"][:200] == args["in"][:200] + 1).all()


def test_a_case_with_a_reference_fails_when_an_assert_fired():
    """A spec with a NumPy reference expects results; CUDA's launch would end in cudaErrorAssert instead."""
    from porter.verify.backends import RunOutput, Variant
    from porter.verify.spec import Case
    from porter.verify.worker import run_case

    case = Case(source="k.cu", kernel="k", signature="y: i32[n] out, n: i32", grid="1", block="4",
                sizes=[{"n": 4}], reference=lambda **b: {"y": np.zeros(4, np.int32)})

    class Backend:
        def __init__(self, fired):
            self.fired = fired

        def run(self, case, text, manifest, sizes, arrays, *, variant=None, repeat=1):
            return RunOutput({"y": np.zeros(4, np.int32), **_outcome(self.fired, 9 if self.fired else 0)}, 1.0)

    bad = run_case(case, Backend(2), "opencl", Variant(), "", None, {"n": 4}, 1)
    assert bad["status"] == "FAIL" and bad["message"] == \
        "device assert fired in 2 thread(s), first at line 9 (cudaErrorAssert in CUDA)", bad
    assert run_case(case, Backend(0), "opencl", Variant(), "", None, {"n": 4}, 1)["status"] == "pass"


def test_an_assert_that_does_not_stop_its_thread_says_so(tmp_path):
    res = translate_text(tmp_path, "opencl", PROGRAM)
    notes = sorted((d.row, d.severity) for d in res.diagnostics if d.code == "CP907" and "the thread goes on" in d.message)
    assert notes == [(27, "info"), (41, "info")]
