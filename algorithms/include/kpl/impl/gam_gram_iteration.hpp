// The GAM's Gram-mode iteration on the device (kpl/gam.hpp;
// impl/gam_boosting_iteration.hpp): one kernel an iteration, which the host
// launches many iterations ahead without reading anything back. Every team
// selects the learner s itself from the scores (all find the same s), then
// updates its own learner's c and score. When s's cross-product blocks
// B_j^T W B_s are not cached yet the kernel halts the run: it and the
// kernels launched after it do nothing until the host has formed the blocks
// and resumed.
#pragma once

#include <kpl/impl/gam_learner_selection.hpp>
#include <kpl/impl/gam_team_staging.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kpl {
namespace impl {

// Iteration `select.iteration`, one team per learner j: s = argmin of the
// scores (GamSelect; team 0 records it, and halts the run where s has no
// cache slot), step = nu M_s c_s (every team forms it: k^2 multiply-adds,
// so that no team waits for another), next_c_j = c_j - (B_j^T W B_s) step
// from s's slot, and next_score_j = -next_c_j^T R_j next_c_j. Team s also
// adds the step to the coefficients and the risk's change, |u - B_s
// step|^2 - |u|^2 = step^T (G_s step - 2 c_s), without a pass over the
// rows. c and the scores have two buffers each: a team reads c_s and every
// score while the others write their own next ones. The team copies the
// k x k blocks it needs to scratch with all its threads at once, then sums
// over them in a fixed order (a CPU's, where a team is one thread); the
// blocks' rows padded_stride apart.
template <class ExecutionSpace, class Select, class Vector, class CoefficientView, class RiskView,
          class SlotView, class HaltView>
struct GamGramIteration {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Select select;  // its scores: this iteration's
  Vector next_scores;
  Vector inverse, reduction, gram;  // M_j, R_j, G_j = B_j^T W B_j: [p k k]
  Vector cache;                     // [slots + 1][p][k][k]
  Vector c, next_c;
  Vector step;  // written by team s
  CoefficientView coefficients;
  RiskView risk_sums;
  SlotView slot_of;
  HaltView halted;  // the iteration that halted the run (-1: none), its selection
  double nu;
  int k;
  int level = 0;  // scratch level: 1 where the blocks outgrow level 0

  static std::size_t scratch_bytes(int k) {
    return 4 * Scratch::shmem_size(std::size_t(k) * padded_stride(k)) + 4 * Scratch::shmem_size(k);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    if (halted(0) >= 0) return;
    const std::int64_t s = select.best_learner(member), j = member.league_rank();
    const int slot = slot_of(s);
    if (j == 0)
      Kokkos::single(Kokkos::PerTeam(member), [&] {
        select.selected(select.iteration) = static_cast<int>(s);
        select.current() = static_cast<int>(s);
        if (slot < 0) {
          halted(0) = static_cast<int>(select.iteration);
          halted(1) = static_cast<int>(s);
        }
      });
    if (slot < 0) return;
    const std::int64_t entries = std::int64_t(k) * k;
    const int stride = padded_stride(k);
    const auto block = [&] {
      return Scratch(member.team_scratch(level), std::int64_t(k) * stride);
    };
    const auto vector = [&] { return Scratch(member.team_scratch(level), k); };
    const Scratch M_s = block(), C_js = block(), R_j = block(), G_s = block();
    const Scratch c_s = vector(), c_j = vector(), step_s = vector(), next = vector();
    using Staged = GamStagedBlock<Vector, Scratch>;
    const int blocks = int(entries), g_s = j == s ? blocks : 0;  // G_s: team s only
    gam_stage(member, Staged{inverse, s * entries, M_s, blocks, k, stride},
              Staged{c, s * k, c_s, k},
              Staged{cache, (slot * select.learners + j) * entries, C_js, blocks, k, stride},
              Staged{reduction, j * entries, R_j, blocks, k, stride}, Staged{c, j * k, c_j, k},
              Staged{gram, s * entries, G_s, g_s, k, stride});
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      double sum = 0;
      for (int b = 0; b < k; ++b) sum += M_s(a * stride + b) * c_s(b);
      step_s(a) = nu * sum;
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
      double sum = 0;
      for (int b = 0; b < k; ++b) sum += C_js(a * stride + b) * step_s(b);
      next(a) = c_j(a) - sum;
      next_c(j * k + a) = next(a);
    });
    member.team_barrier();
    const double score = -quadratic_form(member, R_j, next);
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      next_scores(j) = compat::math::isfinite(score) ? score : largest<double>();
    });
    if (j == s) add_step(member, s, G_s, c_s, step_s);
  }

  // x^T A x over the team (A: k x k, rows padded_stride apart), GamScores'
  // order.
  KOKKOS_INLINE_FUNCTION double quadratic_form(const Member& member, const Scratch& A,
                                               const Scratch& x) const {
    const int stride = padded_stride(k);
    double total = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, k),
        [&](const int a, double& sum) {
          double row = 0;
          for (int b = 0; b < k; ++b) row += A(a * stride + b) * x(b);
          sum += x(a) * row;
        },
        total);
    return total;
  }

  // Team s: coefficients_s += step, the step itself, and the risk at
  // iteration + 1 from the one before.
  KOKKOS_INLINE_FUNCTION void add_step(const Member& member, std::int64_t s, const Scratch& G_s,
                                       const Scratch& c_s, const Scratch& step_s) const {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k), [&](const int a) {
      step(a) = step_s(a);
      coefficients(s * k + a) += step_s(a);
    });
    double change = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, k),
        [&](const int a, double& partial) {
          double curvature = 0;
          for (int b = 0; b < k; ++b) curvature += G_s(a * padded_stride(k) + b) * step_s(b);
          partial += step_s(a) * (curvature - 2 * c_s(a));
        },
        change);
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      const std::int64_t m = select.iteration;
      risk_sums(m + 1).training = risk_sums(m).training + change;
      risk_sums(m + 1).held_out = 0;
    });
  }
};

