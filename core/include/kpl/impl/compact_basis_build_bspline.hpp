// The compact B-spline basis of kpl/compact_basis.hpp from the covariates:
// one row of block j per (covariate j, observation i), by bspline_row.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl {
namespace impl {

// One (covariate j, observation i) per index, the rows in tiles of
// tile_rows: within a tile the index runs over (j, i), so that consecutive
// threads take consecutive rows and the stores into first [p, n] and values
// [p, width, n] coalesce on GPUs, while a CPU thread reads a tile of X once
// for all p covariates (X read from a file is row-major [n, p]: a pass down
// one covariate at a time fetches a cache line for every value). The degree
// is a compile-time constant for cubic splines, so that de Boor's recursion
// stays in registers. Reduces max |value| (bound_term), the basis' value
// bound, on the way.
template <class Degree, class XView, class MeshView, class FirstView, class ValuesView>
struct BuildBsplineRows {
  static constexpr std::int64_t tile_rows = 128;
  XView X;
  MeshView meshes;
  FirstView first;
  ValuesView values;
  std::int64_t rows, blocks;
  Degree degree;

  static std::int64_t indices(std::int64_t rows, std::int64_t blocks) {
    return (rows + tile_rows - 1) / tile_rows * tile_rows * blocks;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index, double& bound) const {
    using T = typename ValuesView::non_const_value_type;
    const std::int64_t tile = index / (tile_rows * blocks);
    const std::int64_t within = index - tile * tile_rows * blocks;
    const std::int64_t j = within / tile_rows;
    const std::int64_t i = tile * tile_rows + within - j * tile_rows;
    if (i >= rows) return;
    double row[bspline_max_degree + 1];
    first(j, i) = BsplineRows(meshes(j)).row(static_cast<double>(X(i, j)), row, degree);
    for (int q = 0; q <= bspline_degree_value(degree); ++q) {
      const T value = static_cast<T>(row[q]);
      values(j, q, i) = value;
      const double counted = bound_term(double(value));
      if (counted > bound) bound = counted;
    }
  }
};

template <class ExecutionSpace, class XView, class MeshView, class Basis>
void build_compact_bspline_basis(const ExecutionSpace& space, const XView& X,
                                 const MeshView& meshes, Basis& basis) {
  double bound = 0;
  with_bspline_degree(basis.width() - 1, [&](auto degree) {
    using Functor = BuildBsplineRows<decltype(degree), XView, MeshView, decltype(basis.first),
                                     decltype(basis.values)>;
    Kokkos::parallel_reduce(
        "kpl::compact_basis::build_bspline",
        Kokkos::RangePolicy<ExecutionSpace>(space, 0,
                                            Functor::indices(basis.rows(), basis.blocks())),
        Functor{X, meshes, basis.first, basis.values, basis.rows(), basis.blocks(), degree},
        Kokkos::Max<double>(bound));
  });
  basis.value_bound = bound;
}

}  // namespace impl
}  // namespace kpl
