// c_j = B_j^T u for every block of an evaluated basis (kpl/evaluated_basis.hpp):
// each row's B-spline values computed from x_j(i) as the row is read. Each
// team sums one chunk of rows of one or more blocks; chunks are added in
// order (impl/compact_basis_chunks.hpp), so the same inputs give the same
// bits.
//
// The CPU and GPU strategies stay separate on purpose, as those of the
// stored basis (impl/compact_basis_cross_products.hpp): the CPU one sums in
// row order, the stored basis' own sums; the GPU one in exact fixed point,
// because its threads' atomics come in any order.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/compact_basis_chunks.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>
#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace kpl {
namespace impl {

// Calls launch(degree) with the degree as a compile-time constant for cubic
// splines (the common case: the recursion unrolls into registers), else as
// an int.
template <class Launch>
void with_bspline_degree(int degree, const Launch& launch) {
  if (degree == 3)
    launch(std::integral_constant<int, 3>());
  else
    launch(degree);
}

// covariates(j, i) = X(i, j).
template <class XView, class Covariates>
struct TransposeCovariates {
  XView X;
  Covariates covariates;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j, const std::int64_t i) const {
    covariates(j, i) = static_cast<double>(X(i, j));
  }
};

template <class ExecutionSpace, class XView, class Covariates>
void transpose_covariates(const ExecutionSpace& space, const XView& X, const Covariates& covariates) {
  Kokkos::parallel_for("kpl::evaluated_basis::transpose_covariates",
                       Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(
                           space, {0, 0}, {covariates.extent(0), covariates.extent(1)}),
                       TransposeCovariates<XView, Covariates>{X, covariates});
}

// max |value| over the basis, each value rounded to T as the products use it.
template <class T, class Covariates, class Meshes>
struct EvaluatedValueBound {
  Covariates covariates;
  Meshes meshes;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j, const std::int64_t i,
                                         double& largest_so_far) const {
    double row[bspline_max_degree + 1];
    const BsplineMesh mesh = meshes(j);
    bspline_row(mesh, covariates(j, i), row);
    for (int q = 0; q <= mesh.degree; ++q) {
      const double counted = bound_term(double(T(row[q])));
      if (counted > largest_so_far) largest_so_far = counted;
    }
  }
};

template <class T, class ExecutionSpace, class Basis>
double evaluated_value_bound(const ExecutionSpace& space, const Basis& basis) {
  using Functor = EvaluatedValueBound<T, decltype(basis.covariates), decltype(basis.meshes)>;
  double bound = 0;
  if (basis.rows() == 0) return bound;
  Kokkos::parallel_reduce("kpl::evaluated_basis::value_bound",
                          Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(
                              space, {0, 0}, {basis.blocks(), basis.rows()}),
                          Functor{basis.covariates, basis.meshes}, Kokkos::Max<double>(bound));
  return bound;
}

// CPU: one thread per (block, chunk) evaluates and sums the chunk's rows in
// row order: the compact basis' TransposeProductInRowOrder term for term.
// Host only: its sums live in a std::vector.
template <class T, class Degree, class Covariates, class Meshes, class UView, class Output>
struct EvaluatedTransposeProductInRowOrder {
  Covariates covariates;
  Meshes meshes;
  UView u;
  Output output;
  std::int64_t rows, rows_per_team;
  int k;
  Degree degree;

  void operator()(const std::int64_t team) const {
    const std::int64_t chunks = output.chunks;
    const std::int64_t j = team / chunks, chunk = team % chunks;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const int width = bspline_degree_value(degree) + 1;
    const BsplineMesh mesh = meshes(j);
    const double* x = &covariates(j, 0);
    std::vector<double> sums(std::size_t(k), 0.0);
    for (std::int64_t i = begin; i < end; ++i) {
      const double weight = u(i);
      double row[bspline_max_degree + 1];
      double* target = sums.data() + bspline_row_of_degree(mesh, x[i], row, degree);
      for (int q = 0; q < width; ++q) target[q] += double(T(row[q])) * weight;
    }
    for (int a = 0; a < k; ++a) output.store(j, chunk, a, sums[a]);
  }
};

