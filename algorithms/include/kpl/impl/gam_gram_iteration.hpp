// The GAM's Gram-mode iteration on the device (kpl/gam.hpp;
// impl/gam_boosting_iteration.hpp): two kernels an iteration that the host
// launches many iterations ahead without reading anything back. The select
// kernel reads the chosen learner's cache slot on the device; when its
// cross-product blocks B_j^T W B_s are not cached yet it halts the run: it
// and the kernels launched after it do nothing until the host has formed
// the blocks and resumed.
#pragma once

#include <kpl/impl/gam_learner_selection.hpp>

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
                     const CurrentView& current, const SlotView& slot_of, const HaltView& halted) {
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
// adds the step to the coefficients and the risk's change, |u - B_s step|^2
// - |u|^2 = step^T (G_s step - 2 c_s) without a pass over the rows. c and
// next_c are two buffers: a team reads c_s while team s writes its own
// next_c. Each k x k block is first copied to team scratch by all the
// team's threads at once: the sums over it then run in a fixed order (the
// CPU's) without waiting on one global load after another.
template <class ExecutionSpace, class CurrentView, class Vector, class CoefficientView,
          class RiskView, class Scores, class SlotView, class HaltView>
struct GamGramStep {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  CurrentView current;
  Vector inverse;  // M_j, [p k k]
  Vector c;        // c at this iteration
  Vector step;     // written by team s
  CoefficientView coefficients;
  Vector gram;  // G_j = B_j^T W B_j, [p k k]
  RiskView risk_sums;
  Vector cache;   // [slots + 1][p][k][k]
  Scores scores;  // its c: next_c
  SlotView slot_of;
  HaltView halted;
  std::int64_t learners, iteration;
  double nu;
  int k;

  static std::size_t scratch_bytes(int k) {
    return Scratch::shmem_size(std::size_t(k) * k) + 2 * Scratch::shmem_size(k);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    if (halted() >= 0) return;
    const std::int64_t s = current(), j = member.league_rank(), entries = std::int64_t(k) * k;
    const Scratch block(member.team_scratch(0), entries), c_s(member.team_scratch(0), k),
        step_s(member.team_scratch(0), k);
    stage(member, inverse, s * entries, block, entries);
    stage(member, c, s * k, c_s, k);
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      double sum = 0;
      for (int b = 0; b < k; ++b) sum += block(a * k + b) * c_s(b);
      Kokkos::single(Kokkos::PerThread(member), [&] { step_s(a) = nu * sum; });
    });
    member.team_barrier();
    stage(member, cache, (std::int64_t(slot_of(s)) * learners + j) * entries, block, entries);
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      double sum = 0;
      for (int b = 0; b < k; ++b) sum += block(a * k + b) * step_s(b);
      Kokkos::single(Kokkos::PerThread(member), [&] { scores.c(j * k + a) = c(j * k + a) - sum; });
    });
    member.team_barrier();
    scores.score(member, j);
    if (j == s) add_step(member, s, block, c_s, step_s);
  }

  // to(0 .. count) := from(offset ..), by all the team's threads.
  KOKKOS_INLINE_FUNCTION static void stage(const Member& member, const Vector& from,
                                           std::int64_t offset, const Scratch& to, int count) {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, count),
                         [&](const int e) { to(e) = from(offset + e); });
  }

  // Team s: coefficients_s += step, the step itself, and the risk at
  // iteration + 1 from the one before.
  KOKKOS_INLINE_FUNCTION void add_step(const Member& member, std::int64_t s, const Scratch& block,
                                       const Scratch& c_s, const Scratch& step_s) const {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k), [&](const int a) {
      step(a) = step_s(a);
      coefficients(s * k + a) += step_s(a);
    });
    member.team_barrier();  // block's cross products read by every thread
    stage(member, gram, s * k * k, block, k * k);
    member.team_barrier();
    double change = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, k),
        [&](const int a, double& partial) {
          double curvature = 0;
          for (int b = 0; b < k; ++b) curvature += block(a * k + b) * step_s(b);
          partial += step_s(a) * (curvature - 2 * c_s(a));
        },
        change);
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      risk_sums(iteration + 1).training = risk_sums(iteration).training + change;
      risk_sums(iteration + 1).held_out = 0;
    });
  }
};

template <class ExecutionSpace, class Step>
void gam_gram_step(const ExecutionSpace& space, const Step& step) {
  // GamScores' launch shape: the score's sums in the same order.
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 32;
  const int vector_length = gam_on_host<ExecutionSpace> ? 1 : 8;
  Kokkos::TeamPolicy<ExecutionSpace> policy(space, static_cast<int>(step.learners), team_size,
                                            vector_length);
  policy.set_scratch_size(0, Kokkos::PerTeam(Step::scratch_bytes(step.k)));
  Kokkos::parallel_for("kpl::gam::gram_step", policy, step);
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
