// The one place where kpl adapts to the Kokkos version it is built against.
//
// kpl supports Kokkos 3.4 (Debian 12's, Serial and OpenMP) and Kokkos >= 4.6
// (every backend). Nothing else in kpl tests KOKKOS_VERSION: code that needs
// a call whose spelling changed between those versions uses the name here.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>

#if KOKKOS_VERSION >= 40000
#define KPL_KOKKOS_4 1
#else
#define KPL_KOKKOS_4 0
#endif

namespace kpl::compat {

// Mathematical functions moved from Kokkos::Experimental to Kokkos in 4.0.
namespace math {
#if KPL_KOKKOS_4
using Kokkos::fabs;
using Kokkos::fmax;
using Kokkos::fmin;
using Kokkos::isfinite;
using Kokkos::isinf;
using Kokkos::isnan;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::fmax;
using Kokkos::Experimental::fmin;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::isinf;
using Kokkos::Experimental::isnan;
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
