// Shared-memory tiled matrix multiply C = A * B (A: M x K, B: K x N, row-major), the CUDA form of
// the seed's GLSL kernel: TILE_SIZE x TILE_SIZE threads, one output each, +1 padding per tile row.
// Bounds-checked, so M, N, K need not be multiples of TILE_SIZE. Build with -DTILE_SIZE=32 for 32x32.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifndef TILE_SIZE
#define TILE_SIZE 16
#endif

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float tileA[TILE_SIZE][TILE_SIZE + 1];  // +1 padding
    __shared__ float tileB[TILE_SIZE][TILE_SIZE + 1];

    int row = blockIdx.y * TILE_SIZE + threadIdx.y;
    int col = blockIdx.x * TILE_SIZE + threadIdx.x;
    int localRow = threadIdx.y;
    int localCol = threadIdx.x;
    float sum = 0.0f;

    for (int t = 0; t < (K + TILE_SIZE - 1) / TILE_SIZE; t++) {
        int tiledCol = t * TILE_SIZE + localCol;
        int tiledRow = t * TILE_SIZE + localRow;
        tileA[localRow][localCol] = (row < M && tiledCol < K) ? A[row * K + tiledCol] : 0.0f;
        tileB[localRow][localCol] = (tiledRow < K && col < N) ? B[tiledRow * N + col] : 0.0f;
        __syncthreads();

        for (int k = 0; k < TILE_SIZE; k++)
            sum += tileA[localRow][k] * tileB[k][localCol];
        __syncthreads();
    }

    if (row < M && col < N)
        C[row * N + col] = sum;
}

int main()
{
    const int M = 1000, N = 900, K = 700;
    float* hA = (float*)malloc((size_t)M * K * sizeof(float));
    float* hB = (float*)malloc((size_t)K * N * sizeof(float));
    float* hC = (float*)malloc((size_t)M * N * sizeof(float));
    for (int i = 0; i < M * K; ++i) hA[i] = 1.0f;
    for (int i = 0; i < K * N; ++i) hB[i] = 2.0f;

    float *dA, *dB, *dC;
    cudaMalloc(&dA, (size_t)M * K * sizeof(float));
    cudaMalloc(&dB, (size_t)K * N * sizeof(float));
    cudaMalloc(&dC, (size_t)M * N * sizeof(float));
    cudaMemcpy(dA, hA, (size_t)M * K * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dB, hB, (size_t)K * N * sizeof(float), cudaMemcpyHostToDevice);

    dim3 block(TILE_SIZE, TILE_SIZE);
    dim3 grid((N + TILE_SIZE - 1) / TILE_SIZE, (M + TILE_SIZE - 1) / TILE_SIZE);
    matmul_tiled<<<grid, block>>>(dA, dB, dC, M, N, K);
    cudaMemcpy(hC, dC, (size_t)M * N * sizeof(float), cudaMemcpyDeviceToHost);
    printf("matmul_tiled: C[0] = %f (expected %f)\n", hC[0], 2.0f * K);

    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(hA);
    free(hB);
    free(hC);
    return 0;
}
