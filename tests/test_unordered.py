"""Outputs written at positions claimed by atomics (stream compaction): spec.Case.unordered compares them as
multisets, derive_body.claimed_stores finds them in a kernel's body, derive.py names them in the derived case."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernel_helpers import run_spec
from porter.verify import differential
from porter.verify.backends import opencl, vulkan
from porter.verify.compare import MULTISET
from porter.verify.derive import case_from_dict, derive_file, skeleton
from porter.verify.runner import Result
from porter.verify.spec import Case, SpecError, load_spec
from verify_fixtures.helpers import LAVAPIPE_ICD

ROOT = Path(__file__).resolve().parents[1]
needs_cpu_targets = pytest.mark.skipif(
    not (vulkan.available()[0] and os.path.exists(LAVAPIPE_ICD) and opencl.available()[0]),
    reason="needs Vulkan on lavapipe and OpenCL (PoCL)")

# block-level compaction: a shared counter, one global atomic per block, each thread's position added to it
COMPACT = """#define BLOCK 128
__global__ void keep_positive(const float *src, float *dst, int *count, int n) {
  __shared__ int l_n;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) l_n = 0;
  __syncthreads();
  int pos = 0;
  float v = 0.0f;
  if (i < n) {
    v = src[i];
    if (v > 0.0f) pos = atomicAdd(&l_n, 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) l_n = atomicAdd(count, l_n);
  __syncthreads();
  if (i < n && v > 0.0f) {
    pos += l_n;
    dst[pos] = v;
  }
}

int main() {
  const int n = 4096;
  float *d_src, *d_dst;
  int *d_count;
  cudaMalloc(&d_src, n * sizeof(float));
  cudaMalloc(&d_dst, n * sizeof(float));
  cudaMalloc(&d_count, sizeof(int));
  cudaMemset(d_count, 0, sizeof(int));
  keep_positive<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_src, d_dst, d_count, n);
  return 0;
}
"""


def derive_text(tmp_path, text, name="k.cu"):
    p = tmp_path / name
    p.write_text(text)
    return {d.kernel: d for d in derive_file(str(p))}


def claimed_notes(d):
    return [n for n in d.notes if "positions claimed by an atomic" in n]


# ------------------------------------------------------------------------------------------ detection

def test_a_block_compaction_through_a_shared_counter_and_plus_equals_is_unordered(tmp_path):
    d = derive_text(tmp_path, COMPACT)["keep_positive"]
    assert d.problems == [] and d.unordered == ["dst"]
    assert claimed_notes(d) == ["'dst' is written at positions claimed by an atomic (`dst[pos] = v`): their order "
                                "depends on scheduling, so it is compared as a multiset"]
    # the counter is still an ordinary output (compared exactly); the case carries the field to the workers
    case = case_from_dict(d.as_dict())
    assert case.unordered == ("dst",) and "count: i32[1] inout" in case.signature
    assert "unordered" not in derive_text(tmp_path, "__global__ void k(float *o, int n) {\n"
                                                    "  int i = threadIdx.x; if (i < n) o[i] = 1.0f; }\n")["k"].as_dict()


def test_a_scan_offset_from_a_shared_array_element_is_unordered(tmp_path):
    ks = derive_text(tmp_path, """
__global__ void scan_compact(const float *v, unsigned int *idx, unsigned int *counter, int n) {
  __shared__ unsigned int sums[32];
  unsigned int t = threadIdx.x;
  unsigned int test = (t + blockIdx.x * 32 < n && v[t + blockIdx.x * 32] > 0.5f) ? 1 : 0;
  unsigned int total = test;
  for (int c = 1; c < 32; c *= 2) {
    unsigned int up = __shfl_up_sync(0xffffffffu, total, c);
    if (t >= c) total += up;
  }
  if (t == 31) sums[31] = atomicAdd(counter, total);
  __syncthreads();
  if (test) idx[total + sums[31] - 1] = t + blockIdx.x * 32;
}
""")
    d = ks["scan_compact"]
    assert d.unordered == ["idx"]
    assert "(`idx[total + sums[31] - 1] = t + blockIdx.x * 32`)" in claimed_notes(d)[0]


HELPERS = """#include <cooperative_groups.h>
__device__ int claim(int *c) { return atomicAdd(c, 1); }

__device__ int agg_inc(int *ctr) {
  auto g = cooperative_groups::coalesced_threads();
  int base = 0;
  if (g.thread_rank() == 0) base = atomicAdd(ctr, g.size());
  return g.shfl(base, 0) + g.thread_rank();
}

