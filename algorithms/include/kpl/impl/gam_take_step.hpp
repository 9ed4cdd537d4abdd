// The GAM's base-learner fit (kpl/gam.hpp; Sieminski & Lee 2023,
// Algorithm 2): the selected learner's penalised least-squares coefficients
// times the step length, added to the model.
#pragma once

#include <kpl/impl/gam_learner_selection.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// step = nu M_s c_s; coefficients_s += step. With `gram` non-empty (Gram
// mode, Gaussian, unit weights) also the new training risk without a pass
// over the rows: |u - B_s step|^2 = |u|^2 - 2 step^T c_s + step^T G_s step.
template <class ExecutionSpace, class CurrentView, class InverseView, class CView, class StepView,
          class CoefficientView, class GramView, class RiskView>
struct GamTakeStep {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  CurrentView current;
  InverseView inverse;
  CView c;
  StepView step;
  CoefficientView coefficients;
  GramView gram;
  RiskView risk_sums;
  std::int64_t iteration;
  double nu;
  int k;

  // (M_s c_s)(a), the block of s at base = s k.
  KOKKOS_INLINE_FUNCTION double fitted(std::int64_t base, int a) const {
    double sum = 0;
    for (int b = 0; b < k; ++b) sum += double(inverse((base + a) * k + b)) * double(c(base + b));
    return sum;
  }

  // step^T (G_s step - 2 c_s): the change of |u - B_s gamma|^2.
  template <class Step>
  KOKKOS_INLINE_FUNCTION double risk_change(const Member& member, std::int64_t base,
                                            const Step& step_values) const {
    double change = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, k),
        [&](const int a, double& partial) {
          double curvature = 0;
          for (int b = 0; b < k; ++b)
            curvature += double(gram((base + a) * k + b)) * double(step_values(b));
          partial += double(step_values(a)) * (curvature - 2 * double(c(base + a)));
        },
        change);
    return change;
  }

  // risk_sums(iteration + 1) from risk_sums(iteration) (Gram mode).
  KOKKOS_INLINE_FUNCTION void add_risk_change(const Member& member, double change) const {
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      risk_sums(iteration + 1).training = risk_sums(iteration).training + change;
      risk_sums(iteration + 1).held_out = 0;
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    using T = typename StepView::non_const_value_type;
    const std::int64_t s = current();
    const std::int64_t base = s * k;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      const double sum = fitted(base, a);
      step(a) = T(nu * sum);
      coefficients(base + a) += nu * sum;
    });
    if (gram.extent(0) == 0) return;
    member.team_barrier();
    add_risk_change(member, risk_change(member, base, step));
  }
};

template <class ExecutionSpace, class CurrentView, class InverseView, class CView, class StepView,
          class CoefficientView, class GramView, class RiskView>
void gam_take_step(const ExecutionSpace& space, int k, double nu, const CurrentView& current,
                   const InverseView& inverse, const CView& c, const StepView& step,
                   const CoefficientView& coefficients, const GramView& gram,
                   const RiskView& risk_sums, std::int64_t iteration) {
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 64;
  Kokkos::parallel_for(
      "kpl::gam::take_step", Kokkos::TeamPolicy<ExecutionSpace>(space, 1, team_size),
      GamTakeStep<ExecutionSpace, CurrentView, InverseView, CView, StepView, CoefficientView,
                  GramView, RiskView>{current, inverse, c, step, coefficients, gram, risk_sums,
                                      iteration, nu, k});
}

}  // namespace impl
}  // namespace kpl
