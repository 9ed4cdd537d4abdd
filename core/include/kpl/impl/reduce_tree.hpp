// The hierarchical reduction tree behind kpl::reduce (1-D input to one
// value), after the reduction kernels that GPU Coder generates (MathWorks,
// GPU Coder documentation, "Kernels from Reduction Operations": a tree in
// which each thread block reduces a portion of the array, warp shuffles
// combine the threads of a warp, and one atomic per block combines the
// blocks). Its four levels here:
//   1. thread:    every thread accumulates its elements (strided 16-byte
//                 chunks on GPUs, so a warp reads consecutive memory; one
//                 contiguous range on CPUs, for caches and prefetchers);
//   2. vector:    the vector lanes of a thread combine (warp shuffles);
//   3. team:      the threads of a team combine (Kokkos' team reduction
//                 through scratch memory, with its barriers);
//   4. cross-team: one atomic per team where the operation and its value's
//                 size allow (atomic_combine), else a second pass over the
//                 per-team results (CombinePartials), or, for a result
//                 wanted on the host, Kokkos' own inter-team stage.
// Include kpl/reduce.hpp, not this file.
#pragma once

#include <kpl/impl/pack.hpp>
#include <kpl/impl/reduce_op_reducer.hpp>
#include <kpl/impl/reduce_team.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace kpl::impl {

// ------------------------------------------- level 4 by atomics: which ops

// Whether teams may combine their results by one atomic each.
template <class Op, class = void>
struct has_atomic_add : std::false_type {};
template <class Op>
struct has_atomic_add<Op, std::void_t<decltype(Op::atomic_add)>>
    : std::bool_constant<Op::atomic_add> {};
template <class Op, class = void>
struct has_atomic_exchange : std::false_type {};
template <class Op>
struct has_atomic_exchange<Op, std::void_t<decltype(Op::atomic_exchange)>>
    : std::bool_constant<Op::atomic_exchange &&
                         (sizeof(typename Op::value_type) == 4 ||
                          sizeof(typename Op::value_type) == 8) &&
                         alignof(typename Op::value_type) == sizeof(typename Op::value_type)> {};
template <class Op>
inline constexpr bool supports_atomics_v =
    has_atomic_add<Op>::value || has_atomic_exchange<Op>::value;

// The bits of a 4- or 8-byte value as an unsigned integer: the
// compare-and-swap below works on these, so a NaN (NaN != NaN) cannot keep the
// loop spinning and a struct such as MinMaxValue<float> needs no operator==.
template <class T>
using bits_of_t = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;

