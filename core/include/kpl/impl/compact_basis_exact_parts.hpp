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
#include <kpl/impl/basis_rows.hpp>
#include <kpl/impl/compact_basis_chunks.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>
#include <kpl/impl/compact_basis_team_sums.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
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

// The slices of slice_term as the integer multiples of their grids'
// spacings (slice l = multiples[l] g_l), read from the bits of
// extractor_l + term rather than by a product and a conversion to integer
// for each: between 2^52 g_l and 2^53 g_l consecutive doubles are g_l apart
// and their bits consecutive integers, so the bits' difference from
// extractor_l's counts the spacings (two's complement where the slice is
// negative). Only for terms whose every slice is within 2^51 spacings of
// its grid, where extractor_l + term stays in that range: the rows that
// CrossProductPartsByAtomics adds unchecked.
KOKKOS_INLINE_FUNCTION unsigned long long double_bits(double value) {
  unsigned long long bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

template <int Parts>
KOKKOS_INLINE_FUNCTION void slice_term_multiples(double term, const double (&extractor)[Parts],
                                                 unsigned long long (&multiples)[Parts]) {
  for (int l = 0; l < Parts; ++l) {
    const double shifted = extractor[l] + term;
    multiples[l] = double_bits(shifted) - double_bits(extractor[l]);
    term -= shifted - extractor[l];
  }
}

// B^T W B_j (no partner) is symmetric: its entry (a, b) is stored from the
// sums of entry (max(a, b), min(a, b)), so that the matrix is exactly
// symmetric and a strategy may add the lower triangle's terms alone (the
// terms of (a, b) and (b, a), w v_a v_b and w v_b v_a, differ in rounding).
KOKKOS_INLINE_FUNCTION std::int64_t lower_entry(std::int64_t entry, int k) {
  const std::int64_t row = entry / k, column = entry - row * k;
  return column > row ? column * k + row : entry;
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
        output.store(l * blocks + j, chunk, a,
                     sums[l * entries + (partner < 0 ? lower_entry(a, k) : a)]);
  }
};

// Scratch words of a GPU team's sums of `parts` parts (CrossProductPartsByAtomics).
KOKKOS_INLINE_FUNCTION std::int64_t exact_parts_scratch_words(int k, int parts) {
  return 2 * std::int64_t(parts) * k * k;
}

// At most 256 threads a team, and registers for three such teams a GPU
// multiprocessor: the kernel waits on its shared-memory atomics, and a
// third team's warps keep the unit that serves them busy. Unbounded, the
// compiler takes registers that leave room for two teams. Where the bound
// cannot be met (a GPU with too little shared memory for three teams'
// sums, or a larger team), the unbounded kernel runs instead.
using ExactPartsLaunchBounds = Kokkos::LaunchBounds<256, 3>;

// Parts a GPU team adds in one pass over its rows: all of them where their
// sums fit in the shared memory (level-0 scratch) a team may have, and in
// 48 KB, so that host spaces, which run this strategy in tests, cut their
// passes where a GPU does.
template <class ExecutionSpace, class Grid>
int exact_parts_in_a_pass(int k) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, ExactPartsLaunchBounds>;
  using Words = Kokkos::View<unsigned*, typename ExecutionSpace::scratch_memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const std::size_t shared =
      std::min<std::size_t>(48 * 1024, static_cast<std::size_t>(Policy::scratch_size_max(0)));
  int parts = Grid::parts;
  while (parts > 1 && Words::shmem_size(exact_parts_scratch_words(k, parts)) > shared) --parts;
  return parts;
}

