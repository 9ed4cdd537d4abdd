// Elementwise binary operations on N-d Views under NumPy's broadcasting rules,
// through strides (Çoban, Yuret & Unat, "Multidimensional broadcast operation
// on the GPU", §III-B/C): shapes are aligned at their trailing dimensions, and
// a dimension that is missing or of extent 1 in an input is read with stride
// 0, so every input element index is the output coordinate · input strides.
// Three kernels: general (§III-B/C, impl/broadcast_general.hpp),
// sliding_factor (§III-D, impl/broadcast_sliding_factor.hpp) and scratch
// (§III-E, impl/broadcast_scratch.hpp); the plan and the automatic choice are
// in impl/broadcast_dispatch.hpp.
#pragma once

#include <kpl/impl/broadcast_plan.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kpl {

// Extents and strides (in elements) of an N-d array, rank <= 8, any layout.
struct ArrayDescriptor {
  static constexpr int max_rank = impl::max_broadcast_rank;
  int rank = 0;
  std::array<std::int64_t, max_rank> extents{};
  std::array<std::int64_t, max_rank> strides{};
};

template <class View>
ArrayDescriptor describe(const View& view) {
  static_assert(Kokkos::is_view<View>::value, "kpl::describe takes a Kokkos::View");
  static_assert(View::rank <= ArrayDescriptor::max_rank, "rank above 8");
  ArrayDescriptor descriptor;
  descriptor.rank = static_cast<int>(View::rank);
  for (int d = 0; d < descriptor.rank; ++d) {
    descriptor.extents[d] = static_cast<std::int64_t>(view.extent(d));
    descriptor.strides[d] = static_cast<std::int64_t>(view.stride(d));
  }
  return descriptor;
}

// "[2, 3, 4]".
inline std::string shape_text(const ArrayDescriptor& descriptor);

// NumPy's broadcast shape of a and b; throws std::invalid_argument naming both
// shapes when a dimension differs and neither extent is 1.
inline ArrayDescriptor broadcast_shape(const ArrayDescriptor& a, const ArrayDescriptor& b);

// Elementwise operations; any functor T(T, T) works as well.
struct Add {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a + b;
  }
};
struct Subtract {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a - b;
  }
};
struct Multiply {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a * b;
  }
};
struct Divide {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a / b;
  }
};
struct Maximum {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct Minimum {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};

enum class BroadcastVariant {
  automatic,       // the fastest measured (perf/RESULTS.md)
  general,         // §III-B/C: threads over row chunks, any shape
  sliding_factor,  // §III-D: each thread slides over sliding_factor rows, any shape
  scratch,         // §III-E: vectors staged in scratch memory; matrix-and-vector shapes only
};

struct BroadcastOptions {
  BroadcastVariant variant = BroadcastVariant::automatic;
  // Rows per thread (sliding_factor) or per team (scratch); 0 chooses it from
  // the shape and the execution space's concurrency.
  std::int64_t sliding_factor = 0;
  // Threads a team of the general and scratch variants; 0: 1 on CPUs, 256
  // threads on GPUs.
  int team_size = 0;
};

}  // namespace kpl

// The implementation needs the types above.
#include <kpl/impl/broadcast_dispatch.hpp>

namespace kpl {

// out = op(a, b) elementwise with NumPy broadcasting. a, b and out are Views
// of any rank <= 8 and any layout (subviews, transposes) accessible from
// `space`; out must have the broadcast shape. out may alias an input that has
// out's own shape and strides (in place: a = a + b). Asynchronous. Throws
// std::invalid_argument, before any kernel runs, for incompatible shapes, a
// negative sliding factor, and the scratch variant on a shape that does not
// merge to a matrix and vectors, and the scratch variant's tile limits.
template <class ExecutionSpace, class Op, class ViewA, class ViewB, class ViewOut>
void broadcast(const ExecutionSpace& space, const Op& op, const ViewA& a, const ViewB& b,
               const ViewOut& out, const BroadcastOptions& options = {}) {
  using T = typename ViewOut::non_const_value_type;
  static_assert(std::is_same_v<typename ViewA::non_const_value_type, T> &&
                    std::is_same_v<typename ViewB::non_const_value_type, T>,
                "kpl::broadcast: a, b and out must have the same element type");
  static_assert(!std::is_const_v<typename ViewOut::value_type>,
                "kpl::broadcast: out must be writable");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename ViewA::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename ViewB::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename ViewOut::memory_space>::accessible,
      "kpl::broadcast: every View must be accessible from the execution space");
  if (options.sliding_factor < 0) {
    throw std::invalid_argument(
        "kpl::broadcast: sliding_factor must be >= 0 (0 = automatic), got " +
        std::to_string(options.sliding_factor));
  }
  const auto plan = impl::plan_broadcast(describe(a), describe(b), describe(out));
  const BroadcastVariant variant = options.variant == BroadcastVariant::automatic
                                       ? impl::choose_variant<ExecutionSpace>(plan)
                                       : options.variant;
  if (variant == BroadcastVariant::scratch && plan.rank > 2) {
    throw std::invalid_argument(
        "kpl::broadcast: the scratch variant takes a matrix and a row or column vector; " +
        shape_text(describe(a)) + " and " + shape_text(describe(b)) + " merge to rank " +
        std::to_string(plan.rank));
  }
  if (plan.size == 0) return;
  impl::launch_broadcast(space, op, plan, variant, options, a.data(), b.data(), out.data());
}

}  // namespace kpl
