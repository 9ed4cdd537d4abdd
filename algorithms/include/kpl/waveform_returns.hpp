// Returns (echoes) in deconvolved lidar waveforms: where `kpl deconv`'s
// non-negative solution x says a surface reflected the pulse.
//
// Definitions (README, "Returns"):
// - a run is a maximal range of consecutive samples j with x[j] > 0 (x is
//   exactly zero off the NNLS passive set, Luo & Duraiswami 2011, §3);
// - its energy E = sum of x over the run. With the pulse s normalised to unit
//   area (LVIS files), E is the echo's area in the received waveform's units
//   (counts x samples);
// - its sample is the centroid sum j x[j] / E plus the pulse's peak shift
//   argmax(s) - origin: x[j] puts the pulse's origin at sample j, so the echo
//   peaks that far later, and a return sits where its echo peaks in the
//   received waveform (fractional, 0-based);
// - its elevation is linear between the elevations of sample 0 and of a later
//   sample (LVIS: Z0 and Z<last>);
// - a run is a return when its echo peaks inside the received waveform
//   (0 <= sample <= m - 1: near the window's end x fits noise with the
//   pulse's leading edge alone, with echoes that would peak past the window)
//   and E > threshold x the energy noise alone gives one return:
//   sigma / ||s||_2, the least-squares standard deviation of one pulse's
//   amplitude under white noise of deviation sigma, estimated as
//   sigma = rnorm / sqrt(m) (the fit's residual). Both sides scale alike with
//   the waveform's and the pulse's units, so the choice does not depend on
//   them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace kpl {

// Where a pulse puts a return and how much noise one return's energy carries.
struct PulseShape {
  double peak_shift = 0;  // samples from x's index to its echo's peak
  double norm = 0;        // ||s||_2
};

// The shape of pulse s (length L) with origin c (kpl::PulseOrigin: 0 or L/2):
// the first maximum's index less c, and the Euclidean norm.
template <class T>
PulseShape pulse_shape(const T* pulse, std::int64_t length, std::int64_t origin) {
  std::int64_t peak = 0;
  double squares = 0;
  for (std::int64_t t = 0; t < length; ++t) {
    if (pulse[t] > pulse[peak]) peak = t;
    squares += double(pulse[t]) * double(pulse[t]);
  }
  return {double(peak - origin), std::sqrt(squares)};
}

// Elevation at sample 0 and at sample `at_sample` (> 0) of a waveform.
struct ElevationSpan {
  double first = 0, last = 0;
  double at_sample = 1;
  double at(double sample) const { return first + (last - first) * (sample / at_sample); }
};

struct ReturnsOptions {
  double threshold = 5;  // in units of one return's noise energy (see above)
};

// The returns of many waveforms: counts[w] of them for waveform w, their
// samples, elevations (NaN without an ElevationSpan) and energies in order.
struct WaveformReturns {
  std::vector<std::int64_t> counts;
  std::vector<double> sample, elevation, energy;
};

// Appends the returns of one waveform's solution x (m samples, residual norm
// rnorm) to `returns` and returns how many there were.
template <class T>
std::int64_t find_returns(const T* x, std::int64_t m, double rnorm, const PulseShape& pulse,
                          const ElevationSpan* elevation, const ReturnsOptions& options,
                          WaveformReturns& returns) {
  const double sigma = rnorm / std::sqrt(double(std::max<std::int64_t>(m, 1)));
  const double noise_energy = pulse.norm > 0 ? sigma / pulse.norm : 0;
  std::int64_t found = 0;
  for (std::int64_t j = 0; j < m;) {
    if (!(x[j] > T(0))) {
      ++j;
      continue;
    }
    double energy = 0, moment = 0;
    for (; j < m && x[j] > T(0); ++j) {
      energy += double(x[j]);
      moment += double(j) * double(x[j]);
    }
    const double sample = moment / energy + pulse.peak_shift;
    if (!(energy > options.threshold * noise_energy) || sample < 0 || sample > double(m - 1))
      continue;
    returns.sample.push_back(sample);
    returns.elevation.push_back(elevation ? elevation->at(sample)
                                          : std::numeric_limits<double>::quiet_NaN());
    returns.energy.push_back(energy);
    ++found;
  }
  returns.counts.push_back(found);
  return found;
}

}  // namespace kpl
