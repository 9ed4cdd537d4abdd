// The QR downdate of the batched NNLS solver when the column at position p
// of P-hat leaves the passive set: Givens rotations (Luo & Duraiswami 2011,
// §3.4). R's columns right of p shift left, leaving a Hessenberg band that
// rotations of rows (j, j+1), j = p..k-2, zero again; the same rotations
// applied to u = Q^T b and to Q's columns p..k-1 keep Q R = A_P and u = Q^T b
// without moving Q's columns.
//
// Each rotation is computed once, by the thread that owns column j when its
// diagonal becomes final, and shared through team memory (§3.4). Threads own
// R's columns: applying rotation j makes row j final and leaves row j+1 (the
// next rotation's top row) in team memory, so a rotation step reads R once
// and costs one team barrier. u and Q are rotated afterwards in one pass
// each: every row of Q is an independent chain through all the rotations,
// with its loads issued ahead, instead of a team-wide step per rotation.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_team_ops.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// Where the downdate keeps its rotations and R's running row; the vectors
// are free until the next passive solve.
template <class T>
struct GivensScratch {
  T* cosines;
  T* sines;
  T* top_row;  // top_row[c]: R(j, c) after rotations p..j-1
  T* r;
  int ld;
};

// The rotation of rows (j, j+1) that zeroes b under a = R(j, j): stores
// cosine and sine for the later passes and writes R(j, j) = radius and
// R(j+1, j) = 0. Scaled against overflow; two divisions instead of four.
template <class T>
KOKKOS_INLINE_FUNCTION void givens_rotation(const GivensScratch<T>& g, int j, T a, T b) {
  const T scale = compat::math::fabs(a) + compat::math::fabs(b);
  T cosine = T(1), sine = T(0), radius = a;
  if (scale > T(0)) {
    const T inverse_scale = T(1) / scale;
    const T a_scaled = a * inverse_scale, b_scaled = b * inverse_scale;
    const T hypotenuse = compat::math::sqrt(a_scaled * a_scaled + b_scaled * b_scaled);
    const T inverse_hypotenuse = T(1) / hypotenuse;
    radius = scale * hypotenuse;
    cosine = a_scaled * inverse_hypotenuse;
    sine = b_scaled * inverse_hypotenuse;
  }
  g.cosines[j] = cosine;
  g.sines[j] = sine;
  g.r[std::int64_t(j) * g.ld + j] = radius;
  g.r[std::int64_t(j) * g.ld + j + 1] = T(0);
}

// R's columns p+1..k-1 move one to the left, on GPUs row by row: each
// thread owns rows of R, so shifting in place has no race. Sixteen loads are
// issued before their stores: one by one, each store may overwrite the next
// load's source as far as the compiler knows.
template <class Member, class T>
KOKKOS_INLINE_FUNCTION void shift_columns_row_by_row(const Member& member,
                                                     const NnlsSystemStorage<T>& s, int p, int k,
                                                     int ld) {
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k), [&](int row) {
    int column = p;
    for (; column + 16 < k; column += 16) {
      T loaded[16];
      for (int u = 0; u < 16; ++u) loaded[u] = s.r[std::int64_t(column + 1 + u) * ld + row];
      for (int u = 0; u < 16; ++u) s.r[std::int64_t(column + u) * ld + row] = loaded[u];
    }
    for (; column < k - 1; ++column)
      s.r[std::int64_t(column) * ld + row] = s.r[std::int64_t(column + 1) * ld + row];
  });
}

// R's columns p+1..k-1 move one to the left and P-hat's entries with them.
template <class Batch>
KOKKOS_INLINE_FUNCTION void shift_out_of_passive_set(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s, int p, int k) {
  const int ld = batch.parameters.max_passive;
  if constexpr (runs_on_host_v<typename Batch::execution_space>) {
    // CPUs: column by column, each a contiguous copy of the thread's rows
    // (row by row, every element is a column's length away from the last).
    const OwnPart part = own_part(member, k);
    for (int column = p; column < k - 1; ++column)
      copy_run(s.r + std::int64_t(column + 1) * ld + part.begin,
               s.r + std::int64_t(column) * ld + part.begin, part.end - part.begin);
  } else {
    shift_columns_row_by_row(member, s, p, k, ld);
  }
  Kokkos::single(Kokkos::PerTeam(member), [&] {
    s.position[s.passive[p]] = not_passive;
    for (int q = p; q < k - 1; ++q) {
      s.passive[q] = s.passive[q + 1];
      s.position[s.passive[q]] = q;
    }
  });
  member.team_barrier();
}

// Restores R's triangle over columns p..k-2: rotation j is computed by the
// thread that has just brought column j's diagonal up to date (no separate
// step, one barrier per rotation).
template <class Member, class T>
KOKKOS_INLINE_FUNCTION void rotate_hessenberg_band(const Member& member, const GivensScratch<T>& g,
                                                   int p, int k) {
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k - 1 - p), [&](int offset) {
    const T* r_column = g.r + std::int64_t(p + offset) * g.ld;
    if (offset == 0)
      givens_rotation(g, p, r_column[p], r_column[p + 1]);
    else
      g.top_row[p + offset] = r_column[p];
  });
  member.team_barrier();
  for (int j = p; j + 1 < k - 1; ++j) {
    const T cosine = g.cosines[j], sine = g.sines[j];
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k - 2 - j), [&](int offset) {
      const int column = j + 1 + offset;
      T* r_column = g.r + std::int64_t(column) * g.ld;
      const T top = g.top_row[column], bottom = r_column[j + 1];
      r_column[j] = cosine * top + sine * bottom;
      const T next_top = -sine * top + cosine * bottom;
      if (offset == 0)
        givens_rotation(g, j + 1, next_top, r_column[j + 2]);
      else
        g.top_row[column] = next_top;
    });
    member.team_barrier();
  }
}

