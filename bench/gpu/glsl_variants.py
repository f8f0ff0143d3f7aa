"""Hand-edited variants of cuport's GLSL translations, timed against the translation itself on one Vulkan GPU:
which code-generation change would close a gap to CUDA (docs/performance.md, "measure, don't guess").

    python3 bench/gpu/glsl_variants.py [--repeat 30] [--json out.json]

Per case: the translation and each variant are set up in this process (one Vulkan device), checked against the
NumPy reference after their first launch, warmed up (20 launches each), then timed in interleaved rounds (one
launch of each per round, GPU timestamps). Prints median ms, IQR and speed relative to the translation."""
from __future__ import annotations

import argparse
import json
import re
import sys

import numpy as np


def _sub(text: str, old: str, new: str, count: int = 1) -> str:
    if text.count(old) != count:
        raise SystemExit(f"variant: expected {count} x {old!r} in the translation, found {text.count(old)}")
    return text.replace(old, new)


def sgemm_vec4_shared(t: str) -> str:
    """The shared tiles as vec4 rows: the thread tile's 8 As / 8 Bs reads become two 128-bit loads each,
    as NVRTC's LDS.128 for the CUDA original."""
    t = _sub(t, "shared float As[8][132];", "shared vec4 As4[8][33];")
    t = _sub(t, "shared float Bs[8][128];", "shared vec4 Bs4[8][32];")
    t = _sub(t, "As[c][r] = ", "As4[c][r >> 2][r & 3] = ")
    t = _sub(t, "Bs[r][c] = ", "Bs4[r][c >> 2][c & 3] = ")
    t = _sub(t, "a_reg[m] = As[kk][ty * TM + m];", "a_reg[m] = As4[kk][ty * 2 + (m >> 2)][m & 3];")
    t = _sub(t, "b_reg[n] = Bs[kk][tx * TN + n];", "b_reg[n] = Bs4[kk][tx * 2 + (n >> 2)][n & 3];")
    return t


def sgemm_vec4_regs(t: str) -> str:
    """vec4 shared tiles read into vec4 registers (a_reg / b_reg as two vec4 each)."""
    t = sgemm_vec4_shared(t)
    t = _sub(t, "float a_reg[8];", "vec4 a4[2];")
    t = _sub(t, "float b_reg[8];", "vec4 b4[2];")
    t = re.sub(r"\[\[unroll\]\] for \(int m = 0; m < TM; m\+\+\) \{\n\s*a_reg\[m\] = [^\n]*\n\s*\}",
               "a4[0] = As4[kk][ty * 2]; a4[1] = As4[kk][ty * 2 + 1];", t)
    t = re.sub(r"\[\[unroll\]\] for \(int n = 0; n < TN; n\+\+\) \{\n\s*b_reg\[n\] = [^\n]*\n\s*\}",
               "b4[0] = Bs4[kk][tx * 2]; b4[1] = Bs4[kk][tx * 2 + 1];", t)
    return _sub(t, "accum[m][n] += a_reg[m] * b_reg[n];", "accum[m][n] += a4[m >> 2][m & 3] * b4[n >> 2][n & 3];")


def sgemm_hoisted_index(t: str) -> str:
    """the loop-invariant tile coordinates computed once before the k loop (ptxas hoists them for CUDA; the NVIDIA
    Vulkan driver recomputed them every k step). The translation already writes them as shifts and masks."""
    t = _sub(t, "    for (int k = 0; k < K; k += BK) {",
             "    int a_r[4], a_c[4], b_r[4], b_c[4];\n"
             "    [[unroll]] for (int i = 0; i < 4; i++) {\n"
             "        int idx = tid + i * NTHREADS;\n"
             "        a_r[i] = idx >> 3; a_c[i] = idx & 7; b_r[i] = idx >> 7; b_c[i] = idx & 127;\n"
             "    }\n"
             "    for (int k = 0; k < K; k += BK) {")
    t = _sub(t, "int r = idx >> 3;", "int r = a_r[i];")
    t = _sub(t, "int c = idx & 7;", "int c = a_c[i];")
    t = _sub(t, "int r = idx >> 7;", "int r = b_r[i];")
    return _sub(t, "int c = idx & 127;", "int c = b_c[i];")


def sgemm_vec4_accum(t: str) -> str:
    """the 8x8 accumulators as 16 vec4 (the driver copied ~30 accumulators with MOVs at every k step's end)."""
    t = _sub(t, "float accum[8][8];", "vec4 accum[8][2];")
    t = _sub(t, "accum[m][n] = 0.0;", "accum[m][n >> 2][n & 3] = 0.0;")
    t = _sub(t, "accum[m][n] += a_reg[m] * b_reg[n];", "accum[m][n >> 2][n & 3] += a_reg[m] * b_reg[n];")
    return _sub(t, "C[row * N + col] = accum[m][n];", "C[row * N + col] = accum[m][n >> 2][n & 3];")


