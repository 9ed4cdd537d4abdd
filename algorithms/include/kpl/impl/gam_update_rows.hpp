// The GAM's per-row update after a step (kpl/gam.hpp; Sieminski & Lee 2023,
// Algorithm 2): f += B_s step, the new negative gradient u and the risk.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/basis_rows.hpp>
#include <kpl/impl/compact_basis_team_sums.hpp>
#include <kpl/impl/gam_family.hpp>
#include <kpl/impl/gam_risk.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl {
namespace impl {

// Rows: a basis' rows (impl/basis_rows.hpp), stored or evaluated; Width: their
// width as a compile-time constant, or 0.
template <class Rows, int Width, class Vector, class ConstVector, class CurrentView, class StepView>
struct GamUpdateRows {
  Rows rows;
  CurrentView current;
  StepView step;
  GamFamilyFunctions family;
  ConstVector y, weights, held_out;  // held_out empty: 1 - weight
  Vector f, u;
  int width;
  bool add_step;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, RiskSums& sums) const {
    using Value = typename Vector::non_const_value_type;
    Value fitted = f(i);
    if (add_step) {
      const std::int64_t s = current();
      const int count = width_or<Width>(width);
      double row[bspline_max_degree + 1];
      const int column = rows(s, i, row, count);
      Value change = 0;
      for (int q = 0; q < count; ++q) change += Value(row[q]) * step(column + q);
      fitted += change;
      f(i) = fitted;
    }
    const double observed = y(i);
    const double weight = weights.extent(0) != 0 ? double(weights(i)) : 1.0;
    u(i) = Value(weight * family.negative_gradient(observed, fitted));
    const double loss = family.loss(observed, fitted);
    sums.training += weight * loss;
    sums.held_out += (held_out.extent(0) != 0 ? double(held_out(i)) : 1 - weight) * loss;
  }
};

// Per row: (optionally) f += B_s step from the basis (compact or evaluated); then the
// weighted negative gradient u = w g(y, f) and the risk into
// risk_sums(slot): training sum w loss, held-out sum h loss (h = held_out,
// or 1 - w where it is empty: the 0/1 folds). With `add_step` false f is taken as it is (after a
// dense gemv, or at the start).
template <class ExecutionSpace, class Basis, class Vector, class ConstVector, class CurrentView,
          class StepView, class RiskView>
void gam_update_rows(const ExecutionSpace& space, const Basis& basis, bool add_step,
                     const CurrentView& current, const StepView& step,
                     const GamFamilyFunctions& family, const ConstVector& y,
                     const ConstVector& weights, const ConstVector& held_out, const Vector& f,
                     const Vector& u, const RiskView& risk_sums, std::int64_t slot) {
  using Memory = typename ExecutionSpace::memory_space;
  with_basis_rows(basis, [&](const auto& rows, auto width_constant) {
    using Functor = GamUpdateRows<std::decay_t<decltype(rows)>, decltype(width_constant)::value,
                                  Vector, ConstVector, CurrentView, StepView>;
    Kokkos::parallel_reduce(
        "kpl::gam::update_rows", Kokkos::RangePolicy<ExecutionSpace>(space, 0, y.extent(0)),
        Functor{rows, current, step, family, y, weights, held_out, f, u, basis.width(), add_step},
        RiskReducer<Memory>(
            Kokkos::View<RiskSums, Memory, Kokkos::MemoryUnmanaged>(risk_sums.data() + slot)));
  });
}

}  // namespace impl
}  // namespace kpl
