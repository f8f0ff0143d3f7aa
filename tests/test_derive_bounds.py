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
    # two labels on one statement: the nearest (3) is a value the launch runs with
    t2 = derive_text(tmp_path, SWITCH.replace("LABEL", "case 2: case 3:"))["triple"]
    assert elements(t2, "in") == 3 * 1000 and any("`ways` is 3 at the launch" in n for n in t2.notes)


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
