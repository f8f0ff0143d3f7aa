// Register-tiled SGEMM C = A * B (A: M x K, B: K x N, row-major) with the structure of the seed's
// sgemm_optimized, corrected: 16 x 16 = 256 threads per 128 x 128 block tile, each thread computes
// 8 x 8 outputs, and the shared tiles (BK x BM, BK x BN) are filled through the linear thread id:
// 4 elements of A and 4 of B per thread per k-tile, all inside the tiles.
// Loads are zero-filled and stores checked, so any M, N, K is correct; full speed needs multiples
// of 128 (M, N) and 8 (K).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS ((BM / TM) * (BN / TN))   // 256

__global__ void sgemm_fixed(
    const float* __restrict__ A,
    const float* __restrict__ B,
    float* __restrict__ C,
    int M, int N, int K
) {
    const int tx = threadIdx.x;            // 0..15: column group of the thread tile
    const int ty = threadIdx.y;            // 0..15: row group
    const int tid = ty * (BN / TN) + tx;   // 0..255

    // A is stored transposed (k-major) so the compute loop reads a row of As.
    // BM + 4 padding: the transposed stores of 32 consecutive threads land in 32 distinct banks.
    __shared__ float As[BK][BM + 4];
    __shared__ float Bs[BK][BN];

    float accum[TM][TN];
    #pragma unroll
    for (int m = 0; m < TM; m++)
        #pragma unroll
        for (int n = 0; n < TN; n++)
            accum[m][n] = 0.0f;
    float a_reg[TM];
    float b_reg[TN];

    const int row_base = blockIdx.y * BM;
    const int col_base = blockIdx.x * BN;

    for (int k = 0; k < K; k += BK) {
        // A tile: BM x BK = 1024 elements, 4 per thread; consecutive threads read along a row of A.
        #pragma unroll
        for (int i = 0; i < (BM * BK) / NTHREADS; i++) {
            int idx = tid + i * NTHREADS;
            int r = idx / BK;              // 0..127
            int c = idx % BK;              // 0..7
            int row = row_base + r;
            int col = k + c;
            As[c][r] = (row < M && col < K) ? A[row * K + col] : 0.0f;
        }
        // B tile: BK x BN = 1024 elements, 4 per thread; consecutive threads read along a row of B.
        #pragma unroll
        for (int i = 0; i < (BK * BN) / NTHREADS; i++) {
            int idx = tid + i * NTHREADS;
            int r = idx / BN;              // 0..7
            int c = idx % BN;              // 0..127
            int row = k + r;
            int col = col_base + c;
            Bs[r][c] = (row < K && col < N) ? B[row * N + col] : 0.0f;
        }
        __syncthreads();

        #pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            #pragma unroll
            for (int m = 0; m < TM; m++)
                a_reg[m] = As[kk][ty * TM + m];
            #pragma unroll
            for (int n = 0; n < TN; n++)
                b_reg[n] = Bs[kk][tx * TN + n];
            #pragma unroll
            for (int m = 0; m < TM; m++)
                #pragma unroll
                for (int n = 0; n < TN; n++)
                    accum[m][n] += a_reg[m] * b_reg[n];
        }
        __syncthreads();
    }

    #pragma unroll
    for (int m = 0; m < TM; m++) {
        #pragma unroll
        for (int n = 0; n < TN; n++) {
            int row = row_base + ty * TM + m;
            int col = col_base + tx * TN + n;
            if (row < M && col < N)
                C[row * N + col] = accum[m][n];
        }
    }
}

void launch_sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(BN / TN, BM / TM);   // 16 x 16 = 256 threads
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm_fixed<<<grid, block>>>(A, B, C, M, N, K);
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
    cudaMemcpy(h, dC, bytes, cudaMemcpyDeviceToHost);
    printf("sgemm_fixed: %s, C[0] = %f (expected %d)\n", cudaGetErrorString(err), h[0], K);

    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(h);
    return err != cudaSuccess;
}
