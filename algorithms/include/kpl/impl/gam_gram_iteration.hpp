// The GAM's Gram-mode iteration on the device (kpl/gam.hpp;
// impl/gam_boosting_iteration.hpp): two kernels an iteration that the host
// launches many iterations ahead without reading anything back. The select
// kernel reads the chosen learner's cache slot on the device; when its
// cross-product blocks B_j^T W B_s are not cached yet it halts the run: it
// and the kernels launched after it do nothing until the host has formed
// the blocks and resumed.
#pragma once

#include <kpl/impl/gam_learner_selection.hpp>
#include <kpl/impl/gam_take_step.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// Iteration `iteration`'s selection (GamSelect); halted() := iteration when
// the selected learner has no cache slot (slot_of < 0). Does nothing once
// the run is halted.
template <class ExecutionSpace, class Select, class SlotView, class HaltView>
struct GamGramSelect {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Select select;
  SlotView slot_of;
  HaltView halted;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    if (halted() >= 0) return;
    const int best = select.best_learner(member);
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      select.selected(select.iteration) = best;
      select.current() = best;
      if (slot_of(best) < 0) halted() = static_cast<int>(select.iteration);
    });
  }
};

template <class ExecutionSpace, class ScoreView, class SelectedView, class CurrentView,
          class SlotView, class HaltView>
void gam_gram_select(const ExecutionSpace& space, std::int64_t learners, const ScoreView& scores,
                     const SelectedView& selected, std::int64_t iteration,
                     const CurrentView& current, const SlotView& slot_of,
                     const HaltView& halted) {
  using Select = GamSelect<ExecutionSpace, ScoreView, SelectedView, CurrentView>;
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 256;
  Kokkos::parallel_for(
      "kpl::gam::gram_select", Kokkos::TeamPolicy<ExecutionSpace>(space, 1, team_size),
      GamGramSelect<ExecutionSpace, Select, SlotView, HaltView>{
          Select{scores, selected, current, learners, iteration}, slot_of, halted});
}

// Iteration `iteration` after the selection of s, one team per learner j:
// step = nu M_s c_s (every team forms it: k^2 multiply-adds, so that no
// team waits for another), next_c_j = c_j - (B_j^T W B_s) step from s's
// cache slot, and score_j from next_c_j for the next selection. Team s also
// adds the step to the coefficients and the risk's change. c and next_c
// are two buffers: a team reads c_s while team s writes its own next_c.
// The step and the score sum in the order of GamTakeStep and GamScores.
template <class ExecutionSpace, class TakeStep, class Scores, class CrossView, class SlotView,
          class HaltView>
struct GamGramStep {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  TakeStep take;    // c: c_m; step and coefficients written by team s
  Scores scores;    // c: next_c
  CrossView cache;  // [slots + 1][p][k][k]
  SlotView slot_of;
  HaltView halted;
  std::int64_t learners;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    if (halted() >= 0) return;
    const int k = take.k;
    const std::int64_t s = take.current();
    const std::int64_t j = member.league_rank();
    const Scratch step(member.team_scratch(0), k);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      const double value = take.nu * take.fitted(s * k, a);
      Kokkos::single(Kokkos::PerThread(member), [&] { step(a) = value; });
    });
    member.team_barrier();
    if (j == s) add_step(member, s, step);
    const std::int64_t block = (std::int64_t(slot_of(s)) * learners + j) * k * k;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      double sum = 0;
      for (int b = 0; b < k; ++b) sum += double(cache(block + a * k + b)) * step(b);
      Kokkos::single(Kokkos::PerThread(member),
                     [&] { scores.c(j * k + a) = take.c(j * k + a) - sum; });
    });
    member.team_barrier();
    scores.score(member, j);
  }

  // coefficients_s += step, the step itself, and the risk at iteration + 1.
  KOKKOS_INLINE_FUNCTION void add_step(const Member& member, std::int64_t s,
                                       const Scratch& step) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, take.k), [&](const int a) {
      Kokkos::single(Kokkos::PerThread(member), [&] {
        take.step(a) = step(a);
        take.coefficients(s * take.k + a) += step(a);
      });
    });
    take.add_risk_change(member, take.risk_change(member, s * take.k, step));
  }
};

template <class ExecutionSpace, class TakeStep, class Scores, class CrossView, class SlotView,
          class HaltView>
void gam_gram_step(const ExecutionSpace& space, std::int64_t learners, const TakeStep& take,
                   const Scores& scores, const CrossView& cache, const SlotView& slot_of,
                   const HaltView& halted) {
  using Functor = GamGramStep<ExecutionSpace, TakeStep, Scores, CrossView, SlotView, HaltView>;
  // GamScores' launch shape: the score's sums in the same order.
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 32;
  const int vector_length = gam_on_host<ExecutionSpace> ? 1 : 8;
  Kokkos::TeamPolicy<ExecutionSpace> policy(space, static_cast<int>(learners), team_size,
                                            vector_length);
  policy.set_scratch_size(0, Kokkos::PerTeam(Functor::Scratch::shmem_size(take.k)));
  Kokkos::parallel_for("kpl::gam::gram_step", policy,
                       Functor{take, scores, cache, slot_of, halted, learners});
}

// slot_of(learner) := slot and the run resumed (halted() := -1).
template <class SlotView, class HaltView>
struct GamGramResume {
  SlotView slot_of;
  HaltView halted;
  int learner, slot;
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {
    slot_of(learner) = slot;
    halted() = -1;
  }
};

template <class ExecutionSpace, class SlotView, class HaltView>
void gam_gram_resume(const ExecutionSpace& space, const SlotView& slot_of, const HaltView& halted,
                     int learner, int slot) {
  Kokkos::parallel_for("kpl::gam::gram_resume", Kokkos::RangePolicy<ExecutionSpace>(space, 0, 1),
                       GamGramResume<SlotView, HaltView>{slot_of, halted, learner, slot});
}

}  // namespace impl
}  // namespace kpl