// GPU: each thread takes whole rows of the team's chunk, cuts each of a
// row's width^2 terms into its slices and adds slice l, as the integer
// multiple of grid l's spacing it is, to the team's parts x k x k integer
// sums by native 32-bit atomics (SplitScratchSums); the team then adds each
// sum, times its spacing, to the parts. Integers add exactly in any order,
// and so do the doubles they stand for (multiples of the spacing below 2^53
// of them), so the bits are those of double sums. A slice beyond 2^52
// spacings (a term above the grid's bound: the caller's mistake, or a
// weight that is not finite) goes to the parts directly as a double: the
// value stays the product's, not exact. Where the sums of all parts would
// not fit in a team's shared memory (exact_parts_in_a_pass), the team
// passes over its rows once for each group of parts that does. Width: the
// basis' width as a compile-time constant, or 0. AllPartsInOnePass: known
// at compile time so that the common case (all parts in one pass) tests
// no part against its pass, which costs it dearly.
//
// Why whole rows and integers: the double atomics of shared memory are
// compare-and-swap loops, and a lane per term kept a warp's loops from
// colliding but repeated each row's loads in every lane; the integer
// atomics are native, and a collision costs a replay, not a retry
// (impl/compact_basis_cross_products.hpp, where the same change came first).
template <class ExecutionSpace, class Grid, class Rows, class WView, class Output, int Width,
          bool AllPartsInOnePass>
struct CrossProductPartsByAtomics {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<unsigned*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int max_width = Width > 0 ? Width : bspline_max_degree + 1;
  Rows basis_rows;  // impl/basis_rows.hpp: stored or evaluated
  WView w;
  Output output;
  Grid grid;
  std::int64_t rows, rows_per_team, partner, blocks;
  int k, width, level, parts_per_pass;

  KOKKOS_INLINE_FUNCTION int parts_a_pass() const {
    if constexpr (AllPartsInOnePass)
      return Grid::parts;
    else
      return parts_per_pass;
  }

  // Grid l's spacing: extractor l / (1.5 x 2^52), exact (powers of two).
  KOKKOS_INLINE_FUNCTION double spacing(int l) const {
    return grid.extractor[l] * (1.0 / 6755399441055744.0);
  }

  // Slice l of a term of entry a: to the pass' integer sums (the pass'
  // first part is `first_part`), or, Checked, beyond 2^52 spacings to the
  // parts as a double, there also at entry `mirror` unless it is negative
  // (the integer sums are mirrored when stored).
  template <bool Checked>
  KOKKOS_INLINE_FUNCTION void add_slice(const SplitScratchSums& sums, std::int64_t j, int l,
                                        int first_part, int a, int mirror, double slice,
                                        double inverse_spacing) const {
    const double multiple = slice * inverse_spacing;
    if (!Checked || compat::math::fabs(multiple) < 4503599627370496.0) {  // 2^52
      sums.add((l - first_part) * k * k + a,
               static_cast<unsigned long long>(static_cast<long long>(multiple)));
    } else {
      output.store(l * blocks + j, 0, a, slice);
      if (mirror >= 0) output.store(l * blocks + j, 0, mirror, slice);
    }
  }

  // term(q, r) for each term of a row of width n that the sums take: all
  // of them with a partner, without one the lower triangle's alone (r <= q:
  // first_j = first_other), a third fewer atomics.
  template <class Term>
  KOKKOS_INLINE_FUNCTION void for_each_term(int n, const Term& term) const {
    const bool lower_only = partner < 0;
    for (int q = 0; q < n; ++q)
      for (int r = 0; r < n; ++r)
        if (!lower_only || r <= q) term(q, r);
  }

  // The row's terms, sliced, their slices of parts [first_part, end_part)
  // added at (first_j + q, first_other + r).
  template <bool Checked>
  KOKKOS_INLINE_FUNCTION void add_terms(const RowOfTwoBlocks<max_width>& row, int n, std::int64_t j,
                                        int first_part, int end_part,
                                        const double (&inverse_spacing)[Grid::parts],
                                        const SplitScratchSums& sums) const {
    constexpr int parts = Grid::parts;
    for_each_term(n, [&](const int q, const int r) {
      const int mirror = partner < 0 && r < q ? row.corner + r * k + q : -1;
      double slices[parts];
      slice_term(row.left[q] * row.right[r], grid.extractor, slices);
      // All parts' loop, unrolled, so that slices stays in registers; a
      // loop over the pass' parts alone (bounds known at run time) put it
      // in local memory, which is much slower.
      for (int l = 0; l < parts; ++l)
        if (AllPartsInOnePass || (l >= first_part && l < end_part))
          add_slice<Checked>(sums, j, l, first_part, row.corner + q * k + r, mirror, slices[l],
                             inverse_spacing[l]);
    });
  }

