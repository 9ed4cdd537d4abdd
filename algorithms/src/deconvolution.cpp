#include <kpl/config.hpp>
#include <kpl/deconvolution.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/nnls_file.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace kpl {
namespace deconvolution_detail {

struct InputShape {
  std::int64_t waveforms, samples, pulse_length;
  bool pulse_per_waveform;
};

InputShape check_input(const hdf5::InputFile& input) {
  const std::string where = "'" + input.path() + "': ";
  // (shape() says what is wrong: missing, a group, virtual, ...)
  const auto pulse = input.shape("/pulse");
  const auto waveforms = input.shape("/waveforms");
  if (waveforms.size() != 2)
    throw input_error(where + "dataset /waveforms must be [waveforms, samples], not of rank " +
                      std::to_string(waveforms.size()));
  if (pulse.size() != 1 && pulse.size() != 2)
    throw input_error(where + "dataset /pulse must be [L] or [waveforms, L], not of rank " +
                      std::to_string(pulse.size()));
  InputShape shape{std::int64_t(waveforms[0]), std::int64_t(waveforms[1]),
                   std::int64_t(pulse.back()), pulse.size() == 2};
  if (shape.waveforms == 0 || shape.samples == 0)
    throw input_error(where + "dataset /waveforms is empty");
  if (shape.pulse_length == 0) throw input_error(where + "dataset /pulse is empty");
  if (shape.pulse_per_waveform) hdf5::require_matching_extent(input, "/pulse", 0, "/waveforms", 0);
  if (shape.pulse_length > shape.samples)
    throw input_error(where + "the pulse (" + std::to_string(shape.pulse_length) +
                      " samples) is longer than the waveforms (" + std::to_string(shape.samples) +
                      " samples)");
  return shape;
}

// Memory on the host and the device, and disk for the output, of a run in
// chunks of `chunk` waveforms, counted before anything is read.
template <class T>
ResourceNeeds deconvolution_needs(const InputShape& shape, std::int64_t chunk,
                                  std::int64_t per_waveform_bytes, const std::string& output_path) {
  const auto count = [](std::int64_t a, std::int64_t b) {
    return checked_bytes({std::uint64_t(a), std::uint64_t(b)}, sizeof(T));
  };
  const std::int64_t m = shape.samples, L = shape.pulse_length;
  ResourceNeeds needs;
  // Per chunk: waveforms and pulses read, x and fit copied back.
  needs.host_bytes = checked_sum(
      {count(chunk, m), count(chunk, L), count(chunk, 2 * m), count(chunk, 4), count(1, L)});
  needs.device_bytes = checked_sum(
      {checked_bytes({std::uint64_t(chunk)}, std::uint64_t(per_waveform_bytes)), count(1, L)});
  needs.disk_bytes =
      checked_sum({count(shape.waveforms, 2 * m + 2),
                   checked_bytes({std::uint64_t(shape.waveforms)}, 8), std::int64_t(1) << 16});
  needs.disk_directory = hdf5::directory_of(output_path);
  return needs;
}

// Every waveform and pulse finite, checked chunk by chunk before any is
// solved: a NaN in the last chunk fails the run before it starts, naming
// the dataset and the first bad index.
template <class T>
void require_finite_input(const hdf5::InputFile& input, const InputShape& shape,
                          std::int64_t chunk) {
  const hdf5::ReadRequirements finite{true, false, false};
  if (!shape.pulse_per_waveform) input.read<T, 1>("/pulse", finite);
  for (std::int64_t first = 0; first < shape.waveforms; first += chunk) {
    const std::int64_t count = std::min(chunk, shape.waveforms - first);
    input.read_rows<T, 2>("/waveforms", first, count, finite);
    if (shape.pulse_per_waveform) input.read_rows<T, 2>("/pulse", first, count, finite);
  }
}

// The chunk size the budget allows, after the output and the resources are
// checked and every input value is known finite.
template <class T>
std::int64_t plan_chunks(const hdf5::InputFile& input, const InputShape& shape,
                         const std::string& output_path, const DeconvolutionFileOptions& options) {
  const std::int64_t m = shape.samples, L = shape.pulse_length;
  const std::int64_t per_waveform_bytes =
      deconvolution_bytes_per_waveform<T>(m, L, shape.pulse_per_waveform, options.deconvolution);
  if (options.memory_budget_bytes < per_waveform_bytes)
    throw std::invalid_argument("--memory-budget: " + std::to_string(options.memory_budget_bytes) +
                                " bytes is below what one waveform of " + std::to_string(m) +
                                " samples needs (" + std::to_string(per_waveform_bytes) +
                                " bytes)");
  const std::int64_t chunk =
      std::min(shape.waveforms, options.memory_budget_bytes / per_waveform_bytes);
  hdf5::require_distinct(output_path, {input.path()});
  hdf5::require_writable_target(output_path);
  require_resources("kpl deconv on '" + input.path() + "'",
                    deconvolution_needs<T>(shape, chunk, per_waveform_bytes, output_path));
  require_finite_input<T>(input, shape, chunk);
  return chunk;
}

template <class T>
using DeviceMatrix = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::DefaultExecutionSpace::memory_space>;

// The pulse shared by all waveforms, as a [1, L] device matrix.
template <class T>
DeviceMatrix<T> shared_pulse(const hdf5::InputFile& input, std::int64_t L) {
  const auto pulse = input.read<T, 1>("/pulse", hdf5::ReadRequirements{true, false, false});
  DeviceMatrix<T> device("kpl::deconv::pulse", 1, L);
  auto host = Kokkos::create_mirror_view(device);
  for (std::int64_t t = 0; t < L; ++t) host(0, t) = pulse(t);
  Kokkos::deep_copy(device, host);
  return device;
}

template <class T>
void create_outputs(hdf5::OutputFile& output, const InputShape& shape) {
  const std::size_t W = shape.waveforms, m = shape.samples;
  output.create_dataset<T>("/x", {W, m});
  output.create_dataset<T>("/fit", {W, m});
  output.create_dataset<T>("/rnorm", {W});
  output.create_dataset<std::int32_t>("/iterations", {W});
  output.create_dataset<std::int32_t>("/status", {W});
  output.create_dataset<T>("/kkt_residual", {W});
}

// Writes one chunk's results at rows [first, first + count) and counts its
// statuses.
template <class T>
void write_chunk(hdf5::OutputFile& output, std::int64_t first,
                 const NnlsSolution<Kokkos::DefaultExecutionSpace, T>& solution,
                 const DeviceMatrix<T>& fit, DeconvolutionSummary& summary) {
  const auto host = [](const auto& view) {
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, view);
  };
  const auto status = host(solution.status);
  output.write_rows("/x", first, host(solution.x));
  output.write_rows("/fit", first, host(fit));
  output.write_rows("/rnorm", first, host(solution.residual_norm));
  output.write_rows("/iterations", first, host(solution.iterations));
  output.write_rows("/status", first, status);
  output.write_rows("/kkt_residual", first, host(solution.kkt_residual));
  for (std::size_t w = 0; w < status.extent(0); ++w) ++summary.status_counts[status(w)];
  ++summary.chunks;
}