def sgemm_all(t: str) -> str:
    """hoist + vec4 accumulators + vec4 tiles and registers."""
    t = sgemm_vec4_regs(sgemm_hoisted_index(t))
    t = _sub(t, "float accum[8][8];", "vec4 accum[8][2];")
    t = _sub(t, "accum[m][n] = 0.0;", "accum[m][n >> 2][n & 3] = 0.0;")
    t = _sub(t, "accum[m][n] += a4", "accum[m][n >> 2][n & 3] += a4")
    return _sub(t, "C[row * N + col] = accum[m][n];", "C[row * N + col] = accum[m][n >> 2][n & 3];")


def restrict_all(t: str) -> str:
    """every storage buffer restrict (not what the CUDA code promises: measured only)."""
    return re.sub(r"\) (writeonly |readonly )?buffer ", lambda m: f") {m.group(1) or ''}restrict buffer ", t)


def no_readonly(t: str) -> str:
    """storage buffers without `readonly`: the NVIDIA driver loads readonly ones with LDG.E.CONSTANT (the
    non-coherent path) where nvcc emits LDG.E for a `const float*` without __restrict__ (round-4 SASS)."""
    out = re.sub(r"\) readonly (restrict )?buffer ", lambda m: f") {m.group(1) or ''}buffer ", t)
    if out == t:
        raise SystemExit("variant: no readonly buffer in the translation")
    return out


def _scoped(t: str, call: str) -> str:
    if "barrier();" not in t:
        raise SystemExit("variant: no barrier() in the translation")
    t = t.replace("barrier();", call)
    return re.sub(r"(#version 450\n)", r"\1#extension GL_KHR_memory_scope_semantics : require\n", t, count=1)


def scoped_barrier(t: str) -> str:
    """barrier() spelled as the explicit controlBarrier with the same semantics (workgroup scope, shared memory,
    acquire-release): does the spelling change the driver's BAR.SYNC?"""
    return _scoped(t, "controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsShared, "
                      "gl_SemanticsAcquireRelease);")


def execution_only_barrier(t: str) -> str:
    """barrier() as an execution barrier with no memory semantics (not a correct translation under the Vulkan
    memory model; measured only: is BAR.SYNC vs BAR.SYNC.DEFER_BLOCKING the memory-semantics part?)"""
    return _scoped(t, "controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsNone, "
                      "gl_SemanticsRelaxed);")


def reduce_lane_from_local_id(t: str) -> str:
    """lane and warp from the local id (`tid & 31`, `tid >> 5`, as nvcc computes them) instead of the subgroup
    builtins (S2R SR_LANEID); only right where subgroups are consecutive 32-invocation ranges: measured only."""
    t = _sub(t, "int lane = int(gl_SubgroupInvocationID);", "int lane = int(gl_LocalInvocationID.x & 31u);")
    return _sub(t, "int warp = int(gl_SubgroupID);", "int warp = int(gl_LocalInvocationID.x >> 5u);")


def reduce_small_shared(t: str) -> str:
    """the per-warp partials array at CUDA's 32 slots (128 bytes; the translation sizes it for subgroups of 4)."""
    out = re.sub(r"shared float (\w+)\[64\];", r"shared float \1[32];", t)
    if out == t:
        raise SystemExit("variant: no 64-slot shared array in the translation")
    return out


def reduce_cuda_like(t: str) -> str:
    """everything CUDA-like at once: lane from the local id, 32 slots, no lane guard."""
    return reduce_no_guard(reduce_small_shared(reduce_lane_from_local_id(t)))


def reduce_no_readonly_no_guard(t: str) -> str:
    return reduce_no_guard(no_readonly(t))


def particle_vec2(t: str) -> str:
    """particle_step: state read and written as vec2 (24-byte records are 8-byte aligned)."""
    t = _sub(t, "buffer state_buf { float state[]; };", "buffer state_buf { vec2 state2[]; };")
    t = _sub(t, "vec3 pos = vec3(state[6 * i], state[6 * i + 1], state[6 * i + 2]);",
             "vec2 s0 = state2[3 * i], s1 = state2[3 * i + 1], s2 = state2[3 * i + 2];\n"
             "    vec3 pos = vec3(s0, s1.x);")
    t = _sub(t, "vec3 vel = vec3(state[6 * i + 3], state[6 * i + 4], state[6 * i + 5]);", "vec3 vel = vec3(s1.y, s2);")
    t = re.sub(r"    state\[6 \* i\] = pos\.x;\n(    state\[6 \* i \+ \d\] = \w+\.\w;\n){5}",
               "    state2[3 * i] = pos.xy;\n    state2[3 * i + 1] = vec2(pos.z, vel.x);\n"
               "    state2[3 * i + 2] = vel.yz;\n", t)
    return t


def reduce_literal_32(t: str) -> str:
    """warp_reduce: the subgroup size as the literal 32 (is the spec constant folded?)."""
    return re.sub(r"#define cuport_subgroup_size \(.*\)", "#define cuport_subgroup_size 32u", t)


def reduce_no_guard(t: str) -> str:
    """warp_reduce: subgroupShuffleDown's result taken as is (no own-value select for lanes past the end)."""
    return _sub(t, "return (gl_SubgroupInvocationID + d < cuport_subgroup_size) ? r : v;", "return r;")


