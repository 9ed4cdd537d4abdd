// The three broadcast kernels behind kpl::broadcast (Çoban, Yuret & Unat,
// "Multidimensional broadcast operation on the GPU"): the general kernel
// (§III-B/C), the sliding-factor kernel (§III-D) and the scratch-memory
// kernel (§III-E). They all work on a BroadcastPlan: the output shape after
// broadcasting and merging, with every operand's strides over it (0 on the
// dimensions an operand is broadcast along). The innermost plan dimension is
// the "column" and all the outer ones together are the "rows".
#pragma once

#include <kpl/impl/pack.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

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

// The general kernel (§III-B/C), organised by rows: each (thread, work item)
// takes one chunk of one row, finds the three operands' row offsets from the
// row's coordinate, and its vector lanes sweep the chunk, consecutive lanes
// on consecutive elements. A persistent grid: each thread walks work items
// strided by the number of threads, so short rows do not cost a block each.
template <class Op, class T, class ExecutionSpace>
struct BroadcastGeneral {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Op op;
  BroadcastPlan plan;
  const T* a;
  const T* b;
  T* out;
  std::int64_t chunk_length;  // elements of a row one work item handles
  std::int64_t chunks_per_row;
  std::int64_t work_items;  // rows * chunks_per_row

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t threads = std::int64_t(member.league_size()) * member.team_size();
    for (std::int64_t work =
             std::int64_t(member.league_rank()) * member.team_size() + member.team_rank();
         work < work_items; work += threads) {
      process(member, work);
    }
  }

  KOKKOS_INLINE_FUNCTION void process(const member_type& member, const std::int64_t work) const {
    const std::int64_t row = work / chunks_per_row;
    const std::int64_t begin = (work % chunks_per_row) * chunk_length;
    const std::int64_t columns = plan.columns;
    const std::int64_t end = begin + chunk_length < columns ? begin + chunk_length : columns;
    const RowCursor<> cursor(plan, row);
    const std::int64_t sa = plan.a_column_stride, sb = plan.b_column_stride,
                       so = plan.out_column_stride;
    Kokkos::parallel_for(
        Kokkos::ThreadVectorRange(member, static_cast<int>(end - begin)), [&](const int k) {
          const std::int64_t j = begin + k;
          out[cursor.out + j * so] = op(a[cursor.a + j * sa], b[cursor.b + j * sb]);
        });
  }
};

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
// loop or a rank-8 cursor on a rank-4 plan cost 10-35% on the H100
// (perf/RESULTS.md).
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

// The scratch-memory kernel (§III-E), for plans of rank <= 2 (a matrix and a
// row or column vector after merging). A team owns a tile of
// `sliding_factor` rows × `tile_columns` columns; it first copies the part of
// each vector operand that the tile reuses into scratch memory (a row
// vector's tile_columns elements, a column vector's sliding_factor
// elements), then every thread reads the vector from scratch.
// Which operand the scratch kernel stages, and how.
enum class Staging {
  none,
  row_vector,     // the same for every row: one value per column of the tile
  column_vector,  // the same along a row: one value per row of the tile
};

template <class Op, class T, class ExecutionSpace>
struct BroadcastScratch {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using scratch_view = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Op op;
  BroadcastPlan plan;
  const T* a;
  const T* b;
  T* out;
  std::int64_t sliding_factor;  // rows per team
  std::int64_t tile_columns;    // columns per team
  std::int64_t column_tiles;
  Staging a_staging, b_staging;

  static std::size_t scratch_bytes(std::int64_t sliding_factor, std::int64_t tile_columns,
                                   Staging a_staging, Staging b_staging) {
    auto bytes = [&](Staging staging) -> std::size_t {
      return staging == Staging::row_vector      ? scratch_view::shmem_size(tile_columns)
             : staging == Staging::column_vector ? scratch_view::shmem_size(sliding_factor)
                                                 : 0;
    };
    return bytes(a_staging) + bytes(b_staging);
  }

  KOKKOS_INLINE_FUNCTION std::int64_t row_stride(const std::int64_t* strides) const {
    return plan.rank > 1 ? strides[0] : 0;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t tile = member.league_rank();
    const std::int64_t row_begin = (tile / column_tiles) * sliding_factor;
    const std::int64_t column_begin = (tile % column_tiles) * tile_columns;
    const std::int64_t columns = plan.columns;
    const int tile_rows = static_cast<int>(
        row_begin + sliding_factor < plan.rows ? sliding_factor : plan.rows - row_begin);
    const int tile_width = static_cast<int>(
        column_begin + tile_columns < columns ? tile_columns : columns - column_begin);
    const std::int64_t sa = plan.a_column_stride, sb = plan.b_column_stride,
                       so = plan.out_column_stride;
    const std::int64_t ra = row_stride(plan.a_strides), rb = row_stride(plan.b_strides),
                       ro = row_stride(plan.out_strides);

    auto stage = [&](const T* source, Staging staging, std::int64_t row_step,
                     std::int64_t column_step, scratch_view& staged) {
      if (staging == Staging::row_vector) {
        staged = scratch_view(member.team_scratch(0), tile_columns);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile_width), [&](const int k) {
          staged(k) = source[(column_begin + k) * column_step];
        });
      } else if (staging == Staging::column_vector) {
        staged = scratch_view(member.team_scratch(0), sliding_factor);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile_rows),
                             [&](const int r) { staged(r) = source[(row_begin + r) * row_step]; });
      }
    };
    scratch_view a_staged, b_staged;
    stage(a, a_staging, ra, sa, a_staged);
    stage(b, b_staging, rb, sb, b_staged);
    member.team_barrier();

    // Rows outer, the team's threads across the row's columns: coalesced on
    // GPUs, contiguous on CPUs.
    for (int r = 0; r < tile_rows; ++r) {
      const std::int64_t i = row_begin + r;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile_width), [&](const int k) {
        const std::int64_t j = column_begin + k;
        const T a_value = a_staging == Staging::row_vector      ? a_staged(k)
                          : a_staging == Staging::column_vector ? a_staged(r)
                                                                : a[i * ra + j * sa];
        const T b_value = b_staging == Staging::row_vector      ? b_staged(k)
                          : b_staging == Staging::column_vector ? b_staged(r)
                                                                : b[i * rb + j * sb];
        out[i * ro + j * so] = op(a_value, b_value);
      });
    }
  }
};

}  // namespace kpl::impl
