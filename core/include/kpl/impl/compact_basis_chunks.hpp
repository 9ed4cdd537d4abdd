// How the compact-basis products (kpl/compact_basis.hpp) cut the rows of a
// block into chunks, one team each, and add the chunks' sums in a fixed
// order so that the same inputs give the same bits on every run.
#pragma once

#include <kpl/bspline.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpl {
namespace impl {

template <class ExecutionSpace>
inline constexpr bool compact_basis_on_host =
    std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;

// Rows each team of a product takes: enough per GPU team that its atomics
// are few against its reads; on CPUs a few chunks per thread.
template <class ExecutionSpace>
std::int64_t compact_rows_per_team(const ExecutionSpace& space, std::int64_t rows,
                                   std::int64_t blocks) {
  if constexpr (compact_basis_on_host<ExecutionSpace>) {
    const std::int64_t threads = space.concurrency();
    const std::int64_t chunks =
        std::max<std::int64_t>(1, (4 * threads + blocks - 1) / std::max<std::int64_t>(blocks, 1));
    return std::max<std::int64_t>(1024, (rows + chunks - 1) / chunks);
  } else {
    (void)space;
    (void)blocks;
    return 4096;
  }
}

// Threads per team: one on CPUs (it sums its chunk in row order).
template <class ExecutionSpace>
constexpr int compact_team_size() {
  return compact_basis_on_host<ExecutionSpace> ? 1 : 256;
}

// Chunks of rows for the k x k cross products: at most 16 per block, so
// that their partial sums (p k^2 values per chunk) stay small.
template <class ExecutionSpace>
std::int64_t cross_rows_per_team(const ExecutionSpace& space, std::int64_t rows,
                                 std::int64_t blocks) {
  const std::int64_t rows_per_team = compact_rows_per_team(space, rows, blocks);
  return std::max<std::int64_t>(rows_per_team, (rows + 15) / 16);
}

// Rows a GPU team of the cross products takes, a part of a chunk of
// cross_rows_per_team: enough teams for about four waves
// of full occupancy, each part at least 4 k^2 rows (and 2048): each part's
// team adds its k^2 sums to global memory, which cost more than the rows
// gained where parts were shorter (k = 64, n = 1e5).
template <class ExecutionSpace>
std::int64_t cross_rows_per_part(const ExecutionSpace& space, std::int64_t rows_per_chunk,
                                 std::int64_t blocks, std::int64_t chunks, int k,
                                 int team_size) {
  const std::int64_t resident_teams = std::max<std::int64_t>(1, space.concurrency() / team_size);
  const std::int64_t items = std::max<std::int64_t>(1, blocks * chunks);
  const std::int64_t wanted = std::max<std::int64_t>(1, (4 * resident_teams + items - 1) / items);
  const std::int64_t shortest = std::max<std::int64_t>(2048, 4 * std::int64_t(k) * k);
  const std::int64_t parts =
      std::max<std::int64_t>(1, std::min(wanted, rows_per_chunk / shortest));
  return (rows_per_chunk + parts - 1) / parts;
}

// Where a team's sums go: straight into the result when a block has one
// chunk, else into the chunk's partials (added in order afterwards).
template <class OutView>
struct ChunkSums {
  OutView out;
  Kokkos::View<double*, typename OutView::memory_space> partials;
  std::int64_t chunks, entries;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t block, std::int64_t chunk, std::int64_t entry,
                                    double total) const {
    using Sum = typename OutView::non_const_value_type;
    if (chunks == 1)
      out(block * entries + entry) = Sum(total);
    else
      partials((block * chunks + chunk) * entries + entry) = total;
  }
};

// out[j entries + e] = sum over chunks c, in order, of
// partials[(j chunks + c) entries + e]: on CPUs and for up to
// chunks_added_in_order chunks on GPUs (more below: by lanes).
template <class OutView>
struct AddChunksInOrder {
  Kokkos::View<double*, typename OutView::memory_space> partials;
  std::int64_t chunks, entries;
  OutView out;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    const std::int64_t j = index / entries, e = index - j * entries;
    double total = 0;
    for (std::int64_t c = 0; c < chunks; ++c) total += partials((j * chunks + c) * entries + e);
    out(index) = typename OutView::non_const_value_type(total);
  }
};

