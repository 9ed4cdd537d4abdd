// Hierarchical reductions: a 1-D View to one value (or several values in one
// pass), and a 2-D View along either dimension.
//
// The structure follows GPU Coder's reduction kernels (tree inside a block,
// warp shuffles, one atomic per block): every thread first accumulates a
// strided (GPU) or contiguous (CPU) range of elements, then the vector lanes
// of a thread combine (warp shuffles on CUDA), then the threads of a team
// (Kokkos' team reduction through scratch memory), and finally the teams:
// by one atomic per team where the operation and type allow it (sums; min and
// max of 4- and 8-byte scalars; min+max of 4-byte scalars, as one 8-byte
// compare-and-swap), otherwise by a second pass over the
// per-team partial results. Results wanted on the host for inputs under 2^24
// elements instead use Kokkos' own inter-team stage (one launch, no
// allocation; see reduce() in impl/reduce_kernels.hpp).
//
// An operation is a type with
//   using input_type = ...;  using value_type = ...;
//   KOKKOS_FUNCTION value_type identity() const;
//   KOKKOS_FUNCTION value_type lift(input_type x, std::int64_t index) const;
//   KOKKOS_FUNCTION void combine(value_type& into, const value_type& other) const;
// where combine is associative and commutative and identity() its neutral
// element. kpl provides Sum, Product, Min, Max, MinMax, ArgMin, ArgMax;
// custom(binary, identity) adapts a user's binary functor; several(ops...)
// runs several operations in one pass over the data.
//
// Float sums accumulate in double and int32 sums in int64 (value_type says
// so): a running float sum of 2^28 values loses most of its digits.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kpl {

// ------------------------------------------------------------- operations

namespace impl {
template <class T>
struct sum_accumulator {
  using type = T;
};
template <>
struct sum_accumulator<float> {
  using type = double;
};
template <>
struct sum_accumulator<std::int32_t> {
  using type = std::int64_t;
};
}  // namespace impl

template <class T>
struct Sum {
  using input_type = T;
  using value_type = typename impl::sum_accumulator<T>::type;
  static constexpr bool atomic_add = true;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return value_type(0); }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t) const { return value_type(x); }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    into += other;
  }
};

template <class T>
struct Product {
  using input_type = T;
  using value_type = T;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return T(1); }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t) const { return x; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    into *= other;
  }
};

// Min and Max ignore nothing: a NaN input gives an unspecified result, as
// std::min does. The identity is +-infinity (floating) or the type's limit.
// Compile-time constants rather than calls: std::numeric_limits' functions
// are host functions, which device code may not call.
template <class T>
inline constexpr T largest_v = std::numeric_limits<T>::has_infinity
                                   ? std::numeric_limits<T>::infinity()
                                   : std::numeric_limits<T>::max();
template <class T>
inline constexpr T smallest_v = std::numeric_limits<T>::has_infinity
                                    ? -std::numeric_limits<T>::infinity()
                                    : std::numeric_limits<T>::lowest();
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T largest() {
  return largest_v<T>;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T smallest() {
  return smallest_v<T>;
}

template <class T>
struct Min {
  using input_type = T;
  using value_type = T;
  static constexpr bool atomic_exchange = true;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return largest<T>(); }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t) const { return x; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    if (other < into) into = other;
  }
};

template <class T>
struct Max {
  using input_type = T;
  using value_type = T;
  static constexpr bool atomic_exchange = true;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return smallest<T>(); }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t) const { return x; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    if (into < other) into = other;
  }
};

// Aligned to its size so that a pair of 4-byte values can be updated by one
// 8-byte compare-and-swap.
template <class T>
struct alignas(2 * sizeof(T)) MinMaxValue {
  T min;
  T max;
};

template <class T>
struct MinMax {
  using input_type = T;
  using value_type = MinMaxValue<T>;
  // Teams combine by compare-and-swap on the whole pair where it fits in 8
  // bytes (float, int32): one atomic per team instead of a second pass.
  static constexpr bool atomic_exchange = true;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return {largest<T>(), smallest<T>()}; }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t) const { return {x, x}; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    if (other.min < into.min) into.min = other.min;
    if (into.max < other.max) into.max = other.max;
  }
};

// Value and position of an extreme element; among equal values the lowest
// index wins (as NumPy's argmin), so the result does not depend on the
// order in which teams finish. An empty input gives index -1.
template <class T>
struct ValueIndex {
  T value;
  std::int64_t index;
};

template <class T>
struct ArgMin {
  using input_type = T;
  using value_type = ValueIndex<T>;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return {largest<T>(), -1}; }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t i) const { return {x, i}; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    if (other.index < 0) return;
    if (into.index < 0 || other.value < into.value ||
        (!(into.value < other.value) && other.index < into.index)) {
      into = other;
    }
  }
};

