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

// One (covariate j, observation i) per index j n + i: consecutive threads
// take consecutive rows, so that the stores into first [p, n] and values
// [p, width, n] coalesce; the degree is a compile-time constant for cubic
// splines, so that de Boor's recursion stays in registers.
template <class Degree, class XView, class MeshView, class FirstView, class ValuesView>
struct BuildBsplineRows {
  XView X;
  MeshView meshes;
  FirstView first;
  ValuesView values;
  std::int64_t rows;
  Degree degree;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    using T = typename ValuesView::non_const_value_type;
    const std::int64_t j = index / rows, i = index - j * rows;
    double row[bspline_max_degree + 1];
    first(j, i) = bspline_row_of_degree(meshes(j), static_cast<double>(X(i, j)), row, degree);
    for (int q = 0; q <= bspline_degree_value(degree); ++q)
      values(j, q, i) = static_cast<T>(row[q]);
  }
};

template <class ExecutionSpace, class XView, class MeshView, class Basis>
void build_compact_bspline_basis(const ExecutionSpace& space, const XView& X,
                                 const MeshView& meshes, Basis& basis) {
  with_bspline_degree(basis.width() - 1, [&](auto degree) {
    using Functor = BuildBsplineRows<decltype(degree), XView, MeshView, decltype(basis.first),
                                     decltype(basis.values)>;
    Kokkos::parallel_for(
        "kpl::compact_basis::build_bspline",
        Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.blocks() * basis.rows()),
        Functor{X, meshes, basis.first, basis.values, basis.rows(), degree});
  });
  basis.value_bound = measured_value_bound(space, basis);
}

}  // namespace impl
}  // namespace kpl
