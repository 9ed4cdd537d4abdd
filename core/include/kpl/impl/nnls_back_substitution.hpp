// The passive least-squares solve of the batched NNLS solver: with A_P = Q R,
// z = R^{-1} u, u = Q^T b (Luo & Duraiswami 2011, Algorithm 1 step 2, §5.2),
// by blocked back substitution, 32 columns at a time from the bottom. The
// block's triangle is solved from a copy in team scratch by one warp on
// CUDA, one thread elsewhere (no team barrier per column), then every thread
// subtracts the block's columns from the rows above it.
#pragma once

#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_team_ops.hpp>
#include <kpl/impl/team_member.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

inline constexpr int back_substitution_block = 32;

// One block of the triangle: size x size at `triangle` (leading dimension
// ld), right-hand side and solution at offset `begin`.
template <class T>
struct TriangleBlock {
  const T* triangle;
  int ld;
  int begin;
  int size;
};

// z of the block from its right-hand side, on one warp: lane r holds row
// r's right-hand side; per column one multiply by the lane's precomputed
// reciprocal diagonal, one shared-memory broadcast, one fused multiply-add
// per lane (a single thread needs i operations for column i).
template <class Member, class T>
KOKKOS_INLINE_FUNCTION void solve_triangle_on_warp(const Member& member,
                                                   const NnlsSystemStorage<T>& s,
                                                   const TriangleBlock<T>& block) {
  if (member.team_rank() != 0) return;
  const T* triangle = block.triangle;
  const int ld = block.ld, begin = block.begin, size = block.size;
  Kokkos::parallel_for(
      Kokkos::ThreadVectorRange(member, back_substitution_block), [&](int lane) {
        const bool in_block = lane < size;
        T remaining = in_block ? s.right_hand_side[begin + lane] : T(0);
        const T reciprocal = in_block ? T(1) / triangle[lane * ld + lane] : T(0);
        for (int i = size - 1; i >= 0; --i) {
          if (lane == i) s.solution[begin + i] = remaining * reciprocal;
          synchronize_vector_lanes();
          const T z = s.solution[begin + i];
          if (lane < i) remaining -= triangle[i * ld + lane] * z;
        }
      });
}

// z of the block from its right-hand side, by one thread.
template <class Member, class T>
KOKKOS_INLINE_FUNCTION void solve_triangle_on_one_thread(const Member& member,
                                                         const NnlsSystemStorage<T>& s,
                                                         const TriangleBlock<T>& block) {
  Kokkos::single(Kokkos::PerTeam(member), [&] {
    for (int i = block.size - 1; i >= 0; --i) {
      const T* column = block.triangle + i * block.ld;
      const T z = s.right_hand_side[block.begin + i] / column[i];
      s.solution[block.begin + i] = z;
      for (int row = 0; row < i; ++row) s.right_hand_side[block.begin + row] -= column[row] * z;
    }
  });
}

// The rows above the block: right_hand_side[row] -= R(row, block) z_block.
template <class Batch>
KOKKOS_INLINE_FUNCTION void subtract_solved_block(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s, int begin, int size) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const int ld = batch.parameters.max_passive;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, begin), [&](int row) {
    Accumulator value[4] = {Accumulator(s.right_hand_side[row]), 0, 0, 0};
    int c = 0;
    for (; c + 15 < size; c += 16) {
      T loaded[16];  // all sixteen loads in flight before the first use
      for (int u = 0; u < 16; ++u) loaded[u] = s.r[std::int64_t(begin + c + u) * ld + row];
      for (int u = 0; u < 16; ++u)
        value[u % 4] -= Accumulator(loaded[u]) * Accumulator(s.solution[begin + c + u]);
    }
    for (; c + 3 < size; c += 4)
      for (int u = 0; u < 4; ++u)
        value[u] -= Accumulator(s.r[std::int64_t(begin + c + u) * ld + row]) *
                    Accumulator(s.solution[begin + c + u]);
    for (; c < size; ++c)
      value[0] -= Accumulator(s.r[std::int64_t(begin + c) * ld + row]) *
                  Accumulator(s.solution[begin + c]);
    s.right_hand_side[row] = T((value[0] + value[1]) + (value[2] + value[3]));
  });
  member.team_barrier();
}

// The block's triangle, from R or from its copy in team scratch (shared
// memory on GPUs) when the launch gave the team one.
template <class Batch>
KOKKOS_INLINE_FUNCTION TriangleBlock<typename Batch::value_type> triangle_block(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s, int begin, int size) {
  const int ld = batch.parameters.max_passive;
  const auto* r_block = s.r + std::int64_t(begin) * ld + begin;
  if (s.triangle == nullptr) return {r_block, ld, begin, size};
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, size * size), [&](int index) {
    const int column = index / size, row = index - column * size;
    if (row <= column)
      s.triangle[column * back_substitution_block + row] = r_block[std::int64_t(column) * ld + row];
  });
  member.team_barrier();
  return {s.triangle, back_substitution_block, begin, size};
}

// z = R^{-1} u over the k passive columns, into s.solution.
template <class Batch>
KOKKOS_INLINE_FUNCTION void solve_passive(const typename Batch::Member& member,
                                          const Batch& batch,
                                          const NnlsSystemStorage<typename Batch::value_type>& s,
                                          int k) {
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k),
                       [&](int i) { s.right_hand_side[i] = s.q_transpose_b[i]; });
  member.team_barrier();
  for (int block_end = k; block_end > 0; block_end -= back_substitution_block) {
    const int begin =
        block_end > back_substitution_block ? block_end - back_substitution_block : 0;
    const auto block = triangle_block(member, batch, s, begin, block_end - begin);
    if constexpr (vector_lanes_are_warp_v<typename Batch::execution_space>) {
      // kpl::nnls launches 32 lanes; a user's kernel calling
      // kpl::team::nnls may have fewer, each lane then a loop.
      if (vector_length(member) == back_substitution_block) {
        solve_triangle_on_warp(member, s, block);
      } else {
        solve_triangle_on_one_thread(member, s, block);
      }
    } else {
      solve_triangle_on_one_thread(member, s, block);
    }
    member.team_barrier();
    subtract_solved_block(member, batch, s, begin, block.size);
  }
}

}  // namespace impl
}  // namespace kpl
