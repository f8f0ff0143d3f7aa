// Tiled matrix transpose in the style of NVIDIA's transposeCoalesced: 32x32 tiles, 32x8 threads,
// each thread moves TILE_DIM / BLOCK_ROWS elements. Bounds-checked for any width and height.
// Column reads of tile[32][32] hit one bank: a 32-way bank conflict (seed 000).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define TILE_DIM 32
#define BLOCK_ROWS 8

// odata (width x height) = transpose of idata (height x width), both row-major.
__global__ void transpose_naive_tile(float* odata, const float* idata, int width, int height)
{
    __shared__ float tile[32][32];  // TILE_DIM x TILE_DIM

    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];

    __syncthreads();

    x = blockIdx.y * TILE_DIM + threadIdx.x;  // transposed block offset
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main()
{
    const int width = 1024, height = 768;
    size_t bytes = (size_t)width * height * sizeof(float);
    float* h_in = (float*)malloc(bytes);
    float* h_out = (float*)malloc(bytes);
    for (int i = 0; i < width * height; ++i) h_in[i] = (float)i;

    float *d_in, *d_out;
    cudaMalloc(&d_in, bytes);
    cudaMalloc(&d_out, bytes);
    cudaMemcpy(d_in, h_in, bytes, cudaMemcpyHostToDevice);

    dim3 block(TILE_DIM, BLOCK_ROWS);
    dim3 grid((width + TILE_DIM - 1) / TILE_DIM, (height + TILE_DIM - 1) / TILE_DIM);
    transpose_naive_tile<<<grid, block>>>(d_out, d_in, width, height);
    cudaMemcpy(h_out, d_out, bytes, cudaMemcpyDeviceToHost);

    int errors = 0;
    for (int r = 0; r < height; ++r)
        for (int c = 0; c < width; ++c)
            if (h_out[c * height + r] != h_in[r * width + c]) ++errors;
    printf("transpose_naive_tile: %d errors\n", errors);

    cudaFree(d_in);
    cudaFree(d_out);
    free(h_in);
    free(h_out);
    return errors != 0;
}
