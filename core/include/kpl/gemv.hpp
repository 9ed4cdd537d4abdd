// Dense matrix-vector products, y = alpha * op(A) * x + beta * y (BLAS gemv),
// in the three GPU strategies of Sieminski & Lee 2023 (§3.2, Appendix B),
// plus Kokkos Kernels' gemv as the baseline, behind one call:
//
//   kpl::gemv(space, kpl::Transpose::yes, alpha, A, x, beta, y);            // automatic
//   kpl::gemv(space, kpl::Transpose::no, 1.0, A, x, 0.0, y,
//             {kpl::GemvStrategy::team_per_dot});
//
// A is any 2-D View (LayoutLeft, LayoutRight, LayoutStride); x and y any 1-D
// Views; float or double; all accessible from the execution space. As in
// BLAS, beta = 0 means y is written without being read, and alpha = 0 means A
// and x are not read. Calls are asynchronous, like any Kokkos kernel, and
// throw std::invalid_argument when the extents do not match. gemv_batched
// applies one x to a batch of matrices ([batch, m, n]) in one launch.
//
// The strategies, each in one file: thread_per_row (§3.2.1,
// impl/gemv_thread_per_row.hpp), team_per_dot (§3.2.2,
// impl/gemv_team_per_dot.hpp), partial_rows (§3.2.3,
// impl/gemv_partial_rows.hpp). What automatic picks, and why:
// impl/gemv_dispatch.hpp; how fast each is: perf/RESULTS.md. Inside a
// user's own TeamPolicy kernel: kpl::team::gemv (kpl/team.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace kpl {

// op(A): A itself or its transpose (BLAS' TRANS = 'N' or 'T').
enum class Transpose { no, yes };

enum class GemvStrategy { automatic, thread_per_row, team_per_dot, partial_rows, kokkos_kernels };

struct GemvOptions {
  GemvStrategy strategy = GemvStrategy::automatic;
  // P. team_per_dot: vector lanes per dot product (rounded down to a power of
  // two within the backend's vector length). partial_rows: segments each dot
  // product is cut into. 0: chosen from the shape and the concurrency.
  int threads_per_dot = 0;
  // M'. team_per_dot: dot products (threads) per team. partial_rows on data
  // where dot products run along memory: outputs per team (rounded down to
  // 1, 2, 4, 8 or 16). 0: chosen.
  int rows_per_team = 0;
  // partial_rows on data where dot products run along memory: threads per
  // team, each with the backend's vector lanes (clamped to what it allows).
  // 0: 8 on GPUs, 1 on CPUs.
  int team_size = 0;
};

// The names used on kpl's command line and in benchmark labels.
inline std::string_view to_string(GemvStrategy strategy);
// The inverse of to_string; throws std::invalid_argument for other names.
inline GemvStrategy gemv_strategy_from_string(std::string_view name);

// Device memory for the partial sums and counters of partial_rows, grown on
// demand and kept between calls (otherwise each such call allocates, which
// on GPUs costs more than a small product). One workspace serves one stream
// of calls at a time: calls that may overlap need a workspace each.
template <class ExecutionSpace, class T>
class GemvWorkspace {
 public:
  // The first `elements` partial sums, reallocated only when too small.
  T* reserve(const ExecutionSpace& space, std::int64_t elements);
  // `count` counters, zero on return; kernels leave them at zero.
  int* counters(const ExecutionSpace& space, std::int64_t count);

 private:
  Kokkos::View<T*, typename ExecutionSpace::memory_space> partials_;
  Kokkos::View<int*, typename ExecutionSpace::memory_space> counters_;
};

}  // namespace kpl

#include <kpl/impl/gemv_dispatch.hpp>  // needs the types above

