// Block sum in two levels, written for warps of 32: every warp reduces its 32 values with shuffles and
// leaves one partial in `part[BLOCK / 32]`, then the first warp sums the BLOCK / 32 partials.
// On subgroups of 4 or 8 lanes a 256-thread block has 64 or 32 warps: the partials overflow `part` and the
// first subgroup cannot hold them all; on a 64-lane wavefront half of `part` is never written.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define BLOCK 256

__device__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void block_reduce_perwarp(const float* in, float* out, int n)
{
    __shared__ float part[BLOCK / 32];
    int tid = threadIdx.x;
    int lane = tid % 32;
    int warp = tid / 32;
    int i = blockIdx.x * BLOCK + tid;

    float v = warp_sum(i < n ? in[i] : 0.0f);
    if (lane == 0) part[warp] = v;
    __syncthreads();

    if (warp == 0) {
        v = (lane < BLOCK / 32) ? part[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

int main()
{
    const int n = 1 << 20;
    const int grid = (n + BLOCK - 1) / BLOCK;
    float* h_in = (float*)malloc(n * sizeof(float));
    float* h_out = (float*)malloc(grid * sizeof(float));
    for (int i = 0; i < n; ++i) h_in[i] = 1.0f;
    float *d_in, *d_out;
    cudaMalloc(&d_in, n * sizeof(float));
    cudaMalloc(&d_out, grid * sizeof(float));
    cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
    block_reduce_perwarp<<<grid, BLOCK>>>(d_in, d_out, n);
    cudaMemcpy(h_out, d_out, grid * sizeof(float), cudaMemcpyDeviceToHost);
    double total = 0.0;
    for (int b = 0; b < grid; ++b) total += h_out[b];
    printf("block_reduce_perwarp: %.0f (expected %d)\n", total, n);
    cudaFree(d_in);
    cudaFree(d_out);
    free(h_in);
    free(h_out);
    return 0;
}
