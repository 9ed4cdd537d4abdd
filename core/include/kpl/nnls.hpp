// Batched non-negative least squares: for every system s,
//   minimise ||A_s x_s - b_s||_2 subject to x_s >= 0,
// by the Lawson–Hanson active-set method with the passive least-squares
// problem kept as a QR factorisation, updated by (reordered) Gram-Schmidt
// when a column enters and downdated by Givens rotations when one leaves
// (Luo & Duraiswami 2011, Algorithms 1-2, §3.4, §5). One Kokkos team solves
// one system (a thread block on GPUs, a thread on CPUs):
//
//   kpl::NnlsSolution<Kokkos::DefaultExecutionSpace, double> solution(systems, n);
//   kpl::nnls(space, A, b, solution);               // A [m, n] shared, or [systems, m, n]
//   // solution.x [systems, n], residual_norm, iterations, status (NnlsStatus)
//
// A need not exist as a matrix: nnls_columns takes a column source, a
// copyable object with
//   KOKKOS_FUNCTION T operator()(int64_t system, int64_t row, int64_t column) const;
//   KOKKOS_FUNCTION kpl::RowRange rows_of(int64_t system, int64_t column) const;
// (rows_of bounds where the column may be non-zero; banded matrices make the
// solver's dot products proportionally cheaper). The deconvolution module
// builds its Toeplitz columns from the pulse this way.
//
// Units do not matter: each system is solved as (2^a A) x' = 2^b b with the
// powers of two that bring max |a_ij| and max |b_i| into [1, 2) — exact, so x
// scales as b / A down to the last bit — and every tolerance is relative to
// G_j = ||a_j||_2 ||b||_2, the largest the gradient |w_j| of column j can be
// (w = A^T (b - A x)); so a column's own units drop out as well:
// - the zero-set column with the largest w_j / G_j enters while that is
//   above `tolerance` (default 10 eps max(m, n), eps of the precision
//   solved in);
// - an entering column whose new R diagonal is below dependence_threshold x
//   its norm is numerically in the span of the passive set and is not taken
//   (the next best is);
// - max_iterations (default 3n, as scipy and lsqnonneg) counts passive
//   least-squares solves.
// After the solve the KKT conditions are checked on the device from the
// residual: kkt_residual = the largest of w_j / G_j (x_j = 0) and |w_j| / G_j
// (x_j > 0). `converged` means kkt_residual <= kkt_tolerance; every other
// status (NnlsStatus) says why not, with x the last feasible iterate.
#pragma once

#include <kpl/impl/nnls_kernels.hpp>
#include <kpl/impl/reduce_kernels.hpp>
#include <kpl/execution_spaces.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace kpl {

enum class NnlsOrthogonalization {
  automatic,              // modified Gram-Schmidt on CPUs, classical twice on GPUs (measured)
  modified_gram_schmidt,  // Algorithm 2 as written: one projection at a time
  classical_twice,        // all projections at once, repeated once (fewer team barriers)
};

// Where the gradient w = A^T (b - A x) comes from after each change of x.
enum class NnlsGradient {
  automatic,            // cross products for a shared A (on CPUs from two systems on) unless A^T A
                        // outgrows A and 2^23 values
  from_residual,        // r = b - A x, then A^T r: all of A read every outer iteration
  from_cross_products,  // A^T b - (A^T A) x with A^T A formed once: needs a shared A
};

struct NnlsOptions {
  int max_iterations = -1;           // < 0: 3 n
  double tolerance = -1;             // relative to G_j; < 0: 10 eps max(m, n)
  double kkt_tolerance = -1;         // relative to G_j; < 0: nnls_default_kkt_tolerance
  int max_passive = -1;              // < 0: min(m, n); caps memory at m x max_passive per system
  double dependence_threshold = -1;  // < 0: 10 eps max(m, n)
  NnlsOrthogonalization orthogonalization = NnlsOrthogonalization::automatic;
  NnlsGradient gradient = NnlsGradient::automatic;
  int team_threads = 0;  // GPU threads per team (x 32 vector lanes), at most 8; 0: 8
  // For benchmarks that price the check: skip it (kkt_residual NaN, and a
  // system the method ends normally is reported kkt_not_met, never converged).
  bool skip_kkt_check = false;
};