  // add_terms for a row whose slices cannot leave their grids, all parts in
  // one pass: each term's slices as integers from their bits
  // (slice_term_multiples: the integers add_slice computes), added together
  // (add_several). The same sums, bit for bit.
  KOKKOS_INLINE_FUNCTION void add_terms_in_grid(const RowOfTwoBlocks<max_width>& row, int n,
                                                const SplitScratchSums& sums) const {
    constexpr int parts = Grid::parts;
    for_each_term(n, [&](const int q, const int r) {
      int entries[parts];
      unsigned long long multiples[parts];
      slice_term_multiples(row.left[q] * row.right[r], grid.extractor, multiples);
      for (int l = 0; l < parts; ++l) entries[l] = l * k * k + row.corner + q * k + r;
      sums.add_several(entries, multiples);
    });
  }

  // Row i's terms added. A row whose terms are all below 2^51 spacings of
  // grid 0 (|terms| <= sum |left| x sum |right|) needs no slice tested:
  // slice 0 is then below 2^52 spacings, and each later one, a remainder
  // below half the spacing before, below 2^(51 - bits of terms) of its
  // own (for grids as ExactSumGrid::covering makes them). A NaN or
  // infinite value fails the comparison: its row is checked.
  KOKKOS_INLINE_FUNCTION void add_row(std::int64_t j, std::int64_t other, std::int64_t i,
                                      int first_part, int end_part,
                                      const double (&inverse_spacing)[Grid::parts],
                                      const SplitScratchSums& sums) const {
    const int n = width_or<Width>(width);
    const double scale = grid.scale;
    RowOfTwoBlocks<max_width> row;
    if (!row.read(basis_rows, w, j, other, i, k, n,
                  [&](double weight, double value) { return weight * scale * value; }))
      return;
    double left_sum = 0, right_sum = 0;
    for (int q = 0; q < n; ++q) {
      left_sum += compat::math::fabs(row.left[q]);
      right_sum += compat::math::fabs(row.right[q]);
    }
    const bool in_grid = left_sum * right_sum < 2251799813685248.0 * spacing(0);  // 2^51
    if (!in_grid)
      add_terms<true>(row, n, j, first_part, end_part, inverse_spacing, sums);
    else if constexpr (AllPartsInOnePass)
      add_terms_in_grid(row, n, sums);
    else
      add_terms<false>(row, n, j, first_part, end_part, inverse_spacing, sums);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    constexpr int parts = Grid::parts;
    const std::int64_t chunks = output.chunks, entries = std::int64_t(k) * k;
    const std::int64_t j = member.league_rank() / chunks;
    const std::int64_t chunk = member.league_rank() % chunks;
    const std::int64_t other = partner < 0 ? j : partner;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const int per_pass = parts_a_pass();
    Scratch words(member.team_scratch(level), exact_parts_scratch_words(k, per_pass));
    const SplitScratchSums sums(words.data(), words.data() + per_pass * entries, level);
    double inverse_spacing[parts];
    for (int l = 0; l < parts; ++l) inverse_spacing[l] = 1 / spacing(l);
    for (int first_part = 0; first_part < parts; first_part += per_pass) {
      const int end_part = first_part + per_pass < parts ? first_part + per_pass : parts;
      const std::int64_t pass_entries = (end_part - first_part) * entries;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 2 * per_pass * entries),
                           [&](std::int64_t a) { words(a) = 0u; });
      member.team_barrier();
      for (std::int64_t i = begin + member.team_rank(); i < end; i += member.team_size())
        add_row(j, other, i, first_part, end_part, inverse_spacing, sums);
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, pass_entries), [&](std::int64_t a) {
        const int l = first_part + int(a / entries);
        const std::int64_t entry = a % entries;
        const std::int64_t source = a - entry + (partner < 0 ? lower_entry(entry, k) : entry);
        const double total = double(static_cast<long long>(sums[int(source)])) * spacing(l);
        output.store(l * blocks + j, chunk, entry, total);
      });
      member.team_barrier();
    }
  }
};

