/* cuport CUDA shim: the declarations clang needs to parse CUDA without a CUDA toolkit.
   Force-included before every file (-include). Keep it declarations only. */
#pragma once
#define __CUPORT__ 1
#define __CUDACC__ 1
#define __NVCC__ 1
#ifndef CUDART_VERSION
#define CUDART_VERSION 12000
#endif
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define CUDART_CB
#define CUDARTAPI
#define CUDAAPI
#define __restrict__ __restrict
#define __grid_constant__

#ifndef NULL
#define NULL 0
#endif
/* Declarations live in a namespace pulled in by a using-directive: the file's AST walk then sees two
   top-level cursors instead of hundreds. */
namespace __cuport_shim {
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
typedef unsigned long uintptr_t; typedef long intptr_t;
/* glibc's <sys/types.h> names, which nvcc's implicit cuda_runtime.h -> stdlib.h always brings in */
#ifndef uint
typedef unsigned int uint;
#endif
#ifndef ulong
typedef unsigned long ulong;
#endif
#ifndef ushort
typedef unsigned short ushort;
#endif


#define __CUPORT_VEC(T, N) struct N##1 { T x; }; struct N##2 { T x, y; }; struct N##3 { T x, y, z; }; \
  struct __attribute__((aligned(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)))) N##4 { T x, y, z, w; }; \
  __host__ __device__ N##1 make_##N##1(T); __host__ __device__ N##2 make_##N##2(T, T); \
  __host__ __device__ N##3 make_##N##3(T, T, T); __host__ __device__ N##4 make_##N##4(T, T, T, T);
__CUPORT_VEC(float, float) __CUPORT_VEC(double, double) __CUPORT_VEC(int, int) __CUPORT_VEC(unsigned int, uint)
__CUPORT_VEC(char, char) __CUPORT_VEC(unsigned char, uchar) __CUPORT_VEC(short, short) __CUPORT_VEC(unsigned short, ushort)
__CUPORT_VEC(long, long) __CUPORT_VEC(unsigned long, ulong) __CUPORT_VEC(long long, longlong) __CUPORT_VEC(unsigned long long, ulonglong)
#undef __CUPORT_VEC

struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;

/* synchronisation and warp intrinsics */
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned int mask = 0xffffffff);
__device__ void __threadfence();
__device__ void __threadfence_block();
__device__ void __threadfence_system();
template <class T> __device__ T __shfl_sync(unsigned int mask, T var, int srcLane, int width = 32);
template <class T> __device__ T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = 32);
template <class T> __device__ T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned int mask, T var, int laneMask, int width = 32);
template <class T> __device__ T __shfl(T var, int srcLane, int width = 32);
template <class T> __device__ T __shfl_up(T var, unsigned int delta, int width = 32);
template <class T> __device__ T __shfl_down(T var, unsigned int delta, int width = 32);
template <class T> __device__ T __shfl_xor(T var, int laneMask, int width = 32);
__device__ unsigned int __ballot_sync(unsigned int mask, int predicate);
__device__ unsigned int __ballot(int predicate);
__device__ int __any_sync(unsigned int mask, int predicate);
__device__ int __all_sync(unsigned int mask, int predicate);
__device__ int __any(int predicate);
__device__ int __all(int predicate);
__device__ unsigned int __activemask();
__device__ unsigned int __lanemask_lt();
template <class T> __device__ unsigned int __match_any_sync(unsigned int mask, T value);
template <class T> __device__ unsigned int __match_all_sync(unsigned int mask, T value, int *pred);
template <class T> __device__ T __reduce_add_sync(unsigned int mask, T value);
/* cooperative groups and CUB collectives as the kernel translators lower them (porter/translate/kernel/coop.py) */
template <class T> __device__ T __cuport_block_reduce_add(T v, int block_threads, int num_valid = 1 << 30);
template <class T> __device__ T __cuport_block_reduce_min(T v, int block_threads, int num_valid = 1 << 30);
template <class T> __device__ T __cuport_block_reduce_max(T v, int block_threads, int num_valid = 1 << 30);
__device__ unsigned int __cuport_coalesced_rank(unsigned int mask);
__device__ unsigned int __cuport_coalesced_size(unsigned int mask);
template <class T> __device__ T __cuport_coalesced_shfl(unsigned int mask, T v, unsigned int src_rank);
template <class T> __device__ T __reduce_min_sync(unsigned int mask, T value);
template <class T> __device__ T __reduce_max_sync(unsigned int mask, T value);
__device__ int __popc(unsigned int);
__device__ int __popcll(unsigned long long);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ int __clz(int);
__device__ int __clzll(long long);
__device__ unsigned int __brev(unsigned int);
__device__ unsigned long long __brevll(unsigned long long);
__device__ unsigned int __byte_perm(unsigned int, unsigned int, unsigned int);
__device__ int __mul24(int, int);
__device__ int __umul24(unsigned, unsigned);
__device__ int __mulhi(int, int);
__device__ long long clock64();
__device__ long clock();
__device__ void __nanosleep(unsigned int);
__device__ void __trap();
__host__ __device__ void __cuport_assert_fail(void);   /* assert's failure branch (include/assert.h) */
__device__ void __prof_trigger(int);
template <class T> __device__ T __ldg(const T *);
template <class T> __device__ T __ldcg(const T *);
template <class T> __device__ void __stcg(T *, T);

