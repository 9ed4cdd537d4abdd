// The compact B-spline basis of kpl/compact_basis.hpp from the covariates:
// one row of block j per (covariate j, observation i), by bspline_row.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

template <class XView, class MeshView, class FirstView, class ValuesView>
struct BuildBsplineRows {
  XView X;
  MeshView meshes;
  FirstView first;
  ValuesView values;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j, const std::int64_t i) const {
    using T = typename ValuesView::non_const_value_type;
    double row[bspline_max_degree + 1];
    const BsplineMesh mesh = meshes(j);
    first(j, i) = bspline_row(mesh, static_cast<double>(X(i, j)), row);
    for (int q = 0; q <= mesh.degree; ++q) values(j, q, i) = static_cast<T>(row[q]);
  }
};

template <class ExecutionSpace, class XView, class MeshView, class Basis>
void build_compact_bspline_basis(const ExecutionSpace& space, const XView& X,
                                 const MeshView& meshes, Basis& basis) {
  using Functor = BuildBsplineRows<XView, MeshView, decltype(basis.first), decltype(basis.values)>;
  Kokkos::parallel_for("kpl::compact_basis::build_bspline",
                       Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(
                           space, {0, 0}, {basis.blocks(), basis.rows()}),
                       Functor{X, meshes, basis.first, basis.values});
  basis.value_bound = measured_value_bound(space, basis);
}

}  // namespace impl
}  // namespace kpl