// The same sums by the vector lanes of a team thread each: lane l adds
// chunks l, l + L, ..., and a vector reduction adds the lanes (a fixed tree,
// the same bits every run). On GPUs one thread per sum adding hundreds of
// chunks (n = 1e6 in chunks of 4096 rows: 245) waits on each load in turn,
// with too few threads to hide it.
template <class ExecutionSpace, class OutView>
struct AddChunksByLanes {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Kokkos::View<double*, typename OutView::memory_space> partials;
  std::int64_t chunks, entries;
  OutView out;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t j = member.league_rank();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, entries), [&](const std::int64_t e) {
      double total = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, chunks),
          [&](const std::int64_t c, double& sum) {
            sum += partials((j * chunks + c) * entries + e);
          },
          total);
      Kokkos::single(Kokkos::PerThread(member),
                     [&] { out(j * entries + e) = typename OutView::non_const_value_type(total); });
    });
  }
};

// Chunks beyond which GPUs add them by lanes.
inline constexpr std::int64_t chunks_added_in_order = 32;

template <class ExecutionSpace, class OutView>
void add_chunks_by_lanes(const ExecutionSpace& space,
                         const Kokkos::View<double*, typename OutView::memory_space>& partials,
                         std::int64_t blocks, std::int64_t chunks, std::int64_t entries,
                         const OutView& out, int team_size, int vector_length) {
  Kokkos::parallel_for(
      "kpl::compact_basis::add_chunks_by_lanes",
      Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(blocks), team_size, vector_length),
      AddChunksByLanes<ExecutionSpace, OutView>{partials, chunks, entries, out});
}

template <class ExecutionSpace, class OutView>
void add_chunks_in_order(const ExecutionSpace& space,
                         const Kokkos::View<double*, typename OutView::memory_space>& partials,
                         std::int64_t blocks, std::int64_t chunks, std::int64_t entries,
                         const OutView& out) {
  if (!compact_basis_on_host<ExecutionSpace> && chunks > chunks_added_in_order) {
    add_chunks_by_lanes(space, partials, blocks, chunks, entries, out, 8, 32);
    return;
  }
  Kokkos::parallel_for("kpl::compact_basis::add_chunks_in_order",
                       Kokkos::RangePolicy<ExecutionSpace>(space, 0, blocks * entries),
                       AddChunksInOrder<OutView>{partials, chunks, entries, out});
}

// The int a width argument stands for: a run-time int, or a compile-time
// std::integral_constant (so the loop it bounds unrolls). Not the constant's
// own conversion operator: that is a host function, which nvcc refuses in
// the host-device kernels (warning #20013).
KOKKOS_INLINE_FUNCTION constexpr int width_value(int width) { return width; }
template <int Width>
KOKKOS_INLINE_FUNCTION constexpr int width_value(std::integral_constant<int, Width>) {
  return Width;
}

// f(0), ..., f(width - 1): written out one call after another for a
// compile-time width (GCC at -O2 keeps even a four-trip loop a loop), a loop
// for a run-time one. Host only (its callers are the CPU kernels): nvcc
// refuses a host lambda called from a host-device function. Declared inline,
// as the kernels' helpers below: GCC inlines a template that says so under
// higher limits, and without it left these calls, and the kernels' rows with
// them, out of line.
template <class F, int... Q>
inline void for_each_of_width(std::integer_sequence<int, Q...>, const F& f) {
  (f(Q), ...);
}
template <int Width, class F>
inline void for_each_of_width(std::integral_constant<int, Width>, const F& f) {
  for_each_of_width(std::make_integer_sequence<int, Width>(), f);
}
template <class F>
inline void for_each_of_width(int width, const F& f) {
  for (int q = 0; q < width; ++q) f(q);
}

// A CPU thread sums its chunk's rows into four sets of partial sums, row
// begin + r into set r mod 4, and adds the sets at the end as (set 0 + set
// 1) + (set 2 + set 3). With one set, a row whose terms go to the entries
// that the row before has just stored waits for those stores, and the
// products ran at the speed of that chain rather than of memory. The same
// inputs and chunks give the same bits.
inline constexpr int cpu_row_partials = 4;
static_assert(cpu_row_partials == 4, "for_each_row_interleaved and added_partials spell out 4");

