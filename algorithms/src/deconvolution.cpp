#include <kpl/config.hpp>
#include <kpl/deconvolution.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/impl/portable_random.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace kpl {

WaveformSimulator::WaveformSimulator(const DeconvolutionSimulation& simulation)
    : simulation_(simulation), state_(simulation.seed) {
  if (simulation.waveforms < 1) throw input_error("--waveforms must be at least 1");
  if (simulation.samples < 2 * pulse_window)
    throw input_error("--samples must be at least " + std::to_string(2 * pulse_window) +
                      " (twice the 25-sample pulse window)");
  if (!(simulation.noise >= 0) || !std::isfinite(simulation.noise))
    throw input_error("--noise must be a finite standard deviation >= 0");
}

SimulatedWaveforms WaveformSimulator::next(std::int64_t count) {
  const std::int64_t m = simulation_.samples, window = pulse_window;
  // One generator per block, seeded from the stream: blocks are reproducible.
  impl::PortableRandom random(state_);
  state_ = random.bits();
  SimulatedWaveforms block{HostMatrix("waveforms", count, m), HostMatrix("pulse", count, window),
                           HostMatrix("x_true", count, m)};
  for (std::int64_t w = 0; w < count; ++w) {
    // A Gaussian whose +-3 sigma spans `width` samples, centred in the
    // window, peak 1.
    const double sigma = random.uniform(15.0, 25.0) / 6.0;
    for (std::int64_t t = 0; t < window; ++t) {
      const double offset = (t - (window - 1) / 2.0) / sigma;
      block.pulses(w, t) = std::exp(-0.5 * offset * offset);
    }
    const auto return_count = random.between(1, 4);
    for (std::int64_t r = 0; r < return_count; ++r) {
      const auto position = random.between(0, m - window);
      block.truth(w, position) += random.uniform(0.2, 1.0);
    }
    // y = A x with the causal Toeplitz A (origin "start"), plus noise.
    for (std::int64_t i = 0; i < m; ++i) {
      double value = 0;
      for (std::int64_t t = 0; t < window && t <= i; ++t)
        value += block.pulses(w, t) * block.truth(w, i - t);
      block.waveforms(w, i) = random.normal(value, simulation_.noise);
    }
  }
  return block;
}

void simulate_deconvolution_file(const DeconvolutionSimulation& simulation,
                                 const std::string& output_path) {
  WaveformSimulator simulator(simulation);
  const std::int64_t W = simulation.waveforms, m = simulation.samples;
  const std::size_t window = WaveformSimulator::pulse_window;
  const std::int64_t block = 4096;  // waveforms generated and written at a time
  ResourceNeeds needs;
  needs.host_bytes = checked_bytes(
      {std::uint64_t(std::min(block, W)), std::uint64_t(2 * m + window)}, sizeof(double));
  needs.disk_bytes =
      checked_sum({checked_bytes({std::uint64_t(W), std::uint64_t(2 * m + window)}, sizeof(double)),
                   std::int64_t(1) << 16});
  needs.disk_directory = hdf5::directory_of(output_path);
  require_resources("kpl simulate deconv", needs);
  hdf5::OutputFile output(output_path);
  output.create_dataset<double>("/waveforms", {std::size_t(W), std::size_t(m)});
  output.create_dataset<double>("/pulse", {std::size_t(W), window});
  output.create_dataset<double>("/x_true", {std::size_t(W), std::size_t(m)});
  for (std::int64_t first = 0; first < W; first += block) {
    const auto simulated = simulator.next(std::min(block, W - first));
    output.write_rows("/waveforms", first, simulated.waveforms);
    output.write_rows("/pulse", first, simulated.pulses);
    output.write_rows("/x_true", first, simulated.truth);
  }
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "generator", "kpl simulate deconv");
  output.write_attribute("/", "seed", std::int64_t(simulation.seed));
  output.write_attribute("/", "noise_standard_deviation", simulation.noise);
  output.write_attribute("/", "pulse_origin", "start");
  output.write_attribute(
      "/", "description",
      "LVIS-like waveforms: per waveform a Gaussian transmit pulse (+-3 sigma spanning 15-25 "
      "samples, peak 1) in a 25-sample window, 1-4 returns of amplitude U(0.2, 1) at uniform "
      "positions, y = A x_true + N(0, noise^2), A[i, j] = pulse[i - j]");
  output.commit();
}

}  // namespace kpl
