// B^T W B summed so that the result has the same bits however its rows are
// split (among chunks, threads or processes) and in whatever order the
// pieces are added: pre-rounding (Demmel & Nguyen, "Parallel reproducible
// summation", IEEE Trans. Computers 64(7), 2015, §III). Every term is cut
// into ExactSumGrid::parts slices, slice l a multiple of the spacing g_l of
// grid l, by the extractor sigma_l = 1.5 x 2^52 x g_l: (sigma_l + t) - sigma_l
// rounds t to the grid, and t minus that is exact. The grids are fixed by a
// bound on the terms and on their number over everything that will ever be
// added, so that every partial sum of one grid's slices is a multiple of g_l
// below 2^53 g_l: exact in double, whatever the order. Only the final
// ((part 0 + part 1) + part 2) rounds, and it sees the same bits everywhere.
//
// Needs IEEE double arithmetic as written: no -ffast-math (or compilers'
// equivalents, such as icpx's default), which may fold (sigma + t) - sigma
// into t. The test that splits rows would then fail.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/compact_basis_chunks.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>
#include <kpl/impl/compact_basis_team_lanes.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kpl {
namespace impl {

// slices[l] = term's slice on grid l (the last remainder, below half of the
// finest spacing, is dropped).
template <int Parts>
KOKKOS_INLINE_FUNCTION void slice_term(double term, const double (&extractor)[Parts],
                                       double (&slices)[Parts]) {
  for (int l = 0; l < Parts; ++l) {
    const double on_grid = (extractor[l] + term) - extractor[l];
    slices[l] = on_grid;
    term -= on_grid;
  }
}

// CPU: one thread per (block, chunk) adds each row's slices in row order (the
// order does not matter to the bits; the rows are cross_products'). Output:
// ExactPartSums, or ChunkSums with (part, block) pairs part-major as blocks.
template <class Grid, class FirstView, class ValuesView, class WView, class Output>
struct CrossProductPartsInRowOrder {
  FirstView first;
  ValuesView values;
  WView w;
  Output output;  // blocks: (part, block) pairs, part-major
  Grid grid;
  std::int64_t rows, rows_per_team, partner, blocks;
  int k, width;

  void operator()(const std::int64_t team) const {
    constexpr int parts = Grid::parts;
    const std::int64_t chunks = output.chunks, entries = std::int64_t(k) * k;
    const std::int64_t j = team / chunks, chunk = team % chunks;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    std::vector<double> sums(parts * entries, 0.0);
    const std::int64_t block[] = {j};
    for_each_cross_product_row(
        first, values, w, block, partner < 0 ? j : partner, begin, end, k, width, grid.scale,
        [&](int, std::int64_t corner, const double* left, const double* right,
            auto width_constant) {
          for_each_of_width(width_constant, [&](int q) {
            double slices[parts][bspline_max_degree + 1];
            for_each_of_width(width_constant, [&](int r) {
              double term_slices[parts];
              slice_term(left[q] * right[r], grid.extractor, term_slices);
              for (int l = 0; l < parts; ++l) slices[l][r] = term_slices[l];
            });
            for (int l = 0; l < parts; ++l)
              add_to_row(sums.data() + l * entries + corner + std::int64_t(q) * k, slices[l],
                         width_constant);
          });
        });
    for (int l = 0; l < parts; ++l)
      for (std::int64_t a = 0; a < entries; ++a)
        output.store(l * blocks + j, chunk, a, sums[l * entries + a]);
  }
};

// GPU: each of a thread's vector lanes owns one (q, r) of the rows' width^2
// terms and the team's threads share the chunk's rows
// (impl/compact_basis_team_lanes.hpp); every slice goes to the
// parts x k x k sums in scratch memory by a double atomic, exact in any
// order. Width: the basis' width as a compile-time constant, or 0.
template <class ExecutionSpace, class Grid, class FirstView, class ValuesView, class WView,
          class Output, int Width>
struct CrossProductPartsByAtomics {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  FirstView first;
  ValuesView values;
  WView w;
  Output output;
  Grid grid;
  std::int64_t rows, rows_per_team, partner, blocks;
  int k, width, level;

  static std::int64_t scratch_values(int k) {
    return std::int64_t(Grid::parts) * k * team_sums_stride(k);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    constexpr int parts = Grid::parts;
    const std::int64_t chunks = output.chunks, entries = std::int64_t(k) * k;
    const std::int64_t j = member.league_rank() / chunks;
    const std::int64_t chunk = member.league_rank() % chunks;
    const std::int64_t other = partner < 0 ? j : partner;
    const int stride = team_sums_stride(k), part_size = k * stride;
    Scratch sums(member.team_scratch(level), parts * part_size);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, parts * part_size),
                         [&](int a) { sums(a) = 0; });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, terms_of_width<Width>(width)),
                         [&](int term) { add_term_of_rows(member, j, other, chunk, term, sums); });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, parts * entries), [&](std::int64_t a) {
      const std::int64_t l = a / entries, entry = a - l * entries;
      const std::int64_t row = entry / k, column = entry - row * k;
      output.store(l * blocks + j, chunk, entry, sums(l * part_size + row * stride + column));
    });
  }

  // Term (q, r) of the rows this thread takes from the chunk, added to sums.
  KOKKOS_INLINE_FUNCTION void add_term_of_rows(const Member& member, std::int64_t j,
                                               std::int64_t other, std::int64_t chunk, int term,
                                               const Scratch& sums) const {
    constexpr int parts = Grid::parts;
    int q, r;
    term_of_lane<Width>(term, width, q, r);
    // Rows one at a time, in this loop: loading them ahead
    // (for_each_lane_row), or through its reader, measured slower here on
    // the H100 (perf/RESULTS.md, issue 26, stop 39).
    using T = typename ValuesView::non_const_value_type;
    const int stride = team_sums_stride(k), part_size = k * stride, offset = q * stride + r;
    const int* first_j = &first(j, 0);
    const int* first_other = &first(other, 0);
    const T* left_values = &values(j, q, 0);
    const T* right_values = &values(other, r, 0);
    const bool weighted = w.extent(0) != 0;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    for (std::int64_t i = begin + member.team_rank(); i < end; i += member.team_size()) {
      const double weight = weighted ? double(w(i)) : 1.0;
      if (weight == 0) continue;
      const double left = weight * grid.scale * double(left_values[i]);
      double slices[parts];
      slice_term(left * double(right_values[i]), grid.extractor, slices);
      double* target = sums.data() + first_j[i] * stride + first_other[i] + offset;
      for (int l = 0; l < parts; ++l)
        atomic_add_to_scratch(target + l * part_size, slices[l], level);
    }
  }
};

