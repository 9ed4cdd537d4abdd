// The residual r = b - A x and the gradient w = A^T r of the batched NNLS
// solver (Luo & Duraiswami 2011, Algorithm 1 steps 1-2): row-wise work over
// all threads and vector lanes of the team; column-wise dot products give
// each thread a group of columns and its vector lanes the rows, so loads
// coalesce on GPUs (§5.1). With a shared A the gradient can instead come
// from cross products, w = A^T b - (A^T A)_P x_P (Bro & de Jong's "fast
// NNLS" precomputation).
#pragma once

#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_team_ops.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// target[i] = base(i) - sum over the passive columns j of entry(i, j) x_j,
// for i < length: the residual r = b - A x (entry = A) and the gradient
// from cross products w = A^T b - (A^T A) x (entry = A^T A).
template <class Batch, class Base, class Entry>
KOKKOS_INLINE_FUNCTION void subtract_passive_product(
    const typename Batch::Member& member, const Batch& batch, std::int64_t length,
    const Base& base, const Entry& entry, const NnlsSystemStorage<typename Batch::value_type>& s,
    const typename Batch::value_type* x, int passive_count, typename Batch::value_type* target) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const std::int64_t x_stride = batch.outputs.x_column_stride;
  if constexpr (runs_on_host_v<typename Batch::execution_space>) {
    // CPUs: a block of rows at a time, its sums kept in a local array while
    // the passive columns go by, so the innermost loop runs down a column
    // (contiguous: vector instructions) instead of across the columns.
    for_each_cpu_row_block(member, length, [&](std::int64_t begin, int count) {
      Accumulator sums[cpu_row_block];
      for (int r = 0; r < count; ++r) sums[r] = Accumulator(base(begin + r));
      for (int p = 0; p < passive_count; ++p) {
        const int j = s.passive[p];
        const Accumulator x_j = Accumulator(x[j * x_stride]);
        int r = 0;
        for (; r + 3 < count; r += 4)  // four a step: see subtract_scaled_run
          for (int u = 0; u < 4; ++u) sums[r + u] -= Accumulator(entry(begin + r + u, j)) * x_j;
        for (; r < count; ++r) sums[r] -= Accumulator(entry(begin + r, j)) * x_j;
      }
      for (int r = 0; r < count; ++r) target[begin + r] = T(sums[r]);
    });
    member.team_barrier();
    return;
  }
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, length), [&](std::int64_t i) {
    // Sixteen loads in flight, four independent partial sums.
    Accumulator value[4] = {Accumulator(base(i)), 0, 0, 0};
    int p = 0;
    for (; p + 15 < passive_count; p += 16) {
      T loaded[16];  // all sixteen loads in flight before the first use
      for (int u = 0; u < 16; ++u) loaded[u] = entry(i, s.passive[p + u]);
      for (int u = 0; u < 16; ++u)
        value[u % 4] -= Accumulator(loaded[u]) * Accumulator(x[s.passive[p + u] * x_stride]);
    }
    for (; p < passive_count; ++p) {
      const int j = s.passive[p];
      value[0] -= Accumulator(entry(i, j)) * Accumulator(x[j * x_stride]);
    }
    target[i] = T((value[0] + value[1]) + (value[2] + value[3]));
  });
  member.team_barrier();
}

// r = b - A x over the passive columns (scaled as s says).
template <class Batch>
KOKKOS_INLINE_FUNCTION void compute_residual(const typename Batch::Member& member,
                                             const Batch& batch, std::int64_t system,
                                             const NnlsSystemStorage<typename Batch::value_type>& s,
                                             const typename Batch::value_type* x,
                                             int passive_count) {
  subtract_passive_product(
      member, batch, batch.parameters.rows,
      [&](std::int64_t i) { return batch.scaled_b(s, system, i); },
      [&](std::int64_t i, int j) { return batch.scaled_a(s, system, i, j); }, s, x, passive_count,
      s.residual);
}

// w_j = a_j^T r over column j's band: four independent partial sums. (The
// column's scale applied per entry: raw entries near the type's largest
// would overflow in a_ij r_i.)
template <class Batch>
KOKKOS_INLINE_FUNCTION typename Batch::value_type column_band_dot(
    const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s, std::int64_t j) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const RowRange range = batch.columns.rows_of(system, j);
  Accumulator sum[4] = {0, 0, 0, 0};
  std::int64_t i = range.begin;
  const T scale = s.column_scales[j];
  for (; i + 3 < range.end; i += 4)
    for (int u = 0; u < 4; ++u)
      sum[u] +=
          Accumulator(scale * batch.columns(system, i + u, j)) * Accumulator(s.residual[i + u]);
  for (; i < range.end; ++i)
    sum[0] += Accumulator(scale * batch.columns(system, i, j)) * Accumulator(s.residual[i]);
  return T((sum[0] + sum[1]) + (sum[2] + sum[3]));
}