template <class T>
KOKKOS_INLINE_FUNCTION bits_of_t<T> to_bits(const T& value) {
  bits_of_t<T> bits;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

// *target = combine(*target, value), atomically: atomic_add for sums, else a
// compare-and-swap loop on the value's bits.
template <class Op>
KOKKOS_INLINE_FUNCTION void atomic_combine(const Op& op, typename Op::value_type* target,
                                           const typename Op::value_type& value) {
  if constexpr (has_atomic_add<Op>::value) {
    Kokkos::atomic_add(target, value);
  } else {
    using value_type = typename Op::value_type;
    using bits_type = bits_of_t<value_type>;
    // value_type's alignment is its size (MinMaxValue is declared so), as a
    // compare-and-swap on bits_type needs.
    auto* target_bits = reinterpret_cast<bits_type*>(target);
    bits_type expected = *static_cast<volatile bits_type*>(target_bits);
    while (true) {
      value_type desired;
      std::memcpy(&desired, &expected, sizeof(value_type));
      op.combine(desired, value);
      const bits_type desired_bits = to_bits(desired);
      if (desired_bits == expected) return;  // nothing to change
      const bits_type seen = Kokkos::atomic_compare_exchange(target_bits, expected, desired_bits);
      if (seen == expected) return;
      expected = seen;
    }
  }
}

// ----------------------------------------------------------- launch shape

struct LaunchShape {
  int teams;
  int team_size;
  int vector_length;
};

// GPUs: 16 x 32 = 512 threads a team and teams for eight times what the
// device holds at once, each thread looping over a strided range. More teams
// than fit is what lets a streaming read keep DRAM busy to the end: the
// scheduler hands the next team to whichever SM frees first, so the last
// wave is short and even (CUB oversubscribes its grid for the same reason).
// A single wave left a few per cent of the bandwidth idle (perf/RESULTS.md,
// reduce_shape). Waves beyond the first only while every thread still gets
// ~64 elements: below that, teams that start, read a few values and stop
// cost more than the tail they even out (reduce_stream_shape: 17e6 doubles
// fastest in one wave). The first wave fills as far as ~16 elements a
// thread allow, or the launch costs more than the work. CPUs: one thread a
// team, one team a thread. A requested count (> 0) wins.
inline constexpr int gpu_reduction_team_size = 16;
inline constexpr int gpu_reduction_waves = 8;

template <class ExecutionSpace>
LaunchShape reduction_shape(const ExecutionSpace& space, std::int64_t length, int requested_teams,
                            int requested_team_size = 0, int gpu_waves = gpu_reduction_waves) {
  LaunchShape shape{1, 1, 1};
  std::int64_t waves = 1;
  if constexpr (!runs_on_host_v<ExecutionSpace>) {
    shape.team_size = gpu_reduction_team_size;
    shape.vector_length = 32;
    waves = gpu_waves;
  }
  if (requested_team_size > 0) shape.team_size = requested_team_size;
  const std::int64_t threads_per_team = std::int64_t(shape.team_size) * shape.vector_length;
  const std::int64_t wave = std::max<std::int64_t>(1, space.concurrency() / threads_per_team);
  const auto teams_for = [&](std::int64_t elements_per_thread) {
    const std::int64_t per_team = elements_per_thread * threads_per_team;
    return (length + per_team - 1) / per_team;
  };
  const std::int64_t teams =
      std::max(std::min(waves * wave, teams_for(64)), std::min(wave, teams_for(16)));
  shape.teams = static_cast<int>(std::max<std::int64_t>(1, teams));
  if (requested_teams > 0) shape.teams = requested_teams;
  return shape;
}

// ------------------------------------------------------ levels 1 to 4

template <class Op, class InputView, class ResultView, class PartialView, class ExecutionSpace>
struct ReduceTeams {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  // Not named value_type: Kokkos 3.4 would take the functor for the reducer.
  using team_value_type = typename Op::value_type;

  ReduceShare<Op, InputView, true> share;  // op, the input (streamed once) and its aligned data
  ResultView result;
  PartialView partials;
  bool use_atomics;
  int lanes;  // the policy's vector length (not every team member reports it)

  // Levels 1 to 3 (impl/reduce_team.hpp, as kpl::team::reduce): the team's
  // lanes are threads [team, team + 1) x team_size x lanes of the league's;
  // every thread of the team gets the team's value.
  KOKKOS_INLINE_FUNCTION team_value_type team_value(const member_type& member) const {
    const std::int64_t team = member.league_rank();
    const std::int64_t threads = std::int64_t(member.league_size()) * member.team_size() * lanes;
    return team_tree_value<runs_on_host_v<ExecutionSpace>>(
        member, share, team * member.team_size() * lanes, threads, lanes);
  }

  // Level 4 by one atomic per team, or into partials(team) for a second pass.
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const team_value_type value = team_value(member);
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      if constexpr (supports_atomics_v<Op>) {
        if (use_atomics) {
          atomic_combine(share.op, &result(), value);
          return;
        }
      }
      partials(member.league_rank()) = value;
    });
  }

  // Level 4 by Kokkos' own inter-team stage (parallel_reduce over the teams):
  // one launch and Kokkos' reused buffers, for results wanted on the host.
  // Only one thread of each team contributes; all others hold the identity.
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member, team_value_type& update) const {
    const team_value_type value = team_value(member);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { share.op.combine(update, value); });
  }
};

// Level 4 by a second pass: one team combines the per-team partial results.
template <class Op, class ResultView, class PartialView, class ExecutionSpace>
struct CombinePartials {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using value_type = typename Op::value_type;
  Op op;
  PartialView partials;
  ResultView result;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    value_type total;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, static_cast<int>(partials.extent(0))),
        [&](const int team, value_type& partial) { op.combine(partial, partials(team)); },
        OpReducer<Op>(op, total));
    Kokkos::single(Kokkos::PerTeam(member), [&]() { result() = total; });
  }
};

// ------------------------------------------------------------- launches

// The input as the kernels read it: const, random-access (read-only cache).
template <class InputView>
using ReadOnlyInput =
    Kokkos::View<const typename InputView::non_const_value_type*, typename InputView::array_layout,
                 typename InputView::device_type, Kokkos::MemoryTraits<Kokkos::RandomAccess>>;

