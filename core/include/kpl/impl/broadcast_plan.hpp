// The plan every broadcast kernel works on (Çoban, Yuret & Unat,
// "Multidimensional broadcast operation on the GPU", §III-B/C): the output
// shape after broadcasting and merging, with every operand's strides over it
// (0 on the dimensions an operand is broadcast along), so an operand's
// element index is the output coordinate · its strides. The innermost plan
// dimension is the "column" and all the outer ones together are the "rows".
// Include kpl/broadcast.hpp, not this file.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl::impl {

constexpr int max_broadcast_rank = 8;

struct BroadcastPlan {
  int rank = 0;
  std::int64_t extents[max_broadcast_rank] = {};
  std::int64_t out_strides[max_broadcast_rank] = {};
  std::int64_t a_strides[max_broadcast_rank] = {};
  std::int64_t b_strides[max_broadcast_rank] = {};
  std::int64_t size = 1;

  // The innermost dimension ("columns") and the outer ones together ("rows"),
  // as plain fields: device code must not index the arrays above with a
  // run-time rank (that moves them to local memory).
  std::int64_t columns = 1, rows = 1;
  std::int64_t a_column_stride = 0, b_column_stride = 0, out_column_stride = 0;

  // Fills the fields above from rank, extents and strides.
  void finish() {
    columns = rank > 0 ? extents[rank - 1] : 1;
    rows = columns > 0 ? size / columns : 0;
    a_column_stride = rank > 0 ? a_strides[rank - 1] : 0;
    b_column_stride = rank > 0 ? b_strides[rank - 1] : 0;
    out_column_stride = rank > 0 ? out_strides[rank - 1] : 0;
  }
};

// Offsets of one row of the three operands, and a cursor that steps to the
// next row like an odometer: only the innermost row dimension moves on most
// steps, so the divisions that find a row's coordinates are paid once per run
// of rows, not once per row. The loops over dimensions are unrolled to the
// maximum rank with constant indices, so on GPUs the coordinates stay in
// registers instead of a dynamically indexed (local-memory) array.
template <int MaxRank = max_broadcast_rank>
struct RowCursor {
  std::int64_t coordinate[MaxRank] = {};
  std::int64_t a = 0, b = 0, out = 0;

  KOKKOS_INLINE_FUNCTION RowCursor(const BroadcastPlan& plan, std::int64_t row) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = MaxRank - 2; d >= 0; --d) {
      if (d <= plan.rank - 2) {
        coordinate[d] = row % plan.extents[d];
        row /= plan.extents[d];
        a += coordinate[d] * plan.a_strides[d];
        b += coordinate[d] * plan.b_strides[d];
        out += coordinate[d] * plan.out_strides[d];
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void next(const BroadcastPlan& plan) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = MaxRank - 2; d >= 0; --d) {
      if (d <= plan.rank - 2) {
        a += plan.a_strides[d];
        b += plan.b_strides[d];
        out += plan.out_strides[d];
        if (++coordinate[d] < plan.extents[d]) return;
        a -= plan.extents[d] * plan.a_strides[d];
        b -= plan.extents[d] * plan.b_strides[d];
        out -= plan.extents[d] * plan.out_strides[d];
        coordinate[d] = 0;
      }
    }
  }
};

template <class ExecutionSpace>
constexpr bool is_host_space() {
  return std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;
}

}  // namespace kpl::impl