// Reads waveforms [first, first + count) (and their pulses), deconvolves
// them and writes the results.
template <class T>
void solve_chunk(const hdf5::InputFile& input, hdf5::OutputFile& output, const InputShape& shape,
                 const DeviceMatrix<T>& shared, std::int64_t first, std::int64_t count,
                 const DeconvolutionFileOptions& options,
                 NnlsWorkspace<Kokkos::DefaultExecutionSpace, T>& workspace,
                 DeconvolutionSummary& summary) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Memory = Space::memory_space;
  const hdf5::ReadRequirements checked{true, false, true};  // by require_finite_input
  const auto waveforms = Kokkos::create_mirror_view_and_copy(
      Memory{}, input.read_rows<T, 2>("/waveforms", first, count, checked));
  DeviceMatrix<T> pulses = shared;
  if (shape.pulse_per_waveform)
    pulses = Kokkos::create_mirror_view_and_copy(
        Memory{}, input.read_rows<T, 2>("/pulse", first, count, checked));
  NnlsSolution<Space, T> solution(count, shape.samples);
  DeviceMatrix<T> fit(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::deconv::fit"), count,
                      shape.samples);
  deconvolve<Space, T>(Space{}, pulses, waveforms, solution, fit, options.deconvolution,
                       &workspace);
  write_chunk<T>(output, first, solution, fit, summary);
}