inline std::string to_string(NnlsOrthogonalization orthogonalization) {
  switch (orthogonalization) {
    case NnlsOrthogonalization::modified_gram_schmidt:
      return "modified-gram-schmidt";
    case NnlsOrthogonalization::classical_twice:
      return "classical-twice";
    case NnlsOrthogonalization::automatic:
      break;
  }
  return "automatic";
}

inline std::string to_string(NnlsGradient gradient) {
  switch (gradient) {
    case NnlsGradient::from_residual:
      return "residual";
    case NnlsGradient::from_cross_products:
      return "cross-products";
    case NnlsGradient::automatic:
      break;
  }
  return "automatic";
}

inline std::string to_string(NnlsStatus status) {
  switch (status) {
    case NnlsStatus::converged:
      return "converged";
    case NnlsStatus::max_iterations:
      return "max_iterations";
    case NnlsStatus::numerical_issue:
      return "numerical_issue";
    case NnlsStatus::passive_set_full:
      return "passive_set_full";
    case NnlsStatus::dependent_columns:
      return "dependent_columns";
    case NnlsStatus::kkt_not_met:
      return "kkt_not_met";
  }
  return "unknown";
}

// "0 converged, 1 max_iterations, ...": what the status values mean.
inline std::string nnls_status_legend() {
  std::string legend;
  for (int status = 0; status < nnls_status_count; ++status)
    legend += (status > 0 ? ", " : "") + std::to_string(status) + " " +
              to_string(static_cast<NnlsStatus>(status));
  return legend;
}

// Per-system results, in the execution space's memory.
template <class ExecutionSpace, class T>
struct NnlsSolution {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<T**, Kokkos::LayoutRight, memory_space> x;  // [systems, n]
  Kokkos::View<T*, memory_space> residual_norm;            // ||A x - b||
  Kokkos::View<T*, memory_space> kkt_residual;             // see the header comment
  Kokkos::View<int*, memory_space> iterations;             // passive solves
  Kokkos::View<int*, memory_space> status;                 // NnlsStatus values
  // Per system: columns that entered the passive set (QR updates) and that
  // left it (Givens downdates).
  Kokkos::View<int* [2], Kokkos::LayoutRight, memory_space> column_changes;