/* atomics */
#define __CUPORT_ATOM(NAME) __device__ int NAME(int *, int); __device__ unsigned int NAME(unsigned int *, unsigned int); \
  __device__ unsigned long long NAME(unsigned long long *, unsigned long long);
__CUPORT_ATOM(atomicAdd) __CUPORT_ATOM(atomicSub) __CUPORT_ATOM(atomicExch) __CUPORT_ATOM(atomicMin)
__CUPORT_ATOM(atomicMax) __CUPORT_ATOM(atomicAnd) __CUPORT_ATOM(atomicOr) __CUPORT_ATOM(atomicXor)
__CUPORT_ATOM(atomicAdd_block) __CUPORT_ATOM(atomicAdd_system)
#undef __CUPORT_ATOM
__device__ float atomicAdd(float *, float);
__device__ double atomicAdd(double *, double);
__device__ float atomicExch(float *, float);
__device__ float atomicMax(float *, float);
__device__ float atomicMin(float *, float);
/* long long overloads (compute capability 3.5+ / 5.0+) */
__device__ long long atomicMin(long long *, long long); __device__ long long atomicMax(long long *, long long);
__device__ long long atomicAnd(long long *, long long); __device__ long long atomicOr(long long *, long long);
__device__ long long atomicXor(long long *, long long);
__device__ int atomicCAS(int *, int, int);
__device__ unsigned int atomicCAS(unsigned int *, unsigned int, unsigned int);
__device__ unsigned long long atomicCAS(unsigned long long *, unsigned long long, unsigned long long);
__device__ unsigned int atomicInc(unsigned int *, unsigned int);
__device__ unsigned int atomicDec(unsigned int *, unsigned int);

