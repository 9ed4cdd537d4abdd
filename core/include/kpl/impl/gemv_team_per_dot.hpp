// gemv strategy team_per_dot: P threads share each dot product (Sieminski &
// Lee 2023, §3.2.2). Users need not read this; kpl/gemv.hpp is the API,
// impl/gemv_dispatch.hpp the launch.
//
// Each thread of a team owns one output (team_size outputs per team, the
// seed's M'), and its P vector lanes split the dot product, then combine by
// Kokkos' vector reduction (warp shuffles, log2 P steps, on CUDA): the team
// level of impl/gemv_team.hpp, which kpl::team::gemv runs too. With
// Width > 1 each lane reads 16-byte packs of the row and of x.
#pragma once

#include <kpl/execution_spaces.hpp>
#include <kpl/impl/gemv_common.hpp>
#include <kpl/impl/gemv_team.hpp>
#include <kpl/impl/pack.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>

namespace kpl::impl {

template <class T, int Width, class ExecutionSpace>
struct LanesPerDot {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  GemvProblem<T> problem;
  std::int64_t teams_per_batch;
  int lanes;  // the team's vector length, P

  // Outputs [team * M', (team + 1) * M') of batch entry b: one a thread, by
  // its rank rather than a TeamThreadRange, whose set-up per team costs on
  // host backends where a team is one thread (impl/gemv_team.hpp's
  // thread_dot, as kpl::team::gemv).
  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t b = member.league_rank() / teams_per_batch;
    const std::int64_t r =
        (member.league_rank() - b * teams_per_batch) * member.team_size() + member.team_rank();
    if (r >= problem.outputs) return;  // no team-wide synchronisation follows
    thread_dot<Width>(member, lanes, problem, b, r);
  }
};

// P, the lanes per dot product: the caller's `wanted` (0: enough lanes to
// cover the dot product in one pass of packs, at most a warp), rounded down
// to a power of two within the backend's vector length.
template <class ExecutionSpace>
int team_per_dot_lanes(int wanted, std::int64_t length, int pack) {
  const int max_vector = static_cast<int>(Kokkos::TeamPolicy<ExecutionSpace>::vector_length_max());
  if (wanted <= 0) {
    const std::int64_t steps = (length + pack - 1) / pack;
    wanted = static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(steps, 1), max_vector));
  }
  return round_down_to_power_of_two(wanted, max_vector);
}

// M', the outputs (threads) per team: the caller's `wanted` (0: 256 threads
// a team on GPUs, one on CPUs), never more than the backend allows.
template <class ExecutionSpace, class Functor>
int team_per_dot_team_size(const ExecutionSpace& space, const Functor& functor, int lanes,
                           int wanted) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  const int largest = Kokkos::TeamPolicy<ExecutionSpace>(space, 1, 1, lanes)
                          .team_size_max(functor, Kokkos::ParallelForTag());
  return std::clamp(wanted > 0 ? wanted : (host ? 1 : 256 / lanes), 1, largest);
}

template <class ExecutionSpace, class T, int Width>
void launch_lanes_per_dot(const ExecutionSpace& space, const GemvProblem<T>& problem, int lanes,
                          int rows_per_team_wanted) {
  using Functor = LanesPerDot<T, Width, ExecutionSpace>;
  const int rows_per_team =
      team_per_dot_team_size(space, Functor{problem, 1, lanes}, lanes, rows_per_team_wanted);
  const std::int64_t teams_per_batch = (problem.outputs + rows_per_team - 1) / rows_per_team;
  Kokkos::parallel_for(
      "kpl::gemv::team_per_dot",
      Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(problem.batch * teams_per_batch),
                                         rows_per_team, lanes),
      Functor{problem, teams_per_batch, lanes});
}

// Packs of 16 bytes on GPUs where the dot products run along aligned memory;
// one element at a time otherwise (and on CPUs, whose lanes are a loop).
template <class ExecutionSpace, class T>
void launch_team_per_dot(const ExecutionSpace& space, const GemvProblem<T>& problem,
                         int lanes_wanted, int rows_per_team_wanted) {
  constexpr int pack = runs_on_host_v<ExecutionSpace> ? 1 : pack_elements<T>();
  const bool packs = pack > 1 && gemv_access(problem) == GemvAccess::reduction_contiguous &&
                     is_pack_aligned<pack>(problem.matrix, problem.output_stride) &&
                     is_pack_aligned<pack>(problem.matrix, problem.batch_stride) &&
                     is_pack_aligned<pack>(problem.x, pack);
  const int lanes =
      team_per_dot_lanes<ExecutionSpace>(lanes_wanted, problem.length, packs ? pack : 1);
  if (packs) {
    launch_lanes_per_dot<ExecutionSpace, T, pack>(space, problem, lanes, rows_per_team_wanted);
  } else {
    launch_lanes_per_dot<ExecutionSpace, T, 1>(space, problem, lanes, rows_per_team_wanted);
  }
}

}  // namespace kpl::impl
