// Reduction operations: what kpl::reduce, reduce_rows and reduce_columns
// combine. An operation is a type with
//   using input_type = ...;  using value_type = ...;
//   KOKKOS_FUNCTION value_type identity() const;
//   KOKKOS_FUNCTION value_type lift(input_type x, std::int64_t index) const;
//   KOKKOS_FUNCTION void combine(value_type& into, const value_type& other) const;
// where combine is associative and commutative and identity() its neutral
// element: the reduction tree combines in any order. An optional
// `static constexpr bool atomic_add` or `atomic_exchange` lets teams combine
// their results by one atomic each (see impl/reduce_tree.hpp).
// Sum accumulates float in double and int32 in int64: a running float sum
// of 2^28 values loses most of its digits.
#pragma once

#include <kpl/impl/reduce_identities.hpp>
#include <kpl/impl/reduce_several.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {

// +-infinity for floating types, the type's limits otherwise: the identities
// of Min and Max, usable in device code (impl/reduce_identities.hpp).
using impl::largest_v;
using impl::smallest_v;
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T largest() {
  return largest_v<T>;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T smallest() {
  return smallest_v<T>;
}

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
// std::min does.
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

// Both extremes in one pass. Aligned to its size so that teams can combine a
// pair of 4-byte values (float, int32) by one 8-byte compare-and-swap.
template <class T>
struct alignas(2 * sizeof(T)) MinMaxValue {
  T min;
  T max;
};
template <class T>
struct MinMax {
  using input_type = T;
  using value_type = MinMaxValue<T>;
  static constexpr bool atomic_exchange = true;
  KOKKOS_INLINE_FUNCTION value_type identity() const { return {largest<T>(), smallest<T>()}; }
  KOKKOS_INLINE_FUNCTION value_type lift(T x, std::int64_t) const { return {x, x}; }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    if (other.min < into.min) into.min = other.min;
    if (into.max < other.max) into.max = other.max;
  }
};

// Value and position of an extreme element (ValueIndex); among equal values
// the lowest index wins (as NumPy's argmin), so the result does not depend
// on the order in which teams finish. An empty input gives index -1.
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

// Several operations over the same input in one pass (all with the same
// input_type); the value is a ValuePack (a device-friendly tuple) and
// get<I>(pack) reads one member.
using impl::get;
using impl::Several;
using impl::ValuePack;
template <class... Ops>
Several<Ops...> several(Ops... ops) {
  static_assert(sizeof...(Ops) >= 1, "kpl::several needs at least one operation");
  return impl::make_several_impl(ops...);
}

}  // namespace kpl