// add_row(i, set) for every row i of [begin, end), in order.
template <class AddRow>
inline void for_each_row_interleaved(std::int64_t begin, std::int64_t end, const AddRow& add_row) {
  std::int64_t i = begin;
  for (; i + cpu_row_partials <= end; i += cpu_row_partials) {
    add_row(i, 0);
    add_row(i + 1, 1);
    add_row(i + 2, 2);
    add_row(i + 3, 3);
  }
  for (int set = 0; i < end; ++i, ++set) add_row(i, set);
}

// Entry a of the four sets of k partial sums, added.
inline double added_partials(const std::vector<double>& sums, int k, int a) {
  return (sums[a] + sums[k + a]) + (sums[2 * k + a] + sums[3 * k + a]);
}

// Calls rows_of(width) with the width as a compile-time constant for cubic
// splines (width 4, the common case: its loops unroll), else at run time.
template <class RowsOf>
void with_width(int width, const RowsOf& rows_of) {
  if (width == 4)
    rows_of(std::integral_constant<int, 4>());
  else
    rows_of(width);
}

// The rows of B_j^T W B_other over rows [begin, end), one after another (a
// CPU team's chunk, host only), for each block j of `blocks` (several share
// one read of the partner's rows): for each row of non-zero weight and each
// b, row_block(b, corner, left, right, width) with the row's width x width
// outer product left[q] right[r] going to entry corner + q k + r of block
// blocks[b]'s k x k result; left[q] = w(i) scale B_j(i, first_j + q) and
// right[r] = B_other(i, first_other + r), in Sum; width a compile-time
// constant for cubic splines. Raw streams. Shared by cross_products and
// cross_product_parts.
template <class Sum, int Blocks, class FirstView, class ValuesView, class WView, class RowBlock>
void for_each_cross_product_row(const FirstView& first, const ValuesView& values, const WView& w,
                                const std::int64_t (&blocks)[Blocks], std::int64_t other,
                                std::int64_t begin, std::int64_t end, int k, int width, Sum scale,
                                const RowBlock& row_block) {
  using T = typename ValuesView::non_const_value_type;
  const bool weighted = w.extent(0) != 0;
  const int* row_columns[Blocks];
  const T* row_values[Blocks];
  for (int b = 0; b < Blocks; ++b) {
    row_columns[b] = &first(blocks[b], 0);
    row_values[b] = &values(blocks[b], 0, 0);
  }
  const int* partner_columns = &first(other, 0);
  const T* partner_values = &values(other, 0, 0);
  const std::int64_t stride = values.stride(1);
  with_width(width, [&](auto width_constant) {
    for (std::int64_t i = begin; i < end; ++i) {
      const Sum weight = weighted ? Sum(w(i)) : Sum(1);
      if (weight == Sum(0)) continue;
      Sum right[bspline_max_degree + 1];
      for_each_of_width(width_constant,
                        [&](int r) { right[r] = Sum(partner_values[r * stride + i]); });
      const std::int64_t partner_column = partner_columns[i];
      for (int b = 0; b < Blocks; ++b) {
        Sum left[bspline_max_degree + 1];
        for_each_of_width(width_constant, [&](int q) {
          left[q] = weight * scale * Sum(row_values[b][q * stride + i]);
        });
        row_block(b, std::int64_t(row_columns[b][i]) * k + partner_column, left, right,
                  width_constant);
      }
    }
  });
}

// row[r] += terms[r] for r < width, the row loaded whole before any of it is
// stored: GCC then adds it as vectors (with loads and stores interleaved it
// keeps every addition scalar, since it cannot tell the stores from the next
// loads). Each entry gets the same term as before, in the same order.
template <class Sum, class Width>
inline void add_to_row(Sum* row, const Sum* terms, Width width) {
  Sum updated[bspline_max_degree + 1];
  for_each_of_width(width, [&](int r) { updated[r] = row[r] + terms[r]; });
  for_each_of_width(width, [&](int r) { row[r] = updated[r]; });
}

// block[q k + r] += left[q] right[r] for q, r < width, row by row.
template <class Sum, class Width>
inline void add_outer_product(Sum* block, int k, const Sum* left, const Sum* right, Width width) {
  for_each_of_width(width, [&](int q) {
    Sum terms[bspline_max_degree + 1];
    for_each_of_width(width, [&](int r) { terms[r] = left[q] * right[r]; });
    add_to_row(block + std::int64_t(q) * k, terms, width);
  });
}

}  // namespace impl
}  // namespace kpl