template <class T>
DeconvolutionSummary run(const hdf5::InputFile& input, const std::string& output_path,
                         const DeconvolutionFileOptions& options) {
  const InputShape shape = check_input(input);
  DeconvolutionSummary summary;
  summary.waveforms = shape.waveforms;
  summary.waveforms_per_chunk = plan_chunks<T>(input, shape, output_path, options);
  DeviceMatrix<T> shared;
  if (!shape.pulse_per_waveform) shared = shared_pulse<T>(input, shape.pulse_length);
  hdf5::OutputFile output(output_path);
  create_outputs<T>(output, shape);
  NnlsWorkspace<Kokkos::DefaultExecutionSpace, T> workspace;
  Kokkos::Timer timer;
  for (std::int64_t first = 0; first < shape.waveforms; first += summary.waveforms_per_chunk)
    solve_chunk<T>(input, output, shape, shared, first,
                   std::min(summary.waveforms_per_chunk, shape.waveforms - first), options,
                   workspace, summary);
  summary.seconds = timer.seconds();
  // Adaptive by default: the cap starts small and may grow to m.
  impl::write_solver_settings(output, input.path(), options.deconvolution.nnls,
                              options.single_precision, 3 * shape.samples, shape.samples);
  output.write_attribute("/", "pulse_origin", to_string(options.deconvolution.origin));
  output.write_attribute("/", "memory_budget_bytes", options.memory_budget_bytes);
  output.write_attribute("/", "waveforms_per_chunk", summary.waveforms_per_chunk);
  output.commit();
  return summary;
}

}  // namespace deconvolution_detail

DeconvolutionSummary deconvolve_file(const std::string& input_path, const std::string& output_path,
                                     const DeconvolutionFileOptions& options) {
  if (options.memory_budget_bytes <= 0)
    throw std::invalid_argument("--memory-budget: the memory budget must be positive");
  const hdf5::InputFile input(input_path);
  return options.single_precision ? deconvolution_detail::run<float>(input, output_path, options)
                                  : deconvolution_detail::run<double>(input, output_path, options);
}

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
  std::mt19937_64 generator(state_);
  state_ = generator();
  std::uniform_real_distribution<double> width(15.0, 25.0), amplitude(0.2, 1.0);
  std::uniform_int_distribution<int> returns(1, 4);
  std::uniform_int_distribution<std::int64_t> position(0, m - window);
  std::normal_distribution<double> noise(0.0, 1.0);
  SimulatedWaveforms block{HostMatrix("waveforms", count, m), HostMatrix("pulse", count, window),
                           HostMatrix("x_true", count, m)};
  for (std::int64_t w = 0; w < count; ++w) {
    // A Gaussian whose +-3 sigma spans `width` samples, centred in the
    // window, peak 1.
    const double sigma = width(generator) / 6.0;
    for (std::int64_t t = 0; t < window; ++t) {
      const double offset = (t - (window - 1) / 2.0) / sigma;
      block.pulses(w, t) = std::exp(-0.5 * offset * offset);
    }
    const int return_count = returns(generator);
    for (int r = 0; r < return_count; ++r)
      block.truth(w, position(generator)) += amplitude(generator);
    // y = A x with the causal Toeplitz A (origin "start"), plus noise.
    for (std::int64_t i = 0; i < m; ++i) {
      double value = 0;
      for (std::int64_t t = 0; t < window && t <= i; ++t)
        value += block.pulses(w, t) * block.truth(w, i - t);
      block.waveforms(w, i) = value + simulation_.noise * noise(generator);
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
