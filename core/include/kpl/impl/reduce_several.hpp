// kpl::several: several reduction operations over the same input in one
// pass, as one operation whose value is a ValuePack (a recursive,
// device-friendly tuple). Include kpl/reduce_operations.hpp.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kpl::impl {

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

// The operation: identity, lift and combine member by member.
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

template <class Op, class... Rest>
Several<Op, Rest...> make_several_impl(Op op, Rest... rest) {
  if constexpr (sizeof...(Rest) == 0) {
    return Several<Op>{op};
  } else {
    return Several<Op, Rest...>{op, make_several_impl(rest...)};
  }
}

// A pack's members as a std::tuple (for structured bindings on the host).
template <class Pack, std::size_t... I>
auto pack_to_tuple(const Pack& pack, std::index_sequence<I...>) {
  return std::make_tuple(get<I>(pack)...);
}

}  // namespace kpl::impl
