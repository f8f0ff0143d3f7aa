"""`&(d[i])` passed to a call cuport resolves to no device function it translates (HeCBench blockAccess /
warpexchange: `LoadInteger(storage).Load(&(d[i]), items, n)` on a BlockLoad, a class template holding a reference):
the refusal names the call and why its class is not translated, at the address (it used to say only "taking an
address outside a pointer context")."""
import pytest

from kernel_helpers import assert_refused_at

LOADER = """template <int N>
struct Loader {
  int tid;
  __device__ Loader(int t) : tid(t) {}
  template <typename It>
  __device__ void Load(It it, int (&items)[N], int valid) {
    for (int k = 0; k < N; k++)
      if (tid * N + k < valid) items[k] = it[tid * N + k];
  }
};
__global__ void k(const int *d, int *o, int n) {
  int vals[4] = {0, 0, 0, 0};
  int i = blockIdx.x * blockDim.x * 4;
  Loader<4>(threadIdx.x).Load(&(d[i]), vals, n - i);
  for (int k = 0; k < 4; k++) o[i + threadIdx.x * 4 + k] = vals[k];
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_the_refusal_names_the_unresolved_member_call(tmp_path, target):
    assert_refused_at(tmp_path, target, LOADER, 14, "the address `&(d[i])` passed to `Load`, which is no device "
                      "function cuport translates (a member function of `Loader<4>` (struct template `Loader` has a "
                      "`function_template` member", column=31)
