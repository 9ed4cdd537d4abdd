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
#include <kpl/impl/compact_basis_chunks.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>
#include <kpl/impl/compact_basis_team_lanes.hpp>
#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kpl {
namespace impl {

// Blocks a caller fills itself (non-zero: skipped), or empty for none.
using SkippedBlocks = Kokkos::View<const std::uint8_t*, Kokkos::HostSpace>;

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
    return j < std::int64_t(first.extent(0)) && (skipped.extent(0) == 0 || !skipped(j));
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

// GPU: each of a thread's vector lanes owns one (q, r) of the rows' width^2
// terms and the team's threads share the chunk's rows
// (impl/compact_basis_team_lanes.hpp); each term, scaled to fixed point,
// goes to the k x k sums in scratch memory by an integer atomic. A sum
// whose bound is not finite comes out NaN. Width: the basis' width as a
// compile-time constant, or 0.
template <class ExecutionSpace, class FirstView, class ValuesView, class WView, class Output,
          int Width>
struct CrossProductsInFixedPoint {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<unsigned long long*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  FirstView first;
  ValuesView values;
  WView w;
  Output output;
  std::int64_t rows, rows_per_team, partner;
  int k, width, level;
  double values_bound;

  static std::int64_t scratch_values(int k) { return std::int64_t(k) * team_sums_stride(k); }

  // |sum| <= rows x max|w| x bound^2 over the team's rows.
  KOKKOS_INLINE_FUNCTION double sum_bound(const Member& member, std::int64_t begin,
                                          std::int64_t end) const {
    double w_max = 1;
    if (w.extent(0) != 0)
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, begin, end),
          [&](std::int64_t i, double& largest_so_far) {
            const double counted = bound_term(double(w(i)));
            if (counted > largest_so_far) largest_so_far = counted;
          },
          Kokkos::Max<double>(w_max));
    return w_max * values_bound * values_bound * double(end - begin);
  }

  // Term (q, r) of the rows this thread takes from [begin, end), added to sums.
  KOKKOS_INLINE_FUNCTION void add_term_of_rows(const Member& member, std::int64_t j,
                                               std::int64_t other, std::int64_t begin,
                                               std::int64_t end, double scale, int term,
                                               const Scratch& sums) const {
    int q, r;
    term_of_lane<Width>(term, width, q, r);
    const auto read = lane_row_reader(first, values, w, j, other, q, r, k);
    for_each_lane_row(read, begin + member.team_rank(), end, member.team_size(),
                      [&](const LaneRow& row) {
                        const double left = row.weight * row.left * scale;
                        atomic_add_to_scratch(sums.data() + row.target,
                                              to_fixed_point(row.right, left), level);
                      });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t chunks = output.chunks, entries = std::int64_t(k) * k;
    const std::int64_t j = member.league_rank() / chunks;
    const std::int64_t chunk = member.league_rank() % chunks;
    const std::int64_t other = partner < 0 ? j : partner;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const int stride = team_sums_stride(k);
    Scratch sums(member.team_scratch(level), k * stride);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k * stride),
                         [&](int a) { sums(a) = 0ull; });
    member.team_barrier();
    const double bound = sum_bound(member, begin, end);
    const bool finite = compat::math::isfinite(bound);
    const double scale = fixed_point_scale(bound);
    if (finite)
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, terms_of_width<Width>(width)),
                           [&](int term) {
                             add_term_of_rows(member, j, other, begin, end, scale, term, sums);
                           });
    member.team_barrier();
    const double inverse_scale = 1 / scale;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, entries), [&](std::int64_t a) {
      const std::int64_t row = a / k, column = a - row * k;
      output.store(j, chunk, a,
                   finite ? team_sum_value(sums(row * stride + column), inverse_scale)
                          : compat::math::sqrt(-1.0));  // NaN
    });
  }
};

// The GPU strategy with `team_size` threads per team, each on up to
// `vector_length` lanes (public so that a test can run it on CPU threads too).
template <class ExecutionSpace, class Basis, class WView, class Output>
void cross_products_in_fixed_point(const ExecutionSpace& space, const Basis& basis, const WView& w,
                                   std::int64_t partner, std::int64_t rows_per_team,
                                   const Output& output, int team_size, int vector_length = 1) {
  const int k = basis.basis_size;
  const double values_bound = value_bound(space, basis);
  const auto launch = [&](auto width_constant) {
    using Functor = CrossProductsInFixedPoint<ExecutionSpace, decltype(basis.first),
                                              decltype(basis.values), WView, Output,
                                              decltype(width_constant)::value>;
    const auto shape =
        lane_launch(space, basis.blocks() * output.chunks, team_size, vector_length,
                    Functor::Scratch::shmem_size(Functor::scratch_values(k)));
    Kokkos::parallel_for("kpl::compact_basis::cross_products", shape.policy,
                         Functor{basis.first, basis.values, w, output, basis.rows(), rows_per_team,
                                 partner, k, basis.width(), shape.level, values_bound});
  };
  with_lane_width(basis.width(), launch);
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
// CompactProductWorkspace. On host backends the blocks marked in `skipped`
// are left out (their contents unspecified: the caller fills them); other
// backends compute every block.
template <class ExecutionSpace, class Basis, class WView, class OutView, class Workspace>
void compact_cross_products(const ExecutionSpace& space, const Basis& basis, const WView& w,
                            std::int64_t partner, const OutView& out, Workspace& workspace,
                            const SkippedBlocks& skipped = {}) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const std::int64_t entries = std::int64_t(basis.basis_size) * basis.basis_size;
  const std::int64_t rows_per_team = cross_rows_per_team(space, rows, blocks);
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  const ChunkSums<OutView> output{
      out, workspace.reserve(chunks > 1 ? blocks * chunks * entries : 0), chunks, entries};
  if constexpr (compact_basis_on_host<ExecutionSpace>)
    cross_products_in_row_order(space, basis, w, partner, rows_per_team, output, skipped);
  else {
    const int lanes = lanes_for_width(basis.width());
    cross_products_in_fixed_point(space, basis, w, partner, rows_per_team, output,
                                  std::max(1, compact_team_size<ExecutionSpace>() / lanes), lanes);
  }
  if (chunks > 1) add_chunks_in_order(space, output.partials, blocks, chunks, entries, out);
}

}  // namespace impl
}  // namespace kpl
