// Simulated LVIS-like inputs for `kpl deconv` (kpl/deconvolution.hpp):
// `kpl simulate deconv` and the generator behind it.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace kpl {

// `kpl simulate deconv`: LVIS-like waveforms (per waveform a Gaussian pulse
// 15-25 samples wide in a 25-sample window, 1-4 returns of random position and
// amplitude, Gaussian noise) written with the pulses and /x_true to output_path.
struct DeconvolutionSimulation {
  std::int64_t waveforms = 1000;
  std::int64_t samples = 432;
  std::uint64_t seed = 1;
  double noise = 0.01;
};
void simulate_deconvolution_file(const DeconvolutionSimulation& simulation,
                                 const std::string& output_path);

// The generator behind simulate_deconvolution_file, for benchmarks and tests:
// successive next(count) calls continue one random stream.
using HostMatrix = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;
struct SimulatedWaveforms {
  HostMatrix waveforms;  // [count, samples]
  HostMatrix pulses;     // [count, pulse_window]
  HostMatrix truth;      // [count, samples], the returns x_true
};
class WaveformSimulator {
 public:
  static constexpr std::int64_t pulse_window = 25;
  explicit WaveformSimulator(const DeconvolutionSimulation& simulation);  // checks the settings
  SimulatedWaveforms next(std::int64_t count);

 private:
  DeconvolutionSimulation simulation_;
  std::uint64_t state_;
};

}  // namespace kpl
