// The units of one NNLS system: each column of A and b are multiplied by the
// powers of two that bring their largest magnitudes into [1, 2)
// (impl/power_of_two.hpp, column equilibration). Exact, so the solve takes
// the same steps whatever units A, its columns and b came in, and nothing
// over- or underflows on the way. NNLS is invariant under positive column
// scaling (x_j >= 0 holds for x_j as for 2^e x_j), so x_j = 2^(b_exponent -
// e_j) x'_j. Gradients are judged per unit column norm, w_j / ||a_j||.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_team_ops.hpp>
#include <kpl/impl/power_of_two.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

template <class T>
struct SystemScale {
  int b_exponent = 0;  // b_scale = 2^-b_exponent
  T b_norm = 0;        // ||b_scale b||_2
  bool finite = true;  // no NaN or Inf in A or b
};

// |value|, with NaN and Inf counted as infinite.
template <class T>
KOKKOS_INLINE_FUNCTION T magnitude(T value) {
  return compat::math::isfinite(value) ? compat::math::fabs(value) : largest<T>();
}

// Per column: its largest |a_ij|, its scale 2^-e_j and 1 / its norm after
// scaling, into s; returns the largest |a_ij| of all columns.
template <class Batch>
KOKKOS_INLINE_FUNCTION typename Batch::value_type measure_columns(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    const NnlsSystemStorage<typename Batch::value_type>& s) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const Max<T> max_op;
  T a_max = max_op.identity();
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, batch.parameters.columns),
      [&](std::int64_t j, T& largest_so_far) {
        const RowRange range = batch.columns.rows_of(system, j);
        const int length = range.end > range.begin ? int(range.end - range.begin) : 0;
        const T column_max = vector_reduce(member, length, Max<T>{}, [&](int offset) {
          return magnitude(batch.columns(system, range.begin + offset, j));
        });
        const int exponent = unit_scale_exponent(column_max > T(0) ? column_max : T(0));
        const T column_scale = power_of_two<T>(-exponent);
        Accumulator sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, length),
            [&](int offset, Accumulator& partial) {
              const Accumulator value =
                  column_scale * batch.columns(system, range.begin + offset, j);
              partial += value * value;
            },
            sum);
        Kokkos::single(Kokkos::PerThread(member), [&] {
          s.column_exponents[j] = exponent;
          s.column_scales[j] = column_scale;
          s.inverse_norms[j] = sum > 0 ? T(1 / compat::math::sqrt(sum)) : T(0);
        });
        max_op.combine(largest_so_far, column_max);
      },
      OpReducer<Max<T>>(max_op, a_max));
  return a_max;
}

// Sets s.column_scales, s.column_exponents, s.inverse_norms and s.b_scale.
template <class Batch>
KOKKOS_INLINE_FUNCTION SystemScale<typename Batch::value_type> measure_system(
    const typename Batch::Member& member, const Batch& batch, std::int64_t system,
    NnlsSystemStorage<typename Batch::value_type>& s) {
  using T = typename Batch::value_type;
  using Accumulator = typename Batch::Accumulator;
  const T* b_system = batch.b + system * batch.b_system_stride;
  const std::int64_t b_row_stride = batch.b_row_stride;
  SystemScale<T> scale;
  const T a_max = measure_columns(member, batch, system, s);
  const T b_max = nnls_team_combine(member, batch.parameters.rows, Max<T>{}, [&](std::int64_t i) {
    return magnitude(b_system[i * b_row_stride]);
  });
  // (Without rows or columns a team's Max is its identity, -infinity.)
  scale.finite = a_max < largest<T>() && b_max < largest<T>();
  if (!scale.finite) return scale;
  scale.b_exponent = unit_scale_exponent(b_max > T(0) ? b_max : T(0));
  s.b_scale = power_of_two<T>(-scale.b_exponent);
  scale.b_norm = T(compat::math::sqrt(
      nnls_team_sum<Accumulator>(member, batch.parameters.rows, [&](std::int64_t i) {
        const Accumulator value = batch.scaled_b(s, system, i);
        return value * value;
      })));
  return scale;
}

}  // namespace impl
}  // namespace kpl
