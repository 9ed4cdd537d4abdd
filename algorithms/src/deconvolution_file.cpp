// `kpl deconv` (kpl::deconvolve_file): waveforms streamed through the memory
// budget in chunks; on one process each chunk is read, solved and written
// while its neighbours are written and read (deconvolution_stages.hpp), on
// several the chunks are handed out over the group, each chunk's results
// written to its rows of the one output. Then the returns, gathered in shot
// order, and the settings.
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

// Buffers in flight on one process: one being read, one solved, one written.
constexpr std::int64_t overlapped_buffers = 3;
// The returns per shot the pre-flight counts on (LVIS: ground and a few
// canopy layers); more are held in memory and written all the same.
constexpr std::int64_t expected_returns_per_shot = 4;
constexpr std::int64_t bytes_per_return = 3 * sizeof(double);
// Chunks of at most this many bytes: HDF5 readers cache a mebibyte of
// chunks per dataset by default, so reading one shot decompresses its chunk
// once, not once per shot.
constexpr std::int64_t chunk_bytes = std::int64_t(1) << 20;

// Threads that compress output chunks: the cores but the reader's and the
// solver's (the writer thread compresses too).
int compression_threads() { return std::max(1, int(std::thread::hardware_concurrency()) - 2); }

std::int64_t power_of_two_at_most(std::int64_t value) {
  std::int64_t power = 1;
  while (power * 2 <= value) power *= 2;
  return power;
}

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
  std::int64_t chunk = impl::group_chunk(
      group, layout.shots,
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
  const std::int64_t chunk = agreed(group, [&] {
    return checked_chunk<T>(group, input, layout, output_path, options, storage);
  });
  agreed(group,
         [&] { require_valid_input<T>(input, layout, chunk, row_block(group, layout.shots)); });
  return chunk;
}

// What a resumed run must share with the run it goes on from: the input
// (path, size, modification time, layout) and every option that shapes the
// output.
template <class T>
std::string run_signature(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                          const DeconvolutionFileOptions& options, std::int64_t chunk,
                          const OutputStorage& storage) {
  struct stat about {};
  ::stat(input.path().c_str(), &about);
  std::error_code ignored;
  const auto& nnls = options.deconvolution.nnls;
  std::ostringstream text;
  text.precision(17);
  text << std::filesystem::absolute(input.path(), ignored).string() << "|" << about.st_size << "|"
       << about.st_mtim.tv_sec << "." << about.st_mtim.tv_nsec << "|" << layout.describe() << "|"
       << sizeof(T) << "|" << to_string(options.deconvolution.origin) << "|"
       << options.deconvolution.first_passive_cap << "|" << nnls.max_iterations << "|"
       << nnls.max_passive << "|" << nnls.tolerance << "|" << int(nnls.orthogonalization) << "|"
       << int(nnls.gradient) << "|" << options.returns.threshold << "|" << chunk << "|"
       << storage.matrices.chunk_rows << "|" << storage.vectors.chunk_rows << "|"
       << storage.matrices.deflate_level;
  return text.str();
}

// Chunks of returns: at most a mebibyte of doubles.
constexpr std::size_t returns_chunk_rows = std::size_t(1) << 17;

// The returns' datasets' chunks: for the returns a run expects, from 1024 up
// to a mebibyte of doubles.
hdf5::Storage returns_storage(const WaveformFileLayout& layout, const OutputStorage& storage) {
  const std::size_t expected = std::size_t(layout.shots * expected_returns_per_shot);
  const std::size_t rows = std::size_t(power_of_two_at_most(
      std::int64_t(std::clamp<std::size_t>(expected, 1024, returns_chunk_rows))));
  return {rows, storage.vectors.deflate_level, true};
}

