// `kpl deconv` (kpl::deconvolve_file): waveforms streamed through the memory
// budget in chunks, the chunks handed out over the processes of a group, each
// chunk's results written to its rows of the one output.
#include <kpl/deconvolution.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/nnls_file.hpp>
#include <kpl/process_group.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <iterator>
#include <memory>
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

// The shape as text, for require_same_input.
std::string describe(const InputShape& shape) {
  return "/waveforms [" + std::to_string(shape.waveforms) + ", " + std::to_string(shape.samples) +
         "], /pulse " + (shape.pulse_per_waveform ? "[W, " : "[") +
         std::to_string(shape.pulse_length) + "]";
}

// Memory on the host and the device of a run in chunks of `chunk`
// waveforms, and disk for the whole output, counted before anything is read.
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

// Every waveform and pulse of `block` finite, checked chunk by chunk before
// any is solved: a NaN in the last chunk fails the run before it starts,
// naming the dataset and the first bad index.
template <class T>
void require_finite_input(const hdf5::InputFile& input, const InputShape& shape, std::int64_t chunk,
                          const RowBlock& block) {
  const hdf5::ReadRequirements finite{true, false, false};
  if (!shape.pulse_per_waveform) input.read<T, 1>("/pulse", finite);
  for (std::int64_t first = block.first; first < block.first + block.count; first += chunk) {
    const std::int64_t count = std::min(chunk, block.first + block.count - first);
    input.read_rows<T, 2>("/waveforms", first, count, finite);
    if (shape.pulse_per_waveform) input.read_rows<T, 2>("/pulse", first, count, finite);
  }
}

// Waveforms per chunk: what the budget allows, and on several processes
// small enough that each takes several (impl::group_chunk); after the output
// and the resources are checked.
template <class T>
std::int64_t checked_chunk(const ProcessGroup& group, const hdf5::InputFile& input,
                           const InputShape& shape, const std::string& output_path,
                           const DeconvolutionFileOptions& options) {
  const std::int64_t m = shape.samples, L = shape.pulse_length;
  const std::int64_t per_waveform_bytes =
      deconvolution_bytes_per_waveform<T>(m, L, shape.pulse_per_waveform, options.deconvolution);
  if (options.memory_budget_bytes < per_waveform_bytes)
    throw std::invalid_argument("--memory-budget: " + std::to_string(options.memory_budget_bytes) +
                                " bytes is below what one waveform of " + std::to_string(m) +
                                " samples needs (" + std::to_string(per_waveform_bytes) +
                                " bytes)");
  const std::int64_t chunk = impl::group_chunk(
      group, shape.waveforms,
      std::min(shape.waveforms, options.memory_budget_bytes / per_waveform_bytes));
  hdf5::require_distinct(output_path, {input.path()});
  hdf5::require_writable_target(output_path);
  impl::require_process_resources(
      group, "kpl deconv on '" + input.path() + "'",
      deconvolution_needs<T>(shape, chunk, per_waveform_bytes, output_path));
  return chunk;
}

// The chunk size, agreed with the pre-flight, then every process checks its
// static block of waveforms for finiteness (agreed too).
template <class T>
std::int64_t plan_chunks(const ProcessGroup& group, const hdf5::InputFile& input,
                         const InputShape& shape, const std::string& output_path,
                         const DeconvolutionFileOptions& options) {
  const std::int64_t chunk =
      agreed(group, [&] { return checked_chunk<T>(group, input, shape, output_path, options); });
  agreed(group,
         [&] { require_finite_input<T>(input, shape, chunk, row_block(group, shape.waveforms)); });
  return chunk;
}

template <class T>
using DeviceMatrix =
    Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::DefaultExecutionSpace::memory_space>;

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
                 const DeviceMatrix<T>& fit, impl::ProcessTally& tally) {
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
  for (std::size_t w = 0; w < status.extent(0); ++w) ++tally.status_counts[status(w)];
  tally.items += solution.systems();
}

// What every chunk of one process's run uses.
template <class T>
struct ChunkContext {
  const hdf5::InputFile& input;
  hdf5::OutputFile& output;
  const InputShape& shape;
  const DeviceMatrix<T>& shared;  // the pulse, unless each waveform has its own
  const DeconvolutionFileOptions& options;
  bool recheck;  // several processes: see impl::require_finite_rows
  NnlsWorkspace<Kokkos::DefaultExecutionSpace, T> workspace;
  impl::ProcessTally tally;
};

