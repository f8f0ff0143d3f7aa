"""Derived sizes that follow what the host code does at the launch (porter/verify/derive*.py), so the derived
case stays in the bounds the kernel indexes (round 8's Oclgrind reports, issue 14)."""
from porter.verify.derive import derive_file
from porter.verify.notation import eval_int, parse_expr

# `ways` is the counter of main's loop and a parameter of run(): the buffer holds n * ways elements, and `triple`
# (reading three elements per thread) is launched only where `ways` is 3
SWITCH = """#include <cstdlib>
__global__ void single(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
__global__ void triple(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[3 * i] + in[3 * i + 1] + in[3 * i + 2];
}
void run(const float *in, float *out, int n, int ways) {
  switch (ways) {
    case 1:
      single<<<(n + 255) / 256, 256>>>(in, out, n);
      break;
    LABEL
      triple<<<(n + 255) / 256, 256>>>(in, out, n);
      break;
  }
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  float *d_out;
  cudaMalloc(&d_out, n * sizeof(float));
  for (int ways = 1; ways <= 3; ways++) {
    float *d_in;
    cudaMalloc(&d_in, n * ways * sizeof(float));
    run(d_in, d_out, n, ways);
    cudaFree(d_in);
  }
  return 0;
}
"""


def derive_text(tmp_path, text, name="k.cu"):
    p = tmp_path / name
    p.write_text(text)
    return {d.kernel: d for d in derive_file(str(p))}


def elements(d, param):
    """The number of elements of buffer `param` at the derived sizes."""
    shape = next(p.shape for p in d.params if p.name == param)
    return eval_int(parse_expr(shape), dict(d.sizes), param)


def test_a_launch_under_a_case_label_takes_the_label_value_through_the_callers_loop_counter(tmp_path):
    ks = derive_text(tmp_path, SWITCH.replace("LABEL", "case 3:"))
    t, s = ks["triple"], ks["single"]
    assert t.problems == [] and t.sizes == {"n": 1000}
    assert elements(t, "in") == 3 * 1000            # not the loop's first value 1: 3 * i + 2 stays in bounds
    assert "`ways` is 3 at the launch (its `case` label at line 15), and so is `ways` passed for it at line 27" \
        in t.notes
    assert not any("first value" in n for n in t.notes)
    assert elements(s, "in") == 1000 and any("`ways` is 1 at the launch" in n for n in s.notes)
    # the switch's variable passed to the kernel itself: 3 there too
    w = derive_text(tmp_path, SWITCH.replace("LABEL", "case 3:").replace(
        "void triple(const float *in, float *out, int n)", "void triple(const float *in, float *out, int n, int w)")
        .replace("in[3 * i + 2]", "in[w * i + 2]").replace("(in, out, n);\n      break;\n  }", "(in, out, n, ways);\n"
                                                            "      break;\n  }"))["triple"]
    assert w.signature == "in: f32[n * 3] in, out: f32[n] out, n: i32, w: i32 = 3" and w.problems == []
    # two labels on one statement: the nearest (3) is a value the launch runs with
    t2 = derive_text(tmp_path, SWITCH.replace("LABEL", "case 2: case 3:"))["triple"]
    assert elements(t2, "in") == 3 * 1000 and any("`ways` is 3 at the launch" in n for n in t2.notes)


# the value bound at the launch is the one every use sees: the kernel's `m` and the buffer allocated with m bytes
LENGTH = """#include <cstdlib>
#include <cstring>
__global__ void find(const char *text, int n, const char *pat, int m, int *hits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n - m) hits[i] = text[i] == pat[m - 1];
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  int m = (int) strlen(argv[2]);
  char *d_text, *d_pat;
  int *d_hits;
  cudaMalloc(&d_text, n);
  cudaMalloc(&d_pat, m);
  cudaMalloc(&d_hits, (n - m + 1) * sizeof(int));
  if (m == 1)
    find<<<(n + 255) / 256, 256>>>(d_text, n, d_pat, m, d_hits);
  return 0;
}
"""


def test_the_bound_value_sizes_the_buffers_and_the_scalar_alike(tmp_path):
    (d,) = derive_text(tmp_path, LENGTH).values()
    assert d.problems == [] and d.sizes == {"n": 1000}
    assert d.signature == "text: i8[n] in, n: i32, pat: i8[1] in, m: i32 = 1, hits: i32[(n - 1) + 1] out"


def test_no_case_value_is_taken_under_default_or_after_a_break(tmp_path):
    for label in ("default:", "case 3: break;"):
        t = derive_text(tmp_path, SWITCH.replace("LABEL", label))["triple"]
        assert not any("at the launch (its" in n for n in t.notes), label
        # the old reading: the loop's first value (what the program does under default is not known here)
        assert elements(t, "in") == 1000, label
        assert "`ways` is the counter of the loop at line 24: its first value 1 taken" in t.notes, label


