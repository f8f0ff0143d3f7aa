/* cuport light stub of cuda_fp16.h: the half types, their operators and the fp16 intrinsics, declarations only
   (enough for real code to parse: HeCBench gelu, logprob, quant3MatMul, layout were CP000 without them). */
#pragma once
struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
struct __half {
    unsigned short __x;
    __host__ __device__ __half() {}
    __host__ __device__ __half(const __half_raw &);
    __host__ __device__ __half(float);
    __host__ __device__ __half(double);
    __host__ __device__ __half(int);
    __host__ __device__ __half(unsigned int);
    __host__ __device__ __half(short);
    __host__ __device__ __half(unsigned short);
    __host__ __device__ __half(long long);
    __host__ __device__ __half(unsigned long long);
    __host__ __device__ operator float() const;
    __host__ __device__ operator __half_raw() const;
    __host__ __device__ __half &operator=(const __half_raw &);
};
typedef __half half;
struct __half2 {
    __half x, y;
    __host__ __device__ __half2() {}
    __host__ __device__ __half2(const __half &, const __half &);
    __host__ __device__ __half2(const __half2_raw &);
    __host__ __device__ operator __half2_raw() const;
};
typedef __half2 half2;

/* operators of __half and __half2 (cuda_fp16.hpp defines them for device code) */
#define __CUPORT_HOPS(T) \
    __host__ __device__ T operator+(const T &, const T &); __host__ __device__ T operator-(const T &, const T &); \
    __host__ __device__ T operator*(const T &, const T &); __host__ __device__ T operator/(const T &, const T &); \
    __host__ __device__ T &operator+=(T &, const T &); __host__ __device__ T &operator-=(T &, const T &); \
    __host__ __device__ T &operator*=(T &, const T &); __host__ __device__ T &operator/=(T &, const T &); \
    __host__ __device__ T operator-(const T &); __host__ __device__ T operator+(const T &); \
    __host__ __device__ T &operator++(T &); __host__ __device__ T &operator--(T &); \
    __host__ __device__ T operator++(T &, int); __host__ __device__ T operator--(T &, int); \
    __host__ __device__ bool operator==(const T &, const T &); __host__ __device__ bool operator!=(const T &, const T &); \
    __host__ __device__ bool operator<(const T &, const T &); __host__ __device__ bool operator>(const T &, const T &); \
    __host__ __device__ bool operator<=(const T &, const T &); __host__ __device__ bool operator>=(const T &, const T &);
__CUPORT_HOPS(__half)
__CUPORT_HOPS(__half2)
#undef __CUPORT_HOPS

/* conversions */
__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__host__ __device__ __half __float2half_rz(float);
__host__ __device__ __half __float2half_rd(float);
__host__ __device__ __half __float2half_ru(float);
__host__ __device__ __half __double2half(double);
__host__ __device__ float __half2float(__half);
__host__ __device__ __half2 __float2half2_rn(float);
__host__ __device__ __half2 __floats2half2_rn(float, float);
__host__ __device__ __half2 __float22half2_rn(float2);
__host__ __device__ float2 __half22float2(__half2);
__host__ __device__ float __low2float(__half2);
__host__ __device__ float __high2float(__half2);
__host__ __device__ __half __low2half(__half2);
__host__ __device__ __half __high2half(__half2);
__host__ __device__ __half2 __halves2half2(__half, __half);
__host__ __device__ __half2 __half2half2(__half);
__host__ __device__ __half2 __lows2half2(__half2, __half2);
__host__ __device__ __half2 __highs2half2(__half2, __half2);
__host__ __device__ __half2 __lowhigh2highlow(__half2);
__host__ __device__ __half2 __low2half2(__half2);
__host__ __device__ __half2 __high2half2(__half2);
__host__ __device__ int __half2int_rn(__half);
__host__ __device__ int __half2int_rz(__half);
__host__ __device__ unsigned int __half2uint_rn(__half);
__host__ __device__ unsigned int __half2uint_rz(__half);
__host__ __device__ short __half2short_rn(__half);
__host__ __device__ short __half2short_rz(__half);
__host__ __device__ __half __int2half_rn(int);
__host__ __device__ __half __uint2half_rn(unsigned int);
__host__ __device__ __half __short2half_rn(short);
__host__ __device__ short __half_as_short(__half);
__host__ __device__ unsigned short __half_as_ushort(__half);
__host__ __device__ __half __short_as_half(short);
__host__ __device__ __half __ushort_as_half(unsigned short);

/* arithmetic and comparisons */
__device__ __half __hadd(__half, __half);
__device__ __half __hsub(__half, __half);
__device__ __half __hmul(__half, __half);
__device__ __half __hdiv(__half, __half);
__device__ __half __hfma(__half, __half, __half);
__device__ __half __hneg(__half);
__device__ __half __habs(__half);
__device__ __half __hmax(__half, __half);
__device__ __half __hmin(__half, __half);
__device__ __half __hadd_sat(__half, __half);
__device__ __half __hmul_sat(__half, __half);
__device__ __half __hfma_sat(__half, __half, __half);
__device__ __half2 __hadd2(__half2, __half2);
__device__ __half2 __hsub2(__half2, __half2);
__device__ __half2 __hmul2(__half2, __half2);
__device__ __half2 __h2div(__half2, __half2);
__device__ __half2 __hfma2(__half2, __half2, __half2);
__device__ __half2 __hneg2(__half2);
__device__ __half2 __habs2(__half2);
__device__ __half2 __hmax2(__half2, __half2);
__device__ __half2 __hmin2(__half2, __half2);
__device__ __half2 __hadd2_sat(__half2, __half2);
__device__ __half2 __hmul2_sat(__half2, __half2);
__device__ __half2 __hfma2_sat(__half2, __half2, __half2);
__device__ bool __heq(__half, __half);
__device__ bool __hne(__half, __half);
__device__ bool __hlt(__half, __half);
__device__ bool __hle(__half, __half);
__device__ bool __hgt(__half, __half);
__device__ bool __hge(__half, __half);
__device__ bool __hisnan(__half);
__device__ int __hisinf(__half);
__device__ __half2 __heq2(__half2, __half2);
__device__ __half2 __hlt2(__half2, __half2);
__device__ __half2 __hgt2(__half2, __half2);
__device__ bool __hbeq2(__half2, __half2);
__device__ bool __hblt2(__half2, __half2);
__device__ bool __hbgt2(__half2, __half2);

/* math */
__device__ __half hsqrt(__half);
__device__ __half hrsqrt(__half);
__device__ __half hrcp(__half);
__device__ __half hexp(__half);
__device__ __half hexp2(__half);
__device__ __half hlog(__half);
__device__ __half hlog2(__half);
__device__ __half hsin(__half);
__device__ __half hcos(__half);
__device__ __half htanh(__half);
__device__ __half hfloor(__half);
__device__ __half hceil(__half);
__device__ __half htrunc(__half);
__device__ __half hrint(__half);
__device__ __half2 h2sqrt(__half2);
__device__ __half2 h2rsqrt(__half2);
__device__ __half2 h2rcp(__half2);
__device__ __half2 h2exp(__half2);
__device__ __half2 h2log(__half2);
__device__ __half2 h2sin(__half2);
__device__ __half2 h2cos(__half2);
__device__ __half2 h2floor(__half2);

/* memory */
__device__ __half __ldg(const __half *);
__device__ __half2 __ldg(const __half2 *);
__device__ __half atomicAdd(__half *, __half);
__device__ __half2 atomicAdd(__half2 *, __half2);
