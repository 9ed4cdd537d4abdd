// How kpl::nnls and kpl::nnls_columns (kpl/nnls.hpp) become one launch of
// NnlsTeamSolve, one team per system (Luo & Duraiswami 2011, §5.1): options
// checked and resolved into NnlsParameters, the workspace reserved, the team
// shape and scratch chosen per backend, and for a shared dense A the choice
// of the cross-product gradient with A^T A formed once for the batch.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_team_solve.hpp>
#include <kpl/impl/power_of_two.hpp>
#include <kpl/reduce.hpp>
#include <kpl/nnls_options.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kpl {

template <class ExecutionSpace, class T>
struct NnlsSolution;
template <class ExecutionSpace, class T>
class NnlsWorkspace;
template <class T>
struct DenseColumns;

namespace impl {

inline void check_nnls_options(const NnlsOptions& options) {
  if (options.max_iterations == 0)
    throw std::invalid_argument("kpl::nnls: max_iterations must be positive (or < 0 for 3n)");
  if (options.max_passive == 0)
    throw std::invalid_argument("kpl::nnls: max_passive must be positive (or < 0 for min(m, n))");
  for (const double value :
       {options.tolerance, options.kkt_tolerance, options.dependence_threshold})
    if (!(value == value) || value == std::numeric_limits<double>::infinity())
      throw std::invalid_argument("kpl::nnls: tolerances must be finite");
}

template <class T>
NnlsParameters<T> nnls_parameters(std::int64_t systems, std::int64_t rows, std::int64_t columns,
                                  const NnlsOptions& options, bool host) {
  check_nnls_options(options);
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
  // By default a CPU team is one thread: modified Gram-Schmidt's one pass
  // cost half of classical Gram-Schmidt's two (measured before the second
  // pass became conditional). On a GPU the k team reductions of modified
  // Gram-Schmidt cost more than a second pass (perf/RESULTS.md).
  parameters.modified_gram_schmidt =
      options.orthogonalization == NnlsOrthogonalization::modified_gram_schmidt ||
      (options.orthogonalization == NnlsOrthogonalization::automatic && host);
  return parameters;
}

// unit(i, j) = 2^-e_j A(i, j), e_j bringing column j's largest |A(i, j)|
// into [1, 2) as measure_system does; false (unit unset) if A holds a NaN
// or Inf.
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

// CPUs: teams of options.team_threads threads (0: one thread per system),
// clamped to what the backend allows; one vector lane.
template <class ExecutionSpace, class Functor>
void launch_on_host(const ExecutionSpace& space, std::int64_t systems, const Functor& functor,
                    const NnlsOptions& options) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int requested = options.team_threads > 0 ? options.team_threads : 1;
  const int threads =
      std::min(requested, Policy(space, systems, 1, 1).team_size_max(functor,
                                                                      Kokkos::ParallelForTag()));
  Kokkos::parallel_for("kpl::nnls::team_per_system", Policy(space, systems, threads, 1), functor);
}

// GPUs: up to 8 x 32 threads (§5.1: one thread per row; one or two rows
// each for the seed's 432- and 512-row systems), at most 128 registers each
// so that two teams share an SM. The vectors each step reads back right
// after another thread wrote them go to team scratch when they fit in 32
// KiB: the rest of the 48 KiB every GPU gives a block without opting in is
// left to Kokkos' own team reductions.
template <class ExecutionSpace, class Functor>
void launch_on_gpu(const ExecutionSpace& space, std::int64_t systems, Functor& functor,
                   const NnlsOptions& options) {
  using T = typename Functor::Batch::value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<256, 2>>;
  auto& parameters = functor.batch.parameters;
  parameters.gradient_by_column_lanes = has_short_bands(functor.batch.columns);
  int threads = std::min(options.team_threads > 0 ? options.team_threads : 8, 8);
  Policy policy(space, systems, 1, 32);
  using Scratch = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  std::size_t scratch = 2 * Scratch::shmem_size(parameters.rows) +
                        2 * Scratch::shmem_size(parameters.max_passive) +
                        Scratch::shmem_size(back_substitution_block * back_substitution_block);
  if (scratch <= 32 * 1024) {
    parameters.vectors_in_scratch = true;
    if (scratch + Scratch::shmem_size(parameters.columns) <= 32 * 1024) {
      parameters.gradient_in_scratch = true;
      scratch += Scratch::shmem_size(parameters.columns);
    }
    policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
  }
  // A caller's request is clamped to what the kernel's registers allow.
  threads = std::min(threads, policy.team_size_max(functor, Kokkos::ParallelForTag()));
  policy = Policy(space, systems, threads, 32);
  if (parameters.vectors_in_scratch) policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
  Kokkos::parallel_for("kpl::nnls::team_per_system", policy, functor);
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
  const auto parameters =
      nnls_parameters<T>(systems, rows, column_count, options, runs_on_host_v<ExecutionSpace>);
  NnlsWorkspace<ExecutionSpace, T> local_workspace;
  auto& used = workspace ? *workspace : local_workspace;
  const auto pointers = used.reserve(systems, rows, column_count, parameters.max_passive);
  const NnlsOutputs<T> outputs{solution.x.data(),
                               static_cast<std::int64_t>(solution.x.stride(0)),
                               static_cast<std::int64_t>(solution.x.stride(1)),
                               solution.residual_norm.data(),
                               solution.kkt_residual.data(),
                               solution.iterations.data(),
                               solution.status.data(),
                               solution.column_changes.data()};
  NnlsTeamSolve<T, Columns, ExecutionSpace> functor{
      {columns, b.data(), static_cast<std::int64_t>(b.stride(0)),
       static_cast<std::int64_t>(b.stride(1)), parameters, pointers, outputs, cross_products,
       cross_products_stride}};
  if constexpr (runs_on_host_v<ExecutionSpace>) {
    launch_on_host(space, systems, functor, options);
  } else {
    launch_on_gpu(space, systems, functor, options);
  }
}