def reduce_subgroup_add(t: str) -> str:
    """warp_reduce: each shuffle loop as one subgroupAdd (lane 0's value is the same sum)."""
    t = re.sub(r"(?:\[\[unroll\]\] )?for \(int offset = [^\n]*\n\s*v \+= cuport_shfl_down_float\(v, uint\(offset\)\);\n\s*\}",
               "v = subgroupAdd(v);", t)
    return _sub(t, "#extension GL_KHR_shader_subgroup_basic : require",
                "#extension GL_KHR_shader_subgroup_basic : require\n#extension GL_KHR_shader_subgroup_arithmetic : require")


def reduce_no_unroll(t: str) -> str:
    """the translation before [[unroll]] on the subgroup-size loops (the NVIDIA driver keeps them loops)."""
    if "[[unroll]] for (int offset" not in t:
        raise SystemExit("variant: no [[unroll]] shuffle loop in the translation")
    return t.replace("[[unroll]] for (int offset", "for (int offset")


CASES = [
    ("examples/warp_reduce/verify_spec.py", "warp_reduce", [("literal 32", reduce_literal_32),
                                                            ("no lane guard", reduce_no_guard),
                                                            ("subgroupAdd", reduce_subgroup_add),
                                                            ("no unroll", reduce_no_unroll),
                                                            ("no readonly", no_readonly),
                                                            ("scoped barrier", scoped_barrier),
                                                            ("execution-only barrier", execution_only_barrier),
                                                            ("no readonly + no guard", reduce_no_readonly_no_guard),
                                                            ("lane from local id", reduce_lane_from_local_id),
                                                            ("32 shared slots", reduce_small_shared),
                                                            ("all CUDA-like", reduce_cuda_like)]),
    ("examples/block_reduce_perwarp/verify_spec.py", "block_reduce_perwarp", [("no unroll", reduce_no_unroll),
                                                                              ("no lane guard", reduce_no_guard),
                                                                              ("no readonly", no_readonly),
                                                                              ("execution-only barrier",
                                                                               execution_only_barrier),
                                                                              ("lane from local id",
                                                                               reduce_lane_from_local_id),
                                                                              ("all CUDA-like", reduce_cuda_like)]),
    ("examples/sgemm/verify_spec.py", "sgemm_fixed", [("hoisted tile coordinates", sgemm_hoisted_index),
                                                       ("vec4 accumulators", sgemm_vec4_accum),
                                                       ("all of these", sgemm_all),
                                                       ("vec4 shared tiles", sgemm_vec4_shared),
                                                       ("vec4 tiles + vec4 regs", sgemm_vec4_regs),
                                                       ("no readonly", no_readonly),
                                                       ("execution-only barrier", execution_only_barrier)]),
    ("examples/struct_refs/verify_spec.py", "particle_step", [("restrict", restrict_all),
                                                              ("vec2 state", particle_vec2)]),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--cases", help="comma-separated case ids (default: all)")
    ap.add_argument("--small", action="store_true", help="the case's first size, not its bench size (a CPU check)")
    a = ap.parse_args(argv)
    from porter.verify.backends import vulkan
    from porter.verify.spec import load_spec
    from porter.verify.worker import translation, verdict
    want = set(a.cases.split(",")) if a.cases else None
    report = []
    for spec, cid, variants in CASES:
        if want and cid not in want:
            continue
        case = next(c for c in load_spec(spec) if c.id == cid)
        sizes = case.sizes[0] if a.small else case.bench_sizes
        text, manifest = translation(case, "vulkan")
        lanes = [("translation", text)] + [(name, fn(text)) for name, fn in variants]
        args = case.make_args(sizes)
        sessions = []
        for name, src in lanes:
            try:
                s = vulkan.open_session(case, src, manifest, sizes, args)
                s.launch()
                status, msg = verdict(case, args, sizes, s.outputs())
            except Exception as e:          # a variant that does not compile is a result too
                status, msg, s = "error", f"{e.__class__.__name__}: {str(e)[:300]}", None
            print(f"{cid:14} {name:24} {status}: {msg}", file=sys.stderr, flush=True)
            if status == "pass":
                sessions.append((name, s))
            elif s is not None:
                s.close()
        del args
        for _ in range(20):
            for _, s in sessions:
                s.launch()
        times = {name: [] for name, _ in sessions}
        for _ in range(a.repeat):
            for name, s in sessions:
                times[name].append(s.launch())
        base = float(np.median(times["translation"]))
        for name, s in sessions:
            t = np.array(times[name])
            q1, med, q3 = np.percentile(t, [25, 50, 75])
            row = {"case": cid, "variant": name, "median_ms": med, "iqr_ms": q3 - q1, "vs_translation": base / med,
                   "times": t.tolist(), "device": vulkan._context().device_name}
            report.append(row)
            print(f"{cid:14} {name:24} {med:8.4f} ms (IQR {q3 - q1:.4f})  x{base / med:.3f} vs translation",
                  flush=True)
            s.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
