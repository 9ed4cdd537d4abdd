// Team-level building blocks of the batched NNLS solver (one team per
// system, Luo & Duraiswami 2011 §5.1): sums and reductions over a team's
// threads and vector lanes, and grouped dot products in which one thread's
// vector lanes reduce several columns against one row vector at once.
#pragma once

#include <kpl/impl/team_member.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl {
namespace impl {

// Several dot products reduced together by a thread's vector lanes: one
// reduction for four columns instead of four in a row (each a chain of
// shuffles and dependent loads that leaves the GPU waiting).
inline constexpr int columns_per_group = 4;
template <class T>
struct GroupSums {
  T value[columns_per_group];
};
template <class T>
struct GroupSumsOp {
  using value_type = GroupSums<T>;
  KOKKOS_INLINE_FUNCTION value_type identity() const {
    value_type zero;
    for (int c = 0; c < columns_per_group; ++c) zero.value[c] = T(0);
    return zero;
  }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    for (int c = 0; c < columns_per_group; ++c) into.value[c] += other.value[c];
  }
};

// Whether one thread's vector lanes are a CUDA warp that
// synchronize_vector_lanes() can order (the warp-parallel back substitution).
template <class ExecutionSpace>
inline constexpr bool vector_lanes_are_warp_v =
#ifdef KOKKOS_ENABLE_CUDA
    std::is_same_v<ExecutionSpace, Kokkos::Cuda>;
#else
    false;
#endif

// Makes each lane's shared-memory writes visible to the other lanes of its
// warp (Kokkos has no portable warp barrier; only the CUDA path calls it).
KOKKOS_INLINE_FUNCTION void synchronize_vector_lanes() {
#if defined(__CUDA_ARCH__)
  __syncwarp();
#endif
}

// CPUs: the calling thread's own contiguous part of [0, count), one part
// per thread of the team. A plain loop over it runs along memory, keeps no
// per-element reduction machinery and lets the compiler use vector
// instructions (Kokkos' team ranges on host backends call the body one
// element at a time, through the reduction's reference).
struct OwnPart {
  std::int64_t begin, end;
};
template <class Member>
KOKKOS_INLINE_FUNCTION OwnPart own_part(const Member& member, std::int64_t count) {
  const std::int64_t rank = member.team_rank(), size = member.team_size();
  return {count * rank / size, count * (rank + 1) / size};
}

// The CPU loops below work on restrict-qualified runs, four independent
// elements per step: the compiler may then pair them into vector
// instructions (SLP) even at -O2, where it does not vectorise a loop that
// needs a remainder loop or an overlap check. Each element's arithmetic is
// the same as one at a time.
template <class T>
KOKKOS_INLINE_FUNCTION void subtract_scaled_run(const T* KOKKOS_RESTRICT source,
                                                T* KOKKOS_RESTRICT target, T factor,
                                                std::int64_t count) {
  std::int64_t i = 0;
  for (; i + 3 < count; i += 4) {
    const T a = target[i] - factor * source[i], b = target[i + 1] - factor * source[i + 1];
    const T c = target[i + 2] - factor * source[i + 2], d = target[i + 3] - factor * source[i + 3];
    target[i] = a;
    target[i + 1] = b;
    target[i + 2] = c;
    target[i + 3] = d;
  }
  for (; i < count; ++i) target[i] -= factor * source[i];
}
template <class T>
KOKKOS_INLINE_FUNCTION void copy_run(const T* KOKKOS_RESTRICT source, T* KOKKOS_RESTRICT target,
                                     std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) target[i] = source[i];
}

// target[i] -= factor * source[i] for i < count over the whole team (target
// and source do not overlap); no barrier.
template <class Member, class T>
KOKKOS_INLINE_FUNCTION void nnls_team_subtract_scaled(const Member& member, std::int64_t count,
                                                      T factor, const T* source, T* target) {
  if constexpr (runs_on_host_v<member_execution_space_t<Member>>) {
    const OwnPart part = own_part(member, count);
    subtract_scaled_run(source + part.begin, target + part.begin, factor, part.end - part.begin);
  } else {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, count),
                         [&](std::int64_t i) { target[i] -= factor * source[i]; });
  }
}

