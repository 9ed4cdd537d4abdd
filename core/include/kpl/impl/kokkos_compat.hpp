// The one place where kpl adapts to the Kokkos version it is built against.
//
// kpl supports Kokkos 3.4 (Debian 12's, Serial and OpenMP) and Kokkos >= 4.6
// (every backend). Nothing else in kpl tests KOKKOS_VERSION: code that needs
// a call whose spelling changed between those versions uses the name here.
#pragma once

#include <KokkosBlas2_gemv.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>
#include <vector>

#if KOKKOS_VERSION >= 40000
#define KPL_KOKKOS_4 1
#else
#define KPL_KOKKOS_4 0
#endif

namespace kpl::compat {

// Mathematical functions moved from Kokkos::Experimental to Kokkos in 4.0.
namespace math {
#if KPL_KOKKOS_4
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::fmax;
using Kokkos::fmin;
using Kokkos::isfinite;
using Kokkos::isinf;
using Kokkos::isnan;
using Kokkos::lgamma;
using Kokkos::log;
using Kokkos::log1p;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::fmax;
using Kokkos::Experimental::fmin;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::isinf;
using Kokkos::Experimental::isnan;
using Kokkos::Experimental::lgamma;
using Kokkos::Experimental::log;
using Kokkos::Experimental::log1p;
using Kokkos::Experimental::sqrt;
#endif
}  // namespace math

// Kokkos 4 renamed the thread-count option (--kokkos-threads became
// --kokkos-num-threads) and replaced InitArguments by InitializationSettings.
// kpl passes command-line arguments through unchanged; this gives the option
// that sets the host thread count for the version at hand.
inline std::string host_threads_argument(int threads) {
#if KPL_KOKKOS_4
  return "--kokkos-num-threads=" + std::to_string(threads);
#else
  return "--kokkos-threads=" + std::to_string(threads);
#endif
}

// `count` instances of `space`'s kind whose kernels may run concurrently:
// new streams on GPUs with Kokkos 4 (partition_space); elsewhere copies of
// `space` itself, which keep the work in order.
template <class ExecutionSpace>
std::vector<ExecutionSpace> concurrent_instances(const ExecutionSpace& space, int count) {
#if KPL_KOKKOS_4
  if constexpr (!std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>) {
    return Kokkos::Experimental::partition_space(space, std::vector<int>(count, 1));
  }
#endif
  return std::vector<ExecutionSpace>(count, space);
}

// Kokkos Kernels 4 takes the execution-space instance to run gemv on; 3.4
// always runs on the default instance of A's execution space, so there the
// call waits for `space` first to keep the caller's ordering. Kokkos Kernels
// 3.4's own transposed kernel (layouts other than LayoutLeft) leaves NaNs
// that were in y when alpha = 1 and beta = 0 (kpl's tests catch it); there y
// is zeroed first and beta = 1 passed instead.
template <class ExecutionSpace, class AView, class XView, class YView>
void kokkos_blas_gemv(const ExecutionSpace& space, const char* transpose,
                      typename AView::const_value_type& alpha, const AView& A, const XView& x,
                      typename YView::const_value_type& beta, const YView& y) {
#if KPL_KOKKOS_4
  KokkosBlas::gemv(space, transpose, alpha, A, x, beta, y);
#else
  space.fence();
  using Value = typename YView::non_const_value_type;
  if (beta == Value(0) && transpose[0] != 'N') {
    Kokkos::deep_copy(y, Value(0));
    KokkosBlas::gemv(transpose, alpha, A, x, Value(1), y);
    return;
  }
  KokkosBlas::gemv(transpose, alpha, A, x, beta, y);
#endif
}

// C = alpha op(A) op(B) + beta C on `space`; Kokkos Kernels 3.4 has no
// execution-space argument, so there the call waits for `space` first.
template <class ExecutionSpace, class AView, class BView, class CView>
void kokkos_blas_gemm(const ExecutionSpace& space, const char* transpose_a, const char* transpose_b,
                      typename AView::const_value_type& alpha, const AView& A, const BView& B,
                      typename CView::const_value_type& beta, const CView& C) {
#if KPL_KOKKOS_4
  KokkosBlas::gemm(space, transpose_a, transpose_b, alpha, A, B, beta, C);
#else
  space.fence();
  KokkosBlas::gemm(transpose_a, transpose_b, alpha, A, B, beta, C);
#endif
}

}  // namespace kpl::compat

// Kokkos 3.4's top-level parallel_reduce joins a reducer's values through
// volatile references (and silently falls back to += without such a join);
// Kokkos 4 calls the plain join. Inside a reducer class with a plain
//   join(value_type&, const value_type&) const
// this macro adds the volatile overload where Kokkos needs it. The values
// live in Kokkos' reduction buffers, not in volatile objects, so casting the
// qualifier away is sound.
#if KPL_KOKKOS_4
#define KPL_COMPAT_VOLATILE_JOIN(value_type)
#else
#define KPL_COMPAT_VOLATILE_JOIN(value_type)                                                    \
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& into, const volatile value_type& other) \
      const {                                                                                   \
    join(const_cast<value_type&>(into), const_cast<const value_type&>(other));                  \
  }
#endif
