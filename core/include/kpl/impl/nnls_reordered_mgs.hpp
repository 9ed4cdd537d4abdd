// The QR update of the batched NNLS solver when column j enters the passive
// set: reordered modified Gram-Schmidt (Luo & Duraiswami 2011, Algorithm 2,
// §3.3). The new column is appended at the right of the reordered list
// P-hat, so it is the only one orthogonalised: q_k = (a_j - sum_p (q_p^T a_j)
// q_p) / R(k, k), R's column k = the projections, u_k = q_k^T b. On GPUs the
// k projections can instead be taken at once and repeated where the first
// pass cancelled much of the column (classical Gram-Schmidt with DGKS
// reorthogonalisation, "twice is enough", Giraud et al. 2005): as accurate,
// with 2 or 4 team barriers instead of 2k.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_team_ops.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// candidate = a_j (zero outside its band), R's column k cleared; returns
// ||a_j||, candidate and norm in one pass.
template <class Batch>
KOKKOS_INLINE_FUNCTION typename Batch::value_type load_candidate(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s, int j,
    typename Batch::value_type* r_column, int k) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k + 1),
                       [&](std::int64_t i) { r_column[i] = T(0); });
  const RowRange range = batch.columns.rows_of(system, j);
  const T column_norm =
      T(compat::math::sqrt(nnls_team_sum<Accumulator>(member, batch.parameters.rows,
                                                      [&](std::int64_t i) {
                                                        const T value =
                                                            i >= range.begin && i < range.end
                                                                ? batch.scaled_a(s, system, i, j)
                                                                : T(0);
                                                        s.candidate[i] = value;
                                                        return value * value;
                                                      })));
  member.team_barrier();
  return column_norm;
}

// Modified Gram-Schmidt: project out q_0, q_1, ... one after another, each
// from the already reduced candidate (one team reduction each).
template <class Batch>
KOKKOS_INLINE_FUNCTION void project_out_one_by_one(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s, typename Batch::value_type* r_column,
    int k) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const std::int64_t m = batch.parameters.rows;
  for (int p = 0; p < k; ++p) {
    const T* q = s.q + std::int64_t(p) * m;
    const T projection = T(nnls_team_sum<Accumulator>(
        member, m, [&](std::int64_t i) { return q[i] * s.candidate[i]; }));
    nnls_team_subtract_scaled(member, m, projection, q, s.candidate);
    Kokkos::single(Kokkos::PerTeam(member), [&] { r_column[p] += projection; });
    member.team_barrier();
  }
}

// One classical pass, step 1: all k projections q_p^T candidate at once
// (a group of four q's per thread), added to R's column k. Only `rows` of
// the candidate are read: it is zero elsewhere (the first pass: a banded
// column's band).
template <class Batch>
KOKKOS_INLINE_FUNCTION void classical_projections(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s, typename Batch::value_type* r_column,
    int k, const RowRange& rows, typename Batch::value_type* projections) {
  using T = typename Batch::value_type;
  const std::int64_t m = batch.parameters.rows;
  const int groups = (k + columns_per_group - 1) / columns_per_group;
  const int length = rows.end > rows.begin ? int(rows.end - rows.begin) : 0;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, groups), [&](int group) {
    const int first = group * columns_per_group;
    const int count = k - first < columns_per_group ? k - first : columns_per_group;
    const T* q = s.q + std::int64_t(first) * m + rows.begin;
    const T* candidate = s.candidate + rows.begin;
    const auto sums = nnls_group_sums<Batch>(
        member, length,
        [&](int i, T* values) {
          for (int c = 0; c < columns_per_group; ++c) values[c] = q[(c < count ? c : 0) * m + i];
        },
        [&](int i) { return candidate[i]; });
    Kokkos::single(Kokkos::PerThread(member), [&] {
      for (int c = 0; c < count; ++c) {
        projections[first + c] = T(sums.value[c]);
        r_column[first + c] += T(sums.value[c]);
      }
    });
  });
  member.team_barrier();
}

// One classical pass, step 2: candidate -= Q projections, one row per lane.
template <class Batch>
KOKKOS_INLINE_FUNCTION void subtract_classical_projections(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s, int k,
    const typename Batch::value_type* projections) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const std::int64_t m = batch.parameters.rows;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, m), [&](std::int64_t i) {
    Accumulator value[4] = {Accumulator(s.candidate[i]), 0, 0, 0};
    int p = 0;
    for (; p + 15 < k; p += 16) {
      T loaded[16];  // all sixteen loads in flight before the first use
      for (int u = 0; u < 16; ++u) loaded[u] = s.q[std::int64_t(p + u) * m + i];
      for (int u = 0; u < 16; ++u) value[u % 4] -= Accumulator(loaded[u]) * projections[p + u];
    }
    for (; p < k; ++p) value[0] -= Accumulator(s.q[std::int64_t(p) * m + i]) * projections[p];
    s.candidate[i] = T((value[0] + value[1]) + (value[2] + value[3]));
  });
  member.team_barrier();
}

