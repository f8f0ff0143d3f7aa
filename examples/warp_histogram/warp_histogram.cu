// Histogram with one private bin array per warp (fewer atomic collisions), merged per block at the end.
// `bins[WARPS * BINS]` (warp w's bins at w * BINS) and both loops over warps are sized for warps of 32: on
// subgroups of 4 or 8 lanes a 256-thread block has 64 or 32 warps and `bins[warp * BINS + b]` leaves the array.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define BLOCK 256
#define BINS 16
#define WARPS (BLOCK / 32)

__global__ void warp_histogram(const int* in, unsigned int* hist, int n)
{
    __shared__ unsigned int bins[WARPS * BINS];
    int tid = threadIdx.x;
    int warp = tid / 32;

    if (tid < BINS)
        for (int w = 0; w < WARPS; ++w) bins[w * BINS + tid] = 0u;
    __syncthreads();

    for (int i = blockIdx.x * BLOCK + tid; i < n; i += gridDim.x * BLOCK)
        atomicAdd(&bins[warp * BINS + in[i] % BINS], 1u);
    __syncthreads();

    if (tid < BINS) {
        unsigned int s = 0u;
        for (int w = 0; w < WARPS; ++w) s += bins[w * BINS + tid];
        atomicAdd(&hist[tid], s);
    }
}

int main()
{
    const int n = 1 << 20;
    const int grid = 64;
    int* h_in = (int*)malloc(n * sizeof(int));
    unsigned int h_hist[BINS] = {0};
    for (int i = 0; i < n; ++i) h_in[i] = (i * 7) % 1000;
    int* d_in;
    unsigned int* d_hist;
    cudaMalloc(&d_in, n * sizeof(int));
    cudaMalloc(&d_hist, sizeof(h_hist));
    cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(d_hist, h_hist, sizeof(h_hist), cudaMemcpyHostToDevice);
    warp_histogram<<<grid, BLOCK>>>(d_in, d_hist, n);
    cudaMemcpy(h_hist, d_hist, sizeof(h_hist), cudaMemcpyDeviceToHost);
    unsigned long long total = 0;
    for (int b = 0; b < BINS; ++b) total += h_hist[b];
    printf("warp_histogram: %llu values binned (expected %d)\n", total, n);
    cudaFree(d_in);
    cudaFree(d_hist);
    free(h_in);
    return 0;
}
