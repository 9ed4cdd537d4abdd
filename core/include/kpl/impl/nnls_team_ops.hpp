// Team-level building blocks of the batched NNLS solver (one team per
// system, Luo & Duraiswami 2011 §5.1): sums and reductions over a team's
// threads and vector lanes, and grouped dot products in which one thread's
// vector lanes reduce several columns against one row vector at once.
#pragma once

#include <kpl/reduce.hpp>
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

// sum over i < count of element(i), over the whole team; every thread
// receives the total.
template <class Accumulator, class Member, class Element>
KOKKOS_INLINE_FUNCTION Accumulator nnls_team_sum(const Member& member, std::int64_t count,
                                                 const Element& element) {
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