template <class ExecutionSpace, class InputView, class Op, class ResultView, class PartialView>
ReduceTeams<Op, ReadOnlyInput<InputView>, ResultView, PartialView, ExecutionSpace> team_kernel(
    const InputView& input, const Op& op, const ResultView& result, const PartialView& partials,
    bool use_atomics, const LaunchShape& shape) {
  return {{op, ReadOnlyInput<InputView>(input), contiguous_aligned_data(input),
           static_cast<std::int64_t>(input.extent(0))},
          result,
          partials,
          use_atomics,
          shape.vector_length};
}

template <class ExecutionSpace>
Kokkos::TeamPolicy<ExecutionSpace> team_policy(const ExecutionSpace& space,
                                               const LaunchShape& shape) {
  return Kokkos::TeamPolicy<ExecutionSpace>(space, shape.teams, shape.team_size,
                                            shape.vector_length);
}

// Whether level 4 goes by atomics: by default where the operation allows;
// asking for atomics where it does not is an error.
template <class Op>
bool combine_teams_by_atomics(cross_team combine) {
  if constexpr (supports_atomics_v<Op>) {
    return combine != cross_team::second_pass;
  } else {
    if (combine == cross_team::atomics) {
      throw std::invalid_argument("kpl::reduce: this operation cannot combine teams by atomics");
    }
    return false;
  }
}

// The whole tree into a rank-0 View on the device; nothing fenced.
template <class ExecutionSpace, class InputView, class Op, class ResultView>
void reduce_into_view(const ExecutionSpace& space, const InputView& input, const Op& op,
                      const ResultView& result, const ReduceOptions& options) {
  using PartialView = Kokkos::View<typename Op::value_type*, typename ExecutionSpace::memory_space>;
  const auto shape = reduction_shape(space, static_cast<std::int64_t>(input.extent(0)),
                                     options.teams, options.team_size);
  const bool use_atomics = combine_teams_by_atomics<Op>(options.combine);
  PartialView partials;
  if (use_atomics) {
    Kokkos::deep_copy(space, result, op.identity());
  } else {
    partials =
        PartialView(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::reduce::partials"),
                    shape.teams);
  }
  Kokkos::parallel_for(
      "kpl::reduce::teams", team_policy(space, shape),
      team_kernel<ExecutionSpace>(input, op, result, partials, use_atomics, shape));
  if (!use_atomics) {
    const int team_size = runs_on_host_v<ExecutionSpace> ? 1 : 256;
    Kokkos::parallel_for(
        "kpl::reduce::combine_teams", Kokkos::TeamPolicy<ExecutionSpace>(space, 1, team_size),
        CombinePartials<Op, ResultView, PartialView, ExecutionSpace>{op, partials, result});
  }
}

// Inputs from this length on go through a device result with atomics or a
// second pass even for a host result: Kokkos' inter-team stage costs more
// than the allocation, initialisation and copy there, and more the more
// teams it combines, so it runs one device-full of teams, not eight
// (perf/RESULTS.md, "The sum of 2^28 values against CUB"). Shorter inputs
// use it: one launch, no allocation.
inline constexpr std::int64_t large_reduction = std::int64_t(1) << 24;

// The whole tree, its value returned on the host (fenced).
template <class ExecutionSpace, class InputView, class Op>
typename Op::value_type reduce_to_host(const ExecutionSpace& space, const InputView& input,
                                       const Op& op, const ReduceOptions& options) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  using value_type = typename Op::value_type;
  const auto length = static_cast<std::int64_t>(input.extent(0));
  value_type value;
  if (options.combine != cross_team::automatic || length >= large_reduction) {
    Kokkos::View<value_type, MemorySpace> result(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::reduce::result"));
    reduce_into_view(space, input, op, result, options);
    Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(&value);
    Kokkos::deep_copy(space, host, result);
    space.fence();
    return value;
  }
  const auto shape = reduction_shape(space, length, options.teams, options.team_size, 1);
  const auto teams =
      team_kernel<ExecutionSpace>(input, op, Kokkos::View<value_type, MemorySpace>(),
                                  Kokkos::View<value_type*, MemorySpace>(), false, shape);
  Kokkos::parallel_reduce("kpl::reduce::teams_to_host", team_policy(space, shape), teams,
                          OpReducer<Op>(op, value));
  return value;
}

}  // namespace kpl::impl
