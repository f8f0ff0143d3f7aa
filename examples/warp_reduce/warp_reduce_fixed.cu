// The same block sum written for any warp / wavefront / subgroup size (4..64):
// lane and warp from warpSize, shuffle offsets from warpSize / 2, room for blockDim / 4 partials,
// and a full mask as wide as the platform's lane mask (HIP's *_sync shuffles take a 64-bit mask).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define MAX_THREADS 1024
#define MIN_WARP_SIZE 4

#if defined(__HIP_PLATFORM_AMD__)
typedef unsigned long long lane_mask_t;
#else
typedef unsigned int lane_mask_t;
#endif
#define FULL_MASK ((lane_mask_t)~0ull)

__device__ float warp_sum(float v)
{
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

__global__ void warp_reduce_fixed(const float* in, float* out, int n)
{
    __shared__ float partial[MAX_THREADS / MIN_WARP_SIZE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % warpSize;
    int warp = threadIdx.x / warpSize;
    int num_warps = (blockDim.x + warpSize - 1) / warpSize;

    float v = warp_sum((i < n) ? in[i] : 0.0f);
    if (lane == 0) partial[warp] = v;
    __syncthreads();

    // A narrow warp may have more partials than lanes: each lane first sums a strided slice.
    if (warp == 0) {
        float s = 0.0f;
        for (int w = lane; w < num_warps; w += warpSize)
            s += partial[w];
        s = warp_sum(s);
        if (lane == 0) out[blockIdx.x] = s;
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

    warp_reduce_fixed<<<grid, block>>>(d_in, d_out, n);
    cudaMemcpy(h_out, d_out, grid * sizeof(float), cudaMemcpyDeviceToHost);

    double total = 0.0;
    for (int b = 0; b < grid; ++b) total += h_out[b];
    printf("warp_reduce_fixed: %.0f (expected %d)\n", total, n);

    cudaFree(d_in);
    cudaFree(d_out);
    free(h_in);
    free(h_out);
    return 0;
}