template <class ExecutionSpace, class Iteration>
void gam_gram_iteration(const ExecutionSpace& space, Iteration iteration) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const std::size_t bytes = Iteration::scratch_bytes(iteration.k);
  iteration.level = bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;
  // Enough threads that staging a block takes each a few loads; the sums
  // over rows use k of them.
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 256;
  // Light weight: Kokkos passes the functor (its Views come to more than
  // 512 bytes) as a kernel argument. By default it would copy it to
  // constant memory, which first waits for the previous such launch: the
  // host would then wait for every iteration before launching the next.
  const auto policy = Kokkos::Experimental::require(
      Policy(space, static_cast<int>(iteration.select.learners), team_size, 1)
          .set_scratch_size(iteration.level, Kokkos::PerTeam(bytes)),
      Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  Kokkos::parallel_for("kpl::gam::gram_iteration", policy, iteration);
}

// slot_of(learner) := slot and the run resumed (halted(0) := -1).
template <class SlotView, class HaltView>
struct GamGramResume {
  SlotView slot_of;
  HaltView halted;
  int learner, slot;
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {
    slot_of(learner) = slot;
    halted(0) = -1;
  }
};

// reused(j) := whether learner j, not s, has a slot: its block of s's slot
// is then the transpose of one there (GamGramTransposedBlocks).
template <class ReusedView, class SlotView>
struct GamGramReusedBlocks {
  ReusedView reused;
  SlotView slot_of;
  std::int64_t s;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j) const {
    reused(j) = j != s && slot_of(j) >= 0;
  }
};

template <class ExecutionSpace, class ReusedView, class SlotView>
void gam_gram_reused_blocks(const ExecutionSpace& space, const ReusedView& reused,
                            const SlotView& slot_of, std::int64_t s) {
  Kokkos::parallel_for(
      "kpl::gam::gram_reused_blocks",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, std::int64_t(reused.extent(0))),
      GamGramReusedBlocks<ReusedView, SlotView>{reused, slot_of, s});
}

// Block j of slot `slot` := the transpose of block s of j's slot, for the
// learners j marked in `reused` (B_j^T W B_s = (B_s^T W B_j)^T).
template <class Vector, class SlotView, class ReusedView>
struct GamGramTransposedBlocks {
  Vector cache;  // [slots + 1][p][k][k]
  SlotView slot_of;
  ReusedView reused;
  std::int64_t s, slot;
  int k;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    const std::int64_t entries = std::int64_t(k) * k, learners = reused.extent(0);
    const std::int64_t j = index / entries, a = (index - j * entries) / k;
    const std::int64_t b = index - j * entries - a * k;
    if (!reused(j)) return;
    cache((slot * learners + j) * entries + a * k + b) =
        cache((slot_of(j) * learners + s) * entries + b * k + a);
  }
};

template <class ExecutionSpace, class Vector, class SlotView, class ReusedView>
void gam_gram_transposed_blocks(const ExecutionSpace& space, const Vector& cache,
                                const SlotView& slot_of, const ReusedView& reused, std::int64_t s,
                                std::int64_t slot, int k) {
  const std::int64_t entries = std::int64_t(k) * k;
  Kokkos::parallel_for(
      "kpl::gam::gram_transposed_blocks",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, std::int64_t(reused.extent(0)) * entries),
      GamGramTransposedBlocks<Vector, SlotView, ReusedView>{cache, slot_of, reused, s, slot, k});
}

template <class ExecutionSpace, class SlotView, class HaltView>
void gam_gram_resume(const ExecutionSpace& space, const SlotView& slot_of, const HaltView& halted,
                     int learner, int slot) {
  Kokkos::parallel_for("kpl::gam::gram_resume", Kokkos::RangePolicy<ExecutionSpace>(space, 0, 1),
                       GamGramResume<SlotView, HaltView>{slot_of, halted, learner, slot});
}

}  // namespace impl
}  // namespace kpl