// The GPU strategy with `team_size` threads per team, under
// ExactPartsLaunchBounds where the device allows (public so that a test
// can run it on CPU threads too). Basis: compact or evaluated.
template <class ExecutionSpace, class Grid, class Basis, class WView, class Output>
void cross_product_parts_by_atomics(const ExecutionSpace& space, const Basis& basis, const WView& w,
                                    std::int64_t partner, const Grid& grid,
                                    std::int64_t rows_per_team, const Output& output,
                                    int team_size) {
  const int k = basis.basis_size;
  const int parts_per_pass = exact_parts_in_a_pass<ExecutionSpace, Grid>(k);
  const std::int64_t teams = basis.blocks() * output.chunks;
  const auto launch = [&](const auto& rows, auto width_constant, auto all_parts_in_one_pass) {
    using Functor = CrossProductPartsByAtomics<ExecutionSpace, Grid, std::decay_t<decltype(rows)>,
                                               WView, Output, decltype(width_constant)::value,
                                               decltype(all_parts_in_one_pass)::value>;
    const std::size_t scratch_bytes =
        Functor::Scratch::shmem_size(exact_parts_scratch_words(k, parts_per_pass));
    const auto bounded = scratch_team_launch<ExecutionSpace, ExactPartsLaunchBounds>(
        space, teams, team_size, scratch_bytes);
    const Functor functor{
        rows,           w, output,        grid,          basis.rows(),  rows_per_team, partner,
        basis.blocks(), k, basis.width(), bounded.level, parts_per_pass};
    if (bounded.policy.team_size_max(functor, Kokkos::ParallelForTag()) >= team_size)
      Kokkos::parallel_for("kpl::compact_basis::cross_product_parts", bounded.policy, functor);
    else
      Kokkos::parallel_for("kpl::compact_basis::cross_product_parts",
                           scratch_team_launch(space, teams, team_size, scratch_bytes).policy,
                           functor);
  };
  with_basis_rows(basis, [&](const auto& rows, auto width_constant) {
    if (parts_per_pass == Grid::parts)
      launch(rows, width_constant, std::true_type());
    else
      launch(rows, width_constant, std::false_type());
  });
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

// parts += the exact parts of B^T W B_partner over the basis' rows (a
// compact or evaluated basis), chunks summed by the space's strategy (parts
// zero beforehand). The CPU strategy reads the stored rows in place; an
// evaluated basis takes the GPU one on CPUs too, with teams of one thread.
template <class ExecutionSpace, class Grid, class Basis, class WView, class PartsView>
void basis_cross_product_parts(const ExecutionSpace& space, const Basis& basis, const WView& w,
                               std::int64_t partner, const Grid& grid, const PartsView& parts) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const std::int64_t entries = std::int64_t(basis.basis_size) * basis.basis_size;
  const std::int64_t cpu_rows_per_team = cross_rows_per_team(space, rows, blocks);
  if constexpr (compact_basis_on_host<ExecutionSpace> && !is_evaluated_basis<Basis>::value) {
    const std::int64_t chunks = (rows + cpu_rows_per_team - 1) / cpu_rows_per_team;
    const ExactPartSums<PartsView> output{parts, chunks, entries};
    cross_product_parts_in_row_order(space, basis, w, partner, grid, cpu_rows_per_team, output);
  } else {
    // Teams add to the parts directly, so their rows need not be the
    // chunks': parts of them, as the cross products' (more waves of teams).
    constexpr int team_size = compact_team_size<ExecutionSpace>();
    const std::int64_t rows_per_team = cross_rows_per_part(
        space, cpu_rows_per_team, blocks, (rows + cpu_rows_per_team - 1) / cpu_rows_per_team,
        basis.basis_size, team_size);
    const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
    const ExactPartSums<PartsView> output{parts, chunks, entries};
    cross_product_parts_by_atomics(space, basis, w, partner, grid, rows_per_team, output,
                                   team_size);
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
