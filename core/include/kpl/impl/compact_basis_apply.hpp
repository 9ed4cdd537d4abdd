// y = sum_j B_j gamma_j from the compact basis of kpl/compact_basis.hpp:
// one thread per row, its blocks' bands in order.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

template <class FirstView, class ValuesView, class CoefficientView, class YView>
struct ApplyCompactBasis {
  FirstView first;
  ValuesView values;
  CoefficientView coefficients;
  YView y;
  std::int64_t blocks;
  int k, width;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    typename YView::non_const_value_type sum = 0;
    for (std::int64_t j = 0; j < blocks; ++j) {
      const int column = first(j, i);
      for (int q = 0; q < width; ++q) sum += values(j, q, i) * coefficients(j * k + column + q);
    }
    y(i) = sum;
  }
};

template <class ExecutionSpace, class Basis, class CoefficientView, class YView>
void apply_compact_basis(const ExecutionSpace& space, const Basis& basis,
                         const CoefficientView& coefficients, const YView& y) {
  using Functor =
      ApplyCompactBasis<decltype(basis.first), decltype(basis.values), CoefficientView, YView>;
  Kokkos::parallel_for("kpl::compact_basis::apply",
                       Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.rows()),
                       Functor{basis.first, basis.values, coefficients, y, basis.blocks(),
                               basis.basis_size, basis.width()});
}

}  // namespace impl
}  // namespace kpl
