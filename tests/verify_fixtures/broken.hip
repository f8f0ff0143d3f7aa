#include <hip/hip_runtime.h>
// Does not compile: the compile-error fixture for hip-amd.
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    y[0] = undefined_function(a);
}