// One rotation on a CPU's run of rows: column = c carried + s next, carried =
// -s carried + c next (restrict-qualified, so the loop may use vector
// instructions).
template <class T>
KOKKOS_INLINE_FUNCTION void rotate_row(const T* KOKKOS_RESTRICT next, T* KOKKOS_RESTRICT column,
                                       T* KOKKOS_RESTRICT carried, T cosine, T sine, int r) {
  const T bottom = next[r], top = carried[r];
  column[r] = cosine * top + sine * bottom;
  carried[r] = -sine * top + cosine * bottom;
}
template <class T>
KOKKOS_INLINE_FUNCTION void rotate_run(const T* KOKKOS_RESTRICT next, T* KOKKOS_RESTRICT column,
                                       T* KOKKOS_RESTRICT carried, T cosine, T sine, int count) {
  int r = 0;
  for (; r + 3 < count; r += 4)  // four independent rows a step (see subtract_scaled_run)
    for (int u = 0; u < 4; ++u) rotate_row(next, column, carried, cosine, sine, r + u);
  for (; r < count; ++r) rotate_row(next, column, carried, cosine, sine, r);
}

// The rotations p..k-2 applied to u = Q^T b (one thread) and to Q's
// columns p..k-1 (one row per lane, eight loads in flight).
template <class Batch>
KOKKOS_INLINE_FUNCTION void rotate_q_and_u(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s,
    const GivensScratch<typename Batch::value_type>& g, int p, int k) {
  using T = typename Batch::value_type;
  const std::int64_t m = batch.parameters.rows;
  const T* cosines = g.cosines;
  const T* sines = g.sines;
  Kokkos::single(Kokkos::PerTeam(member), [&] {
    T top = s.q_transpose_b[p];
    for (int j = p; j < k - 1; ++j) {
      const T bottom = s.q_transpose_b[j + 1];
      s.q_transpose_b[j] = cosines[j] * top + sines[j] * bottom;
      top = -sines[j] * top + cosines[j] * bottom;
    }
    s.q_transpose_b[k - 1] = top;
  });
  if constexpr (runs_on_host_v<typename Batch::execution_space>) {
    // CPUs: a block of rows at a time, rotation by rotation, so the
    // innermost loop runs down Q's columns (contiguous: vector
    // instructions); each row still sees the rotations in order, with the
    // same arithmetic as below.
    for_each_cpu_row_block(member, m, [&](std::int64_t begin, int count) {
      T carried[cpu_row_block];
      for (int r = 0; r < count; ++r) carried[r] = s.q[std::int64_t(p) * m + begin + r];
      for (int j = p; j < k - 1; ++j) {
        T* column = s.q + std::int64_t(j) * m + begin;
        rotate_run(column + m, column, carried, cosines[j], sines[j], count);
      }
      for (int r = 0; r < count; ++r) s.q[std::int64_t(k - 1) * m + begin + r] = carried[r];
    });
    member.team_barrier();
    return;
  }
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, m), [&](std::int64_t i) {
    T carried = s.q[std::int64_t(p) * m + i];
    int j = p;
    for (; j + 7 < k - 1; j += 8) {
      T loaded[8];  // all eight loads in flight before the first use
      for (int u = 0; u < 8; ++u) loaded[u] = s.q[std::int64_t(j + 1 + u) * m + i];
      for (int u = 0; u < 8; ++u) {
        s.q[std::int64_t(j + u) * m + i] = cosines[j + u] * carried + sines[j + u] * loaded[u];
        carried = -sines[j + u] * carried + cosines[j + u] * loaded[u];
      }
    }
    for (; j < k - 1; ++j) {
      const T bottom = s.q[std::int64_t(j + 1) * m + i];
      s.q[std::int64_t(j) * m + i] = cosines[j] * carried + sines[j] * bottom;
      carried = -sines[j] * carried + cosines[j] * bottom;
    }
    s.q[std::int64_t(k - 1) * m + i] = carried;
  });
  member.team_barrier();
}

// Removes the column at position p of P-hat from the k passive columns.
template <class Batch>
KOKKOS_INLINE_FUNCTION void givens_downdate(const typename Batch::Member& member,
                                            const Batch& batch,
                                            const NnlsSystemStorage<typename Batch::value_type>& s,
                                            int p, int k) {
  shift_out_of_passive_set(member, batch, s, p, k);
  if (p == k - 1) return;  // the last column: nothing to rotate
  const GivensScratch<typename Batch::value_type> g{s.right_hand_side, s.solution, s.candidate,
                                                    s.r, batch.parameters.max_passive};
  rotate_hessenberg_band(member, g, p, k);
  rotate_q_and_u(member, batch, s, g, p, k);
}

}  // namespace impl
}  // namespace kpl
