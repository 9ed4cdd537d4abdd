// Batched non-negative least squares: for every system s,
//   minimise ||A_s x_s - b_s||_2 subject to x_s >= 0,
// by the Lawson–Hanson active-set method with the passive least-squares
// problem kept as a QR factorisation, updated by reordered Gram-Schmidt when
// a column enters and downdated by Givens rotations when one leaves (Luo &
// Duraiswami 2011, Algorithms 1-2, §3.4, §5; impl/nnls_team_solve.hpp). One
// Kokkos team solves one system (a thread block on GPUs, by default one
// thread on CPUs):
//
//   kpl::NnlsSolution<Kokkos::DefaultExecutionSpace, double> solution(systems, n);
//   kpl::nnls(space, A, b, solution);               // A [m, n] shared, or [systems, m, n]
//   // solution.x [systems, n], residual_norm, iterations, status (NnlsStatus)
//
// nnls_columns takes A as a column source, a copyable object with
//   KOKKOS_FUNCTION T operator()(int64_t system, int64_t row, int64_t column) const;
//   KOKKOS_FUNCTION kpl::RowRange rows_of(int64_t system, int64_t column) const;
// (rows_of bounds a column's non-zeros: banded matrices cost proportionally less)
// and optionally, callable on the host,
//   std::int64_t max_band_rows() const;  // no rows_of range is longer
// (bands of at most impl::short_band_rows rows then take one GPU lane per
// column where the gradient A^T r is formed).
//
// Units do not matter (columns and b are scaled exactly by powers of two);
// every tolerance is relative to G_j = ||a_j|| ||b||, the largest |w_j| can
// be (w = A^T (b - A x)): the zero-set column with the largest w_j / G_j
// enters while that is above `tolerance`; one whose new R diagonal is below
// dependence_threshold x its norm is dependent on the passive set and the
// next best enters; max_iterations counts passive solves. After the solve
// the KKT conditions are checked on the device: kkt_residual = the largest
// of w_j / G_j (x_j = 0) and |w_j| / G_j (x_j > 0); `converged` means
// kkt_residual <= kkt_tolerance, every other status (NnlsStatus) says why
// not, with x the last feasible iterate. Defaults: kpl/nnls_options.hpp.
// One system inside a user's own TeamPolicy kernel: kpl::team::nnls
// (kpl/team.hpp), the same team solve.
#pragma once

#include <kpl/impl/nnls_kkt_certificate.hpp>
#include <kpl/impl/nnls_launch.hpp>
#include <kpl/nnls_options.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace kpl {

// Per-system results, in the execution space's memory.
template <class ExecutionSpace, class T>
struct NnlsSolution {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<T**, Kokkos::LayoutRight, memory_space> x;  // [systems, n]
  Kokkos::View<T*, memory_space> residual_norm;            // ||A x - b||
  Kokkos::View<T*, memory_space> kkt_residual;             // see the header comment
  Kokkos::View<int*, memory_space> iterations;             // passive solves
  Kokkos::View<int*, memory_space> status;                 // NnlsStatus values
  // Per system: columns that entered (QR updates) and left (Givens downdates).
  Kokkos::View<int* [2], Kokkos::LayoutRight, memory_space> column_changes;

  NnlsSolution() = default;
  NnlsSolution(std::int64_t systems, std::int64_t columns)
      : x(impl::nnls_uninitialized("kpl::nnls::x"), systems, columns),
        residual_norm(impl::nnls_uninitialized("kpl::nnls::residual_norm"), systems),
        kkt_residual(impl::nnls_uninitialized("kpl::nnls::kkt_residual"), systems),
        iterations(impl::nnls_uninitialized("kpl::nnls::iterations"), systems),
        status(impl::nnls_uninitialized("kpl::nnls::status"), systems),
        column_changes(impl::nnls_uninitialized("kpl::nnls::column_changes"), systems) {}
  std::int64_t systems() const { return static_cast<std::int64_t>(x.extent(0)); }
};

// Device memory the solver's workspace needs per system (Q, R and vectors).
template <class T>
std::int64_t nnls_workspace_bytes_per_system(std::int64_t rows, std::int64_t columns,
                                             std::int64_t max_passive) {
  using Pointers = impl::NnlsWorkspacePointers<T>;
  return Pointers::values_needed(rows, columns, max_passive) * std::int64_t(sizeof(T)) +
         Pointers::indices_needed(columns, max_passive) * std::int64_t(sizeof(int));
}

