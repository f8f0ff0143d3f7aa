// Block sum with warp shuffles, written the way most CUDA code is: it hard-codes a warp of 32
// (lane = tid & 31, offsets from 16, 32-bit full mask, at most 32 warps per block).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void warp_reduce(const float* in, float* out, int n)
{
    __shared__ float partial[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x / 32;

    float v = (i < n) ? in[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (lane == 0) partial[warp] = v;
    __syncthreads();

    // The first warp reduces the per-warp partials.
    if (warp == 0) {
        v = (lane < blockDim.x / 32) ? partial[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2)
            v += __shfl_down_sync(0xffffffff, v, offset);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

int main()
{
    const int n = 1 << 20;
    const int block = 256;
    const int grid = (n + block - 1) / block;

    float* h_in = (float*)malloc(n * sizeof(float));
    float* h_out = (float*)malloc(grid * sizeof(float));
    for (int i = 0; i < n; ++i) h_in[i] = 1.0f;

    float *d_in, *d_out;
    cudaMalloc(&d_in, n * sizeof(float));
    cudaMalloc(&d_out, grid * sizeof(float));
    cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);

    warp_reduce<<<grid, block>>>(d_in, d_out, n);
    cudaMemcpy(h_out, d_out, grid * sizeof(float), cudaMemcpyDeviceToHost);

    double total = 0.0;
    for (int b = 0; b < grid; ++b) total += h_out[b];
    printf("warp_reduce: %.0f (expected %d)\n", total, n);

    cudaFree(d_in);
    cudaFree(d_out);
    free(h_in);
    free(h_out);
    return 0;
}
