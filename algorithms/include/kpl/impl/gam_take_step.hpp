// The GAM's base-learner fit (kpl/gam.hpp; Sieminski & Lee 2023,
// Algorithm 2): the selected learner's penalised least-squares coefficients
// times the step length, added to the model.
#pragma once

#include <kpl/impl/gam_learner_selection.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// step = nu M_s c_s; coefficients_s += step.
template <class ExecutionSpace, class CurrentView, class InverseView, class CView, class StepView,
          class CoefficientView>
struct GamTakeStep {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  CurrentView current;
  InverseView inverse;
  CView c;
  StepView step;
  CoefficientView coefficients;
  double nu;
  int k;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    using T = typename StepView::non_const_value_type;
    const std::int64_t base = std::int64_t(current()) * k;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      double sum = 0;
      for (int b = 0; b < k; ++b) sum += double(inverse((base + a) * k + b)) * double(c(base + b));
      step(a) = T(nu * sum);
      coefficients(base + a) += nu * sum;
    });
  }
};

template <class ExecutionSpace, class CurrentView, class InverseView, class CView, class StepView,
          class CoefficientView>
void gam_take_step(const ExecutionSpace& space, int k, double nu, const CurrentView& current,
                   const InverseView& inverse, const CView& c, const StepView& step,
                   const CoefficientView& coefficients) {
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 64;
  Kokkos::parallel_for(
      "kpl::gam::take_step", Kokkos::TeamPolicy<ExecutionSpace>(space, 1, team_size),
      GamTakeStep<ExecutionSpace, CurrentView, InverseView, CView, StepView, CoefficientView>{
          current, inverse, c, step, coefficients, nu, k});
}

}  // namespace impl
}  // namespace kpl
