// The GAM's risk (kpl/gam.hpp) over the rows in the fit (weight 1) and over
// those held out (weight 0, cross-validation), summed in one pass.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

namespace kpl {
namespace impl {

struct RiskSums {
  double training;
  double held_out;
};

template <class MemorySpace>
struct RiskReducer {
  using reducer = RiskReducer;
  using value_type = RiskSums;
  using result_view_type = Kokkos::View<value_type, MemorySpace, Kokkos::MemoryUnmanaged>;
  result_view_type result;

  KOKKOS_INLINE_FUNCTION explicit RiskReducer(const result_view_type& target) : result(target) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& into, const value_type& other) const {
    into.training += other.training;
    into.held_out += other.held_out;
  }
  KPL_COMPAT_VOLATILE_JOIN(value_type)
  KOKKOS_INLINE_FUNCTION void init(value_type& value) const { value = {0.0, 0.0}; }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *result.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result; }
  // As Kokkos' own reducers built from a View: the result is the View's.
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return false; }
};

// Two sums reduced into a host value (Kokkos 3.4 reduces one value per call).
inline RiskReducer<Kokkos::HostSpace> host_sums(RiskSums& target) {
  return RiskReducer<Kokkos::HostSpace>(
      Kokkos::View<RiskSums, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&target));
}

}  // namespace impl
}  // namespace kpl
