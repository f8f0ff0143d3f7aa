// Hand-written HIP translation of saxpy.cu (what the translator is expected to produce).
#include <hip/hip_runtime.h>

__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main()
{
    float *x, *y;
    hipMalloc(&x, 1024 * sizeof(float));
    hipMalloc(&y, 1024 * sizeof(float));
    hipLaunchKernelGGL(saxpy, dim3(4), dim3(256), 0, 0, 1024, 2.0f, x, y);
    hipFree(x);
    hipFree(y);
    return 0;
}
