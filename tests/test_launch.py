"""Launch-shape resolution (porter/analysis/launch.py) and per-thread evaluation (porter/analysis/ (thread_code, enumeration, intervals))."""
import pytest

from porter.analysis.affine import analysis
from porter.frontend.build import build_model
from porter.analysis.annotations import parse_annotation
from porter.analysis.launch import UNKNOWN, Shape, block_shape, block_shapes, fold_text, launch_bounds, thread_ranges
from porter.analysis.intervals import Intervals, relations
from porter.analysis.barriers import barrier_functions
from porter.analysis.enumeration import always_enters, enumerate_access, function_accesses
from porter.source import SourceFile


def model(text, name="t.cu"):
    return build_model(SourceFile(name, text))


def kernel(m, name):
    return next(f for f in m.functions if f.name == name and f.body is not None)


SITES = """
#define BN 128
#define TN 8
constexpr int kRows = 4;
__global__ void a(float *x) { x[threadIdx.x] = 0; }
__global__ void b(float *x) { x[threadIdx.x] = 0; }
template <int BS> __global__ void c(float *x) { x[threadIdx.x] = BS; }
__global__ void d(float *x) { x[threadIdx.x] = 0; }
__global__ void e(float *x) { x[threadIdx.x] = 0; }
__global__ void f(float *x) { x[threadIdx.x] = 0; }
template <int TB> void run(float *x) { d<<<1, TB>>>(x); }
void wrap(float *x, dim3 blk) { e<<<1, blk>>>(x); }
void host(float *x, int n) {
  dim3 block(BN / TN, kRows);
  a<<<n, block>>>(x);
  b<<<n, dim3(32, 2, 2), 1024>>>(x);
  c<64><<<n, 64>>>(x);
  run<96>(x);
  wrap(x, dim3(8, 8));
  int t = n;
  f<<<1, t>>>(x);
}
void caller(float *x) { wrap(x, dim3(8, 8)); }
"""


def test_shapes_from_launch_sites():
    m = model(SITES)
    s = block_shape(m, "a")
    assert (s.dims, s.source, s.exact, s.text, s.line) == ((16, 4, 1), "launch site", True, "block", 15)
    s = block_shape(m, "b")
    assert s.dims == (32, 2, 2) and s.dynamic_shared == 1024 and s.threads == 128
    s = block_shape(m, "c")
    assert s.dims == (64, 1, 1) and s.bindings == (("BS", 64),)       # template argument of the kernel
    assert block_shape(m, "d").dims == (96, 1, 1)                       # templated wrapper run<96>
    assert block_shape(m, "e").dims == (8, 8, 1)                        # dim3 parameter of a wrapper
    s = block_shape(m, "f")                                             # `t = n`: not a constant
    assert s is UNKNOWN and not s.exact and s.max_threads == 1024


def test_config_and_annotation_win_over_launch_sites():
    text = SITES.replace("__global__ void b(", "// cuport: launch block=(64, 2)\n__global__ void b(")

    class Settings:
        launch = {"a": {"block": [8, 8, 1]}}
    m = model(text)
    s = block_shape(m, "a", Settings())
    assert (s.dims, s.source, s.exact) == ((8, 8, 1), "config", True)
    s = block_shape(m, "b", Settings())
    assert (s.dims, s.source, s.line) == ((64, 2, 1), "annotation", 6)
    assert "from the annotation at line 6" in s.describe()


def test_annotation_naming_a_kernel_anywhere():
    m = model("/* cuport: launch k2 block=16x16 shared=2048 */\n"
              "__global__ void k1(float *x) { x[0] = 0; }\n__global__ void k2(float *x) { x[0] = 0; }\n")
    assert block_shape(m, "k2").dims == (16, 16, 1)
    assert block_shape(m, "k2").dynamic_shared == 2048
    assert block_shape(m, "k1").source == "unknown"


def test_annotation_grammar():
    assert parse_annotation("launch block=(16,16)")["block"] == (16, 16, 1)
    assert parse_annotation("launch block=[32, 8, 2]")["block"] == (32, 8, 2)
    assert parse_annotation("launch block=256")["block"] == (256, 1, 1)
    p = parse_annotation("launch kernel=sgemm block=16x16, grid=(8, 8) smem=4096")
    assert (p["kernel"], p["block"], p["grid"], p["shared"]) == ("sgemm", (16, 16, 1), (8, 8, 1), 4096)
    with pytest.raises(ValueError):
        parse_annotation("launch block=(16,")
    with pytest.raises(ValueError):
        parse_annotation("launch block=(0, 4)")


def test_launch_bounds_and_fallback_shape():
    m = model("#define NT 256\n#define MB 2\n"
              "__global__ void __launch_bounds__(NT, MB) k(float *x) { x[threadIdx.x] = 0; }\n"
              "__global__ void __launch_bounds__(NT * 2) k2(float *x) { x[threadIdx.x] = 0; }\n")
    lb = launch_bounds(m, kernel(m, "k"))
    assert (lb.max_threads, lb.min_blocks, lb.args, lb.line) == (256, 2, ("NT", "MB"), 3)
    s = block_shape(m, "k2")
    assert (s.dims, s.source, s.exact, s.max_threads) == (None, "launch_bounds", False, 512)
    assert "up to 512 threads" in s.describe()
    assert thread_ranges(s)["threadIdx.x"] == (0, 511)