// GPU: a team takes one chunk of rows and a group of consecutive blocks; each
// thread evaluates its rows of every block of the group (consecutive threads
// read consecutive x) and adds the width terms to the group's k sums per
// block in scratch memory, as exact fixed-point integers; a chunk whose u is
// not finite comes out NaN.
template <class ExecutionSpace, class T, class Degree, class Covariates, class Meshes, class UView,
          class Output>
struct EvaluatedTransposeProductInFixedPoint {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<unsigned long long*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Covariates covariates;
  Meshes meshes;
  UView u;
  Output output;
  std::int64_t rows, rows_per_team, blocks, blocks_per_team;
  int k;
  Degree degree;
  double value_bound;

  // |sum| <= rows x max|u| x width x max|value| over the team's rows.
  KOKKOS_INLINE_FUNCTION double sum_bound(const Member& member, std::int64_t begin,
                                          std::int64_t end) const {
    double u_max = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, begin, end),
        [&](std::int64_t i, double& largest_so_far) {
          const double counted = bound_term(double(u(i)));
          if (counted > largest_so_far) largest_so_far = counted;
        },
        Kokkos::Max<double>(u_max));
    return u_max * value_bound * (bspline_degree_value(degree) + 1) * double(end - begin);
  }

  KOKKOS_INLINE_FUNCTION void add_rows(const Member& member, std::int64_t first_block,
                                       std::int64_t group_blocks, std::int64_t begin,
                                       std::int64_t end, double scale, const Scratch& sums) const {
    const int width = bspline_degree_value(degree) + 1;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, begin, end), [&](std::int64_t i) {
      const double weight = double(u(i)) * scale;
      if (weight == 0) return;
      for (std::int64_t b = 0; b < group_blocks; ++b) {
        double row[bspline_max_degree + 1];
        const int first =
            bspline_row_of_degree(meshes(first_block + b), covariates(first_block + b, i), row,
                                  degree);
        unsigned long long* target = &sums(b * k + first);
        for (int q = 0; q < width; ++q)
          Kokkos::atomic_add(target + q, to_fixed_point(double(T(row[q])), weight));
      }
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t chunks = output.chunks;
    const std::int64_t group = member.league_rank() / chunks;
    const std::int64_t chunk = member.league_rank() % chunks;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const std::int64_t first_block = group * blocks_per_team;
    const std::int64_t group_blocks =
        first_block + blocks_per_team < blocks ? blocks_per_team : blocks - first_block;
    const std::int64_t entries = group_blocks * k;
    Scratch sums(member.team_scratch(0), entries);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, entries),
                         [&](std::int64_t e) { sums(e) = 0ull; });
    const double bound = sum_bound(member, begin, end);
    const bool finite = compat::math::isfinite(bound);
    const double scale = fixed_point_scale(bound);
    member.team_barrier();
    if (finite) add_rows(member, first_block, group_blocks, begin, end, scale, sums);
    member.team_barrier();
    const double inverse_scale = 1 / scale;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, entries), [&](std::int64_t e) {
      const std::int64_t b = e / k;
      output.store(first_block + b, chunk, e - b * k,
                   finite ? team_sum_value(sums(e), inverse_scale) : compat::math::sqrt(-1.0));
    });
  }
};

// Blocks per GPU team: few enough that the teams (chunks x groups) fill the
// device once, and whose k sums fit in a few KiB of shared memory.
inline std::int64_t evaluated_blocks_per_team(std::int64_t blocks, std::int64_t chunks, int k,
                                              std::int64_t teams_wanted) {
  const std::int64_t groups =
      std::min(blocks, std::max<std::int64_t>(1, (teams_wanted + chunks - 1) / chunks));
  const std::int64_t fitting = std::max<std::int64_t>(1, 12288 / (std::int64_t(k) * 8));
  return std::min((blocks + groups - 1) / groups, fitting);
}

