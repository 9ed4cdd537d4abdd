// `kpl deconv` (kpl::deconvolve_file): waveforms streamed through the memory
// budget in chunks; on one process each chunk is read, solved and written
// while its neighbours are written and read (deconvolution_stages.hpp), on
// several the chunks are handed out over the group, each chunk's results
// written to its rows of the one output. Then the returns, gathered in shot
// order, and the settings.
#include "deconvolution_resume.hpp"
#include "deconvolution_stages.hpp"

#include <kpl/deconvolution.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/impl/overlapped_stages.hpp>
#include <kpl/nnls_file.hpp>
#include <kpl/process_group.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace kpl {
namespace deconvolution_detail {

// The output's chunk rows, with the shots per chunk (`chunk`) made a
// multiple of them, so that every chunk of shots writes whole HDF5 chunks.
OutputStorage plan_storage(std::int64_t shots, std::int64_t samples, std::size_t element_size,
                           int deflate_level, std::int64_t& chunk) {
  const std::int64_t preferred =
      power_of_two_at_most(std::max<std::int64_t>(1, chunk_bytes / (samples * element_size)));
  std::int64_t rows = preferred;
  if (chunk >= shots) {
    chunk = shots;
    rows = std::min(preferred, shots);
  } else if (chunk <= preferred) {
    rows = chunk;
  } else {
    chunk -= chunk % preferred;
  }
  std::int64_t vector_rows = rows;
  while (vector_rows * 2 <= shots && vector_rows * 2 * 8 <= chunk_bytes &&
         (chunk == shots || chunk % (vector_rows * 2) == 0))
    vector_rows *= 2;
  return {{std::size_t(rows), deflate_level}, {std::size_t(vector_rows), deflate_level}};
}

int resolved_deflate_level(const ProcessGroup& group, const DeconvolutionFileOptions& options) {
  if (options.deflate_level < -1 || options.deflate_level > 9)
    throw std::invalid_argument("the deflate level must be 0 (none) to 9, not " +
                                std::to_string(options.deflate_level));
  if (options.deflate_level < 0) return group.is_single() ? default_deflate_level : 0;
  if (options.deflate_level > 0 && !group.is_single())
    throw std::invalid_argument(
        "--compression deflate: not on several processes (parallel HDF5 1.10 writes compressed "
        "data only collectively); use --compression none");
  return options.deflate_level;
}

// Memory on the host and the device of a run in chunks of `chunk` shots, and
// disk for the whole output, counted before anything is read.
template <class T>
ResourceNeeds deconvolution_needs(const ProcessGroup& group, const WaveformFileLayout& layout,
                                  std::int64_t chunk, std::int64_t per_waveform_bytes,
                                  const std::string& output_path) {
  const auto count = [](std::int64_t a, std::int64_t b, std::size_t size = sizeof(T)) {
    return checked_bytes({std::uint64_t(a), std::uint64_t(b)}, size);
  };
  const std::int64_t W = layout.shots, m = layout.samples, L = layout.pulse_length;
  const std::int64_t buffers = group.is_single() ? overlapped_buffers : 1;
  const std::int64_t per_chunk = checked_sum(
      {count(chunk, 3 * m), count(chunk, layout.pulse_per_shot ? L : 0), count(chunk, 4)});
  const std::int64_t returns = count(W, expected_returns_per_shot, bytes_per_return);
  const std::int64_t copies = count(W, std::int64_t(layout.copied.size()), 8);
  ResourceNeeds needs;
  // The buffers and one chunk's compressed copy; on several processes the
  // returns, gathered at the end (one process appends them as it goes).
  needs.host_bytes =
      checked_sum({checked_bytes({std::uint64_t(buffers)}, per_chunk), count(chunk, 2 * m + 4),
                   group.is_single() ? 0 : checked_sum({3 * returns, count(W + 1, 1, 8)})});
  needs.device_bytes = checked_sum(
      {checked_bytes({std::uint64_t(chunk)}, std::uint64_t(per_waveform_bytes)), count(1, L)});
  // Compressed data is at most a little larger than the data (deflate's
  // stored blocks): a percent more is counted.
  const std::int64_t data =
      checked_sum({count(W, 2 * m + 2), count(W, 2, 4), returns, count(W + 1, 1, 8), copies});
  needs.disk_bytes = checked_sum({data, data / 100, std::int64_t(1) << 20});
  needs.disk_directory = hdf5::directory_of(output_path);
  return needs;
}

// Every value the run will read that could be bad, checked chunk by chunk
// before any is solved, so that a NaN in the last chunk (or a flat LVIS
// pulse) fails the run before it starts, naming the dataset and the row.
// Integer datasets are always finite: they are read only where a pulse must
// be checked.
template <class T>
void require_valid_input(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                         std::int64_t chunk, const RowBlock& block) {
  const hdf5::ReadRequirements finite{true, false, false};
  const bool check_waveforms = !input.holds_integers(layout.waveforms);
  const bool check_pulses =
      layout.pulse_per_shot && (layout.normalise_pulses || !input.holds_integers(layout.pulse));
  if (!layout.pulse_per_shot) read_shared_pulse<T>(input, layout);
  for (std::int64_t first = block.first; first < block.first + block.count; first += chunk) {
    const std::int64_t count = std::min(chunk, block.first + block.count - first);
    if (check_waveforms) input.read_rows<T, 2>(layout.waveforms, first, count, finite);
    impl::read_noise_rows(input, layout, first, count, false);
    if (!check_pulses) continue;
    auto pulses = input.read_rows<T, 2>(layout.pulse, first, count, finite);
    for (std::int64_t s = 0; layout.normalise_pulses && s < count; ++s)
      if (!impl::normalise_lvis_pulse(&pulses(s, 0), layout.pulse_length))
        impl::fail_flat_pulse(input, layout, first + s);
  }
}

// Shots per chunk: what the budget allows, small enough on several
// processes that each takes several (impl::group_chunk), a multiple of the
// output's chunk rows; after the output and the resources are checked.
template <class T>
std::int64_t checked_chunk(const ProcessGroup& group, const hdf5::InputFile& input,
                           const WaveformFileLayout& layout, const std::string& output_path,
                           const DeconvolutionFileOptions& options, OutputStorage& storage) {
  const std::int64_t m = layout.samples, L = layout.pulse_length;
  const std::int64_t per_waveform_bytes =
      deconvolution_bytes_per_waveform<T>(m, L, layout.pulse_per_shot, options.deconvolution);
  if (options.memory_budget_bytes < per_waveform_bytes)
    throw std::invalid_argument("--memory-budget: " + std::to_string(options.memory_budget_bytes) +
                                " bytes is below what one waveform of " + std::to_string(m) +
                                " samples needs (" + std::to_string(per_waveform_bytes) +
                                " bytes)");
  std::int64_t chunk =
      impl::group_chunk(group, layout.shots,
                        std::min(layout.shots, options.memory_budget_bytes / per_waveform_bytes));
  storage = plan_storage(layout.shots, m, sizeof(T), resolved_deflate_level(group, options), chunk);
  hdf5::require_distinct(output_path, {input.path()});
  hdf5::require_writable_target(output_path);
  impl::require_process_resources(
      group, "kpl deconv on '" + input.path() + "'",
      deconvolution_needs<T>(group, layout, chunk, per_waveform_bytes, output_path));
  return chunk;
}

// The chunk size and storage, agreed with the pre-flight, then every process
// checks its static block of shots (agreed too).
template <class T>
std::int64_t plan_chunks(const ProcessGroup& group, const hdf5::InputFile& input,
                         const WaveformFileLayout& layout, const std::string& output_path,
                         const DeconvolutionFileOptions& options, OutputStorage& storage) {
  const std::int64_t chunk = agreed(
      group, [&] { return checked_chunk<T>(group, input, layout, output_path, options, storage); });
  agreed(group,
         [&] { require_valid_input<T>(input, layout, chunk, row_block(group, layout.shots)); });
  return chunk;
}

template <class T>
void create_outputs(hdf5::OutputFile& output, const hdf5::InputFile& input,
                    const WaveformFileLayout& layout, const OutputStorage& storage) {
  const std::size_t W = layout.shots, m = layout.samples;
  output.create_dataset<T>("/x", {W, m}, storage.matrices);
  output.create_dataset<T>("/fit", {W, m}, storage.matrices);
  output.create_dataset<T>("/rnorm", {W}, storage.vectors);
  output.create_dataset<std::int32_t>("/iterations", {W}, storage.vectors);
  output.create_dataset<std::int32_t>("/status", {W}, storage.vectors);
  output.create_dataset<T>("/kkt_residual", {W}, storage.vectors);
  // The shot identity and geolocation, as the input has them (rank 0's:
  // every process read the same file, require_same_input).
  for (const auto& dataset : layout.copied)
    output.copy_dataset(input, dataset, storage.vectors, compression_threads());
}

// The settings as attributes, rank 0's input path among them: every process
// writes the same values.
void write_settings(const ProcessGroup& group, hdf5::OutputFile& output,
                    const hdf5::InputFile& input, const WaveformFileLayout& layout,
                    const DeconvolutionFileOptions& options, std::int64_t chunk,
                    const OutputStorage& storage) {
  std::string input_path = input.path();
  group.broadcast(input_path);
  // Adaptive by default: the cap starts small and may grow to m.
  impl::write_solver_settings(output, input_path, options.deconvolution.nnls,
                              options.single_precision, 3 * layout.samples, layout.samples);
  output.write_attribute("/", "layout", to_string(layout.kind));
  output.write_attribute("/", "datasets", layout.describe());
  output.write_attribute("/", "pulse_origin", to_string(options.deconvolution.origin));
  output.write_attribute("/", "memory_budget_bytes", options.memory_budget_bytes);
  output.write_attribute("/", "waveforms_per_chunk", chunk);
  output.write_attribute("/", "deflate_level", std::int64_t(storage.matrices.deflate_level));
  output.write_attribute("/", "return_threshold", options.returns.threshold);
}

// ---------------------------------------------------------------- the run

// The chunks from `first_chunk` on: overlapped on one process, handed out
// over several.
template <class T>
void solve_chunks(const ProcessGroup& group, ChunkContext<T>& context, std::int64_t first_chunk) {
  const std::int64_t W = context.layout.shots;
  const std::int64_t chunks = (W + context.chunk - 1) / context.chunk;
  if (group.is_single()) {
    std::vector<ChunkBuffers<T>> buffers;
    const std::int64_t in_flight = std::min(overlapped_buffers, chunks - first_chunk);
    for (std::int64_t b = 0; b < in_flight; ++b)
      buffers.emplace_back(context.chunk, context.layout);
    impl::run_overlapped(
        buffers, chunks - first_chunk,
        [&](ChunkBuffers<T>& chunk, std::int64_t item) {
          read_chunk(context, chunk, first_chunk + item);
        },
        [&](ChunkBuffers<T>& chunk) { solve_chunk(context, chunk); },
        [&](ChunkBuffers<T>& chunk) { write_chunk(context, chunk); });
    return;
  }
  ChunkBuffers<T> buffers(context.chunk, context.layout);
  const auto write_nothing = [&] {
    ChunkBuffers<T> none(0, context.layout);
    write_plain(context, none);
  };
  impl::share_chunks(
      group, context.options.row_writes, chunks,
      [&](std::int64_t c) {
        read_chunk(context, buffers, c);
        solve_chunk(context, buffers);
        write_chunk(context, buffers);
      },
      write_nothing);
}

template <class T>
DeconvolutionSummary summarise(const ProcessGroup& group, ChunkContext<T>& context, double seconds,
                               std::int64_t resumed) {
  DeconvolutionSummary summary;
  summary.seconds = seconds;
  group.max(&summary.seconds, 1);
  auto& phases = context.phases;
  double* times[] = {&phases.setup,  &phases.read,  &phases.solve,
                     &phases.solver, &phases.write, &phases.finish};
  for (double* time : times) group.max(time, 1);
  summary.phases = phases;
  summary.balance = impl::reduce_tallies(group, context.tally);
  std::copy(std::begin(context.tally.status_counts), std::end(context.tally.status_counts),
            std::begin(summary.status_counts));
  summary.waveforms = context.layout.shots;
  summary.chunks = context.tally.chunks;
  summary.waveforms_per_chunk = context.chunk;
  summary.resumed_waveforms = resumed;
  summary.layout = to_string(context.layout.kind);
  return summary;
}

// The output: a new one, or on --resume the partial file of an interrupted
// run of the same signature (with how many chunks it holds).
std::unique_ptr<hdf5::OutputFile> open_output(const ProcessGroup& group,
                                              const std::string& output_path,
                                              const DeconvolutionFileOptions& options,
                                              const ResumePoint& resume) {
  if (!group.is_single()) return group.create_output(output_path, options.row_writes);
  const hdf5::OutputOptions keep{true};
  if (!resume.partial.empty())
    return hdf5::OutputFile::resume_partial(output_path, resume.partial, keep);
  return std::make_unique<hdf5::OutputFile>(output_path, keep);
}

// The pulse every shot shares, on the device as [1, L], and its shape.
template <class T>
DeviceMatrix<T> shared_pulse(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                             const DeconvolutionFileOptions& options, PulseShape& shape) {
  const auto pulse = read_shared_pulse<T>(input, layout);
  DeviceMatrix<T> device("kpl::deconv::pulse", 1, layout.pulse_length);
  Kokkos::deep_copy(Kokkos::subview(device, 0, Kokkos::ALL),
                    Kokkos::View<const T*, Kokkos::HostSpace>(pulse));
  shape = pulse_shape(pulse.data(), layout.pulse_length,
                      origin_sample(options.deconvolution.origin, layout.pulse_length));
  return device;
}

// The output, new (its datasets created) or resumed (its returns cut back
// to what its last complete chunk stored), as context.output.
template <class T>
std::unique_ptr<hdf5::OutputFile> prepared_output(const ProcessGroup& group,
                                                  ChunkContext<T>& context,
                                                  const std::string& output_path,
                                                  const ResumePoint& resume,
                                                  const std::string& signature) {
  const auto& layout = context.layout;
  auto output =
      agreed(group, [&] { return open_output(group, output_path, context.options, resume); });
  context.output = output.get();
  if (!resume.partial.empty()) {
    cut_returns(*output, layout.has_elevations(), context.returns_stored);
    return output;
  }
  agreed(group, [&] {
    create_outputs<T>(*output, context.input, layout, context.storage);
    if (!group.is_single()) return;
    create_returns(*output, layout, context.storage);
    output->write_attribute("/", "resume_signature", signature);
    for (const char* counter :
         {chunks_written_attribute, returns_written_attribute, returns_stored_attribute})
      output->write_attribute("/", counter, std::int64_t(0));
    output->flush();  // a crash from here on leaves a file a resume can read
  });
  return output;
}

// The returns stored (one process: the last of them; several: all, gathered),
// the settings, and the output committed. Returns how many returns there are.
template <class T>
std::int64_t finish_output(const ProcessGroup& group, ChunkContext<T>& context,
                           hdf5::OutputFile& output) {
  const auto& layout = context.layout;
  std::int64_t returns = context.returns_written;
  agreed(group, [&] {
    if (context.in_order) {
      store_pending_returns(context, /*all=*/true);  // a resume after the last chunk
      finish_returns(output);
    } else {
      const auto gathered = gather_returns(group, context);
      returns = gathered.offsets.back();
      write_returns(output, gathered, layout.has_elevations(), context.storage);
    }
    describe_returns(output, layout.has_elevations());
    write_settings(group, output, context.input, layout, context.options, context.chunk,
                   context.storage);
    output.commit();
  });
  return returns;
}

template <class T>
DeconvolutionSummary run(const ProcessGroup& group, const hdf5::InputFile& input,
                         const std::string& output_path, const DeconvolutionFileOptions& options) {
  Kokkos::Timer phase;
  const WaveformFileLayout layout =
      agreed(group, [&] { return find_waveform_layout(input, options.datasets); });
  agreed(group, [&] { impl::require_same_input(group, input.path(), layout.describe()); });
  OutputStorage storage;
  const std::int64_t chunk = plan_chunks<T>(group, input, layout, output_path, options, storage);
  DeviceMatrix<T> shared;
  PulseShape shared_shape;
  if (!layout.pulse_per_shot)
    agreed(group, [&] { shared = shared_pulse<T>(input, layout, options, shared_shape); });
  const std::string signature = run_signature<T>(input, layout, options, chunk, storage);
  const ResumePoint resume = group.is_single() && options.resume
                                 ? find_resume_point(output_path, signature, options)
                                 : ResumePoint{};
  // Partial files of earlier runs go (find_resume_point removed all but the
  // one it chose).
  if (group.is_single() && !options.resume) hdf5::remove_stale_partials(output_path);
  ChunkContext<T> context(input, layout, options, storage, chunk, shared, shared_shape);
  context.recheck = !group.is_single();
  context.compression_threads = compression_threads();
  context.in_order = group.is_single();
  context.returns_storage = returns_storage(layout, storage);
  if (!resume.partial.empty()) recover_chunks(context, resume.partial, resume.chunks);
  const auto output = prepared_output(group, context, output_path, resume, signature);
  context.phases.setup = phase.seconds();
  Kokkos::Timer solving;
  solve_chunks<T>(group, context, resume.chunks);
  const double seconds = solving.seconds();
  phase.reset();
  const std::int64_t returns = finish_output(group, context, *output);
  context.phases.finish = phase.seconds();
  auto summary = summarise(group, context, seconds, std::min(resume.chunks * chunk, layout.shots));
  summary.returns = returns;
  return summary;
}

}  // namespace deconvolution_detail

DeconvolutionSummary deconvolve_file(const ProcessGroup& group, const std::string& input_path,
                                     const std::string& output_path,
                                     const DeconvolutionFileOptions& options) {
  agreed(group, [&] {
    if (options.memory_budget_bytes <= 0)
      throw std::invalid_argument("--memory-budget: the memory budget must be positive");
    if (options.resume && !group.is_single())
      throw std::invalid_argument("--resume: not on several processes (one process only)");
    if (!(options.returns.threshold >= 0) || !std::isfinite(options.returns.threshold))
      throw std::invalid_argument("--return-threshold: must be a finite number >= 0");
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
