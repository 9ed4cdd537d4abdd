// The GAM's base-learner selection (kpl/gam.hpp; Sieminski & Lee 2023,
// Algorithm 2): every learner's score from c = B^T (w u) without forming its
// fit, then the learner of the least score.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl {
namespace impl {

template <class ExecutionSpace>
inline constexpr bool gam_on_host =
    std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;

// score(j) = -c_j^T R_j c_j: learner j's residual sum of squares minus
// u^T W u (kpl/gam_penalty.hpp), accumulated in double; +infinity when not
// finite. One team per learner.
template <class ExecutionSpace, class CView, class RView, class ScoreView>
struct GamScores {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  CView c;
  RView reduction;
  ScoreView scores;
  int k;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t j = member.league_rank();
    const std::int64_t base = j * k;
    double quadratic = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, k),
        [&](const int a, double& sum) {
          double row = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(member, k),
              [&](const int b, double& partial) {
                partial += double(reduction((base + a) * k + b)) * double(c(base + b));
              },
              row);
          sum += double(c(base + a)) * row;
        },
        quadratic);
    // A score that is not finite (NaN from a diverging fit) never wins the
    // selection: it counts as +infinity.
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      scores(j) = compat::math::isfinite(quadratic) ? -quadratic : largest<double>();
    });
  }
};

template <class ExecutionSpace, class CView, class RView, class ScoreView>
void gam_scores(const ExecutionSpace& space, std::int64_t learners, int k, const CView& c,
                const RView& reduction, const ScoreView& scores) {
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 32;
  const int vector_length = gam_on_host<ExecutionSpace> ? 1 : 8;
  Kokkos::parallel_for("kpl::gam::scores",
                       Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(learners),
                                                          team_size, vector_length),
                       GamScores<ExecutionSpace, CView, RView, ScoreView>{c, reduction, scores, k});
}

// The best learner: selected(iteration) and current() = argmin_j score(j),
// ties to the lowest j (as R's which.min). One team.
template <class ExecutionSpace, class ScoreView, class SelectedView, class CurrentView>
struct GamSelect {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  ScoreView scores;
  SelectedView selected;
  CurrentView current;
  std::int64_t learners, iteration;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const { record_best(member); }

  // The best learner, recorded as selected(iteration) and current(), and
  // returned to every thread of the team.
  KOKKOS_INLINE_FUNCTION int record_best(const Member& member) const {
    const int best = best_learner(member);
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      selected(iteration) = best;
      current() = best;
    });
    return best;
  }

  // argmin_j scores(j), known to every thread of the team.
  KOKKOS_INLINE_FUNCTION int best_learner(const Member& member) const {
    const ArgMin<double> op;
    auto best = op.identity();
    // (A NaN score counts as +infinity: it never wins.)
    for (std::int64_t j = member.team_rank(); j < learners; j += member.team_size())
      op.combine(best, op.lift(compat::math::isnan(scores(j)) ? largest<double>() : scores(j), j));
    return static_cast<int>(team_reduce(member, op, best).index);
  }
};

// team_size 0: the space's default (one thread on CPUs).
template <class ExecutionSpace, class ScoreView, class SelectedView, class CurrentView>
void gam_select(const ExecutionSpace& space, std::int64_t learners, const ScoreView& scores,
                const SelectedView& selected, std::int64_t iteration, const CurrentView& current,
                int team_size = 0) {
  if (team_size == 0) team_size = gam_on_host<ExecutionSpace> ? 1 : 256;
  Kokkos::parallel_for("kpl::gam::select", Kokkos::TeamPolicy<ExecutionSpace>(space, 1, team_size),
                       GamSelect<ExecutionSpace, ScoreView, SelectedView, CurrentView>{
                           scores, selected, current, learners, iteration});
}

}  // namespace impl
}  // namespace kpl