// The GPU strategy with `team_size` threads per team and `blocks_per_team`
// blocks per team (public so that a test can run it on CPU threads too).
template <class ExecutionSpace, class Basis, class UView, class Output>
void evaluated_transpose_product_in_fixed_point(const ExecutionSpace& space, const Basis& basis,
                                                const UView& u, std::int64_t rows_per_team,
                                                const Output& output, int team_size,
                                                std::int64_t blocks_per_team) {
  using T = typename Basis::value_type;
  const int k = basis.basis_size;
  const std::int64_t blocks = basis.blocks();
  const std::int64_t groups = (blocks + blocks_per_team - 1) / blocks_per_team;
  with_bspline_degree(basis.degree, [&](auto degree) {
    using Functor =
        EvaluatedTransposeProductInFixedPoint<ExecutionSpace, T, decltype(degree),
                                              decltype(basis.covariates), decltype(basis.meshes),
                                              UView, Output>;
    Kokkos::parallel_for(
        "kpl::evaluated_basis::transpose_product",
        Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(groups * output.chunks),
                                           team_size)
            .set_scratch_size(
                0, Kokkos::PerTeam(Functor::Scratch::shmem_size(blocks_per_team * k))),
        Functor{basis.covariates, basis.meshes, u, output, basis.rows(), rows_per_team, blocks,
                blocks_per_team, k, degree, basis.value_bound});
  });
}

template <class ExecutionSpace, class Basis, class UView, class Output>
void evaluated_transpose_product_in_row_order(const ExecutionSpace& space, const Basis& basis,
                                              const UView& u, std::int64_t rows_per_team,
                                              const Output& output) {
  using T = typename Basis::value_type;
  with_bspline_degree(basis.degree, [&](auto degree) {
    using Functor =
        EvaluatedTransposeProductInRowOrder<T, decltype(degree), decltype(basis.covariates),
                                            decltype(basis.meshes), UView, Output>;
    Kokkos::parallel_for(
        "kpl::evaluated_basis::transpose_product",
        Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.blocks() * output.chunks),
        Functor{basis.covariates, basis.meshes, u, output, basis.rows(), rows_per_team,
                basis.basis_size, degree});
  });
}

// Rows per GPU team: fixed-point terms are rounded to 2^-62 of the chunk's
// bound, so that fewer rows round finer; 2048 rows of cubic splines keep
// each term's rounding within 2^-49 of max |u| max |value|, and the teams
// long enough to hide their set-up.
inline constexpr std::int64_t evaluated_gpu_rows_per_team = 2048;

// c = B^T u: chunks sized for the execution space, each summed by the
// space's strategy, then added in order. workspace: a CompactProductWorkspace.
template <class ExecutionSpace, class Basis, class UView, class CView, class Workspace>
void evaluated_transpose_product(const ExecutionSpace& space, const Basis& basis, const UView& u,
                                 const CView& c, Workspace& workspace) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const int k = basis.basis_size;
  const std::int64_t rows_per_team = compact_basis_on_host<ExecutionSpace>
                                         ? compact_rows_per_team(space, rows, blocks)
                                         : evaluated_gpu_rows_per_team;
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  const ChunkSums<CView> output{c, workspace.reserve(chunks > 1 ? blocks * chunks * k : 0), chunks,
                                k};
  if constexpr (compact_basis_on_host<ExecutionSpace>) {
    evaluated_transpose_product_in_row_order(space, basis, u, rows_per_team, output);
  } else {
    constexpr int team_size = compact_team_size<ExecutionSpace>();
    const std::int64_t teams_wanted = std::max<std::int64_t>(1, space.concurrency() / team_size);
    evaluated_transpose_product_in_fixed_point(
        space, basis, u, rows_per_team, output, team_size,
        evaluated_blocks_per_team(blocks, chunks, k, teams_wanted));
  }
  if (chunks > 1) add_chunks_in_order(space, output.partials, blocks, chunks, k, c);
}

}  // namespace impl
}  // namespace kpl
