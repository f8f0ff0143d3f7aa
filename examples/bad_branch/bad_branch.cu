// Divergent branches inside a warp (seed 000): both paths run one after the other.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// This looks innocent but murders performance
__global__ void bad_branch(float* data, int n) {
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    if (tid < n) {
        if (data[tid] > 0.0f) {
            data[tid] = sqrtf(data[tid]);    // Path A
        } else {
            data[tid] = -sqrtf(-data[tid]);  // Path B
        }
    }
}

// Same divergence, forced by the thread index: odd and even lanes of every warp take different paths.
__global__ void bad_branch_parity(float* data, int n) {
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    if (tid < n) {
        if (threadIdx.x % 2 == 0) {
            data[tid] = sqrtf(fabsf(data[tid]));
        } else {
            data[tid] = -sqrtf(fabsf(data[tid]));
        }
    }
}

int main()
{
    const int n = 1 << 20;
    const int block = 256;
    const int grid = (n + block - 1) / block;
    size_t bytes = n * sizeof(float);

    float* h = (float*)malloc(bytes);
    for (int i = 0; i < n; ++i)
        h[i] = (i % 2 == 0) ? 4.0f : -9.0f;

    float* d;
    cudaMalloc(&d, bytes);
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    bad_branch<<<grid, block>>>(d, n);
    cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
    printf("bad_branch: %f %f\n", h[0], h[1]);

    bad_branch_parity<<<grid, block>>>(d, n);
    cudaDeviceSynchronize();

    cudaFree(d);
    free(h);
    return 0;
}
