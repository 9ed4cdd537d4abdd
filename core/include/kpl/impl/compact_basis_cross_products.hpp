// out_j = B_j^T W B_partner for every block j of a compact basis
// (kpl/compact_basis.hpp), k x k per block. Each team sums one chunk of rows
// of one block; chunks are added in order (impl/compact_basis_chunks.hpp).
//
// The CPU and GPU strategies stay separate on purpose: the CPU one sums in
// row order in the output's precision, the GPU one in exact fixed point
// (impl/compact_basis_fixed_point.hpp) because its threads' atomics come in
// any order. Merging them would change the bits of one of the two.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/basis_rows.hpp>
#include <kpl/impl/compact_basis_chunks.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>
#include <kpl/impl/compact_basis_team_sums.hpp>
#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kpl {
namespace impl {

// Blocks a caller fills itself (non-zero: skipped), or empty for none, in
// the memory of the execution space that forms the others.
template <class MemorySpace>
using SkippedBlocksIn = Kokkos::View<const std::uint8_t*, MemorySpace>;
using SkippedBlocks = SkippedBlocksIn<Kokkos::HostSpace>;

template <class Skipped>
KOKKOS_INLINE_FUNCTION bool is_skipped(const Skipped& skipped, std::int64_t j) {
  return j < std::int64_t(skipped.extent(0)) && skipped(j) != 0;
}

// CPU: one thread per (pair of blocks, chunk) adds each row's width x width
// outer products in row order, through raw streams (cubic splines unrolled;
// the rows of an outer product are contiguous in `sums`, added as vectors).
// The two blocks of a pair share one read of the partner's rows, unless the
// partner is each block itself or one of them is skipped. Host only.
template <class FirstView, class ValuesView, class WView, class Output>
struct CrossProductsInRowOrder {
  FirstView first;
  ValuesView values;
  WView w;
  Output output;
  SkippedBlocks skipped;
  std::int64_t rows, rows_per_team, partner;
  int k, width;

  static std::int64_t teams(std::int64_t blocks, std::int64_t chunks) {
    return (blocks + 1) / 2 * chunks;
  }

  bool wanted(std::int64_t j) const {
    return j < std::int64_t(first.extent(0)) && !is_skipped(skipped, j);
  }

  template <int Blocks>
  void sum_blocks(const std::int64_t (&blocks)[Blocks], std::int64_t chunk) const {
    using Sum = typename decltype(output.out)::non_const_value_type;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const std::int64_t entries = std::int64_t(k) * k;
    std::vector<Sum> sums(Blocks * entries, Sum(0));
    for_each_cross_product_row(first, values, w, blocks, partner < 0 ? blocks[0] : partner,
                               begin, end, k, width, Sum(1),
                               [&](int b, std::int64_t corner, const Sum* left, const Sum* right,
                                   auto width_constant) {
                                 add_outer_product(sums.data() + b * entries + corner, k, left,
                                                   right, width_constant);
                               });
    for (int b = 0; b < Blocks; ++b)
      for (std::int64_t a = 0; a < entries; ++a)
        output.store(blocks[b], chunk, a, double(sums[b * entries + a]));
  }

