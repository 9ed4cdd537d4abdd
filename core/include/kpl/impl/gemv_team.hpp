// The team level of gemv: the threads of one team take outputs of one
// problem, each thread one output at a time, and its vector lanes split that
// output's dot product (Sieminski & Lee 2023, §3.2.2). kpl::team::gemv
// (kpl/team.hpp) runs it over all outputs of a user's problem; the
// team_per_dot strategy (impl/gemv_team_per_dot.hpp) over a block of
// team_size outputs per team. Users need not read this.
//
// With Width > 1 each lane reads 16-byte packs of the row and of x.
#pragma once

#include <kpl/impl/gemv_common.hpp>
#include <kpl/impl/pack.hpp>
#include <kpl/impl/reduce_op_reducer.hpp>
#include <kpl/impl/team_member.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl::impl {

// Lane l of the calling thread takes packs l, l + lanes, l + 2 lanes, ...;
// four at a time with separate sums, so each lane has four loads in flight
// on long rows. Every lane returns the dot product.
template <int Width, class Member, class T>
KOKKOS_INLINE_FUNCTION T packed_dot(const Member& member, int lanes, const GemvProblem<T>& problem,
                                    const T* row) {
  const std::int64_t packs = problem.length / Width;
  const std::int64_t stride = lanes;
  T dot = T(0);
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, lanes),
      [&](const int lane, T& partial) {
        T sums[4] = {T(0), T(0), T(0), T(0)};
        std::int64_t p = lane;
        for (; p + 3 * stride < packs; p += 4 * stride) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
          for (int u = 0; u < 4; ++u) {
            const auto a = load_pack<Width>(row + (p + u * stride) * Width);
            const auto x = load_pack<Width>(problem.x + (p + u * stride) * Width);
            for (int w = 0; w < Width; ++w) sums[u] += a.value[w] * x.value[w];
          }
        }
        for (; p < packs; p += stride) {
          const auto a = load_pack<Width>(row + p * Width);
          const auto x = load_pack<Width>(problem.x + p * Width);
          for (int w = 0; w < Width; ++w) sums[0] += a.value[w] * x.value[w];
        }
        // Terms after the last whole pack.
        for (std::int64_t c = packs * Width + lane; c < problem.length; c += stride) {
          sums[0] += row[c] * problem.x[c];
        }
        partial += (sums[0] + sums[1]) + (sums[2] + sums[3]);
      },
      dot);
  return dot;
}

// Any strides: lane l takes terms l, l + lanes, ...
template <class Member, class T>
KOKKOS_INLINE_FUNCTION T strided_dot(const Member& member, const GemvProblem<T>& problem,
                                     const T* row) {
  T dot = T(0);
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, problem.length),
      [&](const std::int64_t c, T& partial) {
        partial += row[c * problem.length_stride] * problem.x[c * problem.x_stride];
      },
      dot);
  return dot;
}

// Output r of batch entry b by the calling thread and its lanes.
template <int Width, class Member, class T>
KOKKOS_INLINE_FUNCTION void thread_dot(const Member& member, int lanes,
                                       const GemvProblem<T>& problem, std::int64_t b,
                                       std::int64_t r) {
  const T* row = problem.row(b, r);
  T dot;
  if constexpr (Width > 1) {
    dot = packed_dot<Width>(member, lanes, problem, row);
  } else {
    dot = strided_dot(member, problem, row);
  }
  Kokkos::single(Kokkos::PerThread(member), [&] { problem.store(b, r, dot); });
}

// Outputs [first, last) of batch entry b: thread t of the team takes outputs
// first + t, first + t + team_size, ... No team barrier: a thread may leave
// as soon as its outputs are stored.
template <int Width, class Member, class T>
KOKKOS_INLINE_FUNCTION void team_dots(const Member& member, int lanes,
                                      const GemvProblem<T>& problem, std::int64_t b,
                                      std::int64_t first, std::int64_t last) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, first, last), [&](const std::int64_t r) {
    thread_dot<Width>(member, lanes, problem, b, r);
  });
}

// kpl::team::gemv after its checks: one problem (batch of one), all its
// outputs by the calling team, then a team barrier so that every thread sees
// y. Packs where the dot products run along 16-byte aligned memory on GPUs
// (checked here, on the device: the data may be the caller's scratch).
template <class Member, class T>
KOKKOS_INLINE_FUNCTION void team_gemv(const Member& member, const GemvProblem<T>& problem) {
  using ExecutionSpace = member_execution_space_t<Member>;
  if (problem.length == 0 || problem.alpha == T(0)) {
    // BLAS' quick return: A and x are not read.
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(member, problem.outputs), [&](const std::int64_t r) {
          Kokkos::single(Kokkos::PerThread(member), [&] { ScaleOutputs<T>{problem}(r); });
        });
  } else {
    const int lanes = vector_length(member);
    constexpr int pack = runs_on_host_v<ExecutionSpace> ? 1 : pack_elements<T>();
    if constexpr (pack > 1) {
      if (gemv_access(problem) == GemvAccess::reduction_contiguous &&
          is_pack_aligned<pack>(problem.matrix, problem.output_stride) &&
          is_pack_aligned<pack>(problem.x, pack)) {
        team_dots<pack>(member, lanes, problem, 0, 0, problem.outputs);
      } else {
        team_dots<1>(member, lanes, problem, 0, 0, problem.outputs);
      }
    } else {
      team_dots<1>(member, lanes, problem, 0, 0, problem.outputs);
    }
  }
  member.team_barrier();
}

}  // namespace kpl::impl