// The GPU strategy with `team_size` threads per team, each on up to
// `vector_length` lanes (public so that a test can run it on CPU threads too).
template <class ExecutionSpace, class Grid, class Basis, class WView, class Output>
void cross_product_parts_by_atomics(const ExecutionSpace& space, const Basis& basis, const WView& w,
                                    std::int64_t partner, const Grid& grid,
                                    std::int64_t rows_per_team, const Output& output,
                                    int team_size, int vector_length = 1) {
  const int k = basis.basis_size;
  const auto launch = [&](auto width_constant) {
    using Functor = CrossProductPartsByAtomics<ExecutionSpace, Grid, decltype(basis.first),
                                               decltype(basis.values), WView, Output,
                                               decltype(width_constant)::value>;
    const auto shape =
        lane_launch(space, basis.blocks() * output.chunks, team_size, vector_length,
                    Functor::Scratch::shmem_size(Functor::scratch_values(k)));
    Kokkos::parallel_for("kpl::compact_basis::cross_product_parts", shape.policy,
                         Functor{basis.first, basis.values, w, output, grid, basis.rows(),
                                 rows_per_team, partner, basis.blocks(), k, basis.width(),
                                 shape.level});
  };
  with_lane_width(basis.width(), launch);
}

template <class ExecutionSpace, class Grid, class Basis, class WView, class Output>
void cross_product_parts_in_row_order(const ExecutionSpace& space, const Basis& basis,
                                      const WView& w, std::int64_t partner, const Grid& grid,
                                      std::int64_t rows_per_team, const Output& output) {
  using Functor = CrossProductPartsInRowOrder<Grid, decltype(basis.first), decltype(basis.values),
                                              WView, Output>;
  Kokkos::parallel_for(
      "kpl::compact_basis::cross_product_parts",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.blocks() * output.chunks),
      Functor{basis.first, basis.values, w, output, grid, basis.rows(), rows_per_team, partner,
              basis.blocks(), basis.basis_size, basis.width()});
}

// Where a team's sums go: added to the parts with atomics (exact, so in
// any order), which must be zero beforehand; no per-chunk partials.
template <class PartsView>
struct ExactPartSums {
  PartsView parts;
  std::int64_t chunks, entries;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t part_block, std::int64_t, std::int64_t entry,
                                    double total) const {
    if (total != 0) Kokkos::atomic_add(&parts(part_block * entries + entry), total);
  }
};

// parts += the exact parts of B^T W B_partner over the basis' rows, chunks
// summed by the space's strategy (parts zero beforehand).
template <class ExecutionSpace, class Grid, class Basis, class WView, class PartsView>
void compact_cross_product_parts(const ExecutionSpace& space, const Basis& basis, const WView& w,
                                 std::int64_t partner, const Grid& grid, const PartsView& parts) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const std::int64_t entries = std::int64_t(basis.basis_size) * basis.basis_size;
  const std::int64_t rows_per_team = cross_rows_per_team(space, rows, blocks);
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  const ExactPartSums<PartsView> output{parts, chunks, entries};
  if constexpr (compact_basis_on_host<ExecutionSpace>)
    cross_product_parts_in_row_order(space, basis, w, partner, grid, rows_per_team, output);
  else {
    const int lanes = lanes_for_width(basis.width());
    cross_product_parts_by_atomics(space, basis, w, partner, grid, rows_per_team, output,
                                   std::max(1, compact_team_size<ExecutionSpace>() / lanes), lanes);
  }
}

// max |w(i)| over the rows (1 for an empty w).
template <class WView>
struct LargestWeight {
  WView w;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, double& largest_so_far) const {
    const double counted = bound_term(double(w(i)));
    if (counted > largest_so_far) largest_so_far = counted;
  }
};

template <class ExecutionSpace, class WView>
double largest_weight(const ExecutionSpace& space, const WView& w) {
  if (w.extent(0) == 0) return 1;
  double largest = 0;
  Kokkos::parallel_reduce("kpl::compact_basis::largest_weight",
                          Kokkos::RangePolicy<ExecutionSpace>(space, 0, w.extent(0)),
                          LargestWeight<WView>{w}, Kokkos::Max<double>(largest));
  return largest;
}

}  // namespace impl
}  // namespace kpl
