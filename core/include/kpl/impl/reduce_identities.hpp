// Identities and accumulator types of the operations in kpl/reduce_operations.hpp.
#pragma once

#include <cstdint>
#include <limits>

namespace kpl::impl {

// +-infinity (floating) or the type's limit. Compile-time constants rather
// than calls: std::numeric_limits' functions are host functions, which device
// code may not call.
template <class T>
inline constexpr T largest_v = std::numeric_limits<T>::has_infinity
                                   ? std::numeric_limits<T>::infinity()
                                   : std::numeric_limits<T>::max();
template <class T>
inline constexpr T smallest_v = std::numeric_limits<T>::has_infinity
                                    ? -std::numeric_limits<T>::infinity()
                                    : std::numeric_limits<T>::lowest();

// What Sum<T> accumulates in: float in double and int32 in int64, so that
// long sums keep their digits and do not overflow.
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

}  // namespace kpl::impl
