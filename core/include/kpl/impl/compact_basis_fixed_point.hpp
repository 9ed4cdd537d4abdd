// Exact sums for the compact-basis cross products on GPUs: the teams of a
// chunk of rows add int64 fixed-point terms, scaled per chunk by a power of
// two that keeps the largest sum below 2^62, so neither the order of their
// atomics nor the teams that share the chunk can change the sum (integer
// addition is associative): each term is rounded once, to 2^-50 of the
// chunk's largest.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/power_of_two.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl {
namespace impl {

// The power of two S a chunk's terms are multiplied by: any sum of them
// stays below 2^62 in magnitude when bound bounds the sum of their
// magnitudes. (Clamped to the normal range: bounds below 2^-960 lose
// precision, not correctness.)
KOKKOS_INLINE_FUNCTION double fixed_point_scale(double bound) {
  if (!(bound > 0)) return 1;
  int exponent = 61 - binary_exponent(bound);
  const int limit = power_of_two_limit<double>();
  exponent = exponent > limit ? limit : exponent < -limit ? -limit : exponent;
  return power_of_two<double>(exponent);
}

// value x scale rounded to an integer, as the two's-complement bits that
// unsigned 64-bit addition (the atomic GPUs have natively; a signed one
// would be a compare-and-swap loop) adds exactly as signed addition would.
KOKKOS_INLINE_FUNCTION unsigned long long to_fixed_point(double value, double scale) {
  const double scaled = value * scale;
  const long long rounded =
      scaled >= 0 ? static_cast<long long>(scaled + 0.5) : -static_cast<long long>(0.5 - scaled);
  return static_cast<unsigned long long>(rounded);
}

// A GPU team's sum as the double it stands for (the scale removed exactly).
template <class Accumulator>
KOKKOS_INLINE_FUNCTION double team_sum_value(Accumulator sum, double inverse_scale) {
  if constexpr (std::is_same_v<Accumulator, unsigned long long>)
    return double(static_cast<long long>(sum)) * inverse_scale;
  else
    return double(sum);
}

// |value| counted towards a bound: NaN or Inf has no finite bound (the sums
// then come out NaN).
KOKKOS_INLINE_FUNCTION double bound_term(double value) {
  const double magnitude = compat::math::fabs(value);
  return compat::math::isfinite(magnitude) ? magnitude : largest<double>();
}

template <class Values>
struct LargestMagnitude {
  Values values;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t e, double& largest_so_far) const {
    const double counted = bound_term(double(values.data()[e]));
    if (counted > largest_so_far) largest_so_far = counted;
  }
};

// max |value| over a basis' values (a separate pass, for bases whose bound
// is not known).
template <class ExecutionSpace, class Basis>
double measured_value_bound(const ExecutionSpace& space, const Basis& basis) {
  using Values = decltype(basis.values);
  double bound = 0;
  Kokkos::parallel_reduce(
      "kpl::compact_basis::value_bound",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, std::int64_t(basis.values.span())),
      LargestMagnitude<Values>{basis.values}, Kokkos::Max<double>(bound));
  return bound;
}

template <class ExecutionSpace, class Basis>
double value_bound(const ExecutionSpace& space, const Basis& basis) {
  return basis.value_bound >= 0 ? basis.value_bound : measured_value_bound(space, basis);
}

}  // namespace impl
}  // namespace kpl
