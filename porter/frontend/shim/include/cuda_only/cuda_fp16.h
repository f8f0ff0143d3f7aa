/* cuport light stub of cuda_fp16.h: the half type and a few conversions, declarations only. */
#pragma once
struct __half { unsigned short x; };
typedef __half half;
struct __half2 { __half x, y; };
__host__ __device__ __half __float2half(float);
__host__ __device__ float __half2float(__half);
__host__ __device__ __half2 __floats2half2_rn(float, float);
