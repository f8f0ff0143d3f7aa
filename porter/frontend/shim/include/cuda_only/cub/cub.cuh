/* cuport light-mode stub of CUB: declarations only, so code using the block and warp collectives parses. The
   kernel translators lower BlockReduce / WarpReduce / BlockAdjacentDifference (porter/translate/kernel/coop.py);
   the rest is refused. */
#pragma once
namespace cub {
struct Sum { template <class T> __device__ T operator()(const T &a, const T &b) const; };
struct Max { template <class T> __device__ T operator()(const T &a, const T &b) const; };
struct Min { template <class T> __device__ T operator()(const T &a, const T &b) const; };
struct Difference { template <class T> __device__ T operator()(const T &a, const T &b) const; };
enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };
template <typename T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce {
 public:
  struct TempStorage { T _cuport_slots[BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z]; };
  __device__ BlockReduce();
  __device__ BlockReduce(TempStorage &temp_storage);
  __device__ T Sum(T input);
  __device__ T Sum(T input, int num_valid);
  template <int ITEMS> __device__ T Sum(T (&inputs)[ITEMS]);
  template <class Op> __device__ T Reduce(T input, Op op);
  template <class Op> __device__ T Reduce(T input, Op op, int num_valid);
  template <int ITEMS, class Op> __device__ T Reduce(T (&inputs)[ITEMS], Op op);
};
template <typename T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpReduce {
 public:
  struct TempStorage { T _cuport_slots[LOGICAL_WARP_THREADS]; };
  __device__ WarpReduce(TempStorage &temp_storage);
  __device__ T Sum(T input);
  __device__ T Sum(T input, int valid_items);
  template <class Op> __device__ T Reduce(T input, Op op);
  template <class Op> __device__ T Reduce(T input, Op op, int valid_items);
};
template <typename T, int BLOCK_DIM_X, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockAdjacentDifference {
 public:
  struct TempStorage { T _cuport_slots[BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z]; };
  __device__ BlockAdjacentDifference();
  __device__ BlockAdjacentDifference(TempStorage &temp_storage);
  template <int ITEMS, typename Out, typename Op>
  __device__ void SubtractLeft(T (&input)[ITEMS], Out (&output)[ITEMS], Op op);
  template <int ITEMS, typename Out, typename Op>
  __device__ void SubtractLeft(T (&input)[ITEMS], Out (&output)[ITEMS], Op op, T tile_predecessor_item);
  template <int ITEMS, typename Out, typename Op>
  __device__ void SubtractRight(T (&input)[ITEMS], Out (&output)[ITEMS], Op op);
  template <int ITEMS, typename Out, typename Op>
  __device__ void SubtractRight(T (&input)[ITEMS], Out (&output)[ITEMS], Op op, T tile_successor_item);
  template <int ITEMS, typename Out, typename Op>
  __device__ void SubtractLeftPartialTile(T (&input)[ITEMS], Out (&output)[ITEMS], Op op, int valid_items);
  template <int ITEMS, typename Out, typename Op>
  __device__ void SubtractLeftPartialTile(T (&input)[ITEMS], Out (&output)[ITEMS], Op op, int valid_items,
                                          T tile_predecessor_item);
  template <int ITEMS, typename Out, typename Op>
  __device__ void SubtractRightPartialTile(T (&input)[ITEMS], Out (&output)[ITEMS], Op op, int valid_items);
};
}  // namespace cub
