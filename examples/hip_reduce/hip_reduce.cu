// Block reduction with a warp-synchronous tail (seed 000). The tail assumes a warp of 32:
// on a 64-wide wavefront it is wrong, and even on CUDA >= Volta it relies on implicit
// warp-synchronous execution (no __syncwarp between the volatile steps).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// HIP code — looks identical to CUDA but wavefront = 64
__global__ void hip_reduce(float* data, float* result, int n) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    sdata[tid] = (tid < n) ? data[tid] : 0.0f;
    __syncthreads();
    // DANGER: this reduction assumes warp size of 32
    // On AMD, the last 'unrolled' iterations need to cover 64 threads
    for (int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    // This warp-level unrolling is WRONG on AMD
    if (tid < 32) { // Should be < 64 on AMD!
        volatile float* vsmem = sdata;
        vsmem[tid] += vsmem[tid + 32];
        vsmem[tid] += vsmem[tid + 16];
        vsmem[tid] += vsmem[tid + 8];
        vsmem[tid] += vsmem[tid + 4];
        vsmem[tid] += vsmem[tid + 2];
        vsmem[tid] += vsmem[tid + 1];
    }
    // The seed stops here; write the block's sum so the result can be checked.
    if (tid == 0) result[blockIdx.x] = sdata[0];
}

int main()
{
    const int n = 256;   // one block of 256 threads, as the seed's sdata[256] implies
    float h[256];
    for (int i = 0; i < n; ++i) h[i] = 1.0f;

    float *d_data, *d_result;
    cudaMalloc(&d_data, n * sizeof(float));
    cudaMalloc(&d_result, sizeof(float));
    cudaMemcpy(d_data, h, n * sizeof(float), cudaMemcpyHostToDevice);

    hip_reduce<<<1, 256>>>(d_data, d_result, n);

    float sum = 0.0f;
    cudaMemcpy(&sum, d_result, sizeof(float), cudaMemcpyDeviceToHost);
    printf("hip_reduce: sum = %f (expected %d)\n", sum, n);

    cudaFree(d_data);
    cudaFree(d_result);
    return 0;
}
