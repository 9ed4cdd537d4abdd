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

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const { take(member, current()); }

  // The step of learner s, by the team's threads.
  KOKKOS_INLINE_FUNCTION void take(const Member& member, std::int64_t s) const {
    using T = typename StepView::non_const_value_type;
    const std::int64_t base = s * k;
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

// Direct mode's selection and step in one launch: GamSelect's argmin,
// recorded, then GamTakeStep's step for it. A GPU spends longer launching a
// kernel this small than running it, and the step needs nothing from the
// selection but s, which the team's reduction gives every thread. The same
// operations as the two kernels in turn: the same bits.
template <class Select, class TakeStep>
struct GamSelectAndTakeStep {
  using Member = typename Select::Member;
  Select select;
  TakeStep take_step;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    take_step.take(member, select.record_best(member));
  }
};

// gam_select then gam_take_step, in one kernel. team_size 0: the space's
// default (one thread on CPUs).
template <class ExecutionSpace, class ScoreView, class SelectedView, class CurrentView,
          class InverseView, class CView, class StepView, class CoefficientView>
void gam_select_and_take_step(const ExecutionSpace& space, std::int64_t learners,
                              const ScoreView& scores, const SelectedView& selected,
                              std::int64_t iteration, const CurrentView& current, int k, double nu,
                              const InverseView& inverse, const CView& c, const StepView& step,
                              const CoefficientView& coefficients, int team_size = 0) {
  using Select = GamSelect<ExecutionSpace, ScoreView, SelectedView, CurrentView>;
  using TakeStep =
      GamTakeStep<ExecutionSpace, CurrentView, InverseView, CView, StepView, CoefficientView>;
  if (team_size == 0) team_size = gam_on_host<ExecutionSpace> ? 1 : 256;
  Kokkos::parallel_for("kpl::gam::select_and_take_step",
                       Kokkos::TeamPolicy<ExecutionSpace>(space, 1, team_size),
                       GamSelectAndTakeStep<Select, TakeStep>{
                           Select{scores, selected, current, learners, iteration},
                           TakeStep{current, inverse, c, step, coefficients, nu, k}});
}

}  // namespace impl
}  // namespace kpl