  void operator()(const std::int64_t team) const {
    const std::int64_t chunks = output.chunks;
    const std::int64_t pair = team / chunks, chunk = team % chunks;
    const std::int64_t one = 2 * pair, other = one + 1;
    if (wanted(one) && wanted(other) && partner >= 0) {
      sum_blocks({one, other}, chunk);
      return;
    }
    for (const std::int64_t j : {one, other})
      if (wanted(j)) sum_blocks({j}, chunk);
  }
};

// GPU, in three kernels. The rows are cut into chunks as on CPUs, and each
// chunk's terms are scaled to fixed point by a power of two fixed by a bound
// on its sum (ChunkSumBounds). Each team then takes one part of a chunk of
// one block (CrossProductsByRowsInFixedPoint) and adds its integer sums to
// the chunk's in global memory; integer addition is exact, so neither the
// parts nor the order of their atomics change a bit. Finally each chunk's
// sum becomes the double it stands for and the chunks are added in order
// (FixedPointChunksInOrder). Parts exist for the launch's sake: one team a
// chunk left the last of three or four waves of teams mostly empty.

// bounds(c) >= the sum of |terms| of chunk c: rows x max|w| x bound^2 (not
// finite where a weight is not).
template <class ExecutionSpace, class WView>
struct ChunkSumBounds {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  WView w;
  Kokkos::View<double*, typename ExecutionSpace::memory_space> bounds;
  std::int64_t rows, rows_per_chunk;
  double values_bound;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t chunk = member.league_rank();
    const std::int64_t begin = chunk * rows_per_chunk;
    const std::int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    double w_max = 1;
    if (w.extent(0) != 0)
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, begin, end),
          [&](std::int64_t i, double& largest_so_far) {
            const double counted = bound_term(double(w(i)));
            if (counted > largest_so_far) largest_so_far = counted;
          },
          Kokkos::Max<double>(w_max));
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      bounds(chunk) = w_max * values_bound * values_bound * double(end - begin);
    });
  }
};

// Each thread takes whole rows of the team's part (rows begin + t,
// begin + t + T, ...), forms a row's width x width terms in registers and
// adds each, scaled to fixed point, to the team's sums by an integer atomic;
// the team then adds its sums to its chunk's. Width: the basis' width as a
// compile-time constant, or 0.
//
// Why whole rows: a warp's 32 rows load their indices and values in a few
// coalesced loads and spend the rest on the atomics; with a lane per term
// (16 lanes a row, two rows a warp) every lane repeated the row's loads
// and index arithmetic, and issuing them bound the kernel. Rows of one warp
// hit the same entry only where they share both knot intervals, and the
// integer atomics are native: a collision costs a replay, not a retry.
template <class ExecutionSpace, class FirstView, class ValuesView, class WView, int Width>
struct CrossProductsByRowsInFixedPoint {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Memory = typename ExecutionSpace::memory_space;
  using Scratch = Kokkos::View<unsigned*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int max_width = Width > 0 ? Width : bspline_max_degree + 1;
  FirstView first;
  ValuesView values;
  WView w;
  Kokkos::View<const double*, Memory> bounds;            // [chunks]
  Kokkos::View<unsigned long long*, Memory> chunk_sums;  // [blocks][chunks][k k]
  SkippedBlocksIn<Memory> skipped;
  std::int64_t rows, rows_per_chunk, rows_per_part, parts_per_chunk, chunks, partner;
  int k, width, level;

  KOKKOS_INLINE_FUNCTION static std::int64_t scratch_words(int k) {
    return 2 * std::int64_t(k) * k;
  }

