// The GAM's base-learner fit (kpl/gam.hpp; Sieminski & Lee 2023,
// Algorithm 2): the selected learner's penalised least-squares coefficients
// times the step length, added to the model.
#pragma once

#include <kpl/impl/gam_learner_selection.hpp>
#include <kpl/impl/gam_team_staging.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kpl {
namespace impl {

// step = nu M_s c_s; coefficients_s += step. The team first copies M_s and
// c_s to its scratch with all its threads (gam_stage; M_s's rows
// padded_stride apart), then k of them sum a row each in column order:
// where each thread read its row from memory as it summed it, every term
// waited on a load, and this one-team kernel, which every iteration waits
// for, took longer. The same sums in the same order: the same bits.
template <class ExecutionSpace, class CurrentView, class InverseView, class CView, class StepView,
          class CoefficientView>
struct GamTakeStep {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  CurrentView current;
  InverseView inverse;
  CView c;
  StepView step;
  CoefficientView coefficients;
  double nu;
  int k;
  int level = 0;  // scratch level: 1 where M_s outgrows level 0

  static std::size_t scratch_bytes(int k) {
    return Scratch::shmem_size(std::size_t(k) * padded_stride(k)) + Scratch::shmem_size(k);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const { take(member, current()); }

  // The step of learner s, by the team's threads.
  KOKKOS_INLINE_FUNCTION void take(const Member& member, std::int64_t s) const {
    using T = typename StepView::non_const_value_type;
    const std::int64_t base = s * k;
    const int stride = padded_stride(k);
    const Scratch M_s(member.team_scratch(level), std::int64_t(k) * stride);
    const Scratch c_s(member.team_scratch(level), k);
    gam_stage(member,
              GamStagedBlock<InverseView, Scratch>{inverse, base * k, M_s, k * k, k, stride},
              GamStagedBlock<CView, Scratch>{c, base, c_s, k});
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      double sum = 0;
      for (int b = 0; b < k; ++b) sum += M_s(a * stride + b) * c_s(b);
      step(a) = T(nu * sum);
      coefficients(base + a) += nu * sum;
    });
  }
};

// A policy of one team of team_size threads with GamTakeStep's scratch;
// sets the functor's scratch level.
template <class ExecutionSpace, class TakeStep>
Kokkos::TeamPolicy<ExecutionSpace> gam_take_step_policy(const ExecutionSpace& space, int team_size,
                                                        TakeStep& take_step) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const std::size_t bytes = TakeStep::scratch_bytes(take_step.k);
  take_step.level = bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;
  return Policy(space, 1, team_size).set_scratch_size(take_step.level, Kokkos::PerTeam(bytes));
}

template <class ExecutionSpace, class CurrentView, class InverseView, class CView, class StepView,
          class CoefficientView>
void gam_take_step(const ExecutionSpace& space, int k, double nu, const CurrentView& current,
                   const InverseView& inverse, const CView& c, const StepView& step,
                   const CoefficientView& coefficients) {
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 64;
  GamTakeStep<ExecutionSpace, CurrentView, InverseView, CView, StepView, CoefficientView> take_step{
      current, inverse, c, step, coefficients, nu, k};
  Kokkos::parallel_for("kpl::gam::take_step", gam_take_step_policy(space, team_size, take_step),
                       take_step);
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
  TakeStep take_step{current, inverse, c, step, coefficients, nu, k};
  const auto policy = gam_take_step_policy(space, team_size, take_step);
  Kokkos::parallel_for("kpl::gam::select_and_take_step", policy,
                       GamSelectAndTakeStep<Select, TakeStep>{
                           Select{scores, selected, current, learners, iteration}, take_step});
}

}  // namespace impl
}  // namespace kpl
