// The Toeplitz matrix of a pulse, never stored (Luo & Duraiswami 2011, §6,
// equation 6.2): A[i, j] = s[i - j + c], zero outside 0 <= i - j + c < L.
// ToeplitzColumns is the column source kpl::nnls_columns reads it through;
// only a column's L-sample band enters the solver's dot products.
// ToeplitzApply forms fit = A x once the solve is done.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/power_of_two.hpp>
#include <kpl/nnls.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {

enum class PulseOrigin { start, center };

namespace impl {

// Column source (kpl/nnls.hpp) of the Toeplitz matrices: one pulse for all
// waveforms (pulse_stride 0) or one per waveform.
template <class T>
struct ToeplitzColumns {
  const T* pulse;
  std::int64_t pulse_stride;  // between waveforms' pulses; 0 when shared
  std::int64_t pulse_length;  // L
  std::int64_t samples;       // m = rows = columns
  std::int64_t origin;        // c

  KOKKOS_INLINE_FUNCTION T operator()(std::int64_t system, std::int64_t row,
                                      std::int64_t column) const {
    const std::int64_t tap = row - column + origin;
    return tap >= 0 && tap < pulse_length ? pulse[system * pulse_stride + tap] : T(0);
  }
  // Rows where column j can be non-zero: i - j + c in [0, L).
  KOKKOS_INLINE_FUNCTION RowRange rows_of(std::int64_t, std::int64_t column) const {
    const std::int64_t begin = column - origin;
    const std::int64_t end = begin + pulse_length;
    return {begin > 0 ? begin : 0, end < samples ? end : samples};
  }
  // No band spans more than the pulse (kpl/nnls.hpp: short bands take one
  // GPU lane per column in the gradient).
  std::int64_t max_band_rows() const { return pulse_length; }
};

// Origin c = 0: a causal pulse (the seed's equation 6.2); floor(L / 2): a
// pulse centred on its return.
template <class T>
ToeplitzColumns<T> make_toeplitz_columns(const T* pulse, std::int64_t pulse_stride,
                                         std::int64_t pulse_length, std::int64_t samples,
                                         PulseOrigin origin) {
  return {pulse, pulse_stride, pulse_length, samples,
          origin == PulseOrigin::start ? 0 : pulse_length / 2};
}

// fit[w, i] = sum_j s[i - j + c] x[w, j], one (waveform, sample) per
// iteration, summed with the pulse brought to unit scale by a power of two
// (exact), so that no partial sum overflows unless the fit itself does.
template <class T, class XView, class FitView>
struct ToeplitzApply {
  ToeplitzColumns<T> columns;
  XView x;
  FitView fit;
  std::int64_t m;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t w, const std::int64_t i) const {
    T pulse_max = 0;
    for (std::int64_t t = 0; t < columns.pulse_length; ++t) {
      const T tap = compat::math::fabs(columns.pulse[w * columns.pulse_stride + t]);
      if (tap > pulse_max) pulse_max = tap;
    }
    const int exponent = unit_scale_exponent(pulse_max);
    const T scale = power_of_two<T>(-exponent);
    // Columns j whose band holds row i: i - j + c in [0, L).
    const std::int64_t first = i + columns.origin - columns.pulse_length + 1;
    const std::int64_t last = i + columns.origin;
    T sum = 0;
    for (std::int64_t j = first > 0 ? first : 0; j <= last && j < m; ++j)
      sum += scale * columns(w, i, j) * x(w, j);
    fit(w, i) = scale_by_power_of_two(sum, exponent);
  }
};

// A waveform whose fit is not finite (its x or fit past the precision's
// range) is marked numerical_issue.
template <class FitView, class StatusView>
struct MarkNonFiniteFits {
  FitView fit;
  StatusView status;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t w) const {
    bool finite = true;
    for (std::int64_t i = 0; i < std::int64_t(fit.extent(1)); ++i)
      finite = finite && compat::math::isfinite(fit(w, i));
    if (!finite) status(w) = static_cast<int>(NnlsStatus::numerical_issue);
  }
};

template <class ExecutionSpace, class T, class XView, class FitView, class StatusView>
void toeplitz_apply(const ExecutionSpace& space, const ToeplitzColumns<T>& columns, const XView& x,
                    const FitView& fit, const StatusView& status) {
  const std::int64_t waveforms = fit.extent(0), m = fit.extent(1);
  Kokkos::parallel_for(
      "kpl::deconvolution::fit",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(space, {0, 0}, {waveforms, m}),
      ToeplitzApply<T, XView, FitView>{columns, x, fit, m});
  Kokkos::parallel_for("kpl::deconvolution::check_fit",
                       Kokkos::RangePolicy<ExecutionSpace>(space, 0, waveforms),
                       MarkNonFiniteFits<FitView, StatusView>{fit, status});
}

}  // namespace impl
}  // namespace kpl