  NnlsSolution() = default;
  NnlsSolution(std::int64_t systems, std::int64_t columns)
      : x(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::x"), systems, columns),
        residual_norm(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::residual_norm"),
                      systems),
        kkt_residual(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::kkt_residual"),
                     systems),
        iterations(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::iterations"),
                   systems),
        status(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::status"), systems),
        column_changes(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::column_changes"),
                       systems) {}
  std::int64_t systems() const { return static_cast<std::int64_t>(x.extent(0)); }
};

// Device memory the solver's workspace needs per system (Q, R and vectors),
// whatever the execution space.
template <class T>
std::int64_t nnls_workspace_bytes_per_system(std::int64_t rows, std::int64_t columns,
                                             std::int64_t max_passive) {
  using Pointers = impl::NnlsWorkspacePointers<T>;
  return Pointers::values_needed(rows, columns, max_passive) * std::int64_t(sizeof(T)) +
         Pointers::indices_needed(columns, max_passive) * std::int64_t(sizeof(int));
}

// The solver's workspace; reuse one across calls, e.g. chunk after chunk of a
// large batch.
template <class ExecutionSpace, class T>
class NnlsWorkspace {
 public:
  using memory_space = typename ExecutionSpace::memory_space;

  impl::NnlsWorkspacePointers<T> reserve(std::int64_t systems, std::int64_t rows,
                                           std::int64_t columns, std::int64_t max_passive) {
    using Pointers = impl::NnlsWorkspacePointers<T>;
    const std::int64_t values = Pointers::values_needed(rows, columns, max_passive);
    const std::int64_t indices = Pointers::indices_needed(columns, max_passive);
    if (values_.extent(0) < std::size_t(systems * values))
      values_ = Kokkos::View<T*, memory_space>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::workspace_values"),
          systems * values);
    if (indices_.extent(0) < std::size_t(systems * indices))
      indices_ = Kokkos::View<int*, memory_space>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::workspace_indices"),
          systems * indices);
    return {values_.data(), indices_.data(), values, indices};
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

// The KKT check's default tolerance (relative to G, see above).
template <class T>
double nnls_default_kkt_tolerance(std::int64_t rows, std::int64_t columns) {
  return 10 * double(std::numeric_limits<T>::epsilon()) *
         double(std::max<std::int64_t>({rows, columns, 1}));
}

namespace impl {

template <class T>
NnlsParameters<T> nnls_parameters(std::int64_t systems, std::int64_t rows, std::int64_t columns,
                                  const NnlsOptions& options, bool host) {
  if (options.max_iterations == 0)
    throw std::invalid_argument("kpl::nnls: max_iterations must be positive (or < 0 for 3n)");
  if (options.max_passive == 0)
    throw std::invalid_argument("kpl::nnls: max_passive must be positive (or < 0 for min(m, n))");
  for (const double value :
       {options.tolerance, options.kkt_tolerance, options.dependence_threshold})
    if (!(value == value) || value == std::numeric_limits<double>::infinity())
      throw std::invalid_argument("kpl::nnls: tolerances must be finite");
  const std::int64_t rank_limit = std::min(rows, columns);
  NnlsParameters<T> parameters{};
  parameters.systems = systems;
  parameters.rows = rows;
  parameters.columns = columns;
  parameters.max_passive = static_cast<int>(
      options.max_passive > 0 ? std::min<std::int64_t>(options.max_passive, rank_limit)
                              : rank_limit);
  parameters.passive_capped_by_caller = parameters.max_passive < rank_limit;
  const std::int64_t default_iterations = std::max<std::int64_t>(3 * columns, 1);
  parameters.max_iterations = static_cast<int>(
      options.max_iterations > 0
          ? options.max_iterations
          : std::min<std::int64_t>(default_iterations, std::numeric_limits<int>::max()));
  const T epsilon = std::numeric_limits<T>::epsilon();
  const T size = T(std::max<std::int64_t>({rows, columns, 1}));
  parameters.tolerance = options.tolerance >= 0 ? T(options.tolerance) : T(10) * epsilon * size;
  parameters.check_kkt = !options.skip_kkt_check;
  parameters.kkt_tolerance = options.kkt_tolerance >= 0
                                 ? T(options.kkt_tolerance)
                                 : T(nnls_default_kkt_tolerance<T>(rows, columns));
  parameters.dependence_threshold =
      options.dependence_threshold >= 0 ? T(options.dependence_threshold) : T(10) * epsilon * size;
  parameters.not_a_number = std::numeric_limits<T>::quiet_NaN();
  // A CPU team is one thread: modified Gram-Schmidt's one pass costs half of
  // classical-twice's two. On a GPU the k team reductions of modified
  // Gram-Schmidt cost more than the second pass (perf/RESULTS.md).
  parameters.modified_gram_schmidt =
      options.orthogonalization == NnlsOrthogonalization::modified_gram_schmidt ||
      (options.orthogonalization == NnlsOrthogonalization::automatic && host);
  return parameters;
}

}  // namespace impl

namespace impl {

// unit(i, j) = 2^-e_j A(i, j), e_j bringing column j's largest |A(i, j)|
// into [1, 2) as NnlsTeamSolve::measure_system does; false (unit unset) if A
// holds a NaN or Inf.
template <class ExecutionSpace, class AView, class UnitView>
bool unit_scaled_columns(const ExecutionSpace& space, const AView& A, const UnitView& unit) {
  using T = typename AView::non_const_value_type;
  const std::int64_t rows = A.extent(0);
  int non_finite = 0;
  Kokkos::parallel_reduce(
      "kpl::nnls::unit_scaled_columns",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, std::int64_t(A.extent(1))),
      KOKKOS_LAMBDA(const std::int64_t j, int& bad) {
        T largest_so_far = T(0);
        for (std::int64_t i = 0; i < rows; ++i) {
          const T value = A(i, j);
          if (!compat::math::isfinite(value)) {
            ++bad;
            return;
          }
          const T magnitude = compat::math::fabs(value);
          if (magnitude > largest_so_far) largest_so_far = magnitude;
        }
        const T scale = power_of_two<T>(-unit_scale_exponent(largest_so_far));
        for (std::int64_t i = 0; i < rows; ++i) unit(i, j) = scale * A(i, j);
      },
      non_finite);
  return non_finite == 0;
}

template <class ExecutionSpace, class BView>
void check_nnls_shapes(
    std::int64_t rows, std::int64_t column_count, const BView& b,
    const NnlsSolution<ExecutionSpace, typename BView::non_const_value_type>& solution) {
  const std::int64_t systems = static_cast<std::int64_t>(b.extent(0));
  if (std::int64_t(b.extent(1)) != rows)
    throw std::invalid_argument("kpl::nnls: b has " + std::to_string(b.extent(1)) +
                                " rows, A has " + std::to_string(rows));
  if (solution.systems() != systems || std::int64_t(solution.x.extent(1)) != column_count ||
      std::int64_t(solution.status.extent(0)) != systems ||
      std::int64_t(solution.column_changes.extent(0)) != systems)
    throw std::invalid_argument("kpl::nnls: the solution is not sized [systems, columns] = [" +
                                std::to_string(systems) + ", " + std::to_string(column_count) +
                                "]");
}

// The solve behind nnls and nnls_columns; cross_products is A^T A (column j
// at cross_products + j * cross_products_stride) or nullptr.
template <class ExecutionSpace, class Columns, class BView>
void solve_nnls(const ExecutionSpace& space, const Columns& columns, std::int64_t rows,
                std::int64_t column_count, const BView& b,
                NnlsSolution<ExecutionSpace, typename BView::non_const_value_type>& solution,
                const NnlsOptions& options,
                NnlsWorkspace<ExecutionSpace, typename BView::non_const_value_type>* workspace,
                const typename BView::non_const_value_type* cross_products,
                std::int64_t cross_products_stride) {
  using T = typename BView::non_const_value_type;
  static_assert(std::is_floating_point_v<T>, "kpl::nnls solves float or double systems");
  static_assert(BView::rank == 2, "kpl::nnls: b is [systems, rows]");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename BView::memory_space>::accessible,
      "kpl::nnls: b must be accessible from the execution space");
  check_nnls_shapes(rows, column_count, b, solution);
  const std::int64_t systems = static_cast<std::int64_t>(b.extent(0));
  if (systems == 0) return;
  auto parameters = impl::nnls_parameters<T>(systems, rows, column_count, options,
                                               impl::runs_on_host_v<ExecutionSpace>);

  NnlsWorkspace<ExecutionSpace, T> local_workspace;
  auto& used = workspace ? *workspace : local_workspace;
  const auto pointers = used.reserve(systems, rows, column_count, parameters.max_passive);

  impl::NnlsOutputs<T> outputs{solution.x.data(),
                                 static_cast<std::int64_t>(solution.x.stride(0)),
                                 static_cast<std::int64_t>(solution.x.stride(1)),
                                 solution.residual_norm.data(),
                                 solution.kkt_residual.data(),
                                 solution.iterations.data(),
                                 solution.status.data(),
                                 solution.column_changes.data()};
  impl::NnlsTeamSolve<T, Columns, ExecutionSpace> functor{columns,
                                                            b.data(),
                                                            static_cast<std::int64_t>(b.stride(0)),
                                                            static_cast<std::int64_t>(b.stride(1)),
                                                            parameters,
                                                            pointers,
                                                            outputs,
                                                            cross_products,
                                                            cross_products_stride};
  if constexpr (impl::runs_on_host_v<ExecutionSpace>) {
    Kokkos::parallel_for("kpl::nnls::team_per_system",
                         Kokkos::TeamPolicy<ExecutionSpace>(space, systems, 1, 1), functor);
  } else {
    // 8 x 32 threads: one or two rows each for the seed's 432- and 512-row
    // systems (§5.1: one thread per row).
    // At most 8 x 32 threads with at most 128 registers each, so that two
    // teams share an SM: unbounded, the kernel took more registers and the
    // 192-system batch ran in two waves (H100: 130 ms against 103 ms).
    using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<256, 2>>;
    int threads = std::min(options.team_threads > 0 ? options.team_threads : 8, 8);
    Policy policy(space, systems, 1, 32);
    using Scratch = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    std::size_t scratch =
        2 * Scratch::shmem_size(rows) + 2 * Scratch::shmem_size(parameters.max_passive) +
        Scratch::shmem_size(impl::back_substitution_block * impl::back_substitution_block);
    // Up to 32 KiB per team: the rest of the 48 KiB every GPU gives a block
    // without opting in is left to Kokkos' own team reductions.
    if (scratch <= 32 * 1024) {
      functor.parameters.vectors_in_scratch = true;
      if (scratch + Scratch::shmem_size(column_count) <= 32 * 1024) {
        functor.parameters.gradient_in_scratch = true;
        scratch += Scratch::shmem_size(column_count);
      }
      policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
    }
    // A caller's request is clamped to what the kernel's registers allow.
    threads = std::min(threads, policy.team_size_max(functor, Kokkos::ParallelForTag()));
    policy = Policy(space, systems, threads, 32);
    if (functor.parameters.vectors_in_scratch) policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
    Kokkos::parallel_for("kpl::nnls::team_per_system", policy, functor);
  }
}

}  // namespace impl

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
  impl::solve_nnls(space, columns, rows, column_count, b, solution, options, workspace, nullptr,
                     0);
}