// The solver's workspace; reuse one across calls (it grows, never shrinks).
template <class ExecutionSpace, class T>
class NnlsWorkspace {
 public:
  using memory_space = typename ExecutionSpace::memory_space;
  impl::NnlsWorkspacePointers<T> reserve(std::int64_t systems, std::int64_t rows,
                                         std::int64_t columns, std::int64_t max_passive) {
    return impl::reserve_nnls_workspace<T>(values_, indices_, systems, rows, columns, max_passive);
  }

 private:
  Kokkos::View<T*, memory_space> values_;
  Kokkos::View<int*, memory_space> indices_;
};

// A dense A, shared by all systems (system_stride 0) or one per system.
template <class T>
struct DenseColumns {
  const T* data;
  std::int64_t system_stride, row_stride, column_stride;
  std::int64_t rows;
  KOKKOS_INLINE_FUNCTION T operator()(std::int64_t system, std::int64_t row,
                                      std::int64_t column) const {
    return data[system * system_stride + row * row_stride + column * column_stride];
  }
  KOKKOS_INLINE_FUNCTION RowRange rows_of(std::int64_t, std::int64_t) const { return {0, rows}; }
};

// Solves every system with the columns of A from a column source. b is
// [systems, rows] (any layout); solution must have extents [systems, columns].
template <class ExecutionSpace, class Columns, class BView>
void nnls_columns(
    const ExecutionSpace& space, const Columns& columns, std::int64_t rows,
    std::int64_t column_count, const BView& b,
    NnlsSolution<ExecutionSpace, typename BView::non_const_value_type>& solution,
    const NnlsOptions& options = {},
    NnlsWorkspace<ExecutionSpace, typename BView::non_const_value_type>* workspace = nullptr) {
  if (options.gradient == NnlsGradient::from_cross_products)
    throw std::invalid_argument(
        "kpl::nnls_columns: the gradient from cross products needs a shared dense A (kpl::nnls)");
  impl::solve_nnls(space, columns, rows, column_count, b, solution, options, workspace, nullptr, 0);
}

// A is [rows, columns] shared by every system, or [systems, rows, columns];
// any layout (LayoutLeft, with columns contiguous, reads fastest on GPUs).
template <class ExecutionSpace, class AView, class BView>
void nnls(
    const ExecutionSpace& space, const AView& A, const BView& b,
    NnlsSolution<ExecutionSpace, typename BView::non_const_value_type>& solution,
    const NnlsOptions& options = {},
    NnlsWorkspace<ExecutionSpace, typename BView::non_const_value_type>* workspace = nullptr) {
  static_assert(std::is_same_v<typename AView::non_const_value_type,
                               typename BView::non_const_value_type>,
                "kpl::nnls: A and b must have the same value type");
  static_assert(AView::rank == 2 || AView::rank == 3, "kpl::nnls: A is [m, n] or [systems, m, n]");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename AView::memory_space>::accessible,
      "kpl::nnls: A must be accessible from the execution space");
  impl::solve_nnls_dense(space, A, b, solution, options, workspace);
}

// How far x is from satisfying the KKT conditions of min ||A x - b|| s.t.
// x >= 0, with w = A^T (b - A x); each is 0 at an exact solution. Host Views
// in any layout, computed in double.
struct KktCertificate {
  double negativity = 0;         // max(0, -min_j x_j)
  double zero_set_gradient = 0;  // max over x_j = 0 of max(0, w_j)
  double positive_gradient = 0;  // max over x_j > 0 of |w_j|
  double residual_norm = 0;
  bool holds(double tolerance) const {
    return negativity <= tolerance && zero_set_gradient <= tolerance &&
           positive_gradient <= tolerance;
  }
};

template <class AView, class BVector, class XVector>
KktCertificate kkt_certificate(const AView& A, const BVector& b, const XVector& x) {
  static_assert(AView::rank == 2 && BVector::rank == 1 && XVector::rank == 1,
                "kpl::kkt_certificate takes A [m, n], b [m], x [n]");
  return impl::kkt_certificate<KktCertificate>(A, b, x);
}

}  // namespace kpl