// w_j = a_j^T r on a CPU: a plain dot product per column by one thread, no
// reduction machinery per element.
template <class Batch>
KOKKOS_INLINE_FUNCTION void compute_gradient_by_one_thread(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s) {
  const std::int64_t n = batch.parameters.columns;
  Kokkos::single(Kokkos::PerTeam(member), [&] {
    for (std::int64_t j = 0; j < n; ++j) s.gradient[j] = column_band_dot(batch, system, s, j);
  });
  member.team_barrier();
}

// w_j = a_j^T r on a GPU for columns of short bands (a pulse's Toeplitz
// columns): one vector lane per column. Consecutive lanes read consecutive
// residual entries (in team scratch) and, inside the matrix, the same
// Toeplitz tap; no lane waits for a reduction.
template <class Batch>
KOKKOS_INLINE_FUNCTION void compute_gradient_by_column_lanes(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s) {
  Kokkos::parallel_for(
      Kokkos::TeamVectorRange(member, batch.parameters.columns),
      [&](std::int64_t j) { s.gradient[j] = column_band_dot(batch, system, s, j); });
  member.team_barrier();
}

// w_j = a_j^T r on a GPU: each thread takes groups of four columns over the
// union of their bands, its vector lanes the rows.
template <class Batch>
KOKKOS_INLINE_FUNCTION void compute_gradient_by_column_groups(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s) {
  using T = typename Batch::value_type;
  const std::int64_t n = batch.parameters.columns;
  const std::int64_t groups = (n + columns_per_group - 1) / columns_per_group;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, groups), [&](std::int64_t group) {
    const std::int64_t first = group * columns_per_group;
    const int count = n - first < columns_per_group ? int(n - first) : columns_per_group;
    RowRange range = batch.columns.rows_of(system, first);
    for (int c = 1; c < count; ++c) {
      const RowRange other = batch.columns.rows_of(system, first + c);
      if (other.begin < range.begin) range.begin = other.begin;
      if (other.end > range.end) range.end = other.end;
    }
    if (range.end < range.begin) range.end = range.begin;
    // A group's slots past its last column re-read column `first`; their
    // sums are dropped.
    T scales[columns_per_group];
    for (int c = 0; c < columns_per_group; ++c)
      scales[c] = s.column_scales[first + (c < count ? c : 0)];
    const auto sums = nnls_group_sums<Batch>(
        member, int(range.end - range.begin),
        [&](int offset, T* values) {
          for (int c = 0; c < columns_per_group; ++c)
            values[c] = scales[c] *
                        batch.columns(system, range.begin + offset, first + (c < count ? c : 0));
        },
        [&](int offset) { return s.residual[range.begin + offset]; });
    Kokkos::single(Kokkos::PerThread(member), [&] {
      for (int c = 0; c < count; ++c) s.gradient[first + c] = T(sums.value[c]);
    });
  });
  member.team_barrier();
}

// w_j = a_j^T r for every column (the passive ones' too: 0 in exact
// arithmetic, read only by the KKT check).
template <class Batch>
KOKKOS_INLINE_FUNCTION void compute_gradient(const typename Batch::Member& member,
                                             const Batch& batch, std::int64_t system,
                                             const NnlsSystemStorage<typename Batch::value_type>& s) {
  if constexpr (runs_on_host_v<typename Batch::execution_space>) {
    compute_gradient_by_one_thread(member, batch, system, s);
  } else if (batch.parameters.gradient_by_column_lanes) {
    compute_gradient_by_column_lanes(member, batch, system, s);
  } else {
    compute_gradient_by_column_groups(member, batch, system, s);
  }
}

// The gradient after x changed. From the residual, every column of A is
// read (m n values); from the cross products (a shared A), one column of
// A^T A per passive column (n |P| values). The passive columns' w, zero in
// exact arithmetic, is computed too and never read.
template <class Batch>
KOKKOS_INLINE_FUNCTION void update_gradient(const typename Batch::Member& member,
                                            const Batch& batch, std::int64_t system,
                                            const NnlsSystemStorage<typename Batch::value_type>& s,
                                            const typename Batch::value_type* x,
                                            int passive_count) {
  if (batch.cross_products == nullptr) {
    compute_residual(member, batch, system, s, x, passive_count);
    compute_gradient(member, batch, system, s);
    return;
  }
  const std::int64_t stride = batch.cross_products_stride;
  const auto* cross_products = batch.cross_products;
  subtract_passive_product(
      member, batch, batch.parameters.columns, [&](std::int64_t j) { return s.b_projections[j]; },
      [&](std::int64_t j, int column) { return cross_products[column * stride + j]; }, s, x,
      passive_count, s.gradient);
}

}  // namespace impl
}  // namespace kpl