// Reads waveforms [first, first + count) (and their pulses), deconvolves
// them and writes the results. Each waveform's solve depends on it alone
// (its own passive-cap retries included), not on the chunk it is in.
template <class T>
void solve_chunk(ChunkContext<T>& context, std::int64_t first, std::int64_t count) {
  using Space = Kokkos::DefaultExecutionSpace;
  const auto read = [&](const char* dataset) {
    const hdf5::ReadRequirements checked{true, false, true};  // by require_finite_input
    const auto rows = context.input.template read_rows<T, 2>(dataset, first, count, checked);
    if (context.recheck) impl::require_finite_rows(context.input, dataset, rows, first);
    return Kokkos::create_mirror_view_and_copy(Space::memory_space{}, rows);
  };
  const auto waveforms = read("/waveforms");
  const DeviceMatrix<T> pulses = context.shape.pulse_per_waveform ? read("/pulse") : context.shared;
  NnlsSolution<Space, T> solution(count, context.shape.samples);
  DeviceMatrix<T> fit(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::deconv::fit"), count,
                      context.shape.samples);
  Kokkos::Timer timer;
  deconvolve<Space, T>(Space{}, pulses, waveforms, solution, fit, context.options.deconvolution,
                       &context.workspace);
  Space{}.fence();
  context.tally.busy_seconds += timer.seconds();
  write_chunk<T>(context.output, first, solution, fit, context.tally);
  ++context.tally.chunks;
}

// The settings as attributes, rank 0's input path among them: every process
// writes the same values.
void write_settings(const ProcessGroup& group, hdf5::OutputFile& output,
                    const hdf5::InputFile& input, const InputShape& shape,
                    const DeconvolutionFileOptions& options, std::int64_t chunk) {
  std::string input_path = input.path();
  group.broadcast(input_path);
  // Adaptive by default: the cap starts small and may grow to m.
  impl::write_solver_settings(output, input_path, options.deconvolution.nnls,
                              options.single_precision, 3 * shape.samples, shape.samples);
  output.write_attribute("/", "pulse_origin", to_string(options.deconvolution.origin));
  output.write_attribute("/", "memory_budget_bytes", options.memory_budget_bytes);
  output.write_attribute("/", "waveforms_per_chunk", chunk);
}

// The chunks handed out over the group; the summary reduced over it.
template <class T>
DeconvolutionSummary solve_chunks(const ProcessGroup& group, ChunkContext<T>& context,
                                  std::int64_t chunk) {
  const std::int64_t W = context.shape.waveforms;
  Kokkos::Timer timer;
  const auto write_nothing = [&] {
    const std::int64_t m = context.shape.samples;
    write_chunk<T>(context.output, 0, NnlsSolution<Kokkos::DefaultExecutionSpace, T>(0, m),
                   DeviceMatrix<T>("kpl::deconv::no_rows", 0, m), context.tally);
  };
  impl::share_chunks(
      group, context.options.row_writes, (W + chunk - 1) / chunk,
      [&](std::int64_t c) { solve_chunk<T>(context, c * chunk, std::min(chunk, W - c * chunk)); },
      write_nothing);
  DeconvolutionSummary summary;
  summary.seconds = timer.seconds();
  group.max(&summary.seconds, 1);
  summary.balance = impl::reduce_tallies(group, context.tally);
  std::copy(std::begin(context.tally.status_counts), std::end(context.tally.status_counts),
            std::begin(summary.status_counts));
  summary.waveforms = W;
  summary.chunks = context.tally.chunks;
  summary.waveforms_per_chunk = chunk;
  return summary;
}

template <class T>
DeconvolutionSummary run(const ProcessGroup& group, const hdf5::InputFile& input,
                         const std::string& output_path, const DeconvolutionFileOptions& options) {
  const InputShape shape = agreed(group, [&] { return check_input(input); });
  agreed(group, [&] { impl::require_same_input(group, input.path(), describe(shape)); });
  const std::int64_t chunk = plan_chunks<T>(group, input, shape, output_path, options);
  DeviceMatrix<T> shared;
  if (!shape.pulse_per_waveform)
    shared = agreed(group, [&] { return shared_pulse<T>(input, shape.pulse_length); });
  const auto output = group.create_output(output_path, options.row_writes);
  agreed(group, [&] { create_outputs<T>(*output, shape); });
  ChunkContext<T> context{input, *output, shape, shared, options, !group.is_single(), {}, {}};
  const DeconvolutionSummary summary = solve_chunks<T>(group, context, chunk);
  agreed(group, [&] { write_settings(group, *output, input, shape, options, chunk); });
  agreed(group, [&] { output->commit(); });
  return summary;
}

}  // namespace deconvolution_detail

DeconvolutionSummary deconvolve_file(const ProcessGroup& group, const std::string& input_path,
                                     const std::string& output_path,
                                     const DeconvolutionFileOptions& options) {
  agreed(group, [&] {
    if (options.memory_budget_bytes <= 0)
      throw std::invalid_argument("--memory-budget: the memory budget must be positive");
  });
  const auto input = agreed(group, [&] { return std::make_unique<hdf5::InputFile>(input_path); });
  return options.single_precision
             ? deconvolution_detail::run<float>(group, *input, output_path, options)
             : deconvolution_detail::run<double>(group, *input, output_path, options);
}

DeconvolutionSummary deconvolve_file(const std::string& input_path, const std::string& output_path,
                                     const DeconvolutionFileOptions& options) {
  return deconvolve_file(single_process(), input_path, output_path, options);
}

}  // namespace kpl
