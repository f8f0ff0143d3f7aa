// The guide's program: fills an array, scales it, counts it. Host code and launches; kernels in kernels.cuh.
#include <cstdio>
#include <cuda_runtime.h>
#include "kernels.cuh"

int main()
{
    const int n = 1 << 16;
    const int threads = 128, blocks = (n + threads - 1) / threads;
    int *h_in = new int[n], h_total = 0;
    for (int i = 0; i < n; ++i) h_in[i] = i % 7;
    int *d_in, *d_total, *d_counts;
    float *d_x, *d_y;
    cudaMalloc(&d_in, n * sizeof(int));
    cudaMalloc(&d_total, sizeof(int));
    cudaMalloc(&d_counts, blocks * threads * sizeof(int));      // a slot per thread: enough for any warp width
    cudaMalloc(&d_x, n * sizeof(float));
    cudaMalloc(&d_y, n * sizeof(float));
    cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(d_total, 0, sizeof(int));
    cudaMemset(d_counts, 0, blocks * threads * sizeof(int));
    cudaMemset(d_x, 0, n * sizeof(float));
    cudaMemset(d_y, 0, n * sizeof(float));
    warp_total<<<blocks, threads>>>(d_in, d_total, n);
    saxpy<<<blocks, threads>>>(n, 2.0f, d_x, d_y);
    per_warp_count<<<blocks, threads>>>(d_in, d_counts, n);
    cudaMemcpy(&h_total, d_total, sizeof(int), cudaMemcpyDeviceToHost);
    printf("total: %d\n", h_total);
    cudaFree(d_in); cudaFree(d_total); cudaFree(d_counts); cudaFree(d_x); cudaFree(d_y);
    delete[] h_in;
    return 0;
}