// sum over i < count of element(i), over the whole team; every thread
// receives the total. CPUs: four independent partial sums per thread (one
// chain would wait on each add), then the team's.
template <class Accumulator, class Member, class Element>
KOKKOS_INLINE_FUNCTION Accumulator nnls_team_sum(const Member& member, std::int64_t count,
                                                 const Element& element) {
  if constexpr (runs_on_host_v<member_execution_space_t<Member>>) {
    const OwnPart part = own_part(member, count);
    Accumulator sums[4] = {0, 0, 0, 0};
    std::int64_t i = part.begin;
    for (; i + 3 < part.end; i += 4)
      for (int u = 0; u < 4; ++u) sums[u] += Accumulator(element(i + u));
    for (; i < part.end; ++i) sums[0] += Accumulator(element(i));
    Accumulator total = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    if (member.team_size() > 1) member.team_reduce(Kokkos::Sum<Accumulator>(total));
    return total;
  }
  Accumulator total = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamVectorRange(member, count),
      [&](const std::int64_t i, Accumulator& partial) { partial += Accumulator(element(i)); },
      total);
  return total;
}

// op's combination of element(i), i < count, over the whole team.
template <class Member, class Op, class Element>
KOKKOS_INLINE_FUNCTION typename Op::value_type nnls_team_combine(const Member& member,
                                                                 std::int64_t count, const Op& op,
                                                                 const Element& element) {
  typename Op::value_type result;
  Kokkos::parallel_reduce(
      Kokkos::TeamVectorRange(member, count),
      [&](const std::int64_t i, typename Op::value_type& partial) {
        op.combine(partial, element(i));
      },
      OpReducer<Op>(op, result));
  return result;
}

// Dot products of one row vector with up to four columns, reduced by one
// thread's vector lanes: sum over rows of load(row)[c] * weight(row).
// On GPUs each lane takes several rows spaced length / rows apart
// (consecutive lanes still read consecutive rows) and issues all their
// loads before the first multiply: with 8 warps a team and a 128-register
// budget the compiler otherwise waits for each load before issuing the
// next, and the gradient ran at one L2 round trip per element. Short ranges
// (a Toeplitz band) keep one row per lane so that the lanes stay busy.
// Loads are unconditional (rows past the end re-read the last row with
// weight 0) so that none waits on a branch.
template <int Rows, class T, class Accumulator, class Member, class Load, class Weight>
KOKKOS_INLINE_FUNCTION GroupSums<Accumulator> group_sums_by(const Member& member, int length,
                                                            const Load& load,
                                                            const Weight& weight) {
  const int slots = (length + Rows - 1) / Rows;
  return vector_reduce(member, slots, GroupSumsOp<Accumulator>{}, [&](int slot) {
    T values[Rows][columns_per_group];
    T weights[Rows];
    for (int u = 0; u < Rows; ++u) {
      const int offset = slot + u * slots;
      const int row = offset < length ? offset : length - 1;
      load(row, values[u]);
      weights[u] = weight(row);
      if (offset >= length) weights[u] = T(0);
    }
    GroupSums<Accumulator> terms = GroupSumsOp<Accumulator>{}.identity();
    for (int u = 0; u < Rows; ++u)
      for (int c = 0; c < columns_per_group; ++c)
        terms.value[c] += Accumulator(values[u][c]) * Accumulator(weights[u]);
    return terms;
  });
}

// group_sums_by with as many rows per lane as the length allows on GPUs.
template <class Batch, class Member, class Load, class Weight>
KOKKOS_INLINE_FUNCTION GroupSums<typename Batch::Accumulator> nnls_group_sums(
    const Member& member, int length, const Load& load, const Weight& weight) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  if constexpr (!runs_on_host_v<typename Batch::execution_space>) {
    constexpr int lanes = 32;  // the GPU vector length nnls_columns launches with
    if (length >= 8 * lanes) return group_sums_by<8, T, Accumulator>(member, length, load, weight);
    if (length >= 4 * lanes) return group_sums_by<4, T, Accumulator>(member, length, load, weight);
  }
  return group_sums_by<1, T, Accumulator>(member, length, load, weight);
}

}  // namespace impl
}  // namespace kpl
