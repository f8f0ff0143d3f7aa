// Block max and argmax in two levels: a shuffle reduction of (value, index) pairs in every warp, one pair
// per warp in `sval[32]` / `sidx[32]`, then `if (warp == 0)` the first warp reduces the pairs. It assumes
// at most 32 warps, each of 32 lanes, and that one warp can hold every warp's pair.
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define BLOCK 256

__device__ void warp_argmax(float& v, int& idx)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        float ov = __shfl_down_sync(0xffffffff, v, offset);
        int oi = __shfl_down_sync(0xffffffff, idx, offset);
        if (ov > v || (ov == v && oi < idx)) {
            v = ov;
            idx = oi;
        }
    }
}

__global__ void argmax_two_level(const float* in, float* out_val, int* out_idx, int n)
{
    __shared__ float sval[32];
    __shared__ int sidx[32];
    int tid = threadIdx.x;
    int lane = tid & 31;
    int warp = tid >> 5;
    int i = blockIdx.x * BLOCK + tid;

    float v = i < n ? in[i] : -FLT_MAX;
    int idx = i < n ? i : n;
    warp_argmax(v, idx);
    if (lane == 0) {
        sval[warp] = v;
        sidx[warp] = idx;
    }
    __syncthreads();

    if (warp == 0) {
        v = lane < BLOCK / 32 ? sval[lane] : -FLT_MAX;
        idx = lane < BLOCK / 32 ? sidx[lane] : n;
        warp_argmax(v, idx);
        if (lane == 0) {
            out_val[blockIdx.x] = v;
            out_idx[blockIdx.x] = idx;
        }
    }
}

int main()
{
    const int n = 1 << 20;
    const int grid = (n + BLOCK - 1) / BLOCK;
    float* h_in = (float*)malloc(n * sizeof(float));
    float* h_val = (float*)malloc(grid * sizeof(float));
    int* h_idx = (int*)malloc(grid * sizeof(int));
    for (int i = 0; i < n; ++i) h_in[i] = (float)((i * 7919) % 10007);
    float *d_in, *d_val;
    int* d_idx;
    cudaMalloc(&d_in, n * sizeof(float));
    cudaMalloc(&d_val, grid * sizeof(float));
    cudaMalloc(&d_idx, grid * sizeof(int));
    cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
    argmax_two_level<<<grid, BLOCK>>>(d_in, d_val, d_idx, n);
    cudaMemcpy(h_val, d_val, grid * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(h_idx, d_idx, grid * sizeof(int), cudaMemcpyDeviceToHost);
    printf("argmax_two_level: block 0 max %.0f at %d\n", h_val[0], h_idx[0]);
    cudaFree(d_in);
    cudaFree(d_val);
    cudaFree(d_idx);
    free(h_in);
    free(h_val);
    free(h_idx);
    return 0;
}
