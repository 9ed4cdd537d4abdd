// The sliding-factor broadcast kernel (Çoban, Yuret & Unat,
// "Multidimensional broadcast operation on the GPU", §III-D), generalised
// from a matrix and a vector to any rank: a thread handles `sliding_factor`
// consecutive rows of the same columns, so an operand whose row offset does
// not change from one row to the next (a row vector) is loaded once and
// reused over those rows. One kernel for GPUs (a thread per column group and
// row block) and one for CPUs (a thread per block of whole rows).
// Include kpl/broadcast.hpp, not this file.
#pragma once

#include <kpl/impl/broadcast_plan.hpp>
#include <kpl/impl/pack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kpl::impl {

// The sliding factor (§III-D): rows per thread (GPUs) or per work item
// (CPUs). It trades reuse of the broadcast operand against parallelism (the
// sweep is in perf/RESULTS.md). CPUs: about four work items per thread, for
// balance. GPUs: at most gpu_cap rows per thread (4 for the sliding-factor
// kernel), fewer when the shape would leave the device short of threads. The
// scratch kernel passes 64: its staging is paid once per team, so it wants
// tall tiles.
inline std::int64_t automatic_sliding_factor(std::int64_t rows, std::int64_t threads_per_row_block,
                                             std::int64_t concurrency, bool host,
                                             std::int64_t gpu_cap = 4) {
  const std::int64_t wanted_blocks =
      host ? 4 * concurrency
           : std::max<std::int64_t>(
                 1, 2 * concurrency / std::max<std::int64_t>(1, threads_per_row_block));
  const std::int64_t factor = (rows + wanted_blocks - 1) / wanted_blocks;
  const std::int64_t cap = host ? rows : gpu_cap;
  return std::max<std::int64_t>(1, std::min(factor, cap));
}

// Loads Width consecutive columns starting at `column` of the row at
// `offset`; a column stride of 0 (an operand broadcast along the row) reads
// one element and repeats it. Width > 1 is only used when every operand's
// column stride is 0 or 1 and every access is aligned (checked on the host).
template <class T, int Width>
KOKKOS_INLINE_FUNCTION Pack<T, Width> load_columns(const T* data, std::int64_t offset,
                                                   std::int64_t column_stride,
                                                   std::int64_t column) {
  Pack<T, Width> pack;
  if (column_stride == 0) {
    const T value = data[offset];
    for (int w = 0; w < Width; ++w) pack.value[w] = value;
  } else {
    pack = load_pack<Width>(data + offset + column * column_stride);
  }
  return pack;
}

// The sliding-factor kernel (§III-D), generalised to any rank, for GPUs: one
// thread per group of Width columns and block of `sliding_factor`
// consecutive rows. An operand whose row offset does not change from one row
// to the next (a row vector: every row; the 4-D case's [1,512,1,128]
// operand: runs of 256 rows) is loaded into registers once and reused, which
// is the paper's reuse. MaxRank bounds the plan's rank so the row cursor
// holds no more coordinates than needed (2: a matrix, whose row offsets are
// row × stride); registers are what limits this kernel: unrolling the row
// loop or a rank-8 cursor on a rank-4 plan measured slower (perf/RESULTS.md).
template <class Op, class T, int Width, int MaxRank>
struct BroadcastSlidingColumns {
  Op op;
  BroadcastPlan plan;
  const T* a;
  const T* b;
  T* out;
  std::int64_t column_groups;   // columns / Width
  std::int64_t sliding_factor;  // rows per thread

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    constexpr bool matrix = MaxRank == 2;
    const std::int64_t row_block = index / column_groups;
    const std::int64_t column = (index - row_block * column_groups) * Width;
    const std::int64_t row_begin = row_block * sliding_factor;
    const std::int64_t row_count =
        row_begin + sliding_factor < plan.rows ? sliding_factor : plan.rows - row_begin;
    RowCursor<MaxRank> cursor(plan, matrix ? 0 : row_begin);
    if constexpr (matrix) {
      if (plan.rank == 2) {
        cursor.a = row_begin * plan.a_strides[0];
        cursor.b = row_begin * plan.b_strides[0];
        cursor.out = row_begin * plan.out_strides[0];
      }
    }
    const std::int64_t sa = plan.a_column_stride, sb = plan.b_column_stride,
                       so = plan.out_column_stride;
    std::int64_t a_loaded = -1, b_loaded = -1;  // row offsets held in a_held / b_held
    Pack<T, Width> a_held, b_held;
    for (std::int64_t k = 0; k < row_count; ++k) {
      if (cursor.a != a_loaded) {
        a_held = load_columns<T, Width>(a, cursor.a, sa, column);
        a_loaded = cursor.a;
      }
      if (cursor.b != b_loaded) {
        b_held = load_columns<T, Width>(b, cursor.b, sb, column);
        b_loaded = cursor.b;
      }
      Pack<T, Width> result;
      for (int w = 0; w < Width; ++w) result.value[w] = op(a_held.value[w], b_held.value[w]);
      if constexpr (Width == 1) {
        out[cursor.out + column * so] = result.value[0];
      } else {
        *reinterpret_cast<Pack<T, Width>*>(out + cursor.out + column) = result;
      }
      if constexpr (matrix) {
        if (plan.rank == 2) {
          cursor.a += plan.a_strides[0];
          cursor.b += plan.b_strides[0];
          cursor.out += plan.out_strides[0];
        }
      } else {
        cursor.next(plan);
      }
    }
  }
};