def test_several_launch_shapes_are_all_kept():
    m = model("__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
              "void h(float *x) { k<<<1, 128>>>(x); k<<<1, 256>>>(x); k<<<1, 128>>>(x); }\n")
    shapes = block_shapes(m, "k")
    assert [s.dims for s in shapes] == [(128, 1, 1), (256, 1, 1)]
    assert block_shape(m, "k").alternatives[0].dims == (256, 1, 1)


def test_shape_text_and_ranges():
    s = Shape((16, 16, 1), "launch site", True, 256, 114)
    assert s.label() == "(16, 16)" and s.describe() == "the launch block (16, 16) (from the launch site at line 114)"
    assert thread_ranges(s) == {"threadIdx.x": (0, 15), "threadIdx.y": (0, 15), "threadIdx.z": (0, 0)}


def test_fold_text():
    m = model("#define A 16\n#define B (A * 2 + 1)\nconstexpr int C = 3;\nenum { D = 5 };\n")
    assert fold_text(m, "B") == 33
    assert fold_text(m, "C << 2") == 12
    assert fold_text(m, "D % 3") == 2
    assert fold_text(m, "T / 2", {"T": 64}) == 32
    assert fold_text(m, "unknown_name") is None


KERNEL = """
__global__ void k(float *out, int n) {
  __shared__ float s[64];
  unsigned t = threadIdx.x;
  for (int i = 0; i < 4; ++i)
    if (t % 2 == 0) s[t * 4 + i] = out[t];
  __syncthreads();
  for (unsigned h = 32; h > 0; h >>= 1) {
    if (t < h) s[t] += s[t + h];
    __syncthreads();
  }
  out[t] = s[0];
}
void run(float *o) { k<<<1, 16>>>(o, 1); }
"""


def test_enumeration_ranges_guards_and_loops():
    m = model(KERNEL)
    fn = kernel(m, "k")
    comp, infos = function_accesses(m, analysis(m), fn, (16, 1, 1), {})
    first = infos[0]                                   # s[t * 4 + i], only even t
    sp = enumerate_access(comp, first.subs, first.guards, "range")
    assert sp.ok and (sp.lo[0], sp.hi[0]) == (0, 59) and sp.whi[0] == (14, 0, 0)
    iv = comp.interval(first.subs[0])                  # guards ignored: a sound over-approximation
    assert (iv.lo, iv.hi) == (0, 63)
    loop = infos[1].loops[0]                           # `for (h = 32; h > 0; h >>= 1)` around s[t] += s[t + h]
    assert loop.name == "h"
    assert loop.barrier and comp.loop_interval(loop).lo == 1 and always_enters(comp, loop.node)


def test_barrier_intervals():
    m = model(KERNEL)
    fn = kernel(m, "k")
    comp, infos = function_accesses(m, analysis(m), fn, (16, 1, 1), {})
    iv = Intervals(fn, [i.node for i in infos], barrier_functions(m), lambda n: always_enters(comp, n))
    first, wr, rd, last = infos[0], infos[1], infos[2], infos[-1]
    tags = iv.tags
    assert relations(tags[id(first.node)], tags[id(first.node)]) == {frozenset()}
    assert relations(tags[id(first.node)], tags[id(wr.node)]) == set()        # a barrier separates them
    assert relations(tags[id(rd.node)], tags[id(wr.node)]) == {frozenset()}   # one statement, one interval
    assert relations(tags[id(wr.node)], tags[id(last.node)]) == set()         # the loop ends with a barrier
    assert relations(tags[id(first.node)], tags[id(last.node)]) == set()      # the loop always runs


AGREE = """
#define BN 128
constexpr int kRows = 4;
__global__ void a(float *x) { x[threadIdx.x] = 0; }
__global__ void b(float *x) { x[threadIdx.x] = 0; }
__global__ void c(float *x) { x[threadIdx.x] = 0; }
__global__ void d(float *x) { x[threadIdx.x] = 0; }
__global__ void e(float *x) { x[threadIdx.x] = 0; }
void host(float *x, int n) {
    int threads = 48;
    a<<<n, threads>>>(x);
    b<<<n, dim3(BN / 4, kRows)>>>(x);
    dim3 blk(16, 16);
    c<<<n, blk>>>(x);
    dim3 moved(8, 8);
    moved.x = n;
    d<<<n, moved>>>(x);
    e<<<n, n>>>(x);
}
"""


def test_the_translators_and_the_rules_see_the_same_block():
    """One module answers "what block does this launch use" for both (they disagreed: (48,1,1) vs (None,1,1))."""
    from porter.analysis.launch import launch_shapes
    m = model(AGREE)
    want = {"a": [48, 1, 1], "b": [32, 4, 1], "c": [16, 16, 1], "d": None, "e": None}
    for k, block in want.items():
        site = launch_shapes(m, k)[0].block
        exact = block_shape(m, k)
        if block is None:
            assert None in site and not exact.exact, k           # a member write or a run-time size: unknown
        else:
            assert site == block and exact.exact and list(exact.dims) == block, k