// One process appends each chunk's returns (append_returns).
void create_returns(hdf5::OutputFile& output, const WaveformFileLayout& layout,
                    const OutputStorage& storage) {
  output.create_dataset<std::int64_t>("/returns/offsets", {std::size_t(layout.shots) + 1},
                                      offsets_storage(layout, storage));
  const hdf5::Storage appended = returns_storage(layout, storage);
  output.create_dataset<double>("/returns/sample", {0}, appended);
  if (layout.has_elevations()) output.create_dataset<double>("/returns/elevation", {0}, appended);
  output.create_dataset<double>("/returns/energy", {0}, appended);
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

// ---------------------------------------------------------------- returns

// Every process's returns in shot order on every process (sums in which the
// other processes add zeros, so the values are exact).
struct GatheredReturns {
  std::vector<std::int64_t> offsets;  // [W + 1]
  std::vector<double> sample, elevation, energy;
};

template <class T>
GatheredReturns gather_returns(const ProcessGroup& group, const ChunkContext<T>& context) {
  const std::int64_t W = context.layout.shots;
  GatheredReturns gathered;
  gathered.offsets.assign(std::size_t(W + 1), 0);
  for (const auto& [first, returns] : context.returns)
    std::copy(returns.counts.begin(), returns.counts.end(), gathered.offsets.begin() + first + 1);
  group.sum(gathered.offsets.data() + 1, W);
  for (std::int64_t w = 0; w < W; ++w) gathered.offsets[w + 1] += gathered.offsets[w];
  const std::size_t total = std::size_t(gathered.offsets[W]);
  for (auto* values : {&gathered.sample, &gathered.elevation, &gathered.energy})
    values->assign(total, 0.0);
  for (const auto& [first, returns] : context.returns) {
    const std::size_t at = std::size_t(gathered.offsets[first]);
    std::copy(returns.sample.begin(), returns.sample.end(), gathered.sample.begin() + at);
    std::copy(returns.elevation.begin(), returns.elevation.end(), gathered.elevation.begin() + at);
    std::copy(returns.energy.begin(), returns.energy.end(), gathered.energy.begin() + at);
  }
  for (auto* values : {&gathered.sample, &gathered.elevation, &gathered.energy})
    group.sum(values->data(), std::int64_t(total));
  return gathered;
}

void write_returns(hdf5::OutputFile& output, const GatheredReturns& returns, bool elevations,
                   const OutputStorage& storage) {
  const auto stored = [&](std::size_t rows) {
    return hdf5::Storage{std::min(rows, returns_chunk_rows), storage.vectors.deflate_level};
  };
  output.write("/returns/offsets", host_vector(returns.offsets), stored(returns.offsets.size()));
  output.write("/returns/sample", host_vector(returns.sample), stored(returns.sample.size()));
  if (elevations)
    output.write("/returns/elevation", host_vector(returns.elevation),
                 stored(returns.sample.size()));
  output.write("/returns/energy", host_vector(returns.energy), stored(returns.sample.size()));
}

// What the returns' datasets mean, beside them.
void describe_returns(hdf5::OutputFile& output, bool elevations) {
  output.write_attribute("/returns/offsets", "meaning",
                         "shot w's returns are rows offsets[w] .. offsets[w + 1] - 1 of sample, "
                         "elevation and energy");
  output.write_attribute("/returns/sample", "meaning",
                         "where the return's echo peaks in the received waveform: the centroid "
                         "of a run of x > 0 plus the pulse's peak less its origin (0-based, in "
                         "samples)");
  output.write_attribute("/returns/energy", "meaning",
                         "sum of x over the run (with a unit-area pulse, as for LVIS: the echo's "
                         "area, counts x samples)");
  if (elevations)
    output.write_attribute("/returns/elevation", "meaning",
                           "linear between the elevations of the waveform's sample 0 and its "
                           "last elevation sample, at the return's sample (metres)");
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

// One process: the attributes only a resume needs removed.
void finish_returns(hdf5::OutputFile& output) {
  for (const char* name :
       {"resume_signature", chunks_written_attribute, returns_written_attribute,
        returns_stored_attribute})
    output.remove_attribute("/", name);
}

// ---------------------------------------------------------------- resume

// The returns of shots [.., shots) past the first returns_stored, found
// again: from the shot whose returns the stored ones stop in.
template <class T>
void recover_pending_returns(ChunkContext<T>& context, const hdf5::InputFile& written,
                             std::int64_t shots) {
  const auto offsets = written.read_rows<std::int64_t, 1>("/returns/offsets", 0, shots);
  std::int64_t shot = 0;
  while (shot + 1 < shots && offsets(shot + 1) <= context.returns_stored) ++shot;
  ChunkBuffers<T> buffers(context.chunk, context.layout);
  auto& pending = context.pending;
  for (std::int64_t first = shot; first < shots; first += context.chunk) {
    read_shots(context, buffers, first, std::min(context.chunk, shots - first));
    written.read_rows_into("/x", first, buffers.rows(buffers.x));
    written.read_rows_into("/rnorm", first, buffers.rows(buffers.rnorm));
    const WaveformReturns found = chunk_returns(context, buffers);
    pending.sample.insert(pending.sample.end(), found.sample.begin(), found.sample.end());
    if (context.layout.has_elevations())
      pending.elevation.insert(pending.elevation.end(), found.elevation.begin(),
                               found.elevation.end());
    pending.energy.insert(pending.energy.end(), found.energy.begin(), found.energy.end());
  }
  // Less the first shot's returns that were stored; what is left must be as
  // many as were found then.
  const std::ptrdiff_t stored = std::ptrdiff_t(context.returns_stored - offsets(shot));
  for (auto* values : {&pending.sample, &pending.elevation, &pending.energy})
    if (!values->empty()) values->erase(values->begin(), values->begin() + stored);
  if (std::int64_t(pending.sample.size()) != context.returns_written - context.returns_stored)
    throw input_error("'" + written.path() + "': its returns (" +
                      std::to_string(context.returns_written) +
                      ") are not those of its solutions; run without --resume to start again");
}

struct ResumePoint {
  std::string partial;      // empty: nothing to resume
  std::int64_t chunks = 0;  // complete chunks in it
};

// The partial file of an interrupted run with this signature and the most
// chunks written; the others are removed, and said so through `note`.
ResumePoint find_resume_point(const std::string& output_path, const std::string& signature,
                              const DeconvolutionFileOptions& options) {
  ResumePoint best;
  const auto discard = [&](const std::string& partial, const std::string& why) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    if (options.note) options.note("--resume: '" + partial + "' " + why + "; removed it");
  };
  for (const auto& partial : hdf5::stale_partials(output_path)) {
    std::int64_t chunks = 0;
    try {
      const hdf5::InputFile file(partial);
      if (!file.has_attribute("/", "resume_signature") ||
          file.read_string_attribute("/", "resume_signature") != signature) {
        discard(partial, "was made by another input or other options");
        continue;
      }
      chunks = file.read_integer_attribute("/", chunks_written_attribute);
    } catch (const std::exception& error) {
      discard(partial, std::string("cannot be read (") + error.what() + ")");
      continue;
    }
    if (best.partial.empty() || chunks > best.chunks) {
      if (!best.partial.empty()) discard(best.partial, "holds fewer chunks than another");
      best = {partial, chunks};
    } else {
      discard(partial, "holds fewer chunks than another");
    }
  }
  if (options.note)
    options.note(best.partial.empty()
                     ? "--resume: no interrupted run of '" + output_path +
                           "' to go on from; starting again"
                     : "--resume: going on from '" + best.partial + "', " +
                           std::to_string(best.chunks) + " chunk(s) written");
  return best;
}

// The statuses of the chunks an interrupted run wrote, and its returns: the
// count, those in the returns' datasets, and the others (pending) found
// again, as write_chunk found them, from the partial file's x and rnorm and
// the input's pulses and elevations.
template <class T>
void recover_chunks(ChunkContext<T>& context, const std::string& partial, std::int64_t chunks) {
  const hdf5::InputFile written(partial);
  const std::int64_t shots = std::min(chunks * context.chunk, context.layout.shots);
  for (std::int64_t first = 0; first < shots; first += context.chunk) {
    const std::int64_t count = std::min(context.chunk, shots - first);
    const auto status = written.read_rows<std::int32_t, 1>("/status", first, count);
    for (std::int64_t s = 0; s < count; ++s) {
      if (status(s) < 0 || status(s) >= nnls_status_count)
        throw input_error("'" + partial + "': dataset /status row " + std::to_string(first + s) +
                          " holds " + std::to_string(status(s)) +
                          ", no status; run without --resume to start again");
      ++context.tally.status_counts[status(s)];
    }
    context.tally.items += count;
  }
  context.returns_written = written.read_integer_attribute("/", returns_written_attribute);
  context.returns_stored = written.read_integer_attribute("/", returns_stored_attribute);
  if (context.returns_written > context.returns_stored)
    recover_pending_returns(context, written, shots);
}

// The returns' datasets cut back to what the last complete chunk had
// stored (a later chunk may have added rows before the interruption).
void cut_returns(hdf5::OutputFile& output, bool elevations, std::int64_t returns) {
  for (const char* name : {"/returns/sample", "/returns/elevation", "/returns/energy"})
    if (elevations || std::string(name) != "/returns/elevation")
      output.resize_rows(name, std::size_t(returns));
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
    for (std::int64_t b = 0; b < in_flight; ++b) buffers.emplace_back(context.chunk, context.layout);
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
DeconvolutionSummary summarise(const ProcessGroup& group, ChunkContext<T>& context,
                               double seconds, std::int64_t resumed) {
  DeconvolutionSummary summary;
  summary.seconds = seconds;
  group.max(&summary.seconds, 1);
  auto& phases = context.phases;
  double* times[] = {&phases.setup, &phases.read, &phases.solve, &phases.solver, &phases.write,
                     &phases.finish};
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
  const auto output =
      agreed(group, [&] { return open_output(group, output_path, options, resume); });
  context.output = output.get();
  if (!resume.partial.empty()) {
    cut_returns(*output, layout.has_elevations(), context.returns_stored);
  } else {
    agreed(group, [&] {
      create_outputs<T>(*output, input, layout, storage);
      if (!group.is_single()) return;
      create_returns(*output, layout, storage);
      output->write_attribute("/", "resume_signature", signature);
      output->write_attribute("/", chunks_written_attribute, std::int64_t(0));
      output->write_attribute("/", returns_written_attribute, std::int64_t(0));
      output->write_attribute("/", returns_stored_attribute, std::int64_t(0));
      output->flush();  // a crash from here on leaves a file a resume can read
    });
  }
  context.phases.setup = phase.seconds();
  Kokkos::Timer solving;
  solve_chunks<T>(group, context, resume.chunks);
  const double seconds = solving.seconds();
  phase.reset();
  std::int64_t returns = context.returns_written;
  agreed(group, [&] {
    if (context.in_order) {
      store_pending_returns(context, /*all=*/true);  // a resume after the last chunk
      finish_returns(*output);
    } else {
      const auto gathered = gather_returns(group, context);
      returns = gathered.offsets.back();
      write_returns(*output, gathered, layout.has_elevations(), storage);
    }
    describe_returns(*output, layout.has_elevations());
    write_settings(group, *output, input, layout, options, chunk, storage);
    output->commit();
  });
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