// A is [rows, columns] shared by every system, or [systems, rows, columns];
// any layout (LayoutLeft, with columns contiguous, reads fastest on GPUs).
template <class ExecutionSpace, class AView, class BView>
void nnls(
    const ExecutionSpace& space, const AView& A, const BView& b,
    NnlsSolution<ExecutionSpace, typename BView::non_const_value_type>& solution,
    const NnlsOptions& options = {},
    NnlsWorkspace<ExecutionSpace, typename BView::non_const_value_type>* workspace = nullptr) {
  using T = typename BView::non_const_value_type;
  static_assert(std::is_same_v<typename AView::non_const_value_type, T>,
                "kpl::nnls: A and b must have the same value type");
  static_assert(AView::rank == 2 || AView::rank == 3, "kpl::nnls: A is [m, n] or [systems, m, n]");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename AView::memory_space>::accessible,
      "kpl::nnls: A must be accessible from the execution space");
  constexpr int first = AView::rank == 3 ? 1 : 0;
  const std::int64_t rows = static_cast<std::int64_t>(A.extent(first));
  const std::int64_t columns = static_cast<std::int64_t>(A.extent(first + 1));
  if constexpr (AView::rank == 3) {
    if (A.extent(0) != b.extent(0))
      throw std::invalid_argument("kpl::nnls: A holds " + std::to_string(A.extent(0)) +
                                  " systems, b " + std::to_string(b.extent(0)));
  }
  const DenseColumns<T> dense{A.data(),
                              AView::rank == 3 ? static_cast<std::int64_t>(A.stride(0)) : 0,
                              static_cast<std::int64_t>(A.stride(first)),
                              static_cast<std::int64_t>(A.stride(first + 1)), rows};
  if (AView::rank == 3 && options.gradient == NnlsGradient::from_cross_products)
    throw std::invalid_argument(
        "kpl::nnls: the gradient from cross products needs one A shared by all systems");
  // A shared A's cross products are formed once for the whole batch (one
  // gemm, m n^2 multiply-adds); every outer iteration of every system then
  // reads n |P| values instead of A's m n. Measured (perf/RESULTS.md): faster
  // on the H100 from one system on, on a CPU from two (one uniform512 system
  // on one core: 7.3 ms from the residual, 8.0 with the gemm). Automatic
  // takes them there unless A^T A (n x n) would outgrow A and 2^23 values.
  const std::int64_t systems = static_cast<std::int64_t>(b.extent(0));
  const bool cross_products_fit = columns <= rows || columns * columns <= (std::int64_t(1) << 23);
  const bool cross_products_pay = !impl::runs_on_host_v<ExecutionSpace> || systems >= 2;
  const bool use_cross_products =
      AView::rank == 2 && systems > 0 && rows > 0 && columns > 0 &&
      (options.gradient == NnlsGradient::from_cross_products ||
       (options.gradient == NnlsGradient::automatic && cross_products_fit && cross_products_pay));
  if (!use_cross_products) {  // (also every empty case)
    impl::solve_nnls(space, dense, rows, columns, b, solution, options, workspace, nullptr, 0);
    return;
  }
  impl::check_nnls_shapes(rows, columns, b, solution);  // before any work
  if constexpr (AView::rank == 2) {
    using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft, typename ExecutionSpace::memory_space>;
    const Matrix cross_products(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::cross_products"), columns,
        columns);
    // A^T A of A D, every column brought to unit scale (its largest |a_ij|
    // into [1, 2), exactly) as the kernel brings it: it neither over- nor
    // underflows whatever the units of A's columns. With a NaN or Inf in A
    // every system reports it, from the residual path.
    const Matrix a_unit(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::A_unit"), rows,
                        columns);
    if (!impl::unit_scaled_columns(space, A, a_unit)) {
      impl::solve_nnls(space, dense, rows, columns, b, solution, options, workspace, nullptr, 0);
      return;
    }
    compat::kokkos_blas_gemm(space, "T", "N", T(1), a_unit, a_unit, T(0), cross_products);
    // (Kokkos waits for the device before freeing these Views' memory.)
    impl::solve_nnls(space, dense, rows, columns, b, solution, options, workspace,
                       cross_products.data(), static_cast<std::int64_t>(cross_products.stride(1)));
  }
}