__global__ void direct(const int *src, int *out, int *cnt, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n && src[i] > 0) out[claim(cnt)] = src[i];
}

__global__ void through_local(const int *src, int *out, int *cnt, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n && src[i] > 0) {
    int p = claim(cnt);
    out[p] = src[i];
  }
}

__global__ void aggregated(const int *src, int *out, int *cnt, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n && src[i] > 0) out[agg_inc(cnt)] = src[i];
}
"""


def test_device_functions_returning_an_atomics_result_claim_positions(tmp_path):
    ks = derive_text(tmp_path, HELPERS)
    assert {k: d.unordered for k, d in ks.items()} == {"direct": ["out"], "through_local": ["out"],
                                                         "aggregated": ["out"]}
    assert "(`out[agg_inc(cnt)] = src[i]`)" in claimed_notes(ks["aggregated"])[0]


NEGATIVES = """
__global__ void value_only(int *out, int *cnt, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) out[i] = atomicAdd(cnt, 1);
}

__global__ void by_thread(const float *src, float *out, int *cnt, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  int ticket = atomicAdd(cnt, 1);
  if (i < n) out[i] = src[i] * 2.0f + (ticket < 0 ? 1.0f : 0.0f);
}

__global__ void histogram(const int *src, int *bins, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) atomicAdd(&bins[src[i] & 15], 1);
}

__global__ void work_queue(const float *src, float *out, int *head, int n) {
  int i = atomicAdd(head, 1);
  if (i < n) out[i] = src[i] * 2.0f;
}

__global__ void exchanged(const int *src, int *out, int *slot, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) out[atomicExch(slot, i) & 1023] = src[i];
}
"""


def test_values_thread_ids_atomics_on_the_buffer_and_work_queues_stay_positional(tmp_path):
    ks = derive_text(tmp_path, NEGATIVES)
    # an atomic's result written as a value; a store at the thread's own index; an atomic update of the buffer;
    # a claimed index whose stored value depends on it (a work queue: out[i] is still f(src[i]) at i); an atomic
    # that is not a counter (atomicExch): all compared position by position, with no note
    assert {k: d.unordered for k, d in ks.items()} == {k: [] for k in ("value_only", "by_thread", "histogram",
                                                                        "work_queue", "exchanged")}
    assert not any(claimed_notes(d) for d in ks.values())


def test_a_flat_buffer_of_vectors_stays_positional_with_a_note(tmp_path):
    d = derive_text(tmp_path, """