// ||candidate||^2 and candidate^T b (one reduction of two sums).
template <class Batch>
KOKKOS_INLINE_FUNCTION GroupSums<typename Batch::Accumulator> candidate_sums(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s) {
  using Accumulator = typename Batch::Accumulator;
  return nnls_team_combine(
      member, batch.parameters.rows, GroupSumsOp<Accumulator>{}, [&](std::int64_t i) {
        const Accumulator value = s.candidate[i];
        return GroupSums<Accumulator>{
            {value * value, value * Accumulator(batch.scaled_b(s, system, i)), 0, 0}};
      });
}

// Classical Gram-Schmidt with reorthogonalisation when needed: all k
// projections at once (one thread per group of q's), then one row-parallel
// subtraction; a second pass only if the first cancelled more than the
// DGKS criterion allows, ||candidate|| < ||a_j|| / sqrt(2) (Daniel, Gragg,
// Kaufman & Stewart 1976; "twice is enough", Giraud et al. 2005): a column
// that keeps most of its norm is orthogonal to working precision after one
// pass. The first pass reads the candidate's band only (a_j is zero outside
// it); the second, all rows (the q's are not banded). Returns the
// candidate's sums (candidate_sums).
template <class Batch>
KOKKOS_INLINE_FUNCTION GroupSums<typename Batch::Accumulator> project_out_classical(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s, typename Batch::value_type* r_column,
    int k, const RowRange& band, typename Batch::value_type column_norm) {
  using Accumulator = typename Batch::Accumulator;
  auto* projections = s.right_hand_side;  // free until the next solve
  if (k > 0) {
    classical_projections(member, batch, s, r_column, k, band, projections);
    subtract_classical_projections(member, batch, s, k, projections);
  }
  const auto sums = candidate_sums(member, batch, system, s);
  const Accumulator norm_squared = Accumulator(column_norm) * Accumulator(column_norm);
  if (k == 0 || sums.value[0] >= Accumulator(0.5) * norm_squared) return sums;
  classical_projections(member, batch, s, r_column, k, RowRange{0, batch.parameters.rows},
                        projections);
  subtract_classical_projections(member, batch, s, k, projections);
  return candidate_sums(member, batch, system, s);
}

// R(k, k) = ||candidate|| and u_k = q_k^T b = candidate^T b / R(k, k) from
// the candidate's sums; if the column is independent enough, q_k =
// candidate / R(k, k) and j takes position k of P-hat. Returns R(k, k) /
// ||a_j||.
template <class Batch>
KOKKOS_INLINE_FUNCTION typename Batch::value_type append_orthogonalised_candidate(
    const typename Batch::Member& member, const Batch& batch,
    const NnlsSystemStorage<typename Batch::value_type>& s, int j,
    typename Batch::value_type* r_column, int k, typename Batch::value_type column_norm,
    const GroupSums<typename Batch::Accumulator>& sums) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const std::int64_t m = batch.parameters.rows;
  const T diagonal = T(compat::math::sqrt(sums.value[0]));
  const T independence = column_norm > T(0) ? diagonal / column_norm : T(0);
  if (!(independence > batch.parameters.dependence_threshold)) return independence;
  const T u_new = T(sums.value[1] / Accumulator(diagonal));
  T* q_new = s.q + std::int64_t(k) * m;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, m),
                       [&](std::int64_t i) { q_new[i] = s.candidate[i] / diagonal; });
  Kokkos::single(Kokkos::PerTeam(member), [&] {
    r_column[k] = diagonal;
    s.q_transpose_b[k] = u_new;
    s.passive[k] = j;
    s.position[j] = k;
  });
  member.team_barrier();
  return independence;
}

// Appends column j at position k of P-hat (Algorithm 2). Returns R(k, k) /
// ||a_j||, how independent a_j is of the passive set; at or below the
// dependence threshold nothing is stored and the caller leaves k unchanged.
template <class Batch>
KOKKOS_INLINE_FUNCTION typename Batch::value_type reordered_mgs_append(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s, int j, int k) {
  auto* r_column = s.r + std::int64_t(k) * batch.parameters.max_passive;
  const auto column_norm = load_candidate(member, batch, system, s, j, r_column, k);
  if (batch.parameters.modified_gram_schmidt) {
    project_out_one_by_one(member, batch, s, r_column, k);
    return append_orthogonalised_candidate(member, batch, s, j, r_column, k, column_norm,
                                           candidate_sums(member, batch, system, s));
  }
  const auto sums = project_out_classical(member, batch, system, s, r_column, k,
                                          batch.columns.rows_of(system, j), column_norm);
  return append_orthogonalised_candidate(member, batch, s, j, r_column, k, column_norm, sums);
}

}  // namespace impl
}  // namespace kpl
