// Kernels of the guide's small program (docs/guide.md). Written, as much CUDA code is, for a warp of 32 lanes.
#pragma once

#define WARP_SIZE 32

// Per-warp sum with shuffles, then one atomic per warp: the histogram's total count.
__global__ void warp_total(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = (i < n) ? in[i] : 0;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (lane == 0) atomicAdd(out, v);
}

// y = a * x + y: nothing warp-specific.
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Counts per lane group: the warp id assumes 32 lanes too.
__global__ void per_warp_count(const int* in, int* counts, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int warp = threadIdx.x / WARP_SIZE;
    if (i < n && in[i] != 0) atomicAdd(&counts[blockIdx.x * (blockDim.x / WARP_SIZE) + warp], 1);
}