// How far x is from satisfying the Karush-Kuhn-Tucker conditions of
// min ||A x - b|| s.t. x >= 0, with w = A^T (b - A x):
//   negativity        = max(0, -min_j x_j)                   (x >= 0)
//   zero_set_gradient = max over x_j = 0 of max(0, w_j)       (w_j <= 0 there)
//   positive_gradient = max over x_j > 0 of |w_j|              (w_j = 0 there)
// Each is 0 at an exact solution; compare them with the solver's tolerance.
// Host Views in any layout, computed in double.
struct KktCertificate {
  double negativity = 0;
  double zero_set_gradient = 0;
  double positive_gradient = 0;
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
  const std::size_t m = A.extent(0), n = A.extent(1);
  if (b.extent(0) != m || x.extent(0) != n)
    throw std::invalid_argument("kpl::kkt_certificate: A, b and x do not match");
  std::vector<double> residual(m);
  double squared = 0;
  for (std::size_t i = 0; i < m; ++i) {
    double value = b(i);
    for (std::size_t j = 0; j < n; ++j) value -= double(A(i, j)) * double(x(j));
    residual[i] = value;
    squared += value * value;
  }
  KktCertificate certificate;
  certificate.residual_norm = std::sqrt(squared);
  for (std::size_t j = 0; j < n; ++j) {
    double gradient = 0;
    for (std::size_t i = 0; i < m; ++i) gradient += double(A(i, j)) * residual[i];
    const double value = x(j);
    certificate.negativity = std::max(certificate.negativity, -value);
    if (value > 0) {
      certificate.positive_gradient = std::max(certificate.positive_gradient, std::abs(gradient));
    } else {
      certificate.zero_set_gradient = std::max(certificate.zero_set_gradient, gradient);
    }
  }
  return certificate;
}

}  // namespace kpl
