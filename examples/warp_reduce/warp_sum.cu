// The classic CUDA warp reduction, written for a warp of 32: lane = threadIdx.x & 31 and shuffles from
// offset 16. Each warp adds its sum to *out. On a 64-wide wavefront or a Vulkan subgroup of 4..16 lanes the
// lane ids and offsets are wrong and the total is wrong; `cuport lint --fix` rewrites both from warpSize.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void warp_sum(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = (i < n) ? in[i] : 0;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (lane == 0) atomicAdd(out, v);
}

int main()
{
    const int n = 1000;
    int h_in[n], h_out = 0;
    for (int i = 0; i < n; ++i) h_in[i] = i % 7;
    int *d_in, *d_out;
    cudaMalloc(&d_in, n * sizeof(int));
    cudaMalloc(&d_out, sizeof(int));
    cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(d_out, &h_out, sizeof(int), cudaMemcpyHostToDevice);
    warp_sum<<<(n + 127) / 128, 128>>>(d_in, d_out, n);
    cudaMemcpy(&h_out, d_out, sizeof(int), cudaMemcpyDeviceToHost);
    printf("warp_sum: %d\n", h_out);
    return 0;
}