template <class T>
struct ArgMax {
  using input_type = T;
  using value_type = ValueIndex<T>;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return {smallest<T>(), -1}; }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t i) const { return {x, i}; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    if (other.index < 0) return;
    if (into.index < 0 || into.value < other.value ||
        (!(other.value < into.value) && other.index < into.index)) {
      into = other;
    }
  }
};

// A user's associative, commutative binary functor with its identity, e.g.
//   kpl::custom<double>(KOKKOS_LAMBDA(double a, double b) { return a > b ? a : b; },
//                       -infinity)
template <class T, class Binary>
struct Custom {
  using input_type = T;
  using value_type = T;
  Binary binary;
  T neutral;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return neutral; }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t) const { return x; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    into = binary(into, other);
  }
};

template <class T, class Binary>
Custom<T, Binary> custom(Binary binary, T identity) {
  return Custom<T, Binary>{binary, identity};
}

// Several operations over the same input in one pass. Its value is a
// recursive pack (a device-friendly tuple); get<I>(pack) reads one member.
template <class... Values>
struct ValuePack;
template <>
struct ValuePack<> {};
template <class First, class... Rest>
struct ValuePack<First, Rest...> {
  First first;
  ValuePack<Rest...> rest;
};

template <std::size_t I, class First, class... Rest>
KOKKOS_INLINE_FUNCTION auto& get(ValuePack<First, Rest...>& pack) {
  if constexpr (I == 0) {
    return pack.first;
  } else {
    return get<I - 1>(pack.rest);
  }
}
template <std::size_t I, class First, class... Rest>
KOKKOS_INLINE_FUNCTION const auto& get(const ValuePack<First, Rest...>& pack) {
  if constexpr (I == 0) {
    return pack.first;
  } else {
    return get<I - 1>(pack.rest);
  }
}

template <class... Ops>
struct Several;
template <class First, class... Rest>
struct Several<First, Rest...> {
  static_assert((std::is_same_v<typename First::input_type, typename Rest::input_type> && ...),
                "kpl::several: every operation must take the same input type");
  using input_type = typename First::input_type;
  using value_type = ValuePack<typename First::value_type, typename Rest::value_type...>;
  First first;
  Several<Rest...> rest;
  KOKKOS_INLINE_FUNCTION value_type identity() const {
    return value_type{first.identity(), rest.identity()};
  }
  KOKKOS_INLINE_FUNCTION value_type lift(input_type x, std::int64_t i) const {
    return value_type{first.lift(x, i), rest.lift(x, i)};
  }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    first.combine(into.first, other.first);
    rest.combine(into.rest, other.rest);
  }
};
template <class Last>
struct Several<Last> {
  using input_type = typename Last::input_type;
  using value_type = ValuePack<typename Last::value_type>;
  Last first;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return value_type{first.identity(), {}}; }
  KOKKOS_INLINE_FUNCTION value_type lift(input_type x, std::int64_t i) const {
    return value_type{first.lift(x, i), {}};
  }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    first.combine(into.first, other.first);
  }
};

// ------------------------------------------------ team-level building blocks

namespace impl {

// Adapts a kpl operation to Kokkos' reducer concept, so that Kokkos' own
// warp-shuffle and scratch-memory reductions do the vector and team levels.
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

template <class Op, class... Rest>
Several<Op, Rest...> make_several_impl(Op op, Rest... rest) {
  if constexpr (sizeof...(Rest) == 0) {
    return Several<Op>{op};
  } else {
    return Several<Op, Rest...>{op, make_several_impl(rest...)};
  }
}

}  // namespace impl

template <class... Ops>
Several<Ops...> several(Ops... ops) {
  static_assert(sizeof...(Ops) >= 1, "kpl::several needs at least one operation");
  return impl::make_several_impl(ops...);
}

// Reduces element(i) for i in [0, count) over the vector lanes of the calling
// thread (warp shuffles on CUDA, a plain loop on CPUs); every lane gets the
// result. element(i) returns Op::value_type.
template <class Member, class Op, class Element>
KOKKOS_INLINE_FUNCTION typename Op::value_type vector_reduce(const Member& member, int count,
                                                             const Op& op, const Element& element) {
  typename Op::value_type result;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, count),
      [&](const int i, typename Op::value_type& partial) { op.combine(partial, element(i)); },
      impl::OpReducer<Op>(op, result));
  return result;
}

// Combines one value per thread of the team (lanes of one thread must hold
// the same value, e.g. after vector_reduce); every thread gets the result.
template <class Member, class Op>
KOKKOS_INLINE_FUNCTION typename Op::value_type team_reduce(const Member& member, const Op& op,
                                                           typename Op::value_type value) {
  impl::OpReducer<Op> reducer(op, value);
  member.team_reduce(reducer);
  return value;
}

}  // namespace kpl

#include <kpl/impl/reduce_kernels.hpp>