/* math: the C functions and the CUDA fast-math intrinsics */
#define __CUPORT_M1(N) __host__ __device__ float N##f(float); __host__ __device__ double N(double);
#define __CUPORT_M2(N) __host__ __device__ float N##f(float, float); __host__ __device__ double N(double, double);
__CUPORT_M1(sqrt) __CUPORT_M1(rsqrt) __CUPORT_M1(cbrt) __CUPORT_M1(exp) __CUPORT_M1(exp2) __CUPORT_M1(exp10) __CUPORT_M1(expm1)
__CUPORT_M1(log) __CUPORT_M1(log2) __CUPORT_M1(log10) __CUPORT_M1(log1p) __CUPORT_M1(sin) __CUPORT_M1(cos) __CUPORT_M1(tan)
__CUPORT_M1(asin) __CUPORT_M1(acos) __CUPORT_M1(atan) __CUPORT_M1(sinh) __CUPORT_M1(cosh) __CUPORT_M1(tanh) __CUPORT_M1(fabs)
__CUPORT_M1(floor) __CUPORT_M1(ceil) __CUPORT_M1(round) __CUPORT_M1(trunc) __CUPORT_M1(rint) __CUPORT_M1(erf) __CUPORT_M1(erfc)
__CUPORT_M1(lgamma) __CUPORT_M1(tgamma) __CUPORT_M1(asinh) __CUPORT_M1(acosh) __CUPORT_M1(atanh) __CUPORT_M1(rcbrt) __CUPORT_M1(nearbyint)
__CUPORT_M2(pow) __CUPORT_M2(fmin) __CUPORT_M2(fmax) __CUPORT_M2(fmod) __CUPORT_M2(atan2) __CUPORT_M2(hypot) __CUPORT_M2(copysign)
__CUPORT_M2(fdim) __CUPORT_M2(remainder)
#undef __CUPORT_M1
#undef __CUPORT_M2
__host__ __device__ float fmaf(float, float, float); __host__ __device__ double fma(double, double, double);
__host__ __device__ void sincosf(float, float *, float *); __host__ __device__ void sincos(double, double *, double *);
__host__ __device__ int isnan(float); __host__ __device__ int isinf(float); __host__ __device__ int isfinite(float);
__host__ __device__ int signbit(float); __host__ __device__ int signbit(double);
__host__ __device__ int abs(int); __host__ __device__ long long llabs(long long);
__host__ __device__ int min(int, int); __host__ __device__ int max(int, int);
__host__ __device__ unsigned int umin(unsigned int, unsigned int); __host__ __device__ unsigned int umax(unsigned int, unsigned int);
__device__ float __expf(float); __device__ float __logf(float); __device__ float __sinf(float); __device__ float __cosf(float);
__device__ float __powf(float, float); __device__ float __fdividef(float, float); __device__ float __saturatef(float);
__device__ float __fmaf_rn(float, float, float); __device__ float __fadd_rn(float, float); __device__ float __fmul_rn(float, float);
__device__ float __frcp_rn(float); __device__ float __fsqrt_rn(float); __device__ float __exp10f(float); __device__ float __log2f(float);
__device__ float __int_as_float(int); __device__ int __float_as_int(float); __device__ unsigned int __float_as_uint(float);
__device__ float __uint_as_float(unsigned int); __device__ int __float2int_rn(float); __device__ int __float2int_rz(float);
__device__ float __int2float_rn(int); __device__ double __longlong_as_double(long long); __device__ long long __double_as_longlong(double);
/* the rounding-mode arithmetic (HeCBench's kernels call them; the translators map them: rules/kernel/intrinsics.csv) */
__device__ float __fdiv_rn(float, float); __device__ float __fdiv_rz(float, float); __device__ float __fadd_rz(float, float);
__device__ float __fsub_rn(float, float); __device__ float __fsub_rz(float, float); __device__ float __fmul_rz(float, float);
__device__ float __frcp_rz(float); __device__ float __fsqrt_rz(float); __device__ float __fmaf_rz(float, float, float);
__device__ double __dadd_rn(double, double); __device__ double __dsub_rn(double, double); __device__ double __dmul_rn(double, double);
__device__ double __ddiv_rn(double, double); __device__ double __drcp_rn(double); __device__ double __dsqrt_rn(double);
__device__ double __fma_rn(double, double, double); __device__ float __tanf(float); __device__ float __log10f(float);
__device__ unsigned int __float2uint_rn(float); __device__ unsigned int __float2uint_rz(float); __device__ int __float2int_rd(float);
__device__ int __float2int_ru(float); __device__ float __uint2float_rn(unsigned int); __device__ float fdividef(float, float);
__device__ double __hiloint2double(int, int); __device__ int __double2hiint(double); __device__ int __double2loint(double);
/* integer intrinsics beside __popc/__clz/__brev above */
__device__ unsigned int __umulhi(unsigned int, unsigned int); __device__ long long __mul64hi(long long, long long);
__device__ unsigned long long __umul64hi(unsigned long long, unsigned long long);
__device__ unsigned int __funnelshift_l(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_r(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_lc(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __funnelshift_rc(unsigned int, unsigned int, unsigned int);
__device__ unsigned int __sad(int, int, unsigned int); __device__ unsigned int __usad(unsigned int, unsigned int, unsigned int);
__device__ int __hadd(int, int); __device__ int __rhadd(int, int); __device__ unsigned int __uhadd(unsigned int, unsigned int);
__device__ unsigned int __urhadd(unsigned int, unsigned int);

/* runtime API (host) */
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
struct cudaDeviceProp { char name[256]; size_t totalGlobalMem; size_t sharedMemPerBlock; int regsPerBlock; int warpSize;
  int maxThreadsPerBlock; int maxThreadsDim[3]; int maxGridSize[3]; int multiProcessorCount; int major; int minor;
  size_t sharedMemPerMultiprocessor; int maxThreadsPerMultiProcessor; int regsPerMultiprocessor; size_t sharedMemPerBlockOptin; };
cudaError_t cudaMalloc(void **, size_t);
template <class T> cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
cudaError_t cudaMallocHost(void **, size_t);
template <class T> cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMallocHost((void **)p, n); }
cudaError_t cudaMallocManaged(void **, size_t, unsigned int = 1);
template <class T> cudaError_t cudaMallocManaged(T **p, size_t n, unsigned int f = 1) { return cudaMallocManaged((void **)p, n, f); }
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMemcpyToSymbol(const void *, const void *, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t = 0);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char *cudaGetErrorString(cudaError_t);
const char *cudaGetErrorName(cudaError_t);
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *, int);
cudaError_t cudaDeviceGetAttribute(int *, int, int);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *, unsigned int);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
template <class F> cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int);
template <class F> cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *, F, int, size_t);

/* a little of the C library so host code parses in the light header mode */
extern "C" {
__host__ __device__ int printf(const char *, ...);     /* CUDA has a device printf */
int fprintf(void *, const char *, ...);
int sprintf(char *, const char *, ...);
int snprintf(char *, size_t, const char *, ...);
int puts(const char *);
int getchar(void);
int fflush(void *);
void *malloc(size_t);
void *calloc(size_t, size_t);
void *realloc(void *, size_t);
void free(void *);
void *memcpy(void *, const void *, size_t);
void *memset(void *, int, size_t);
int memcmp(const void *, const void *, size_t);
void exit(int);
void abort(void);
int rand(void);
void srand(unsigned);
int atoi(const char *);
double atof(const char *);
long strtol(const char *, char **, int);
size_t strlen(const char *);
int strcmp(const char *, const char *);
}
} /* namespace __cuport_shim */
using namespace __cuport_shim;
/* clang looks these up at global scope: the launch configuration function behind <<<...>>>, and a builtin */
__device__ void __syncthreads();
extern "C" int cudaConfigureCall(dim3 gridDim, dim3 blockDim, unsigned long sharedMem = 0, cudaStream_t stream = 0);
extern "C" unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, unsigned long sharedMem = 0,
                                                cudaStream_t stream = 0);

/* nvcc's cuda_runtime.h includes <assert.h>: device code uses assert without including it */
#if __has_include(<assert.h>)
#include <assert.h>
#endif
