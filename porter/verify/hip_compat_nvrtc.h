// Kernel-side HIP -> CUDA compatibility for compiling HIP translations with NVRTC (cuport verify,
// target hip-nvidia). HIP's own NVIDIA headers need the CUDA runtime headers, which NVRTC lacks and
// which CUDA 13 broke; kernels only need the names below. Host APIs are not provided: the host
// side of a verify run is Python.
#ifndef CUPORT_HIP_COMPAT_NVRTC_H
#define CUPORT_HIP_COMPAT_NVRTC_H

#define __HIPCC__ 1
#define __HIP_DEVICE_COMPILE__ 1
#define __HIP_PLATFORM_NVIDIA__ 1
#define __HIP_PLATFORM_NVCC__ 1

// NVRTC has no <cstdint>; these match glibc's LP64 definitions, so a repeated typedef is harmless.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;

// Thread and block indices, HIP spelling.
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z

#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define atomicAddNoRet(p, v) ((void)atomicAdd((p), (v)))

// HIP lane masks are 64 bits (one per lane of a wave64). A warp here has 32 lanes: the mask's
// low 32 bits name them, the high bits name lanes that do not exist and are dropped.
#define __CUPORT_LOW32(mask) ((unsigned int)((unsigned long long)(mask) & 0xffffffffull))
#define __CUPORT_FULL 0xffffffffu

// The wrappers are defined before the macros that rename HIP's spellings to them, so their
// bodies still call CUDA's own intrinsics.
template <typename T>
__device__ __forceinline__ T __cuport_shfl(T var, int src_lane, int width = warpSize)
{ return __shfl_sync(__CUPORT_FULL, var, src_lane, width); }
template <typename T>
__device__ __forceinline__ T __cuport_shfl_up(T var, unsigned int delta, int width = warpSize)
{ return __shfl_up_sync(__CUPORT_FULL, var, delta, width); }
template <typename T>
__device__ __forceinline__ T __cuport_shfl_down(T var, unsigned int delta, int width = warpSize)
{ return __shfl_down_sync(__CUPORT_FULL, var, delta, width); }
template <typename T>
__device__ __forceinline__ T __cuport_shfl_xor(T var, int lane_mask, int width = warpSize)
{ return __shfl_xor_sync(__CUPORT_FULL, var, lane_mask, width); }

template <typename M, typename T>
__device__ __forceinline__ T __cuport_shfl_sync(M mask, T var, int src_lane, int width = warpSize)
{ return __shfl_sync(__CUPORT_LOW32(mask), var, src_lane, width); }
template <typename M, typename T>
__device__ __forceinline__ T __cuport_shfl_up_sync(M mask, T var, unsigned int delta, int width = warpSize)
{ return __shfl_up_sync(__CUPORT_LOW32(mask), var, delta, width); }
template <typename M, typename T>
__device__ __forceinline__ T __cuport_shfl_down_sync(M mask, T var, unsigned int delta, int width = warpSize)
{ return __shfl_down_sync(__CUPORT_LOW32(mask), var, delta, width); }
template <typename M, typename T>
__device__ __forceinline__ T __cuport_shfl_xor_sync(M mask, T var, int lane_mask, int width = warpSize)
{ return __shfl_xor_sync(__CUPORT_LOW32(mask), var, lane_mask, width); }

// Votes: HIP returns 64-bit ballots and masks.
__device__ __forceinline__ unsigned long long __cuport_ballot(int pred)
{ return (unsigned long long)__ballot_sync(__CUPORT_FULL, pred); }
template <typename M>
__device__ __forceinline__ unsigned long long __cuport_ballot_sync(M mask, int pred)
{ return (unsigned long long)__ballot_sync(__CUPORT_LOW32(mask), pred); }
__device__ __forceinline__ int __cuport_any(int pred) { return __any_sync(__CUPORT_FULL, pred); }
__device__ __forceinline__ int __cuport_all(int pred) { return __all_sync(__CUPORT_FULL, pred); }
template <typename M>
__device__ __forceinline__ int __cuport_any_sync(M mask, int pred) { return __any_sync(__CUPORT_LOW32(mask), pred); }
template <typename M>
__device__ __forceinline__ int __cuport_all_sync(M mask, int pred) { return __all_sync(__CUPORT_LOW32(mask), pred); }
__device__ __forceinline__ unsigned long long __cuport_activemask()
{ return (unsigned long long)__activemask(); }
__device__ __forceinline__ unsigned int __lane_id()
{ unsigned int lane; asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane)); return lane; }

#define __shfl __cuport_shfl
#define __shfl_up __cuport_shfl_up
#define __shfl_down __cuport_shfl_down
#define __shfl_xor __cuport_shfl_xor
#define __shfl_sync __cuport_shfl_sync
#define __shfl_up_sync __cuport_shfl_up_sync
#define __shfl_down_sync __cuport_shfl_down_sync
#define __shfl_xor_sync __cuport_shfl_xor_sync
#define __ballot __cuport_ballot
#define __ballot_sync __cuport_ballot_sync
#define __any __cuport_any
#define __all __cuport_all
#define __any_sync __cuport_any_sync
#define __all_sync __cuport_all_sync
#define __activemask __cuport_activemask
#endif  // CUPORT_HIP_COMPAT_NVRTC_H
