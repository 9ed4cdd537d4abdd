// The batched NNLS kernel: one Kokkos team solves one system by the
// Lawson–Hanson active-set method (Luo & Duraiswami 2011, Algorithm 1) with
// the passive least-squares problem kept as a QR factorisation that is
// updated when a column enters and downdated when one leaves. Users call
// kpl::nnls (kpl/nnls.hpp); this header is the machinery.
//
// Storage per system (§5.3): Q is m x max_passive, one column per passive
// column in the order the columns entered (the reordered list P-hat of
// Algorithm 2: a new column is appended at the right, so no existing column
// is re-orthogonalised); R is max_passive x max_passive, upper triangular in
// the same order; u = Q^T b. Only passive-list entries and R's columns to
// the right of a leaving column shift (O(k^2) words); Q's columns never move:
// the Givens rotations that restore R's triangle rewrite them in place.
//
// Work division (§5.1): one team per system; row-wise work (one element per
// row: residuals, Q updates) runs over all threads and vector lanes of the
// team; column-wise dot products (the gradient w = A^T r, Q^T a) give each
// thread a column and its vector lanes the rows, so loads coalesce on GPUs.
// On CPUs a team is one thread and every loop is a plain loop.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/power_of_two.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {

// Why a system's solve stopped; the value is what `kpl nnls` writes. Only
// `converged` promises a solution: its KKT conditions were checked after the
// solve (kkt_residual <= kkt_tolerance). Otherwise x is the last feasible
// iterate (x >= 0, every step of the method taken in full).
enum class NnlsStatus : int {
  converged = 0,          // KKT verified within the tolerance
  max_iterations = 1,     // the iteration cap was reached first
  numerical_issue = 2,    // NaN/Inf in the input (x = 0), or one arose in the solve
  passive_set_full = 3,   // a column should enter but the passive cap is reached
  dependent_columns = 4,  // every column violating KKT is numerically dependent on the passive set
  kkt_not_met = 5,        // the solve ended, but the KKT check from the residual failed
};
inline constexpr int nnls_status_count = 6;

// Rows [begin, end) in which a column may be non-zero; sources of banded
// matrices (Toeplitz deconvolution) return their band so the dot products
// skip the zeros.
struct RowRange {
  std::int64_t begin;
  std::int64_t end;
};

namespace impl {

// Everything one team needs about its system's workspace.
template <class T>
struct NnlsSystemStorage {
  T* q;                   // [max_passive][rows], column j at q + j * rows
  T* r;                   // [max_passive][max_passive], column-major
  T* q_transpose_b;       // u, [max_passive]
  T* solution;            // z, [max_passive], the passive least-squares solution
  T* right_hand_side;     // back-substitution scratch, [max_passive]
  T* residual;            // b - A x, [rows]
  T* candidate;           // the entering column as it is orthogonalised, [rows]
  T* gradient;            // w = A^T (b - A x), [columns]
  T* b_projections;       // A^T b, [columns] (kept only when w comes from A^T A)
  T* inverse_norms;       // 1 / ||a_j||_2 of the scaled column (0 for a zero column), [columns]
  T* column_scales;       // 2^-e_j, bringing column j's largest |a_ij| into [1, 2), [columns]
  T* triangle;            // a 32 x 32 diagonal block of R in team scratch, or nullptr
  int* passive;           // passive[p]: the column at position p of P-hat
  int* position;          // position[j]: j's place in P-hat, or not_passive / rejected
  int* column_exponents;  // e_j, [columns]
  // The system is solved as (A D) x' = b_scale b with D = diag(column_scales)
  // (powers of two): every entry the solver reads is scaled as it is loaded.
  T b_scale;
};

template <class T>
struct NnlsParameters {
  std::int64_t systems;
  std::int64_t rows;
  std::int64_t columns;
  int max_passive;
  int max_iterations;
  T tolerance;                    // a zero-set w_j counts while above this x ||a_j|| ||b||
  T kkt_tolerance;                // the check after the solve, in the same units
  T not_a_number;                 // host-made: numeric_limits is not callable on devices
  T dependence_threshold;         // reject a column whose new R diagonal is below this x its norm
  bool modified_gram_schmidt;     // false: classical Gram-Schmidt applied twice
  bool check_kkt;                 // false only in benchmarks (never `converged` then)
  bool passive_capped_by_caller;  // max_passive < min(rows, columns)
  bool vectors_in_scratch;        // residual, candidate, back substitution in team scratch
  bool gradient_in_scratch;       // w too (read by the argmax right after it is written)
};

template <class T>
struct NnlsOutputs {
  T* x;  // [systems][columns]
  std::int64_t x_system_stride, x_column_stride;
  T* residual_norm;     // [systems]
  T* kkt_residual;      // [systems]
  int* iterations;      // [systems]
  int* status;          // [systems]
  int* column_changes;  // [systems][2]: QR updates (columns entered), downdates (left)
};

template <class T>
struct NnlsWorkspacePointers {
  T* values;  // per system: values_per_system() values
  int* indices;
  std::int64_t values_per_system;
  std::int64_t indices_per_system;

