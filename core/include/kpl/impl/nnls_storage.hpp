// What one team of the batched NNLS solver works on (Luo & Duraiswami 2011,
// §5.3): the per-system workspace (Q, R, u = Q^T b and vectors), the
// parameters every system shares, where the results go, and NnlsBatch, the
// data every step of the team solve reads.
//
// Storage per system: Q is m x max_passive, one column per passive column in
// the order the columns entered (the reordered list P-hat of Algorithm 2: a
// new column is appended at the right, so no existing column is
// re-orthogonalised); R is max_passive x max_passive, upper triangular in the
// same order; u = Q^T b. Only passive-list entries and R's columns to the
// right of a leaving column shift (O(k^2) words); Q's columns never move: the
// Givens rotations that restore R's triangle rewrite them in place.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/nnls_options.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace kpl {
namespace impl {

// CPU loops over a system's rows (or columns) in blocks of this many: a
// block's running values fit a local array (and L1) while the loop over
// columns goes by, and the innermost loop runs along contiguous memory.
// f(begin, count) for each block [begin, begin + count) of [0, length), the
// blocks dealt to the team's threads; no barrier.
inline constexpr int cpu_row_block = 64;
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void for_each_cpu_row_block(const Member& member, std::int64_t length,
                                                   const F& f) {
  const std::int64_t blocks = (length + cpu_row_block - 1) / cpu_row_block;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, blocks), [&](std::int64_t block) {
    const std::int64_t begin = block * cpu_row_block;
    f(begin, static_cast<int>(length - begin < cpu_row_block ? length - begin : cpu_row_block));
  });
}

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
  bool gradient_by_column_lanes;  // GPUs, short column bands: one lane per column's w_j
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

// Allocation without the zero fill: every entry is written before it is read.
inline auto nnls_uninitialized(const char* label) {
  return Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label));
}

// The workspace of `systems` systems in values and indices, grown if needed.
template <class T, class ValuesView, class IndicesView>
NnlsWorkspacePointers<T> reserve_nnls_workspace(ValuesView& values, IndicesView& indices,
                                                std::int64_t systems, std::int64_t rows,
                                                std::int64_t columns, std::int64_t max_passive) {
  using Pointers = NnlsWorkspacePointers<T>;
  const std::int64_t per_system_values = Pointers::values_needed(rows, columns, max_passive);
  const std::int64_t per_system_indices = Pointers::indices_needed(columns, max_passive);
  if (values.extent(0) < std::size_t(systems * per_system_values))
    values = ValuesView(nnls_uninitialized("kpl::nnls::workspace_values"),
                        systems * per_system_values);
  if (indices.extent(0) < std::size_t(systems * per_system_indices))
    indices = IndicesView(nnls_uninitialized("kpl::nnls::workspace_indices"),
                          systems * per_system_indices);
  return {values.data(), indices.data(), per_system_values, per_system_indices};
}

inline constexpr int not_passive = -1;
inline constexpr int rejected = -2;  // excluded until the passive set next grows

// Column sources (kpl/nnls.hpp) may say how many rows any column's band
// spans at most (std::int64_t max_band_rows() const, callable on the host).
template <class Columns, class = void>
struct declares_band_rows : std::false_type {};
template <class Columns>
struct declares_band_rows<Columns,
                          std::void_t<decltype(std::declval<const Columns&>().max_band_rows())>>
    : std::true_type {};

// Bands this short take one vector lane per column in the GPU gradient
// (impl/nnls_gradient.hpp): a lane's serial dot product over the band costs
// fewer instructions than a group's loads plus its 32-lane reduction.
inline constexpr std::int64_t short_band_rows = 64;

template <class Columns>
bool has_short_bands(const Columns& columns) {
  if constexpr (declares_band_rows<Columns>::value) {
    return columns.max_band_rows() <= short_band_rows;
  } else {
    (void)columns;
    return false;
  }
}

// The data of one batch that every step of a team's solve reads. Columns is
// a column source (kpl/nnls.hpp):
//   T operator()(system, row, column) const;  RowRange rows_of(system, column) const;
template <class T, class Columns, class ExecutionSpace>
struct NnlsBatch {
  using value_type = T;
  using execution_space = ExecutionSpace;
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
  // Formed from A D, the columns scaled as the system's scale scales them.
  const T* cross_products = nullptr;
  std::int64_t cross_products_stride = 0;

  // b_i of `system` in the solver's units (s.b_scale b_i).
  KOKKOS_INLINE_FUNCTION T scaled_b(const NnlsSystemStorage<T>& s, std::int64_t system,
                                    std::int64_t i) const {
    return s.b_scale * b[system * b_system_stride + i * b_row_stride];
  }
  // a_ij of `system` in the solver's units (column j times its scale).
  KOKKOS_INLINE_FUNCTION T scaled_a(const NnlsSystemStorage<T>& s, std::int64_t system,
                                    std::int64_t i, std::int64_t j) const {
    return s.column_scales[j] * columns(system, i, j);
  }
  KOKKOS_INLINE_FUNCTION T& x_at(T* x, std::int64_t j) const {
    return x[j * outputs.x_column_stride];
  }
};

}  // namespace impl
}  // namespace kpl
