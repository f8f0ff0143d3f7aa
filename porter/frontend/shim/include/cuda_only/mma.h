/* cuport light stub of CUDA's warp matrix API (nvcuda::wmma): declarations only, so code using it parses. */
#pragma once
#include <cuda_fp16.h>
namespace nvcuda {
namespace wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {};
struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision { struct tf32 {}; }
template <class Use, int M, int N, int K, class T, class Layout = void> class fragment {
 public:
  enum { num_elements = 8 };
  T x[8];
};
template <class F, class T> __device__ void fill_fragment(F &, const T &);
template <class F, class T> __device__ void load_matrix_sync(F &, const T *, unsigned);
template <class F, class T> __device__ void load_matrix_sync(F &, const T *, unsigned, layout_t);
template <class T, class F> __device__ void store_matrix_sync(T *, const F &, unsigned, layout_t);
template <class D, class A, class B, class C> __device__ void mma_sync(D &, const A &, const B &, const C &);
}  // namespace wmma
}  // namespace nvcuda