  KOKKOS_INLINE_FUNCTION static std::int64_t values_needed(std::int64_t rows, std::int64_t columns,
                                                           std::int64_t max_passive) {
    return max_passive * rows + max_passive * max_passive + 3 * max_passive + 2 * rows +
           4 * columns;
  }
  KOKKOS_INLINE_FUNCTION static std::int64_t indices_needed(std::int64_t columns,
                                                            std::int64_t max_passive) {
    return max_passive + 2 * columns;
  }
  KOKKOS_INLINE_FUNCTION NnlsSystemStorage<T> system(std::int64_t s, std::int64_t rows,
                                                     std::int64_t columns,
                                                     std::int64_t max_passive) const {
    T* v = values + s * values_per_system;
    int* i = indices + s * indices_per_system;
    NnlsSystemStorage<T> storage;
    storage.q = v;
    v += max_passive * rows;
    storage.r = v;
    v += max_passive * max_passive;
    storage.q_transpose_b = v;
    v += max_passive;
    storage.solution = v;
    v += max_passive;
    storage.right_hand_side = v;
    v += max_passive;
    storage.residual = v;
    v += rows;
    storage.candidate = v;
    v += rows;
    storage.gradient = v;
    v += columns;
    storage.b_projections = v;
    v += columns;
    storage.inverse_norms = v;
    v += columns;
    storage.column_scales = v;
    storage.triangle = nullptr;
    storage.passive = i;
    storage.position = i + max_passive;
    storage.column_exponents = i + max_passive + columns;
    storage.b_scale = T(1);
    return storage;
  }
};

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

inline constexpr int back_substitution_block = 32;

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
inline constexpr int not_passive = -1;
inline constexpr int rejected = -2;  // excluded until the passive set next grows

// One team per system. Columns is a column source (kpl/nnls.hpp):
//   T operator()(system, row, column) const;  RowRange rows_of(system, column) const;
template <class T, class Columns, class ExecutionSpace>
struct NnlsTeamSolve {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Accumulator = typename Sum<T>::value_type;  // double for float

  Columns columns;
  const T* b;
  std::int64_t b_system_stride, b_row_stride;
  NnlsParameters<T> parameters;
  NnlsWorkspacePointers<T> workspace;
  NnlsOutputs<T> outputs;
  // A^T A (column j at cross_products + j * cross_products_stride) when A is
  // shared and the gradient comes from cross products; nullptr otherwise.
  // Formed from A D, the columns scaled as measure_system scales them.
  const T* cross_products = nullptr;
  std::int64_t cross_products_stride = 0;