  // Row i's terms w(i) B_j(i, first_j + q) B_other(i, first_other + r),
  // scaled, added at (first_j + q, first_other + r): with a compile-time
  // width, the width terms of each q together (SplitScratchSums::add_several).
  KOKKOS_INLINE_FUNCTION void add_row(std::int64_t j, std::int64_t other, std::int64_t i,
                                      double scale, const SplitScratchSums& sums) const {
    const int n = width_or<Width>(width);
    RowOfTwoBlocks<max_width> row;
    if (!row.read(StoredBasisRows<FirstView, ValuesView>{first, values}, w, j, other, i, k, n,
                  [&](double weight, double value) { return weight * value * scale; }))
      return;
    for (int q = 0; q < n; ++q) {
      if constexpr (Width > 0) {
        int entries[Width];
        unsigned long long terms[Width];
        for (int r = 0; r < Width; ++r) {
          entries[r] = row.corner + q * k + r;
          terms[r] = to_fixed_point(row.right[r], row.left[q]);
        }
        sums.add_several(entries, terms);
      } else {
        for (int r = 0; r < n; ++r)
          sums.add(row.corner + q * k + r, to_fixed_point(row.right[r], row.left[q]));
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t entries = std::int64_t(k) * k;
    const std::int64_t parts = chunks * parts_per_chunk;
    const std::int64_t j = member.league_rank() / parts;
    const std::int64_t part = member.league_rank() % parts;
    const std::int64_t chunk = part / parts_per_chunk;
    const std::int64_t other = partner < 0 ? j : partner;
    const std::int64_t chunk_end =
        (chunk + 1) * rows_per_chunk < rows ? (chunk + 1) * rows_per_chunk : rows;
    const std::int64_t begin = chunk * rows_per_chunk + (part % parts_per_chunk) * rows_per_part;
    const std::int64_t end = begin + rows_per_part < chunk_end ? begin + rows_per_part : chunk_end;
    const double bound = bounds(chunk);
    if (begin >= end || !compat::math::isfinite(bound)) return;  // NaN: FixedPointChunksInOrder
    if (is_skipped(skipped, j)) return;
    Scratch words(member.team_scratch(level), scratch_words(k));
    const SplitScratchSums sums(words.data(), words.data() + entries, level);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 2 * entries),
                         [&](std::int64_t a) { words(a) = 0u; });
    member.team_barrier();
    const double scale = fixed_point_scale(bound);
    for (std::int64_t i = begin + member.team_rank(); i < end; i += member.team_size())
      add_row(j, other, i, scale, sums);
    member.team_barrier();
    unsigned long long* const target = &chunk_sums((j * chunks + chunk) * entries);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, entries), [&](std::int64_t a) {
      const unsigned long long sum = sums[int(a)];
      if (parts_per_chunk == 1)
        target[a] = sum;  // the chunk's only team: no zeroing, no atomics
      else if (sum != 0)
        Kokkos::atomic_add(target + a, sum);
    });
  }
};

// out[j k k + a] = the chunks' sums of entry a of block j, each the double
// its integer stands for (NaN where its bound is not finite), added in
// chunk order; skipped blocks left as they are.
template <class ExecutionSpace, class OutView>
struct FixedPointChunksInOrder {
  using Memory = typename ExecutionSpace::memory_space;
  Kokkos::View<const double*, Memory> bounds;
  Kokkos::View<const unsigned long long*, Memory> chunk_sums;
  OutView out;
  SkippedBlocksIn<Memory> skipped;
  std::int64_t chunks, entries;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    const std::int64_t j = index / entries, a = index - j * entries;
    if (is_skipped(skipped, j)) return;
    double total = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const double bound = bounds(c);
      total += compat::math::isfinite(bound)
                   ? team_sum_value(chunk_sums((j * chunks + c) * entries + a),
                                    1 / fixed_point_scale(bound))
                   : compat::math::sqrt(-1.0);  // NaN
    }
    out(index) = typename OutView::non_const_value_type(total);
  }
};

