// A basis' rows as the kernels that take whole rows read them (the exact
// parts of B^T W B, the GAM's update of f): rows(j, i, values, width) writes
// the width values of block j's row i, as doubles, and returns the index of
// the block's column that values[0] belongs to. The caller passes the
// basis' width, as a compile-time constant where with_basis_rows gives one,
// so that the loops unroll and the row stays in registers. The compact basis reads the row
// it stores; the evaluated one computes it from x_j(i), rounded to T as the
// compact basis stores it, so that both give the same values and the
// kernels on either the same bits.
#pragma once

#include <kpl/bspline.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace kpl {
namespace impl {

template <class FirstView, class ValuesView>
struct StoredBasisRows {
  FirstView first;
  ValuesView values;

  KOKKOS_INLINE_FUNCTION int operator()(std::int64_t j, std::int64_t i, double* row,
                                        int width) const {
    for (int q = 0; q < width; ++q) row[q] = double(values(j, q, i));
    return first(j, i);
  }
};

// Degree: an int or a std::integral_constant (bspline_row_of_degree's).
template <class T, class Covariates, class Meshes, class Degree>
struct EvaluatedBasisRows {
  Covariates covariates;
  Meshes meshes;
  Degree degree;

  KOKKOS_INLINE_FUNCTION int operator()(std::int64_t j, std::int64_t i, double* row,
                                        int width) const {
    const int first = BsplineRows(meshes(j)).row(covariates(j, i), row, degree);
    for (int q = 0; q < width; ++q) row[q] = double(T(row[q]));
    return first;
  }
};

template <class Basis, class = void>
struct is_evaluated_basis : std::false_type {};
template <class Basis>
struct is_evaluated_basis<Basis, std::void_t<decltype(std::declval<Basis>().covariates)>>
    : std::true_type {};

// launch(rows, width) with the basis' rows and its width as a compile-time
// constant (std::integral_constant: 4 for cubic splines, whose loops then
// unroll, else 0, read at run time).
template <class Basis, class Launch>
void with_basis_rows(const Basis& basis, const Launch& launch) {
  if constexpr (is_evaluated_basis<Basis>::value) {
    using T = typename Basis::value_type;
    with_bspline_degree(basis.degree, [&](auto degree) {
      using Rows = EvaluatedBasisRows<T, decltype(basis.covariates), decltype(basis.meshes),
                                      decltype(degree)>;
      constexpr int width = std::is_same_v<decltype(degree), int> ? 0 : 4;
      launch(Rows{basis.covariates, basis.meshes, degree}, std::integral_constant<int, width>());
    });
  } else {
    using Rows = StoredBasisRows<decltype(basis.first), decltype(basis.values)>;
    const Rows rows{basis.first, basis.values};
    if (basis.width() == 4)
      launch(rows, std::integral_constant<int, 4>());
    else
      launch(rows, std::integral_constant<int, 0>());
  }
}

}  // namespace impl
}  // namespace kpl