namespace kpl {

// y = alpha * op(A) * x + beta * y on `space`.
template <class ExecutionSpace, class AView, class XView, class YView>
void gemv(const ExecutionSpace& space, Transpose transpose, typename YView::const_value_type alpha,
          const AView& A, const XView& x, typename YView::const_value_type beta, const YView& y,
          GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type>& workspace,
          const GemvOptions& options = {}) {
  static_assert(Kokkos::is_view<AView>::value && AView::rank == 2,
                "kpl::gemv: A must be a 2-D Kokkos::View (gemv_batched takes 3-D)");
  static_assert(Kokkos::is_view<XView>::value && XView::rank == 1,
                "kpl::gemv: x must be a 1-D Kokkos::View");
  static_assert(Kokkos::is_view<YView>::value && YView::rank == 1,
                "kpl::gemv: y must be a 1-D Kokkos::View");
  static_assert(impl::gemv_value_types<AView, XView, YView>(),
                "kpl::gemv: A, x and y must hold one value type, float or double");
  static_assert(!std::is_const_v<typename YView::value_type>, "kpl::gemv: y must be writable");
  static_assert(impl::accessible_from_v<ExecutionSpace, AView, XView, YView>,
                "kpl::gemv: A, x and y must be accessible from the execution space");
  impl::check_gemv_extents("kpl::gemv", transpose, A.extent(0), A.extent(1), x.extent(0),
                           y.extent(0));
  impl::gemv(space, transpose, alpha, A, x, beta, y, workspace, options);
}

template <class ExecutionSpace, class AView, class XView, class YView>
void gemv(const ExecutionSpace& space, Transpose transpose, typename YView::const_value_type alpha,
          const AView& A, const XView& x, typename YView::const_value_type beta, const YView& y,
          const GemvOptions& options = {}) {
  GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type> workspace;
  gemv(space, transpose, alpha, A, x, beta, y, workspace, options);
}

// Y(b, :) = alpha * op(A(b, :, :)) * x + beta * Y(b, :) for every b: one x
// shared by a batch of matrices, in one launch (kokkos_kernels: one
// KokkosBlas::gemv per matrix). A is [batch, m, n] in any layout, so a stacked
// column-major [n, batch * k] matrix viewed as [batch, n, k] with strides
// (n * k, 1, n) is a batch too.
template <class ExecutionSpace, class AView, class XView, class YView>
void gemv_batched(const ExecutionSpace& space, Transpose transpose,
                  typename YView::const_value_type alpha, const AView& A, const XView& x,
                  typename YView::const_value_type beta, const YView& Y,
                  GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type>& workspace,
                  const GemvOptions& options = {}) {
  static_assert(Kokkos::is_view<AView>::value && AView::rank == 3,
                "kpl::gemv_batched: A must be a 3-D Kokkos::View [batch, m, n]");
  static_assert(Kokkos::is_view<XView>::value && XView::rank == 1,
                "kpl::gemv_batched: x must be a 1-D Kokkos::View");
  static_assert(Kokkos::is_view<YView>::value && YView::rank == 2,
                "kpl::gemv_batched: Y must be a 2-D Kokkos::View [batch, length]");
  static_assert(impl::gemv_value_types<AView, XView, YView>(),
                "kpl::gemv_batched: A, x and Y must hold one value type, float or double");
  static_assert(!std::is_const_v<typename YView::value_type>,
                "kpl::gemv_batched: Y must be writable");
  static_assert(impl::accessible_from_v<ExecutionSpace, AView, XView, YView>,
                "kpl::gemv_batched: A, x and Y must be accessible from the execution space");
  impl::check_gemv_batch(A.extent(0), Y.extent(0));
  impl::check_gemv_extents("kpl::gemv_batched", transpose, A.extent(1), A.extent(2), x.extent(0),
                           Y.extent(1));
  impl::gemv(space, transpose, alpha, A, x, beta, Y, workspace, options);
}

template <class ExecutionSpace, class AView, class XView, class YView>
void gemv_batched(const ExecutionSpace& space, Transpose transpose,
                  typename YView::const_value_type alpha, const AView& A, const XView& x,
                  typename YView::const_value_type beta, const YView& Y,
                  const GemvOptions& options = {}) {
  GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type> workspace;
  gemv_batched(space, transpose, alpha, A, x, beta, Y, workspace, options);
}

}  // namespace kpl
