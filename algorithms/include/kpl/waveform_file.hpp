// The waveform files `kpl deconv` reads: which datasets hold the received
// waveforms, the transmitted pulses and the noise level, and how a block of
// shots is read from them ready to deconvolve.
//
// Layouts, recognised by their datasets:
// - kpl's own: /waveforms [W, m] and /pulse [L] or [W, L], used as they are;
// - NASA LVIS Level-1B (LVIS Data Structure 1.04, 1.05, 2.0.x): /RXWAVE
//   [W, m] and /TXWAVE [W, L] digitizer counts, /SIGMEAN [W] the mean noise
//   level of RXWAVE. A shot's waveform is RXWAVE - SIGMEAN; its pulse is
//   TXWAVE less its baseline (the mean of its first lvis_baseline_samples
//   samples, before the pulse), negative values set to zero, scaled to unit
//   area, so that a return's energy is in RXWAVE's counts x samples. Z0 and
//   Z<k> (elevations of RXWAVE's first sample and of sample k, the last one's
//   k = m - 1 where present) give the returns' elevations; SHOTNUMBER, LFID,
//   TIME, LON0/LAT0/Z0 and LON<k>/LAT<k>/Z<k> are copied to the output.
// WaveformDatasetNames maps the roles to other datasets in either layout
// (`kpl deconv --dataset waveforms=NAME,pulse=NAME,noise=NAME`); a file that
// is neither needs at least waveforms and pulse named, and is used as given
// (less its noise, if named). Integer and floating-point datasets are read
// alike (HDF5 converts to the chosen precision), chunked and compressed ones
// too, a block of rows at a time.
#pragma once

#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/waveform_returns.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kpl {

// Samples at the start of an LVIS TXWAVE that precede the pulse: their mean
// is the transmit channel's baseline.
constexpr std::int64_t lvis_baseline_samples = 8;

// Datasets named for the roles (empty: the layout's own).
struct WaveformDatasetNames {
  std::string waveforms, pulse, noise;
};

// "waveforms=/RX,pulse=/TX,noise=/N" (any of the three, in any order):
// std::invalid_argument naming what is wrong.
WaveformDatasetNames parse_waveform_dataset_names(const std::string& text);

enum class WaveformLayoutKind { kpl, lvis, named };
std::string to_string(WaveformLayoutKind kind);

// What a waveform file holds, checked (kpl::input_error naming the file and
// dataset otherwise).
struct WaveformFileLayout {
  WaveformLayoutKind kind = WaveformLayoutKind::kpl;
  std::string waveforms, pulse, noise;  // datasets; noise empty: none
  std::int64_t shots = 0, samples = 0, pulse_length = 0;
  bool pulse_per_shot = false;
  bool noise_per_shot = false;    // else one value (a scalar or [1] dataset)
  bool normalise_pulses = false;  // LVIS: baseline removed, unit area
  // Elevations of sample 0 and of sample elevation_sample (empty: none).
  std::string elevation_first, elevation_last;
  std::int64_t elevation_sample = 0;
  std::vector<std::string> copied;  // [W] datasets the output keeps
  bool has_elevations() const { return !elevation_first.empty(); }
  // One line: "LVIS L1B: /RXWAVE [W, m] ..." (also what several processes
  // compare to be sure they read the same input).
  std::string describe() const;
};

WaveformFileLayout find_waveform_layout(const hdf5::InputFile& input,
                                        const WaveformDatasetNames& names = {});

// Shots [first, first + count) ready to deconvolve, in host buffers the
// caller owns (pinned memory for a GPU, say): waveforms [>= count, m] less
// their noise; pulses [>= count, L] when each shot has its own (normalised in
// LVIS files), untouched otherwise; shapes[s] each pulse's PulseShape and
// spans[s] the shot's elevations when the layout has them. Non-finite values
// and LVIS pulses with nothing above their baseline are input_errors naming
// the file, dataset and row. `checked`: an earlier read checked these rows.
template <class T, class Matrix>
void read_waveform_rows(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                        std::int64_t first, std::int64_t count, const Matrix& waveforms,
                        const Matrix& pulses, std::int64_t origin, std::vector<PulseShape>& shapes,
                        std::vector<ElevationSpan>& spans, bool checked = false);

