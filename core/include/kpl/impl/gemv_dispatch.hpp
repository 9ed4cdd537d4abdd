// From kpl::gemv's arguments to a kernel launch: the shape checks, the
// GemvProblem the kernels see, which strategy `automatic` runs, and the
// hand-over to the strategy's file (impl/gemv_thread_per_row.hpp,
// impl/gemv_team_per_dot.hpp, impl/gemv_partial_rows.hpp) or to Kokkos
// Kernels. Users need not read this. Included by kpl/gemv.hpp after the
// public types it uses (Transpose, GemvStrategy, GemvOptions).
#pragma once

#include <kpl/execution_spaces.hpp>
#include <kpl/impl/gemv_common.hpp>
#include <kpl/impl/gemv_partial_rows.hpp>
#include <kpl/impl/gemv_team_per_dot.hpp>
#include <kpl/impl/gemv_thread_per_row.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/pack.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace kpl::impl {

// For gemv.hpp's static_asserts: one value type, float or double; every
// View accessible from the execution space.
template <class AView, class XView, class YView>
constexpr bool gemv_value_types() {
  using T = typename YView::non_const_value_type;
  constexpr bool real = std::is_same_v<T, float> || std::is_same_v<T, double>;
  return real && std::is_same_v<typename AView::non_const_value_type, T> &&
         std::is_same_v<typename XView::non_const_value_type, T>;
}

template <class ExecutionSpace, class... Views>
inline constexpr bool accessible_from_v =
    (Kokkos::SpaceAccessibility<ExecutionSpace, typename Views::memory_space>::accessible && ...);

inline void check_gemv_extents(const char* function, Transpose transpose, std::int64_t rows,
                               std::int64_t columns, std::int64_t x_length, std::int64_t y_length) {
  const std::int64_t wanted_x = transpose == Transpose::no ? columns : rows;
  const std::int64_t wanted_y = transpose == Transpose::no ? rows : columns;
  if (x_length != wanted_x || y_length != wanted_y) {
    throw std::invalid_argument(
        std::string(function) + ": A is " + std::to_string(rows) + " x " + std::to_string(columns) +
        (transpose == Transpose::no ? " (op N)" : " (op T)") + ", so x needs " +
        std::to_string(wanted_x) + " and y " + std::to_string(wanted_y) + " elements; got " +
        std::to_string(x_length) + " and " + std::to_string(y_length));
  }
}

inline void check_gemv_batch(std::int64_t matrices, std::int64_t y_rows) {
  if (y_rows != matrices) {
    throw std::invalid_argument("kpl::gemv_batched: A holds " + std::to_string(matrices) +
                                " matrices but Y " + std::to_string(y_rows) + " rows");
  }
}

// What strategy::automatic runs. CPUs: partial_rows everywhere (a thread
// needs no lanes to share a dot product; perf/RESULTS.md, CPU sections).
// GPUs: partial_rows, except on outputs-contiguous data (B d on column-major
// B) where its threads would each walk a long chain of dependent loads with
// too few threads to hide it. There a partial_rows thread takes one segment
// of the dot product (all of it up to 64 terms), so its time grows with the
// segment, not with n; team_per_dot's lanes (up to 32 per dot product) take
// a term or two each. That wins while the outputs are few (at most one per
// 128 resident threads) with dot products of 16 terms or more, or the matrix
// is small (at most four elements per resident thread) with 64 terms or
// more; past that, team_per_dot's scattered loads cost more than the shorter
// chains save. thread_per_row is the case below. The thresholds rest on
// device runs over the seed's grid (perf/RESULTS.md, "automatic on small
// shapes").
template <class ExecutionSpace, class T>
GemvStrategy automatic_strategy(const ExecutionSpace& space, const GemvProblem<T>& problem) {
  if constexpr (runs_on_host_v<ExecutionSpace>) {
    (void)space;
    (void)problem;
    return GemvStrategy::partial_rows;
  } else {
    const std::int64_t resident_threads = space.concurrency();
    const std::int64_t outputs = problem.batch * problem.outputs;
    const bool few_outputs = outputs * 128 <= resident_threads && problem.length >= 16;
    const bool small_long_dots =
        outputs * problem.length <= 4 * resident_threads && problem.length >= 64;
    if (gemv_access(problem) == GemvAccess::outputs_contiguous) {
      if (few_outputs || small_long_dots) return GemvStrategy::team_per_dot;
      // Dot products of at most 64 terms (partial_rows' one segment) and
      // its 16-byte-pack threads filling at most an eighth of the device: a
      // thread per output puts 4 (float) or 2 (double) times the threads,
      // and loads in flight, on chains of the same length. With more
      // threads than that the two are even.
      const std::int64_t pack_threads = outputs / pack_elements<T>();
      if (problem.length <= 64 && pack_threads * 8 <= resident_threads)
        return GemvStrategy::thread_per_row;
    }
    return GemvStrategy::partial_rows;
  }
}