__global__ void pairs(const float2 *src, float2 *out, int *cnt, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n && src[i].x > 0.0f) out[atomicAdd(cnt, 1)] = src[i];
}
""")["pairs"]
    assert d.unordered == []
    assert claimed_notes(d) == ["'out' is written at positions claimed by an atomic (`out[atomicAdd(cnt, 1)] = "
                                "src[i]`) but is a flat buffer of vectors: compared position by position"]


def test_init_writes_the_unordered_field_into_the_spec(tmp_path):
    (d,) = derive_text(tmp_path, COMPACT).values()
    text = skeleton([d], tmp_path)
    assert "        unordered=('dst',),  # positions claimed by atomics: multisets" in text
    (tmp_path / "verify_spec.py").write_text(text)
    (case,) = load_spec(tmp_path / "verify_spec.py")
    assert case.unordered == ("dst",)


# ------------------------------------------------------------------------------------------ comparison

def _case(**kw):
    return Case(**{"source": "k.cu", "kernel": "k", "signature": "dst: i32[n] out, cnt: i32[1] inout, n: i32",
                   "grid": "1", "block": "4", "sizes": [{"n": 6}], "reference": None, **kw})


def _outputs(case):
    return {p.name: p for p in case.sig.outputs}


def test_a_permutation_agrees_a_different_multiset_and_a_wrong_count_do_not():
    case = _case(unordered=("dst",))
    dst, cnt = _outputs(case)["dst"], _outputs(case)["cnt"]
    poison = np.iinfo(np.int32).max
    want = np.array([5, 3, 9, 1, poison, poison], np.int32)
    same = case.compare_output(dst, np.array([9, 1, 5, 3, poison, poison], np.int32), want)
    assert same.ok and same.message == f"dst ({MULTISET}): ok (max abs 0, max rel 0, rel l2 0)"
    other = case.compare_output(dst, np.array([9, 1, 5, 4, poison, poison], np.int32), want)
    assert not other.ok and other.n_bad == 1
    assert other.message.startswith(f"dst ({MULTISET}): 1 of 6 elements differ (exact); first at sorted [1]: "
                                    "got 4, expected 3")
    fewer = case.compare_output(dst, np.array([9, 1, 5, poison, poison, poison], np.int32), want)
    assert not fewer.ok and fewer.n_bad == 3        # sorted: 1 5 9 P P P against 1 3 5 9 P P
    # the counter is compared as it is
    c = case.compare_output(cnt, np.array([3], np.int32), np.array([4], np.int32))
    assert not c.ok and c.message.startswith("cnt: 1 of 1 elements differ") and MULTISET not in c.message
    # an output not named in unordered stays positional
    positional = _case().compare_output(_outputs(_case())["dst"], np.array([9, 1, 5, 3, poison, poison]), want)
    assert not positional.ok and positional.first_bad == (0,) and MULTISET not in positional.message


def test_floats_are_sorted_with_nan_last_and_compared_with_the_tolerance():
    case = Case(source="k.cu", kernel="k", signature="dst: f32[n] out, n: i32", grid="1", block="4",
                sizes=[{"n": 4}], reference=None, unordered="dst")
    dst = case.sig.outputs[0]
    want = np.array([0.5, -1.0, 2.0, np.nan], np.float32)
    assert case.compare_output(dst, np.array([np.nan, 2.0, 0.5 + 1e-7, -1.0], np.float32), want).ok
    bad = case.compare_output(dst, np.array([np.nan, 2.0, 0.51, -1.0], np.float32), want)
    assert not bad.ok and bad.first_bad == (1,) and bad.got_value == pytest.approx(0.51)


def test_struct_buffers_are_sorted_by_their_fields():
    case = Case(source="k.cu", kernel="k", structs={"Hit": "id: i32, d: f32"}, signature="hits: Hit[n] out, n: i32",
                grid="1", block="4", sizes=[{"n": 3}], reference=None, unordered=("hits",))
    hits = case.sig.outputs[0]
    dt = hits.np_dtype
    want = np.array([(2, 0.5), (1, 0.25), (2, 0.125)], dt)
    assert case.compare_output(hits, np.array([(2, 0.125), (2, 0.5), (1, 0.25)], dt), want).ok
    # the same ids and the same distances, paired differently: not the same multiset of structs
    bad = case.compare_output(hits, np.array([(2, 0.25), (2, 0.5), (1, 0.125)], dt), want)
    assert not bad.ok and bad.name == "hits.d" and MULTISET in bad.message


@pytest.mark.parametrize("unordered, fragment", [(("src",), "unordered 'src' must name an out / inout array"),
                                                 (("nope",), "unordered 'nope' must name"),
                                                 (("n",), "unordered 'n' must name")])
def test_unordered_must_name_an_output_array(unordered, fragment):
    with pytest.raises(SpecError, match=fragment):
        Case(source="k.cu", kernel="k", signature="src: f32[n] in, dst: f32[n] out, n: i32", grid="1", block="4",
             sizes=[{"n": 4}], reference=None, unordered=unordered)


def _judge(tmp_path, runs, unordered):
    case = case_from_dict({"path": "/x/k.cu", "kernel": "k", "signature": "y: i32[n] out, c: i32[1] inout, n: i32",
                           "grid": "1", "block": "4", "sizes": [{"n": 4}], "unordered": unordered})
    results = []
    for i, (t, v, y, c) in enumerate(runs):
        r = Result("k", "k", "/x/k.cu", t, v, {"n": 4}, "pass")
        path = tmp_path / f"{i}.npz"
        np.savez(path, y=np.array(y, np.int32), c=np.array([c], np.int32))
        r.info["dump"] = str(path)
        results.append(r)
    return {differential.label(r): r for r in results}, differential.apply(results, [case])


def test_differential_runs_compare_unordered_outputs_as_multisets(tmp_path):
    runs = [("vulkan", "sg4", [4, 2, 7, -1], 3), ("vulkan", "sg8", [7, 4, 2, -1], 3), ("opencl", "-", [2, 7, 4, -1], 3)]
    rows, pairs = _judge(tmp_path, runs, ["y"])
    assert {r.status for r in rows.values()} == {"pass"}
    assert pairs[0].message == f"agree (max abs difference 0; y {MULTISET})"
    # the same runs compared position by position disagree
    rows, _ = _judge(tmp_path, runs, [])
    assert {r.status for r in rows.values()} == {"FAIL"}
    # a lost element or a counter that differs is a disagreement
    rows, pairs = _judge(tmp_path, runs[:2] + [("opencl", "-", [2, 7, 5, -1], 3)], ["y"])
    assert rows["opencl"].status == "FAIL" and rows["vulkan/sg4"].status == "pass"
    assert rows["opencl"].message == (f"disagrees with the majority: y ({MULTISET}): 1 of 4 elements differ; first "
                                      "at sorted [2]: vulkan/sg4 4, opencl 5")
    rows, _ = _judge(tmp_path, runs[:2] + [("opencl", "-", [2, 7, 4, -1], 4)], ["y"])
    assert rows["opencl"].status == "FAIL" and rows["opencl"].message.startswith("disagrees with the majority: c: ")


# ------------------------------------------------------------------------------------------ end to end

SPEC = """import numpy as np
from porter.verify.spec import Case


