// Fixture: block sums through warp shuffles; the GLSL translations differ in the shuffle offsets.
#include <cuda_runtime.h>

__global__ void warp_reduce(const float* in, float* out, int n)
{
    __shared__ float partial[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % warpSize;
    int warp = threadIdx.x / warpSize;
    float v = (i < n) ? in[i] : 0.0f;
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < (blockDim.x + warpSize - 1) / warpSize; ++w) s += partial[w];
        out[blockIdx.x] = s;
    }
}