// Empty products and alpha = 0 scale y (BLAS' quick return); everything else
// goes to the chosen strategy.
template <class ExecutionSpace, class T, class Workspace>
void launch_gemv(const ExecutionSpace& space, const GemvProblem<T>& problem,
                 const GemvOptions& options, Workspace& workspace) {
  if (problem.batch == 0 || problem.outputs == 0) return;
  if (problem.length == 0 || problem.alpha == T(0)) {
    Kokkos::parallel_for("kpl::gemv::scale_y",
                         GemvRange<ExecutionSpace>(space, 0, problem.batch * problem.outputs),
                         ScaleOutputs<T>{problem});
    return;
  }
  const GemvStrategy strategy = options.strategy == GemvStrategy::automatic
                                    ? automatic_strategy(space, problem)
                                    : options.strategy;
  switch (strategy) {
    case GemvStrategy::thread_per_row:
      launch_thread_per_row(space, problem);
      break;
    case GemvStrategy::team_per_dot:
      launch_team_per_dot(space, problem, options.threads_per_dot, options.rows_per_team);
      break;
    default:
      launch_partial_rows(space, problem, options.threads_per_dot, options.rows_per_team,
                          options.team_size, workspace);
  }
}

// The kernels' view of y = alpha op(A) x + beta y for 2-D A (batch of one)
// or 3-D A [batch, m, n]: outputs along op(A)'s rows, strides in elements.
// (Also on the device: kpl::team::gemv.)
template <class T, class AView, class XView, class YView>
KOKKOS_INLINE_FUNCTION GemvProblem<T> gemv_problem(Transpose transpose, T alpha, const AView& A,
                                                   const XView& x, T beta, const YView& y) {
  constexpr int first = AView::rank == 3 ? 1 : 0;  // A's row dimension
  const bool normal = transpose == Transpose::no;
  const auto rows = static_cast<std::int64_t>(A.extent(first));
  const auto columns = static_cast<std::int64_t>(A.extent(first + 1));
  const std::int64_t row_stride = A.stride(first), column_stride = A.stride(first + 1);
  return {A.data(),
          x.data(),
          y.data(),
          AView::rank == 3 ? std::int64_t(A.extent(0)) : 1,
          normal ? rows : columns,
          normal ? columns : rows,
          AView::rank == 3 ? std::int64_t(A.stride(0)) : 0,
          normal ? row_stride : column_stride,
          normal ? column_stride : row_stride,
          std::int64_t(x.stride(0)),
          YView::rank == 2 ? std::int64_t(y.stride(0)) : 0,
          std::int64_t(y.stride(YView::rank - 1)),
          alpha,
          beta};
}

// kpl::gemv and kpl::gemv_batched after their checks: Kokkos Kernels (one
// call per matrix of a batch), or one launch of kpl's kernels.
template <class ExecutionSpace, class AView, class XView, class YView, class Workspace>
void gemv(const ExecutionSpace& space, Transpose transpose, typename YView::const_value_type alpha,
          const AView& A, const XView& x, typename YView::const_value_type beta, const YView& y,
          Workspace& workspace, const GemvOptions& options) {
  using T = typename YView::non_const_value_type;
  const char* op = transpose == Transpose::no ? "N" : "T";
  if (options.strategy != GemvStrategy::kokkos_kernels) {
    launch_gemv(space, gemv_problem<T>(transpose, alpha, A, x, beta, y), options, workspace);
  } else if constexpr (AView::rank == 2) {
    compat::kokkos_blas_gemv(space, op, alpha, A, x, beta, y);
  } else {
    for (std::size_t b = 0; b < A.extent(0); ++b) {
      compat::kokkos_blas_gemv(space, op, alpha, Kokkos::subview(A, b, Kokkos::ALL, Kokkos::ALL), x,
                               beta, Kokkos::subview(y, b, Kokkos::ALL));
    }
  }
}

}  // namespace kpl::impl

// ---------------------------------------------------------------------------
// The definitions behind gemv.hpp's declarations.
namespace kpl {

inline std::string_view to_string(GemvStrategy strategy) {
  switch (strategy) {
    case GemvStrategy::automatic:
      return "automatic";
    case GemvStrategy::thread_per_row:
      return "thread-per-row";
    case GemvStrategy::team_per_dot:
      return "team-per-dot";
    case GemvStrategy::partial_rows:
      return "partial-rows";
    case GemvStrategy::kokkos_kernels:
      return "kokkos-kernels";
  }
  return "unknown";
}

inline GemvStrategy gemv_strategy_from_string(std::string_view name) {
  for (auto strategy :
       {GemvStrategy::automatic, GemvStrategy::thread_per_row, GemvStrategy::team_per_dot,
        GemvStrategy::partial_rows, GemvStrategy::kokkos_kernels}) {
    if (to_string(strategy) == name) return strategy;
  }
  throw std::invalid_argument("unknown gemv strategy '" + std::string(name) +
                              "' (automatic, thread-per-row, team-per-dot, partial-rows, "
                              "kokkos-kernels)");
}

template <class ExecutionSpace, class T>
T* GemvWorkspace<ExecutionSpace, T>::reserve(const ExecutionSpace& space, std::int64_t elements) {
  if (static_cast<std::int64_t>(partials_.extent(0)) < elements) {
    partials_ = decltype(partials_)();  // the old block freed before the new one
    partials_ = decltype(partials_)(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gemv::partials"),
        static_cast<std::size_t>(elements));
  }
  return partials_.data();
}

template <class ExecutionSpace, class T>
int* GemvWorkspace<ExecutionSpace, T>::counters(const ExecutionSpace& space, std::int64_t count) {
  if (static_cast<std::int64_t>(counters_.extent(0)) < count) {
    counters_ = decltype(counters_)();
    counters_ = decltype(counters_)(Kokkos::view_alloc(space, "kpl::gemv::arrivals"),
                                    static_cast<std::size_t>(count));
  }
  return counters_.data();
}

}  // namespace kpl