// The pulse shared by every shot (a pulse dataset [L]), normalised as the
// layout says.
template <class T>
hdf5::HostArray<T, 1> read_shared_pulse(const hdf5::InputFile& input,
                                        const WaveformFileLayout& layout);

namespace impl {
// The LVIS pulse of one shot in place: baseline removed, clipped at zero,
// unit area; false when nothing is left above the baseline.
template <class T>
bool normalise_lvis_pulse(T* pulse, std::int64_t length) {
  const std::int64_t baseline_samples = std::min(lvis_baseline_samples, length);
  double baseline = 0;
  for (std::int64_t t = 0; t < baseline_samples; ++t) baseline += double(pulse[t]);
  baseline /= double(baseline_samples);
  double area = 0;
  for (std::int64_t t = 0; t < length; ++t) {
    const double above = std::max(double(pulse[t]) - baseline, 0.0);
    pulse[t] = T(above);
    area += above;
  }
  if (!(area > 0) || !std::isfinite(area)) return false;
  for (std::int64_t t = 0; t < length; ++t) pulse[t] = T(double(pulse[t]) / area);
  return true;
}

[[noreturn]] void fail_flat_pulse(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                                  std::int64_t shot);
// The noise of rows [first, first + count) (one value repeated when the
// layout has a single one; none: zeros).
std::vector<double> read_noise_rows(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                                    std::int64_t first, std::int64_t count, bool checked);
std::vector<ElevationSpan> read_elevation_rows(const hdf5::InputFile& input,
                                               const WaveformFileLayout& layout, std::int64_t first,
                                               std::int64_t count);
}  // namespace impl

template <class T, class Matrix>
void read_waveform_rows(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                        std::int64_t first, std::int64_t count, const Matrix& waveforms,
                        const Matrix& pulses, std::int64_t origin, std::vector<PulseShape>& shapes,
                        std::vector<ElevationSpan>& spans, bool checked) {
  const auto rows = std::make_pair(std::size_t(0), std::size_t(count));
  const hdf5::ReadRequirements finite{true, false, checked};
  const auto received = Kokkos::subview(waveforms, rows, Kokkos::ALL);
  input.read_rows_into(layout.waveforms, std::size_t(first), received, finite);
  if (!layout.noise.empty()) {
    const auto noise = impl::read_noise_rows(input, layout, first, count, checked);
    for (std::int64_t s = 0; s < count; ++s)
      for (std::int64_t t = 0; t < layout.samples; ++t)
        received(s, t) = T(double(received(s, t)) - noise[s]);
  }
  shapes.clear();
  if (layout.pulse_per_shot) {
    const auto transmitted = Kokkos::subview(pulses, rows, Kokkos::ALL);
    input.read_rows_into(layout.pulse, std::size_t(first), transmitted, finite);
    for (std::int64_t s = 0; s < count; ++s) {
      T* pulse = &transmitted(s, 0);
      if (layout.normalise_pulses && !impl::normalise_lvis_pulse(pulse, layout.pulse_length))
        impl::fail_flat_pulse(input, layout, first + s);
      shapes.push_back(pulse_shape(pulse, layout.pulse_length, origin));
    }
  }
  spans = layout.has_elevations() ? impl::read_elevation_rows(input, layout, first, count)
                                  : std::vector<ElevationSpan>{};
}

template <class T>
hdf5::HostArray<T, 1> read_shared_pulse(const hdf5::InputFile& input,
                                        const WaveformFileLayout& layout) {
  auto pulse = input.read<T, 1>(layout.pulse, hdf5::ReadRequirements{true, false, false});
  if (layout.normalise_pulses && !impl::normalise_lvis_pulse(pulse.data(), layout.pulse_length))
    impl::fail_flat_pulse(input, layout, 0);
  return pulse;
}

}  // namespace kpl