// The sliding-factor kernel for CPUs: one thread per block of
// `sliding_factor` whole rows, so each thread streams through contiguous
// memory and the vector operand stays in cache.
template <class Op, class T>
struct BroadcastSlidingRows {
  Op op;
  BroadcastPlan plan;
  const T* a;
  const T* b;
  T* out;
  std::int64_t sliding_factor;  // rows per thread

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t row_block) const {
    const std::int64_t columns = plan.columns;
    const std::int64_t row_begin = row_block * sliding_factor;
    const std::int64_t row_end =
        row_begin + sliding_factor < plan.rows ? row_begin + sliding_factor : plan.rows;
    RowCursor<> cursor(plan, row_begin);
    const std::int64_t sa = plan.a_column_stride, sb = plan.b_column_stride,
                       so = plan.out_column_stride;
    for (std::int64_t row = row_begin; row < row_end; ++row) {
      const T* a_row = a + cursor.a;
      const T* b_row = b + cursor.b;
      T* out_row = out + cursor.out;
      // Unit strides are the common case; spelling them out lets the
      // compiler vectorise the loop.
      if (so == 1 && sa == 1 && sb == 1) {
        for (std::int64_t j = 0; j < columns; ++j) out_row[j] = op(a_row[j], b_row[j]);
      } else if (so == 1 && sa == 1 && sb == 0) {
        const T b_value = b_row[0];
        for (std::int64_t j = 0; j < columns; ++j) out_row[j] = op(a_row[j], b_value);
      } else if (so == 1 && sa == 0 && sb == 1) {
        const T a_value = a_row[0];
        for (std::int64_t j = 0; j < columns; ++j) out_row[j] = op(a_value, b_row[j]);
      } else {
        for (std::int64_t j = 0; j < columns; ++j)
          out_row[j * so] = op(a_row[j * sa], b_row[j * sb]);
      }
      cursor.next(plan);
    }
  }
};

// Elements per aligned 16-byte access when every operand allows it (column
// strides 0 or 1; for stride 1, base pointer and row starts 16-byte aligned;
// whole groups per row), otherwise 1.
template <class T>
int pack_width(const BroadcastPlan& plan, const T* a, const T* b, const T* out) {
  constexpr int width = pack_elements<T>();
  if (width == 1 || plan.out_column_stride != 1 || plan.columns % width != 0) return 1;
  auto aligned = [&](const T* data, const std::int64_t* strides, std::int64_t column_stride) {
    if (column_stride == 0) return true;  // one element per row, read alone
    if (column_stride != 1) return false;
    if (reinterpret_cast<std::uintptr_t>(data) % 16 != 0) return false;
    for (int d = 0; d + 1 < plan.rank; ++d) {
      if (strides[d] % width != 0) return false;
    }
    return true;
  };
  return aligned(a, plan.a_strides, plan.a_column_stride) &&
                 aligned(b, plan.b_strides, plan.b_column_stride) &&
                 aligned(out, plan.out_strides, plan.out_column_stride)
             ? width
             : 1;
}

template <int Width, class ExecutionSpace, class Op, class T>
void launch_sliding_columns(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                            const T* a, const T* b, T* out, std::int64_t sliding_factor) {
  const std::int64_t column_groups = plan.columns / Width;
  if (sliding_factor == 0) {
    sliding_factor = automatic_sliding_factor(plan.rows, column_groups, space.concurrency(), false);
  }
  const std::int64_t row_blocks = (plan.rows + sliding_factor - 1) / sliding_factor;
  using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  const Policy policy(space, 0, row_blocks * column_groups);
  // The smallest cursor that holds the plan's rank (fewer registers).
  auto launch = [&](auto max_rank) {
    Kokkos::parallel_for("kpl::broadcast::sliding_factor", policy,
                         BroadcastSlidingColumns<Op, T, Width, decltype(max_rank)::value>{
                             op, plan, a, b, out, column_groups, sliding_factor});
  };
  if (plan.rank <= 2) {
    launch(std::integral_constant<int, 2>{});
  } else if (plan.rank <= 4) {
    launch(std::integral_constant<int, 4>{});
  } else {
    launch(std::integral_constant<int, max_broadcast_rank>{});
  }
}

template <class ExecutionSpace, class Op, class T>
void launch_sliding(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                    const T* a, const T* b, T* out, std::int64_t sliding_factor) {
  if constexpr (is_host_space<ExecutionSpace>()) {
    if (sliding_factor == 0) {
      sliding_factor = automatic_sliding_factor(plan.rows, 1, space.concurrency(), true);
    }
    const std::int64_t row_blocks = (plan.rows + sliding_factor - 1) / sliding_factor;
    using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for("kpl::broadcast::sliding_factor", Policy(space, 0, row_blocks),
                         BroadcastSlidingRows<Op, T>{op, plan, a, b, out, sliding_factor});
  } else {
    constexpr int width = pack_elements<T>();
    if (pack_width(plan, a, b, out) == width) {
      launch_sliding_columns<width>(space, op, plan, a, b, out, sliding_factor);
    } else {
      launch_sliding_columns<1>(space, op, plan, a, b, out, sliding_factor);
    }
  }
}

}  // namespace kpl::impl