def test_a_launch_in_the_then_branch_of_an_equality_takes_its_value(tmp_path):
    body = """      single<<<(n + 255) / 256, 256>>>(in, out, n);
    } else if (ways == 3) {
      triple<<<(n + 255) / 256, 256>>>(in, out, n);
    }"""
    src = SWITCH.replace("""  switch (ways) {
    case 1:
      single<<<(n + 255) / 256, 256>>>(in, out, n);
      break;
    LABEL
      triple<<<(n + 255) / 256, 256>>>(in, out, n);
      break;
  }""", "  if (ways == 1) {\n" + body)
    assert "switch" not in src
    ks = derive_text(tmp_path, src)
    assert elements(ks["triple"], "in") == 3 * 1000 and elements(ks["single"], "in") == 1000
    assert any("`ways` is 3 at the launch (its `if` at line 13)" in n for n in ks["triple"].notes)
    # `!=` says nothing of the value in its then-branch
    ne = derive_text(tmp_path, src.replace("ways == 3", "ways != 1"))["triple"]
    assert elements(ne, "in") == 1000 and not any("at the launch (its" in n for n in ne.notes)


# a struct field the program sets in a creator function of another file, from the creator's parameter: the
# kernel's row length `hid` must be the 16 the program passes, not a run-time guess (sums holds blocks * 16)
NET_H = """typedef struct {
  int input_n;
  int hidden_n;
} NET;
NET *net_create(int n_in, int n_hidden);
void setup(int argc, char **argv);
"""
NET_CU = """#include <stdlib.h>
#include "net.h"
static NET *net_alloc(int n_in, int n_hidden) {
  NET *net = (NET *) malloc(sizeof(NET));
  net->input_n = n_in;
  net->hidden_n = n_hidden;
  return net;
}
NET *net_create(int n_in, int n_hidden) {
  return net_alloc(n_in, n_hidden);
}
NET *net_load(int n_in, int n_hidden) {
  return net_alloc(n_in, n_hidden + 1);
}
"""
TRAIN_CU = """#include <stdlib.h>
#include "net.h"
void train(NET *net);
void setup(int argc, char **argv) {
  int inputs = atoi(argv[1]);
  train(net_create(inputs, HIDDEN));
}
"""
MAIN_CU = """#include "net.h"
__global__ void partial(const float *w, float *sums, int hid) {
  int by = blockIdx.y, tx = threadIdx.x;
  sums[by * hid + tx] = w[by * 16 + tx];
}
void train(NET *net) {
  int in = net->input_n;
  int hid = net->hidden_n;
  int blocks = in / 16;
  float *d_w, *d_sums;
  cudaMalloc(&d_w, sizeof(float) * blocks * 16);
  cudaMalloc(&d_sums, sizeof(float) * blocks * 16);
  dim3 grid(1, blocks);
  partial<<<grid, 16>>>(d_w, d_sums, hid);
}
int main(int argc, char **argv) {
  setup(argc, argv);
  return 0;
}
"""


def derive_net(tmp_path, hidden, train=TRAIN_CU):
    (tmp_path / "net.h").write_text(NET_H)
    (tmp_path / "net.cu").write_text(NET_CU)
    (tmp_path / "train.cu").write_text(train.replace("HIDDEN", hidden))
    (d,) = derive_text(tmp_path, MAIN_CU, "main.cu").values()
    return d


def test_a_struct_field_every_live_write_of_which_stores_one_constant_takes_it(tmp_path):
    d = derive_net(tmp_path, "16")
    assert d.problems == [] and d.sizes == {"net_hidden_n": 16, "net_input_n": 1000}
    assert next(p.default for p in d.params if p.name == "hid") == "net_hidden_n"
    # the last thread's `by * hid + tx` is the last element of sums
    blocks = d.sizes["net_input_n"] // 16
    assert (blocks - 1) * d.sizes["net_hidden_n"] + 15 == elements(d, "sums") - 1
    assert "net_hidden_n is `net.hidden_n`: 16, what every write the program makes stores (net.cu:6: " \
           "`net->hidden_n = n_hidden`) (--sizes net_hidden_n=N)" in d.notes
    # net_load's `n_hidden + 1` is not a constant, but nothing calls net_load: its writes do not count


def test_a_struct_field_set_at_run_time_or_to_two_constants_is_not_taken_as_one(tmp_path):
    run_time = derive_net(tmp_path, "inputs")
    assert run_time.problems == [] and run_time.sizes["net_hidden_n"] == 1000
    assert "net_hidden_n is `net.hidden_n`, decided at run time: 1000 assumed (--sizes net_hidden_n=N)" \
        in run_time.notes
    # written through its address too (a command-line parser's `&net->hidden_n`): not only the constant
    parsed = derive_net(tmp_path, "16", TRAIN_CU.replace("  train(", "  NET *n2 = net_create(inputs, HIDDEN);\n"
                                                        "  sscanf(argv[2], \"%d\", &n2->hidden_n);\n  train("))
    assert parsed.problems == [] and parsed.sizes["net_hidden_n"] == 1000
    two = derive_net(tmp_path, "16", TRAIN_CU.replace("  train(net_create(inputs, HIDDEN));",
                                                      "  train(net_create(inputs, HIDDEN));\n"
                                                      "  train(net_create(inputs, 32));"))
    assert [(p.what, p.message) for p in two.problems] == [
        ("hid", "'hid': `hidden_n` of a `NET` is set to 16 and 32 by the program (net.cu:6: "
                "`net->hidden_n = n_hidden`): which the launch sees is not known")]