def ref(src, dst):
    kept = src[src > 0]
    out = dst.copy()
    out[:kept.size] = kept[::-1]          # the kept values, in an order no scheduler need follow
    return {"dst": out, "count": np.array([kept.size], np.int32)}


KERNELS = [Case(source="k.cu", kernel="keep_positive",
    signature="src: f32[n] in, dst: f32[n] out, count: i32[1] inout, n: i32",
    grid="cdiv(n, 128)", block="128", init={"count": 0}, sizes=[{"n": 4096}], reference=ref, UNORDERED)]
"""


def test_a_compaction_verifies_against_a_reference_in_another_order(tmp_path, monkeypatch):
    (tmp_path / "k.cu").write_text(COMPACT)
    (tmp_path / "verify_spec.py").write_text(SPEC.replace("UNORDERED", 'unordered=("dst",)'))
    results = run_spec(monkeypatch, tmp_path / "verify_spec.py")
    assert sorted((r.target, r.variant) for r in results) == \
        [("opencl", "-"), ("vulkan", "sg16"), ("vulkan", "sg4"), ("vulkan", "sg8")]
    assert all(r.status == "pass" for r in results), [(r.target, r.variant, r.message) for r in results]
    assert all(f"dst ({MULTISET}): ok" in r.message for r in results)


@pytest.mark.parametrize("unordered, ref_change, first", [
    ("", "", "dst: "),                                          # positional: the reversed order differs
    ('unordered=("dst",)', "kept = kept[1:]", f"dst ({MULTISET}): "),   # one element lost
    ('unordered=("dst",)', "kept = kept + 1", f"dst ({MULTISET}): ")])  # other values
def test_a_compaction_against_a_wrong_reference_fails(tmp_path, monkeypatch, unordered, ref_change, first):
    (tmp_path / "k.cu").write_text(COMPACT)
    spec = SPEC.replace(", UNORDERED", (", " + unordered) if unordered else "")
    spec = spec.replace("    out = dst.copy()", f"    {ref_change}\n    out = dst.copy()" if ref_change else
                        "    out = dst.copy()")
    (tmp_path / "verify_spec.py").write_text(spec)
    (r,) = run_spec(monkeypatch, tmp_path / "verify_spec.py", targets=("opencl",))
    assert r.status == "FAIL" and r.message.startswith(first), r.message


@needs_cpu_targets
def test_a_compaction_verifies_without_a_spec_on_lavapipe_and_pocl(tmp_path):
    (tmp_path / "k.cu").write_text(COMPACT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VK_ICD_FILENAMES": LAVAPIPE_ICD}
    p = subprocess.run([sys.executable, "-m", "porter", "verify", str(tmp_path / "k.cu"), "--portability-fixes",
                        "--targets", "vulkan,opencl", "--output-format", "json", "-j", "1"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert sorted((r["target"], r["variant"], r["status"]) for r in doc["results"]) == \
        [("opencl", "-", "pass"), ("vulkan", "sg16", "pass"), ("vulkan", "sg4", "pass"), ("vulkan", "sg8", "pass")]
    assert len(doc["differential"]) == 6 and all(d["ok"] for d in doc["differential"])
    assert all(d["message"].endswith(f"; dst {MULTISET})") for d in doc["differential"])
    assert "'dst' is written at positions claimed by an atomic (`dst[pos] = v`)" in p.stderr