// The GPU strategy (public so that a test can run it on CPU threads too):
// out = B^T W B_partner with chunks of rows_per_chunk rows cut into parts of
// rows_per_part, teams of team_size threads; the blocks marked in `skipped`
// are left out (their teams return at once).
template <class ExecutionSpace, class Basis, class WView, class OutView, class Workspace>
void cross_products_in_fixed_point(
    const ExecutionSpace& space, const Basis& basis, const WView& w, std::int64_t partner,
    std::int64_t rows_per_chunk, std::int64_t rows_per_part, const OutView& out,
    Workspace& workspace, int team_size,
    const SkippedBlocksIn<typename ExecutionSpace::memory_space>& skipped = {}) {
  const int k = basis.basis_size;
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const std::int64_t entries = std::int64_t(k) * k;
  const std::int64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  const std::int64_t parts_per_chunk = (rows_per_chunk + rows_per_part - 1) / rows_per_part;
  const auto bounds = workspace.reserve(chunks);
  const std::int64_t sums_size = blocks * chunks * entries;
  const auto chunk_sums = workspace.reserve_fixed_point(sums_size);
  if (parts_per_chunk > 1)  // teams add to their chunk's sums; a chunk's only team stores them
    Kokkos::deep_copy(
        space, Kokkos::subview(chunk_sums, Kokkos::pair<std::int64_t, std::int64_t>(0, sums_size)),
        0ull);
  Kokkos::parallel_for("kpl::compact_basis::cross_products_bounds",
                       Kokkos::TeamPolicy<ExecutionSpace>(space, int(chunks), Kokkos::AUTO),
                       ChunkSumBounds<ExecutionSpace, WView>{w, bounds, rows, rows_per_chunk,
                                                             value_bound(space, basis)});
  const auto launch = [&](auto width_constant) {
    using Functor = CrossProductsByRowsInFixedPoint<ExecutionSpace, decltype(basis.first),
                                                    decltype(basis.values), WView,
                                                    decltype(width_constant)::value>;
    const auto shape =
        scratch_team_launch(space, blocks * chunks * parts_per_chunk, team_size,
                            Functor::Scratch::shmem_size(Functor::scratch_words(k)));
    Kokkos::parallel_for(
        "kpl::compact_basis::cross_products", shape.policy,
        Functor{basis.first, basis.values, w, bounds, chunk_sums, skipped, rows, rows_per_chunk,
                rows_per_part, parts_per_chunk, chunks, partner, k, basis.width(), shape.level});
  };
  with_compile_time_width(basis.width(), launch);
  Kokkos::parallel_for("kpl::compact_basis::cross_products_chunks",
                       Kokkos::RangePolicy<ExecutionSpace>(space, 0, blocks * entries),
                       FixedPointChunksInOrder<ExecutionSpace, OutView>{bounds, chunk_sums, out,
                                                                        skipped, chunks, entries});
}

template <class ExecutionSpace, class Basis, class WView, class Output>
void cross_products_in_row_order(const ExecutionSpace& space, const Basis& basis, const WView& w,
                                 std::int64_t partner, std::int64_t rows_per_team,
                                 const Output& output, const SkippedBlocks& skipped) {
  using Functor =
      CrossProductsInRowOrder<decltype(basis.first), decltype(basis.values), WView, Output>;
  // Dynamic: skipped blocks leave the static shares uneven.
  Kokkos::parallel_for(
      "kpl::compact_basis::cross_products",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>(
          space, 0, Functor::teams(basis.blocks(), output.chunks)),
      Functor{basis.first, basis.values, w, output, skipped, basis.rows(), rows_per_team, partner,
              basis.basis_size, basis.width()});
}

// out = B^T W B_partner: chunks sized for the execution space, each summed
// by the space's strategy, then added in order. workspace: a
// CompactProductWorkspace. The blocks marked in `skipped` are left out
// (their contents unspecified: the caller fills them).
template <class ExecutionSpace, class Basis, class WView, class OutView, class Workspace>
void compact_cross_products(
    const ExecutionSpace& space, const Basis& basis, const WView& w, std::int64_t partner,
    const OutView& out, Workspace& workspace,
    const SkippedBlocksIn<typename ExecutionSpace::memory_space>& skipped = {}) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const std::int64_t entries = std::int64_t(basis.basis_size) * basis.basis_size;
  const std::int64_t rows_per_team = cross_rows_per_team(space, rows, blocks);
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  if constexpr (compact_basis_on_host<ExecutionSpace>) {
    const ChunkSums<OutView> output{
        out, workspace.reserve(chunks > 1 ? blocks * chunks * entries : 0), chunks, entries};
    cross_products_in_row_order(space, basis, w, partner, rows_per_team, output, skipped);
    if (chunks > 1) add_chunks_in_order(space, output.partials, blocks, chunks, entries, out);
  } else {
    constexpr int team_size = compact_team_size<ExecutionSpace>();
    cross_products_in_fixed_point(
        space, basis, w, partner, rows_per_team,
        cross_rows_per_part(space, rows_per_team, blocks, chunks, basis.basis_size, team_size), out,
        workspace, team_size, skipped);
  }
}

}  // namespace impl
}  // namespace kpl