# the program refuses a run-time size outside what it accepts: `cells` must stay within the `cap` buffers
GUARDED = """#include <cstdio>
#include <cstdlib>
__global__ void cube(const float *in, float *out, int n, int cap) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n * n * n) out[i] = in[i] + in[cap - 1];
}
int main(int argc, char **argv) {
  const int dim = atoi(argv[1]);
  GUARD
  const int cells = dim * dim * dim;
  const int cap = 64 * 64 * 64;
  float *d_in, *d_out;
  cudaMalloc(&d_in, cap * sizeof(float));
  cudaMalloc(&d_out, cap * sizeof(float));
  cube<<<(cells + 255) / 256, 256>>>(d_in, d_out, dim, cap);
  return 0;
}
"""


def test_a_run_time_size_takes_a_value_the_programs_refusals_leave(tmp_path):
    for guard, value in [('if (dim > 64) { printf("at most 64\\n"); return 1; }', 64),
                         ("if (dim < 1 || dim > 64) return 1;", 64),
                         ("if (dim >= 64) exit(1);", 63),
                         ("if (2000 > dim) return 1;", 2000),
                         ("if (dim % 48 != 0) exit(1);", 960)]:
        (d,) = derive_text(tmp_path, GUARDED.replace("GUARD", guard)).values()
        assert d.problems == [] and d.sizes == {"n": value, "cap": 64 ** 3}, guard
        assert f"n is decided at run time (line 8): {value} assumed, the program refusing 1000 (line 9) " \
               "(--sizes n=N)" in d.notes, guard


def test_a_test_that_does_not_refuse_on_every_run_leaves_the_run_time_guess(tmp_path):
    for guard in ('if (dim > 64) printf("big\\n");',                    # goes on
                  "if (argc > 2) { if (dim > 64) return 1; }",          # only with a third argument
                  "for (int r = 0; r < 2; r++) if (dim > 64) return 1;",
                  "if (dim > 64 && argc > 2) return 1;",
                  "if (dim > 2000) return 1;",                          # 1000 is accepted
                  "if (dim < 1 || dim > 0) return 1;"):                 # nothing is accepted: not ours to pick
        (d,) = derive_text(tmp_path, GUARDED.replace("GUARD", guard)).values()
        assert d.sizes == {"n": 1000, "cap": 64 ** 3}, guard
        assert "n is decided at run time (line 8): 1000 assumed (--sizes n=N)" in d.notes, guard


# a scalar the kernel offsets its indexing with, picked from the program's data (`pick[t]`, a point index
# below n): 1000 of its own would read past `pts`
PICKED = """#include <cstdlib>
__global__ void dist(const float *pts, float *out, int n, int dim, long x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = 0.f;
    for (int d = 0; d < dim; d++) s += pts[d * n + i] - pts[d * n + x];
    out[i] = s;
  }
}
float gain(long x, const float *d_pts, float *d_out, int n, int dim) {
  dist<<<(n + 255) / 256, 256>>>(d_pts, d_out, n, dim, x);
  return 0.f;
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]), dim = atoi(argv[2]);
  long *pick = (long *) malloc(8 * sizeof(long));
  for (int t = 0; t < 8; t++) pick[t] = rand() % n;
  float *d_pts, *d_out;
  cudaMalloc(&d_pts, sizeof(float) * n * dim);
  cudaMalloc(&d_out, sizeof(float) * n);
  for (int t = 0; t < 8; t++) gain(ARG, d_pts, d_out, n, dim);
  return 0;
}
"""


def test_a_scalar_taken_from_the_programs_data_is_no_size_of_its_own(tmp_path):
    (d,) = derive_text(tmp_path, PICKED.replace("ARG", "pick[t]")).values()
    assert [(p.what, p.message) for p in d.problems] == [
        ("x", "'x': `x` is `pick[t]` (line 21), an element of the program's data `pick`: not a size the source "
              "gives")]
    # a value the source computes from sizes, or a loop counter, is still followed
    (d,) = derive_text(tmp_path, PICKED.replace("ARG", "n - 1")).values()
    assert d.problems == [] and next(p.default for p in d.params if p.name == "x") == "n - 1"
    (d,) = derive_text(tmp_path, PICKED.replace("ARG", "t")).values()
    assert d.problems == [] and next(p.default for p in d.params if p.name == "x") == "0"