// Whether a shared dense A's cross products are worth forming: one gemm
// (m n^2 multiply-adds) for the whole batch, after which every outer
// iteration of every system reads n |P| values instead of A's m n. They pay
// on GPUs from one system on, on CPUs from two (perf/RESULTS.md); automatic
// takes them there unless A^T A (n x n) would outgrow A and 2^23 values.
template <class ExecutionSpace>
bool use_cross_products(const NnlsOptions& options, std::int64_t systems, std::int64_t rows,
                        std::int64_t columns) {
  const bool fit = columns <= rows || columns * columns <= (std::int64_t(1) << 23);
  const bool pay = !runs_on_host_v<ExecutionSpace> || systems >= 2;
  return systems > 0 && rows > 0 && columns > 0 &&
         (options.gradient == NnlsGradient::from_cross_products ||
          (options.gradient == NnlsGradient::automatic && fit && pay));
}

// A shared dense A [rows, columns] with its cross products A^T A of A D,
// every column brought to unit scale (its largest |a_ij| into [1, 2),
// exactly) as the kernel brings it: it neither over- nor underflows
// whatever the units of A's columns. With a NaN or Inf in A every system
// reports it, from the residual path.
template <class ExecutionSpace, class AView, class BView, class Solution, class Workspace>
void solve_nnls_with_cross_products(const ExecutionSpace& space, const AView& A,
                                    const DenseColumns<typename AView::non_const_value_type>& dense,
                                    const BView& b, Solution& solution, const NnlsOptions& options,
                                    Workspace* workspace) {
  using T = typename AView::non_const_value_type;
  using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft, typename ExecutionSpace::memory_space>;
  const std::int64_t rows = dense.rows, columns = static_cast<std::int64_t>(A.extent(1));
  check_nnls_shapes(rows, columns, b, solution);  // before any work
  const Matrix cross_products(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::cross_products"), columns,
      columns);
  const Matrix a_unit(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::A_unit"), rows,
                      columns);
  if (!unit_scaled_columns(space, A, a_unit)) {
    solve_nnls(space, dense, rows, columns, b, solution, options, workspace, nullptr, 0);
    return;
  }
  compat::kokkos_blas_gemm(space, "T", "N", T(1), a_unit, a_unit, T(0), cross_products);
  // (Kokkos waits for the device before freeing these Views' memory.)
  solve_nnls(space, dense, rows, columns, b, solution, options, workspace, cross_products.data(),
             static_cast<std::int64_t>(cross_products.stride(1)));
}

// kpl::nnls: A [rows, columns] shared, or [systems, rows, columns].
template <class ExecutionSpace, class AView, class BView, class Solution, class Workspace>
void solve_nnls_dense(const ExecutionSpace& space, const AView& A, const BView& b,
                      Solution& solution, const NnlsOptions& options, Workspace* workspace) {
  using T = typename BView::non_const_value_type;
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
  const std::int64_t systems = static_cast<std::int64_t>(b.extent(0));
  if constexpr (AView::rank == 2) {
    if (use_cross_products<ExecutionSpace>(options, systems, rows, columns)) {
      solve_nnls_with_cross_products(space, A, dense, b, solution, options, workspace);
      return;
    }
  }
  solve_nnls(space, dense, rows, columns, b, solution, options, workspace, nullptr, 0);
}

}  // namespace impl
}  // namespace kpl
