/* cuport light stub of CUDA's cooperative groups: declarations only, so code using them parses. */
#pragma once
namespace cooperative_groups {
class thread_group {
 public:
  __device__ void sync() const;
  __device__ unsigned long long size() const;
  __device__ unsigned long long num_threads() const;
  __device__ unsigned long long thread_rank() const;
};
class thread_block : public thread_group {
 public:
  __device__ dim3 group_index() const;
  __device__ dim3 thread_index() const;
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_threads() const;
};
class grid_group : public thread_group {
 public:
  __device__ unsigned long long num_threads() const;
  __device__ bool is_valid() const;
  __device__ unsigned long long num_blocks() const;
  __device__ unsigned long long block_rank() const;
};
class coalesced_group : public thread_group {
 public:
  template <class T> __device__ T shfl(T var, unsigned int src) const;
  template <class T> __device__ T shfl_down(T var, unsigned int delta) const;
  template <class T> __device__ T shfl_up(T var, unsigned int delta) const;
  __device__ unsigned long long meta_group_rank() const;
};
template <unsigned int _Size> class thread_block_tile : public coalesced_group {
 public:
  template <class T> __device__ T shfl_xor(T var, unsigned int mask) const;
  __device__ int any(int) const;
  __device__ int all(int) const;
  __device__ unsigned int ballot(int) const;
  __device__ unsigned long long meta_group_size() const;
};
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ coalesced_group coalesced_threads();
template <unsigned int _Size, class _G> __device__ thread_block_tile<_Size> tiled_partition(const _G &);
__device__ thread_group tiled_partition(const thread_group &, unsigned int);
template <class G> __device__ void sync(const G &);
template <class G, class T, class Op> __device__ T reduce(const G &, T, Op);
template <class T> struct plus { __device__ T operator()(T a, T b) const; };
template <class T> struct greater { __device__ T operator()(T a, T b) const; };
template <class T> struct less { __device__ T operator()(T a, T b) const; };
template <class T> struct bit_and { __device__ T operator()(T a, T b) const; };
template <class T> struct bit_or { __device__ T operator()(T a, T b) const; };
template <class T> struct bit_xor { __device__ T operator()(T a, T b) const; };
}  // namespace cooperative_groups
