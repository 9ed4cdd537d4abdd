// Exact powers of two, for bringing data to a unit scale without rounding it:
// multiplying a normal number by 2^e changes only its exponent, so a solver
// that works on 2^a A and 2^b b follows the same path whatever units A and b
// came in, as long as nothing over- or underflows. Plain multiplications
// only, so the same code runs on every backend.
#pragma once

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace kpl::impl {

// The largest exponent e for which 2^e and 2^-e are both normal numbers of T.
template <class T>
KOKKOS_INLINE_FUNCTION constexpr int power_of_two_limit() {
  return std::is_same_v<T, float> ? 125 : 1021;
}

// 2^exponent, exact for |exponent| <= power_of_two_limit<T>().
template <class T>
KOKKOS_INLINE_FUNCTION T power_of_two(int exponent) {
  T result = T(1);
  T base = exponent >= 0 ? T(2) : T(0.5);
  for (int remaining = exponent >= 0 ? exponent : -exponent; remaining > 0; remaining >>= 1) {
    if (remaining & 1) result *= base;
    base *= base;
  }
  return result;
}

// floor(log2(value)) for a positive finite value (denormals included).
template <class T>
KOKKOS_INLINE_FUNCTION int binary_exponent(T value) {
  int exponent = 0;
  if (value >= T(1)) {
    for (int step = 512; step >= 1; step >>= 1) {
      const T factor = power_of_two<T>(step);  // infinite past T's range: never taken
      if (value >= factor) {
        value *= power_of_two<T>(-step);
        exponent += step;
      }
    }
    return exponent;
  }
  for (int step = 512; step >= 1; step >>= 1) {
    const T scaled = value * power_of_two<T>(step);
    if (scaled < T(1)) {
      value = scaled;
      exponent -= step;
    }
  }
  return exponent - 1;  // value is now in [1/2, 1)
}

// The exponent e for which 2^-e x max_magnitude lies in [1, 2), clamped so
// that 2^-e stays a normal number; 0 for a zero magnitude.
template <class T>
KOKKOS_INLINE_FUNCTION int unit_scale_exponent(T max_magnitude) {
  if (!(max_magnitude > T(0))) return 0;
  const int exponent = binary_exponent(max_magnitude);
  const int limit = power_of_two_limit<T>();
  return exponent > limit ? limit : exponent < -limit ? -limit : exponent;
}

// value x 2^exponent for any exponent, in steps that never overflow or
// underflow on the way unless the result itself does.
template <class T>
KOKKOS_INLINE_FUNCTION T scale_by_power_of_two(T value, int exponent) {
  constexpr int step = power_of_two_limit<T>();
  while (exponent > step) {
    value *= power_of_two<T>(step);
    exponent -= step;
  }
  while (exponent < -step) {
    value *= power_of_two<T>(-step);
    exponent += step;
  }
  return value * power_of_two<T>(exponent);
}

}  // namespace kpl::impl