  // ---------------------------------------------------------- team helpers
  template <class Element>
  KOKKOS_INLINE_FUNCTION Accumulator team_sum(const Member& member, std::int64_t count,
                                              const Element& element) const {
    Accumulator total = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, count),
        [&](const std::int64_t i, Accumulator& partial) { partial += Accumulator(element(i)); },
        total);
    return total;
  }

  template <class Op, class Element>
  KOKKOS_INLINE_FUNCTION typename Op::value_type team_combine(const Member& member,
                                                              std::int64_t count, const Op& op,
                                                              const Element& element) const {
    typename Op::value_type result;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, count),
        [&](const std::int64_t i, typename Op::value_type& partial) {
          op.combine(partial, element(i));
        },
        impl::OpReducer<Op>(op, result));
    return result;
  }

  // Dot products of one row vector with up to four columns, reduced by one
  // thread's vector lanes: sum over rows of load(row)[c] * weight(row).
  // On GPUs each lane takes several rows spaced length / rows apart
  // (consecutive lanes still read consecutive rows) and issues all their
  // loads before the first multiply: with 8 warps a team and a 128-register
  // budget the compiler otherwise waits for each load before issuing the
  // next, and the gradient ran at one L2 round trip per element (Nsight
  // Compute, H100). Short ranges (a Toeplitz band) keep one row per lane so
  // that the lanes stay busy. Loads are unconditional (rows past the end
  // re-read the last row with weight 0) so that none waits on a branch.
  template <int Rows, class Load, class Weight>
  KOKKOS_INLINE_FUNCTION GroupSums<Accumulator> group_sums_by(const Member& member, int length,
                                                              const Load& load,
                                                              const Weight& weight) const {
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
  template <class Load, class Weight>
  KOKKOS_INLINE_FUNCTION GroupSums<Accumulator> group_sums(const Member& member, int length,
                                                           const Load& load,
                                                           const Weight& weight) const {
    if constexpr (!runs_on_host_v<ExecutionSpace>) {
      constexpr int lanes = 32;  // the GPU vector length nnls_columns launches with
      if (length >= 8 * lanes) return group_sums_by<8>(member, length, load, weight);
      if (length >= 4 * lanes) return group_sums_by<4>(member, length, load, weight);
    }
    return group_sums_by<1>(member, length, load, weight);
  }

  // target[i] = base(i) - sum over the passive columns j of entry(i, j) x_j,
  // for i < length: the residual r = b - A x (entry = A) and the gradient
  // from cross products w = A^T b - (A^T A) x (entry = A^T A).
  template <class Base, class Entry>
  KOKKOS_INLINE_FUNCTION void subtract_passive_product(const Member& member, std::int64_t length,
                                                       const Base& base, const Entry& entry,
                                                       const NnlsSystemStorage<T>& s, const T* x,
                                                       int passive_count, T* target) const {
    const std::int64_t x_stride = outputs.x_column_stride;
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
  KOKKOS_INLINE_FUNCTION void compute_residual(const Member& member, std::int64_t system,
                                               const NnlsSystemStorage<T>& s, const T* x,
                                               int passive_count) const {
    const T* b_system = b + system * b_system_stride;
    subtract_passive_product(
        member, parameters.rows,
        [&](std::int64_t i) { return s.b_scale * b_system[i * b_row_stride]; },
        [&](std::int64_t i, int j) { return s.column_scales[j] * columns(system, i, j); }, s, x,
        passive_count, s.residual);
  }

  // The gradient after x changed. From the residual, every column of A is
  // read (m n values); from the cross products (a shared A, Bro & de Jong's
  // "fast NNLS" precomputation), w = A^T b - (A^T A)_P x_P reads one column
  // of A^T A per passive column (n |P| values). The passive columns' w, zero
  // in exact arithmetic, is computed too and never read.
  KOKKOS_INLINE_FUNCTION void update_gradient(const Member& member, std::int64_t system,
                                              const NnlsSystemStorage<T>& s, const T* x,
                                              int passive_count) const {
    if (cross_products == nullptr) {
      compute_residual(member, system, s, x, passive_count);
      compute_gradient(member, system, s);
      return;
    }
    const std::int64_t stride = cross_products_stride;
    subtract_passive_product(
        member, parameters.columns, [&](std::int64_t j) { return s.b_projections[j]; },
        [&](std::int64_t j, int column) { return cross_products[column * stride + j]; }, s, x,
        passive_count, s.gradient);
  }

  // w_j = a_j^T r for every column (the passive ones' too: 0 in exact
  // arithmetic, read only by the KKT check).
  KOKKOS_INLINE_FUNCTION void compute_gradient(const Member& member, std::int64_t system,
                                               const NnlsSystemStorage<T>& s) const {
    const std::int64_t n = parameters.columns;
    if constexpr (runs_on_host_v<ExecutionSpace>) {
      // A CPU team is one thread: a plain dot product per column, four
      // independent partial sums, no reduction machinery per element.
      Kokkos::single(Kokkos::PerTeam(member), [&] {
        for (std::int64_t j = 0; j < n; ++j) {
          const RowRange range = columns.rows_of(system, j);
          Accumulator sum[4] = {0, 0, 0, 0};
          std::int64_t i = range.begin;
          // (The column's scale applied per entry: raw entries near the
          // type's largest would overflow in a_ij r_i.)
          const T scale = s.column_scales[j];
          for (; i + 3 < range.end; i += 4)
            for (int u = 0; u < 4; ++u)
              sum[u] +=
                  Accumulator(scale * columns(system, i + u, j)) * Accumulator(s.residual[i + u]);
          for (; i < range.end; ++i)
            sum[0] += Accumulator(scale * columns(system, i, j)) * Accumulator(s.residual[i]);
          s.gradient[j] = T((sum[0] + sum[1]) + (sum[2] + sum[3]));
        }
      });
      member.team_barrier();
      return;
    }
    const std::int64_t groups = (n + columns_per_group - 1) / columns_per_group;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, groups), [&](std::int64_t group) {
      const std::int64_t first = group * columns_per_group;
      const int count = n - first < columns_per_group ? int(n - first) : columns_per_group;
      // The group's rows: the union of its columns' bands.
      RowRange range = columns.rows_of(system, first);
      for (int c = 1; c < count; ++c) {
        const RowRange other = columns.rows_of(system, first + c);
        if (other.begin < range.begin) range.begin = other.begin;
        if (other.end > range.end) range.end = other.end;
      }
      if (range.end < range.begin) range.end = range.begin;
      // A group's slots past its last column re-read column `first`; their
      // sums are dropped.
      T scales[columns_per_group];
      for (int c = 0; c < columns_per_group; ++c)
        scales[c] = s.column_scales[first + (c < count ? c : 0)];
      const auto sums = group_sums(
          member, int(range.end - range.begin),
          [&](int offset, T* values) {
            for (int c = 0; c < columns_per_group; ++c)
              values[c] =
                  scales[c] * columns(system, range.begin + offset, first + (c < count ? c : 0));
          },
          [&](int offset) { return s.residual[range.begin + offset]; });
      Kokkos::single(Kokkos::PerThread(member), [&] {
        for (int c = 0; c < count; ++c) s.gradient[first + c] = T(sums.value[c]);
      });
    });
    member.team_barrier();
  }

  // ------------------------------------------------ QR update (Algorithm 2)
  // Appends column j at position k: candidate = a_j orthogonalised against
  // q_0..q_{k-1}, R's column k = the projections, R(k, k) = ||candidate||.
  // Returns R(k, k) / ||a_j|| (how independent a_j is of the passive set);
  // the caller accepts the column by increasing k, or leaves k unchanged.
  KOKKOS_INLINE_FUNCTION T append_column(const Member& member, std::int64_t system,
                                         const NnlsSystemStorage<T>& s, int j, int k) const {
    const std::int64_t m = parameters.rows;
    const int ld = parameters.max_passive;
    T* r_column = s.r + std::int64_t(k) * ld;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k + 1),
                         [&](std::int64_t i) { r_column[i] = T(0); });
    // The candidate (a_j, zero outside its band) and its norm in one pass.
    const RowRange range = columns.rows_of(system, j);
    const T column_norm = T(compat::math::sqrt(team_sum(member, m, [&](std::int64_t i) {
      const T value =
          i >= range.begin && i < range.end ? s.column_scales[j] * columns(system, i, j) : T(0);
      s.candidate[i] = value;
      return value * value;
    })));
    member.team_barrier();

    if (parameters.modified_gram_schmidt) {
      // Modified Gram-Schmidt: project out q_0, q_1, ... one after another,
      // each from the already reduced candidate (one team reduction each).
      for (int p = 0; p < k; ++p) {
        const T* q = s.q + std::int64_t(p) * m;
        const T projection =
            T(team_sum(member, m, [&](std::int64_t i) { return q[i] * s.candidate[i]; }));
        Kokkos::parallel_for(Kokkos::TeamVectorRange(member, m),
                             [&](std::int64_t i) { s.candidate[i] -= projection * q[i]; });
        Kokkos::single(Kokkos::PerTeam(member), [&] { r_column[p] += projection; });
        member.team_barrier();
      }
    } else {
      // Classical Gram-Schmidt twice ("twice is enough", Giraud et al. 2005):
      // all k projections at once (one thread per q), then one row-parallel
      // subtraction; as accurate as modified Gram-Schmidt with 4 barriers
      // instead of 2k.
      for (int pass = 0; pass < 2 && k > 0; ++pass) {
        T* projections = s.right_hand_side;  // free until the next solve
        const int groups = (k + columns_per_group - 1) / columns_per_group;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, groups), [&](int group) {
          const int first = group * columns_per_group;
          const int count = k - first < columns_per_group ? k - first : columns_per_group;
          const T* q = s.q + std::int64_t(first) * m;
          const auto sums = group_sums(
              member, int(m),
              [&](int i, T* values) {
                for (int c = 0; c < columns_per_group; ++c)
                  values[c] = q[(c < count ? c : 0) * m + i];
              },
              [&](int i) { return s.candidate[i]; });
          Kokkos::single(Kokkos::PerThread(member), [&] {
            for (int c = 0; c < count; ++c) {
              projections[first + c] = T(sums.value[c]);
              r_column[first + c] += T(sums.value[c]);
            }
          });
        });
        member.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamVectorRange(member, m), [&](std::int64_t i) {
          Accumulator value[4] = {Accumulator(s.candidate[i]), 0, 0, 0};
          int p = 0;
          for (; p + 15 < k; p += 16) {
            T loaded[16];  // all sixteen loads in flight before the first use
            for (int u = 0; u < 16; ++u) loaded[u] = s.q[std::int64_t(p + u) * m + i];
            for (int u = 0; u < 16; ++u)
              value[u % 4] -= Accumulator(loaded[u]) * projections[p + u];
          }
          for (; p < k; ++p) value[0] -= Accumulator(s.q[std::int64_t(p) * m + i]) * projections[p];
          s.candidate[i] = T((value[0] + value[1]) + (value[2] + value[3]));
        });
        member.team_barrier();
      }
    }
    // R(k, k) = ||candidate|| and u_k = q_k^T b = candidate^T b / R(k, k):
    // one reduction of two sums.
    const T* b_system = b + system * b_system_stride;
    const auto sums = team_combine(member, m, GroupSumsOp<Accumulator>{}, [&](std::int64_t i) {
      const Accumulator value = s.candidate[i];
      return GroupSums<Accumulator>{
          {value * value, value * Accumulator(s.b_scale * b_system[i * b_row_stride]), 0, 0}};
    });
    const T diagonal = T(compat::math::sqrt(sums.value[0]));
    const T independence = column_norm > T(0) ? diagonal / column_norm : T(0);
    if (!(independence > parameters.dependence_threshold)) return independence;
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

  // ------------------------------------------ QR downdate (§3.4, Givens)
  // Removes the column at position p of P-hat from the k passive columns:
  // R's columns right of p shift left, leaving a Hessenberg band that
  // rotations of rows (j, j+1), j = p..k-2, zero again. Each rotation is
  // computed once, by the thread that owns column j when its diagonal
  // becomes final, and shared through team scratch (§3.4). Threads own
  // R's columns: applying rotation j makes row j final and leaves row j+1
  // (the next rotation's top row) in team scratch, so a rotation step reads
  // R from memory once and costs one team barrier. u and Q's columns
  // p..k-1 are rotated afterwards in one pass each: every row of Q is an
  // independent chain through all the rotations, with its loads issued
  // ahead, instead of a team-wide step per rotation.
  KOKKOS_INLINE_FUNCTION void remove_column(const Member& member, const NnlsSystemStorage<T>& s,
                                            int p, int k) const {
    const std::int64_t m = parameters.rows;
    const int ld = parameters.max_passive;
    // Free until the next passive solve: the rotations and R's running row.
    T* cosines = s.right_hand_side;
    T* sines = s.solution;
    T* top_row = s.candidate;  // top_row[c]: R(j, c) after rotations p..j-1
    // Each thread owns rows of R, so shifting left in place has no race.
    // Sixteen loads are issued before their stores: one by one, each store
    // may overwrite the next load's source as far as the compiler knows, and
    // the shift ran at one L2 round trip per column.
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
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      s.position[s.passive[p]] = not_passive;
      for (int q = p; q < k - 1; ++q) {
        s.passive[q] = s.passive[q + 1];
        s.position[s.passive[q]] = q;
      }
    });
    member.team_barrier();
    if (p == k - 1) return;  // the last column: nothing to rotate
    // Rotation j is computed by the thread that has just brought column j's
    // diagonal up to date (no separate step, one barrier per rotation).
    const auto rotate_rows = [&](int j, T a, T b) {
      const T scale = compat::math::fabs(a) + compat::math::fabs(b);
      T cosine = T(1), sine = T(0), radius = a;
      if (scale > T(0)) {
        // Scaled against overflow; two divisions instead of four.
        const T inverse_scale = T(1) / scale;
        const T a_scaled = a * inverse_scale, b_scaled = b * inverse_scale;
        const T hypotenuse = compat::math::sqrt(a_scaled * a_scaled + b_scaled * b_scaled);
        const T inverse_hypotenuse = T(1) / hypotenuse;
        radius = scale * hypotenuse;
        cosine = a_scaled * inverse_hypotenuse;
        sine = b_scaled * inverse_hypotenuse;
      }
      cosines[j] = cosine;
      sines[j] = sine;
      s.r[std::int64_t(j) * ld + j] = radius;
      s.r[std::int64_t(j) * ld + j + 1] = T(0);
    };
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k - 1 - p), [&](int offset) {
      const T* r_column = s.r + std::int64_t(p + offset) * ld;
      if (offset == 0)
        rotate_rows(p, r_column[p], r_column[p + 1]);
      else
        top_row[p + offset] = r_column[p];
    });
    member.team_barrier();
    for (int j = p; j + 1 < k - 1; ++j) {
      const T cosine = cosines[j], sine = sines[j];
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k - 2 - j), [&](int offset) {
        const int column = j + 1 + offset;
        T* r_column = s.r + std::int64_t(column) * ld;
        const T top = top_row[column], bottom = r_column[j + 1];
        r_column[j] = cosine * top + sine * bottom;
        const T next_top = -sine * top + cosine * bottom;
        if (offset == 0)
          rotate_rows(j + 1, next_top, r_column[j + 2]);
        else
          top_row[column] = next_top;
      });
      member.team_barrier();
    }
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      T top = s.q_transpose_b[p];
      for (int j = p; j < k - 1; ++j) {
        const T bottom = s.q_transpose_b[j + 1];
        s.q_transpose_b[j] = cosines[j] * top + sines[j] * bottom;
        top = -sines[j] * top + cosines[j] * bottom;
      }
      s.q_transpose_b[k - 1] = top;
    });
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

  // z = R^{-1} u by blocked back substitution, 32 columns at a time from the
  // bottom: the block's triangle is solved from a copy in team scratch by
  // one warp on CUDA, one thread elsewhere (no team barrier per column: a
  // barrier and an L2 round trip per column cost ~24 ms of a 70 ms gauss512
  // solve on the H100), then every thread subtracts the block's columns
  // from the rows above it.
  KOKKOS_INLINE_FUNCTION void solve_passive(const Member& member, const NnlsSystemStorage<T>& s,
                                            int k) const {
    const int ld = parameters.max_passive;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k),
                         [&](int i) { s.right_hand_side[i] = s.q_transpose_b[i]; });
    member.team_barrier();
    for (int block_end = k; block_end > 0; block_end -= back_substitution_block) {
      const int begin =
          block_end > back_substitution_block ? block_end - back_substitution_block : 0;
      const int size = block_end - begin;
      const T* r_block = s.r + std::int64_t(begin) * ld + begin;
      const T* triangle = r_block;
      int triangle_ld = ld;
      if (s.triangle != nullptr) {
        Kokkos::parallel_for(Kokkos::TeamVectorRange(member, size * size), [&](int index) {
          const int column = index / size, row = index - column * size;
          if (row <= column)
            s.triangle[column * back_substitution_block + row] =
                r_block[std::int64_t(column) * ld + row];
        });
        member.team_barrier();
        triangle = s.triangle;
        triangle_ld = back_substitution_block;
      }
      if constexpr (vector_lanes_are_warp_v<ExecutionSpace>) {
        // One warp, lane r holding row r's right-hand side: per column one
        // multiply by the lane's precomputed reciprocal diagonal, one
        // shared-memory broadcast, one fused multiply-add per lane (a single
        // thread needs i operations for column i).
        if (member.team_rank() == 0) {
          Kokkos::parallel_for(
              Kokkos::ThreadVectorRange(member, back_substitution_block), [&](int lane) {
                const bool in_block = lane < size;
                T remaining = in_block ? s.right_hand_side[begin + lane] : T(0);
                const T reciprocal = in_block ? T(1) / triangle[lane * triangle_ld + lane] : T(0);
                for (int i = size - 1; i >= 0; --i) {
                  if (lane == i) s.solution[begin + i] = remaining * reciprocal;
                  synchronize_vector_lanes();
                  const T z = s.solution[begin + i];
                  if (lane < i) remaining -= triangle[i * triangle_ld + lane] * z;
                }
              });
        }
      } else {
        Kokkos::single(Kokkos::PerTeam(member), [&] {
          for (int i = size - 1; i >= 0; --i) {
            const T* column = triangle + i * triangle_ld;
            const T z = s.right_hand_side[begin + i] / column[i];
            s.solution[begin + i] = z;
            for (int row = 0; row < i; ++row) s.right_hand_side[begin + row] -= column[row] * z;
          }
        });
      }
      member.team_barrier();
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
  }

  // ------------------------------------------------- the system's scale
  // Per system, each column of A and b are multiplied by the powers of two
  // that bring their largest magnitudes into [1, 2) (impl/power_of_two.hpp,
  // column equilibration): exact, so the solve takes the same steps whatever
  // units A, its columns and b came in, and nothing over- or underflows on
  // the way. NNLS is invariant under positive column scaling (x_j >= 0 holds
  // for x_j as for 2^e x_j), so x_j = 2^(b_exponent - e_j) x'_j. Gradients
  // are judged per unit column norm, w_j / ||a_j||.
  struct SystemScale {
    int b_exponent = 0;  // b_scale = 2^-b_exponent
    T b_norm = 0;        // ||b_scale b||_2
    bool finite = true;  // no NaN or Inf in A or b
  };

  // |value|, with NaN and Inf counted as infinite.
  KOKKOS_INLINE_FUNCTION static T magnitude(T value) {
    return compat::math::isfinite(value) ? compat::math::fabs(value) : largest<T>();
  }

  // Sets s.column_scales, s.column_exponents, s.inverse_norms and s.b_scale.
  KOKKOS_INLINE_FUNCTION SystemScale measure_system(const Member& member, std::int64_t system,
                                                    NnlsSystemStorage<T>& s) const {
    const T* b_system = b + system * b_system_stride;
    SystemScale scale;
    // Per column: its largest |a_ij|, its scale, and its norm after scaling.
    const Max<T> max_op;
    T a_max = max_op.identity();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, parameters.columns),
        [&](std::int64_t j, T& largest_so_far) {
          const RowRange range = columns.rows_of(system, j);
          const int length = range.end > range.begin ? int(range.end - range.begin) : 0;
          const T column_max = vector_reduce(member, length, Max<T>{}, [&](int offset) {
            return magnitude(columns(system, range.begin + offset, j));
          });
          const int exponent = unit_scale_exponent(column_max > T(0) ? column_max : T(0));
          const T column_scale = power_of_two<T>(-exponent);
          Accumulator sum = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(member, length),
              [&](int offset, Accumulator& partial) {
                const Accumulator value = column_scale * columns(system, range.begin + offset, j);
                partial += value * value;
              },
              sum);
          Kokkos::single(Kokkos::PerThread(member), [&] {
            s.column_exponents[j] = exponent;
            s.column_scales[j] = column_scale;
            s.inverse_norms[j] = sum > 0 ? T(1 / compat::math::sqrt(sum)) : T(0);
          });
          max_op.combine(largest_so_far, column_max);
        },
        impl::OpReducer<Max<T>>(max_op, a_max));
    const T b_max = team_combine(member, parameters.rows, Max<T>{}, [&](std::int64_t i) {
      return magnitude(b_system[i * b_row_stride]);
    });
    // (Without rows or columns a team's Max is its identity, -infinity.)
    scale.finite = a_max < largest<T>() && b_max < largest<T>();
    if (!scale.finite) return scale;
    scale.b_exponent = unit_scale_exponent(b_max > T(0) ? b_max : T(0));
    s.b_scale = power_of_two<T>(-scale.b_exponent);
    scale.b_norm = T(compat::math::sqrt(team_sum(member, parameters.rows, [&](std::int64_t i) {
      const Accumulator value = s.b_scale * b_system[i * b_row_stride];
      return value * value;
    })));
    return scale;
  }

  // --------------------------------------- the active-set method (Alg. 1)
  // Where one system's solve stands.
  struct Progress {
    int status = static_cast<int>(NnlsStatus::converged);
    int iterations = 0;  // passive least-squares solves
    int passive = 0;     // k, the size of P-hat
    int updates = 0;     // columns that entered (QR updates)
    int downdates = 0;   // columns that left (Givens downdates)
    KOKKOS_INLINE_FUNCTION void stopped(NnlsStatus why) { status = static_cast<int>(why); }
  };

  KOKKOS_INLINE_FUNCTION static T& x_at(T* x, std::int64_t j, std::int64_t stride) {
    return x[j * stride];
  }

  // Marks column j as not to be taken until the passive set next grows.
  KOKKOS_INLINE_FUNCTION void reject(const Member& member, const NnlsSystemStorage<T>& s,
                                     int j) const {
    Kokkos::single(Kokkos::PerTeam(member), [&] { s.position[j] = rejected; });
    member.team_barrier();
  }

  // Step 1: the zero-set column with the largest gradient per unit norm,
  // w_j / ||a_j|| (index -1: none).
  KOKKOS_INLINE_FUNCTION ValueIndex<T> choose_entering(const Member& member,
                                                       const NnlsSystemStorage<T>& s) const {
    return team_combine(member, parameters.columns, ArgMax<T>{}, [&](std::int64_t j) {
      return ValueIndex<T>{s.gradient[j] * s.inverse_norms[j],
                           s.position[j] == not_passive ? j : -1};
    });
  }

  // Why no column enters: KKT hold, unless a violating column was rejected
  // as dependent on the passive set or the gradient is not finite.
  KOKKOS_INLINE_FUNCTION NnlsStatus status_without_entering(const Member& member,
                                                            const NnlsSystemStorage<T>& s,
                                                            const ValueIndex<T>& candidate,
                                                            T tolerance) const {
    if (candidate.index >= 0 && !compat::math::isfinite(candidate.value))
      return NnlsStatus::numerical_issue;
    const Accumulator rejected_violators =
        team_sum(member, parameters.columns, [&](std::int64_t j) {
          return s.position[j] == rejected && s.gradient[j] * s.inverse_norms[j] > tolerance ? 1
                                                                                             : 0;
        });
    return rejected_violators > 0 ? NnlsStatus::dependent_columns : NnlsStatus::converged;
  }

  // Steps 2-3 after column `entering` joined P-hat: passive solves and steps
  // back towards x until the passive solution is positive. Returns false if
  // the entering column had to be taken back out (x unchanged).
  KOKKOS_INLINE_FUNCTION bool solve_until_feasible(const Member& member,
                                                   const NnlsSystemStorage<T>& s, T* x,
                                                   int entering, Progress& progress) const {
    for (bool first = true;; first = false) {
      ++progress.iterations;
      const int k = progress.passive;
      solve_passive(member, s, k);
      if (!all_finite(member, k, s.solution)) {
        progress.stopped(NnlsStatus::numerical_issue);  // R broke down: x is the last iterate
        return true;
      }
      if (first && s.passive[k - 1] == entering && !(s.solution[k - 1] > T(0))) {
        // Lawson–Hanson: the entering column would get a non-positive value
        // (rounding): take it back out and try the next best.
        reject(member, s, entering);
        --progress.passive;
        ++progress.downdates;
        return false;
      }
      if (step_towards_solution(member, s, x, progress)) {
        // x = z: a column entered for good, so earlier rejections may no
        // longer hold.
        Kokkos::parallel_for(Kokkos::TeamVectorRange(member, parameters.columns),
                             [&](std::int64_t j) {
                               if (s.position[j] == rejected) s.position[j] = not_passive;
                             });
        member.team_barrier();
        return true;
      }
      if (progress.iterations >= parameters.max_iterations) {
        progress.stopped(NnlsStatus::max_iterations);
        return true;
      }
      if (progress.passive == 0) return true;
    }
  }

  KOKKOS_INLINE_FUNCTION bool all_finite(const Member& member, int count, const T* values) const {
    return team_sum(member, count,
                    [&](std::int64_t p) { return compat::math::isfinite(values[p]) ? 0 : 1; }) == 0;
  }

  // Step 3: x moves to the passive solution z if z > 0 (returns true);
  // otherwise to the first point on the way where a passive x_p reaches 0,
  // alpha = min over z_p <= 0 of x_p / (x_p - z_p), and every column at or
  // below zero leaves P-hat (Givens downdates, §3.4).
  KOKKOS_INLINE_FUNCTION bool step_towards_solution(const Member& member,
                                                    const NnlsSystemStorage<T>& s, T* x,
                                                    Progress& progress) const {
    const std::int64_t stride = outputs.x_column_stride;
    const int k = progress.passive;
    const auto limit = team_combine(member, k, ArgMin<T>{}, [&](std::int64_t p) {
      const T z = s.solution[p];
      const T current = x_at(x, s.passive[p], stride);
      return z > T(0) ? ValueIndex<T>{T(0), -1} : ValueIndex<T>{current / (current - z), p};
    });
    if (limit.index < 0) {
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k),
                           [&](int p) { x_at(x, s.passive[p], stride) = s.solution[p]; });
      member.team_barrier();
      return true;
    }
    const T alpha = limit.value;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k), [&](int p) {
      T& value = x_at(x, s.passive[p], stride);
      value = p == limit.index ? T(0) : value + alpha * (s.solution[p] - value);
    });
    member.team_barrier();
    remove_nonpositive_columns(member, s, x, progress);
    return false;
  }

  // Columns at or below zero leave, rightmost first so the positions still
  // to be visited do not shift. Each is found by a team reduction: a scan by
  // every thread, position by position, waited on two dependent loads per
  // position.
  KOKKOS_INLINE_FUNCTION void remove_nonpositive_columns(const Member& member,
                                                         const NnlsSystemStorage<T>& s, T* x,
                                                         Progress& progress) const {
    const std::int64_t stride = outputs.x_column_stride;
    for (int bound = progress.passive; bound > 0;) {
      const auto leaving = team_combine(member, bound, ArgMax<T>{}, [&](std::int64_t p) {
        return x_at(x, s.passive[p], stride) <= T(0) ? ValueIndex<T>{T(p), p}
                                                     : ValueIndex<T>{T(0), -1};
      });
      if (leaving.index < 0) break;
      const int p = static_cast<int>(leaving.index);
      Kokkos::single(Kokkos::PerTeam(member), [&] { x_at(x, s.passive[p], stride) = T(0); });
      remove_column(member, s, p, progress.passive);
      --progress.passive;
      ++progress.downdates;
      bound = p;
    }
    member.team_barrier();
  }

  // Algorithm 1 from x = 0 until KKT hold or a cap or failure stops it.
  KOKKOS_INLINE_FUNCTION void solve_active_set(const Member& member, std::int64_t system,
                                               const NnlsSystemStorage<T>& s, T* x, T tolerance,
                                               Progress& progress) const {
    // x = 0: r = b and w = A^T b.
    compute_residual(member, system, s, x, 0);
    compute_gradient(member, system, s);
    if (cross_products != nullptr) {
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, parameters.columns),
                           [&](std::int64_t j) { s.b_projections[j] = s.gradient[j]; });
      member.team_barrier();
    }
    while (true) {
      const auto candidate = choose_entering(member, s);
      if (candidate.index < 0 || !(candidate.value > tolerance)) {
        progress.stopped(status_without_entering(member, s, candidate, tolerance));
        return;
      }
      if (progress.iterations >= parameters.max_iterations) {
        progress.stopped(NnlsStatus::max_iterations);
        return;
      }
      const int entering = static_cast<int>(candidate.index);
      const int k = progress.passive;
      if (k >= parameters.max_passive && parameters.passive_capped_by_caller) {
        progress.stopped(NnlsStatus::passive_set_full);
        return;
      }
      // Reordered-MGS append (Algorithm 2); with k = min(m, n) columns every
      // further column is dependent.
      const T independence =
          k >= parameters.max_passive ? T(0) : append_column(member, system, s, entering, k);
      if (!(independence > parameters.dependence_threshold)) {
        reject(member, s, entering);  // numerically in the span of P-hat: the next best
        continue;
      }
      ++progress.passive;
      ++progress.updates;
      const bool moved = solve_until_feasible(member, s, x, entering, progress);
      if (progress.status != static_cast<int>(NnlsStatus::converged)) return;
      if (moved) update_gradient(member, system, s, x, progress.passive);
    }
  }

  // ------------------------------------------- the KKT check after the solve
  // With w = A^T (b - A x): x >= 0, w_j <= 0 where x_j = 0 and w_j = 0 where
  // x_j > 0. Returns the largest violation of column j over ||a_j|| ||b||
  // (the largest |w_j| can be); s.residual must hold b - A x.
  KOKKOS_INLINE_FUNCTION T kkt_residual(const Member& member, std::int64_t system,
                                        const NnlsSystemStorage<T>& s, const T* x,
                                        const SystemScale& scale) const {
    compute_gradient(member, system, s);
    const std::int64_t stride = outputs.x_column_stride;
    const T violation = team_combine(member, parameters.columns, Max<T>{}, [&](std::int64_t j) {
      const T value = x[j * stride], w = s.gradient[j] * s.inverse_norms[j];
      const T gradient_violation = value > T(0) ? compat::math::fabs(w) : (w > T(0) ? w : T(0));
      return value < T(0) ? largest<T>() : magnitude(gradient_violation);
    });
    if (!(violation > T(0))) return T(0);
    return scale.b_norm > T(0) ? violation / scale.b_norm : largest<T>();
  }

  // Residual, KKT check, x and ||b - A x|| in the caller's units, outputs.
  KOKKOS_INLINE_FUNCTION void finish(const Member& member, std::int64_t system,
                                     const NnlsSystemStorage<T>& s, T* x, const SystemScale& scale,
                                     Progress& progress) const {
    const std::int64_t n = parameters.columns, stride = outputs.x_column_stride;
    compute_residual(member, system, s, x, progress.passive);
    const T residual_norm = T(compat::math::sqrt(team_sum(
        member, parameters.rows, [&](std::int64_t i) { return s.residual[i] * s.residual[i]; })));
    T kkt = parameters.not_a_number;
    if (scale.finite && parameters.check_kkt) kkt = kkt_residual(member, system, s, x, scale);
    if (progress.status == static_cast<int>(NnlsStatus::converged) &&
        !(kkt <= parameters.kkt_tolerance))
      progress.status = static_cast<int>(NnlsStatus::kkt_not_met);
    // x_j = 2^(b_exponent - e_j) x'_j, ||b - A x|| = 2^b_exponent ||r'||. An
    // x_j past the precision's range (A's entries denormal, b's huge) is no
    // solution: numerical_issue.
    const bool x_finite =
        team_sum(member, n, [&](std::int64_t j) {
          T& value = x_at(x, j, stride);
          if (scale.finite)
            value = scale_by_power_of_two(value, scale.b_exponent - s.column_exponents[j]);
          return compat::math::isfinite(value) ? 0 : 1;
        }) == 0;
    if (!x_finite) progress.status = static_cast<int>(NnlsStatus::numerical_issue);
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      outputs.residual_norm[system] = scale.finite
                                          ? scale_by_power_of_two(residual_norm, scale.b_exponent)
                                          : parameters.not_a_number;
      outputs.kkt_residual[system] = kkt;
      outputs.iterations[system] = progress.iterations;
      outputs.status[system] = progress.status;
      outputs.column_changes[2 * system] = progress.updates;
      outputs.column_changes[2 * system + 1] = progress.downdates;
    });
    member.team_barrier();
  }

  // ------------------------------------------------------------ the solve
  KOKKOS_INLINE_FUNCTION NnlsSystemStorage<T> system_storage(const Member& member,
                                                             std::int64_t system) const {
    const std::int64_t m = parameters.rows, n = parameters.columns;
    NnlsSystemStorage<T> s = workspace.system(system, m, n, parameters.max_passive);
    if (parameters.vectors_in_scratch) {
      // The vectors every step reads back right after another thread wrote
      // them live in team scratch (shared memory on GPUs): a back
      // substitution step then waits for shared memory, not for L2.
      using Scratch = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      const int kmax = parameters.max_passive;
      s.residual = Scratch(member.team_scratch(0), m).data();
      s.candidate = Scratch(member.team_scratch(0), m).data();
      s.right_hand_side = Scratch(member.team_scratch(0), kmax).data();
      s.solution = Scratch(member.team_scratch(0), kmax).data();
      s.triangle =
          Scratch(member.team_scratch(0), back_substitution_block * back_substitution_block).data();
      if (parameters.gradient_in_scratch) s.gradient = Scratch(member.team_scratch(0), n).data();
    }
    return s;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t system = member.league_rank();
    NnlsSystemStorage<T> s = system_storage(member, system);
    T* x = outputs.x + system * outputs.x_system_stride;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, parameters.columns), [&](std::int64_t j) {
      x_at(x, j, outputs.x_column_stride) = T(0);
      s.position[j] = not_passive;
    });
    member.team_barrier();
    const SystemScale scale = measure_system(member, system, s);
    Progress progress;
    if (!scale.finite) {
      progress.stopped(NnlsStatus::numerical_issue);  // x = 0
    } else {
      const T tolerance = parameters.tolerance * scale.b_norm;  // for w_j / ||a_j||
      solve_active_set(member, system, s, x, tolerance, progress);
    }
    finish(member, system, s, x, scale, progress);
  }
};

}  // namespace impl
}  // namespace kpl
