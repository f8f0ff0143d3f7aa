// AddKernel from the HIP programming-model article (seed 004) and a bounds-checked SAXPY.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// As printed in the seed: no bounds check, so n must be a multiple of the block size.
__global__ void AddKernel(float* a, const float* b)
{
    int global_idx = threadIdx.x + blockIdx.x * blockDim.x;
    a[global_idx] += b[global_idx];
}

__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

int main()
{
    const int n = 1 << 20;
    const int threads_per_block = 256;
    const int number_of_blocks = (n + threads_per_block - 1) / threads_per_block;
    size_t bytes = n * sizeof(float);

    float* hx = (float*)malloc(bytes);
    float* hy = (float*)malloc(bytes);
    for (int i = 0; i < n; ++i) {
        hx[i] = 1.0f;
        hy[i] = 2.0f;
    }

    float *dx, *dy;
    cudaMalloc(&dx, bytes);
    cudaMalloc(&dy, bytes);
    cudaMemcpy(dx, hx, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, hy, bytes, cudaMemcpyHostToDevice);

    AddKernel<<<number_of_blocks, threads_per_block>>>(dy, dx);      // y = 3
    saxpy<<<number_of_blocks, threads_per_block>>>(n, 2.0f, dx, dy); // y = 5
    cudaMemcpy(hy, dy, bytes, cudaMemcpyDeviceToHost);

    int errors = 0;
    for (int i = 0; i < n; ++i)
        if (hy[i] != 5.0f) ++errors;
    printf("saxpy: %d errors\n", errors);

    cudaFree(dx);
    cudaFree(dy);
    free(hx);
    free(hy);
    return errors != 0;
}
