// Adapts a kpl reduction operation (kpl/reduce_operations.hpp) to Kokkos'
// reducer concept, so that Kokkos' own warp-shuffle and scratch-memory
// reductions do the vector and team levels of the reduction tree.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

namespace kpl::impl {

template <class Op, class MemorySpace = Kokkos::HostSpace>
struct OpReducer {
  using reducer = OpReducer;
  using value_type = typename Op::value_type;
  using result_view_type = Kokkos::View<value_type, MemorySpace, Kokkos::MemoryUnmanaged>;

  Op op;
  value_type* target;

  KOKKOS_INLINE_FUNCTION OpReducer(const Op& operation, value_type& value)
      : op(operation), target(&value) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& into, const value_type& other) const {
    op.combine(into, other);
  }
  KPL_COMPAT_VOLATILE_JOIN(value_type)
  KOKKOS_INLINE_FUNCTION void init(value_type& value) const { value = op.identity(); }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *target; }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result_view_type(target); }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

// Variables, not functions: device code may not call host constexpr functions.
template <class ExecutionSpace>
inline constexpr bool runs_on_host_v =
    std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;

}  // namespace kpl::impl
