"""`&(d[i])` passed to a call cuport resolves to no device function it translates (HeCBench blockAccess /
warpexchange: `LoadInteger(storage).Load(&(d[i]), items, n)` on a BlockLoad, a class template holding a reference):
the refusal names the call and why its class is not translated, at the address (it used to say only "taking an
address outside a pointer context"). Without the reference member the call translates: test_member_templates.py."""
import pytest

from kernel_helpers import assert_refused_at

LOADER = """template <int N>
struct Loader {
  int &tid;
  __device__ Loader(int &t) : tid(t) {}
  template <typename It>
  __device__ void Load(It it, int (&items)[N], int valid) {
    for (int k = 0; k < N; k++)
      if (tid * N + k < valid) items[k] = it[tid * N + k];
  }
};
template <int B>
__global__ void k(const int *d, int *o, int n) {
  int vals[4] = {0, 0, 0, 0};
  int i = blockIdx.x * blockDim.x * 4, t = threadIdx.x;
  Loader<B>(t).Load(&(d[i]), vals, n - i);
  for (int k = 0; k < 4; k++) o[i + threadIdx.x * 4 + k] = vals[k];
}
void host(const int *d, int *o, int n) { k<4><<<1, 64>>>(d, o, n); }
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_the_refusal_names_the_unresolved_member_call(tmp_path, target):
    # in a template kernel (as in HeCBench) clang leaves the call unresolved: the refusal is at the address
    assert_refused_at(tmp_path, target, LOADER, 15, "the address `&(d[i])` passed to `Load`, which is no device "
                      "function cuport translates (a member function of `Loader<N>` (struct template `Loader` holds a "
                      "reference (`tid`)", column=21)
