// The "optimized SGEMM" of seed 000, kept EXACTLY as printed, with the seed's launch code
// (16 x 16 threads). This is the regression example: tx and ty run 0..15, but As and Bs have only
// BK = 8 rows, so As[tx][...] and Bs[ty][...] write up to 8 rows past the end of the shared tiles
// (threads with tx >= 8 or ty >= 8). On an H100 it dies with cudaErrorIllegalAddress;
// `cuport verify` must report it as a failed case (expect="fail").
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// Tiled SGEMM: C = A * B
// A is M x K, B is K x N, C is M x N
// Block tile: BM x BN, Thread tile: TM x TN
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
__global__ void sgemm_optimized(
    const float* __restrict__ A,
    const float* __restrict__ B,
    float* __restrict__ C,
    int M, int N, int K
) {
    // Block and thread indexing
    const int bx = blockIdx.x;
    const int by = blockIdx.y;
    const int tx = threadIdx.x; // 0..15
    const int ty = threadIdx.y; // 0..15
    // Shared memory tiles with padding to avoid bank conflicts
    __shared__ float As[BK][BM + 1]; // Transposed for coalescing
    __shared__ float Bs[BK][BN + 1];
    // Each thread computes a TM x TN sub-tile of C
    float accum[TM][TN] = {0.0f};
    // Register cache for A and B fragments
    float a_reg[TM];
    float b_reg[TN];
    // Base pointers
    const int row_base = by * BM;
    const int col_base = bx * BN;
    // Loop over K dimension in BK-sized tiles
    for (int k = 0; k < K; k += BK) {
        // Collaborative loading of A tile into shared memory
        // Each thread loads multiple elements
        #pragma unroll
        for (int i = 0; i < BM; i += blockDim.y) {
            int row = row_base + ty + i;
            int col = k + tx;
            if (row < M && col < K) {
                // Store transposed for bank-conflict-free access later
                As[tx][ty + i] = A[row * K + col];
            } else {
                As[tx][ty + i] = 0.0f;
            }
        }
        // Collaborative loading of B tile
        #pragma unroll
        for (int i = 0; i < BN; i += blockDim.y) {
            int row = k + ty;
            int col = col_base + tx + i;
            if (row < K && col < N) {
                Bs[ty][tx + i] = B[row * N + col];
            } else {
                Bs[ty][tx + i] = 0.0f;
            }
        }
        __syncthreads();
        // Compute TM x TN partial results
        #pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            // Load A fragment into registers
            #pragma unroll
            for (int m = 0; m < TM; m++) {
                a_reg[m] = As[kk][ty * TM + m];
            }
            // Load B fragment into registers
            #pragma unroll
            for (int n = 0; n < TN; n++) {
                b_reg[n] = Bs[kk][tx * TN + n];
            }
            // Outer product accumulation
            #pragma unroll
            for (int m = 0; m < TM; m++) {
                #pragma unroll
                for (int n = 0; n < TN; n++) {
                    accum[m][n] += a_reg[m] * b_reg[n];
                }
            }
        }
        __syncthreads();
    }
    // Write results back to global memory
    #pragma unroll
    for (int m = 0; m < TM; m++) {
        #pragma unroll
        for (int n = 0; n < TN; n++) {
            int row = row_base + ty * TM + m;
            int col = col_base + tx * TN + n;
            if (row < M && col < N) {
                C[row * N + col] = accum[m][n];
            }
        }
    }
}

// Launch code from the seed (its HIP launch_sgemm, written with the CUDA runtime).
void launch_sgemm(float* A, float* B, float* C, int M, int N, int K) {
    dim3 block(BN / TN, BM / TM); // 16 x 16 = 256 threads
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    cudaFuncSetAttribute(
        (const void*)sgemm_optimized,
        cudaFuncAttributeMaxDynamicSharedMemorySize,
        65536 // Request 64KB if needed
    );
    sgemm_optimized<<<grid, block>>>(A, B, C, M, N, K);
}

int main()
{
    const int M = 1024, N = 1024, K = 1024;
    size_t bytes = (size_t)M * N * sizeof(float);
    float* h = (float*)malloc(bytes);
    for (int i = 0; i < M * N; ++i) h[i] = 1.0f;

    float *dA, *dB, *dC;
    cudaMalloc(&dA, bytes);
    cudaMalloc(&dB, bytes);
    cudaMalloc(&dC, bytes);
    cudaMemcpy(dA, h, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, h, bytes, cudaMemcpyHostToDevice);

    launch_sgemm(dA, dB, dC, M, N, K);
    cudaError_t err = cudaDeviceSynchronize();
    printf("sgemm_optimized: %s\n", cudaGetErrorString(err));
    if (err == cudaSuccess) {
        cudaMemcpy(h, dC, bytes, cudaMemcpyDeviceToHost);
        printf("C[0] = %f (expected %d)\n", h[0], K);
    }

    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(h);
    return err != cudaSuccess;
}
