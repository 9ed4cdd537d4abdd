// The three stages of `kpl deconv`'s chunks (private to kpl_algorithms):
// read (input rows to host buffers, ready to solve), solve (to the device,
// kpl::deconvolve, back) and write (returns, compression, output rows). One
// process runs them overlapped (impl/overlapped_stages.hpp), several in
// sequence, each its own chunks.
#pragma once

#include <kpl/deconvolution.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/impl/nnls_file_group.hpp>
#include <kpl/waveform_file.hpp>
#include <kpl/waveform_returns.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace kpl::deconvolution_detail {

using Space = Kokkos::DefaultExecutionSpace;

// Host memory the device copies from and to: pinned on a GPU, so that the
// copies run at the bus's speed.
#if defined(KOKKOS_ENABLE_CUDA)
using StagingSpace = Kokkos::CudaHostPinnedSpace;
#else
using StagingSpace = Kokkos::HostSpace;
#endif

template <class T>
using StagingMatrix = Kokkos::View<T**, Kokkos::LayoutRight, StagingSpace>;
template <class T>
using StagingVector = Kokkos::View<T*, StagingSpace>;
template <class T>
using DeviceMatrix = Kokkos::View<T**, Kokkos::LayoutRight, Space::memory_space>;

// The pulse's sample c that a return's x_j puts at sample j (A[i, j] =
// s[i - j + c]: impl/deconvolution_toeplitz.hpp).
inline std::int64_t origin_sample(PulseOrigin origin, std::int64_t pulse_length) {
  return origin == PulseOrigin::center ? pulse_length / 2 : 0;
}

// The output's storage: chunks of rows of the [W, m] datasets, of the [W]
// ones (a multiple, up to a mebibyte), the deflate level.
struct OutputStorage {
  hdf5::Storage matrices, vectors;
};

// One chunk's host buffers, allocated once for `capacity` shots and reused.
template <class T>
struct ChunkBuffers {
  std::int64_t first = 0, count = 0;
  StagingMatrix<T> waveforms, pulses, x, fit;
  StagingVector<T> rnorm, kkt;
  StagingVector<int> iterations, status;
  std::vector<PulseShape> shapes;  // one per shot when each has its pulse
  std::vector<ElevationSpan> spans;

  ChunkBuffers(std::int64_t capacity, const WaveformFileLayout& layout)
      : waveforms(allocate("kpl::deconv::waveforms"), capacity, layout.samples),
        pulses(allocate("kpl::deconv::pulses"), layout.pulse_per_shot ? capacity : 0,
               layout.pulse_length),
        x(allocate("kpl::deconv::x"), capacity, layout.samples),
        fit(allocate("kpl::deconv::fit"), capacity, layout.samples),
        rnorm(allocate("kpl::deconv::rnorm"), capacity),
        kkt(allocate("kpl::deconv::kkt_residual"), capacity),
        iterations(allocate("kpl::deconv::iterations"), capacity),
        status(allocate("kpl::deconv::status"), capacity) {}

  // The first `count` rows of a buffer.
  template <class View>
  auto rows(const View& view) const {
    if constexpr (View::rank == 1)
      return Kokkos::subview(view, std::make_pair(std::int64_t(0), count));
    else
      return Kokkos::subview(view, std::make_pair(std::int64_t(0), count), Kokkos::ALL);
  }

 private:
  static auto allocate(const char* label) {
    return Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label));
  }
};

// What every chunk of one process's run uses and adds to.
template <class T>
struct ChunkContext {
  ChunkContext(const hdf5::InputFile& input, const WaveformFileLayout& layout,
               const DeconvolutionFileOptions& options, const OutputStorage& storage,
               std::int64_t chunk, const DeviceMatrix<T>& shared_pulse,
               const PulseShape& shared_shape)
      : input(input),
        layout(layout),
        options(options),
        storage(storage),
        chunk(chunk),
        shared_pulse(shared_pulse),
        shared_shape(shared_shape) {}

  const hdf5::InputFile& input;
  const WaveformFileLayout& layout;
  const DeconvolutionFileOptions& options;
  OutputStorage storage;
  std::int64_t chunk = 0;  // shots per chunk (the last may have fewer)
  DeviceMatrix<T> shared_pulse;  // [1, L], unless each shot has its own
  PulseShape shared_shape;
  bool recheck = false;  // several processes: see impl::require_finite_rows
  // One process: chunks are written in order, each one's returns appended
  // to the output as it is written, and what is on disk recorded for a
  // resume. Several: the returns are gathered at the end (gather_returns).
  bool in_order = false;
  std::int64_t returns_written = 0;  // of the chunks written
  std::int64_t returns_stored = 0;   // of them, in the returns' datasets (whole chunks)
  hdf5::Storage returns_storage;     // the returns' datasets' chunks
  WaveformReturns pending;           // the others, fewer than a chunk of them
  int compression_threads = 1;
  hdf5::OutputFile* output = nullptr;
  std::mutex hdf5_lock;  // every HDF5 call: the library may not be thread-safe
  NnlsWorkspace<Space, T> workspace;
  impl::ProcessTally tally;
  DeconvolutionPhases phases;
  std::map<std::int64_t, WaveformReturns> returns;  // several processes: by first shot

  std::int64_t origin() const {
    return origin_sample(options.deconvolution.origin, layout.pulse_length);
  }
};

// Shots [first, first + count) (count at most the buffers' capacity).
template <class T>
void read_shots(ChunkContext<T>& context, ChunkBuffers<T>& buffers, std::int64_t first,
                std::int64_t count) {
  Kokkos::Timer timer;
  buffers.first = first;
  buffers.count = count;
  {
    const std::lock_guard<std::mutex> lock(context.hdf5_lock);
    read_waveform_rows<T>(context.input, context.layout, buffers.first, buffers.count,
                          buffers.waveforms, buffers.pulses, context.origin(), buffers.shapes,
                          buffers.spans, /*checked=*/!context.recheck);
  }
  context.phases.read += timer.seconds();
}

template <class T>
void read_chunk(ChunkContext<T>& context, ChunkBuffers<T>& buffers, std::int64_t chunk_index) {
  const std::int64_t first = chunk_index * context.chunk;
  read_shots(context, buffers, first, std::min(context.chunk, context.layout.shots - first));
}

// To the device, kpl::deconvolve, and the results back to the buffers. Each
// waveform's solve depends on it alone (its own passive-cap retries
// included), not on the chunk it is in.
template <class T>
void solve_chunk(ChunkContext<T>& context, ChunkBuffers<T>& buffers) {
  Kokkos::Timer timer;
  const Space space;
  const std::int64_t count = buffers.count, m = context.layout.samples;
  const auto to_device = [&](const StagingMatrix<T>& host, const char* label) {
    DeviceMatrix<T> device(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                           count, host.extent(1));
    Kokkos::deep_copy(space, device, buffers.rows(host));
    return device;
  };
  const auto waveforms = to_device(buffers.waveforms, "kpl::deconv::device_waveforms");
  const DeviceMatrix<T> pulses = context.layout.pulse_per_shot
                                     ? to_device(buffers.pulses, "kpl::deconv::device_pulses")
                                     : context.shared_pulse;
  NnlsSolution<Space, T> solution(count, m);
  DeviceMatrix<T> fit(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::deconv::fit"), count,
                      m);
  space.fence();
  Kokkos::Timer solver;
  deconvolve<Space, T>(space, pulses, waveforms, solution, fit, context.options.deconvolution,
                       &context.workspace);
  space.fence();
  context.phases.solver += solver.seconds();
  context.tally.busy_seconds += solver.seconds();
  Kokkos::deep_copy(space, buffers.rows(buffers.x), solution.x);
  Kokkos::deep_copy(space, buffers.rows(buffers.fit), fit);
  Kokkos::deep_copy(space, buffers.rows(buffers.rnorm), solution.residual_norm);
  Kokkos::deep_copy(space, buffers.rows(buffers.kkt), solution.kkt_residual);
  Kokkos::deep_copy(space, buffers.rows(buffers.iterations), solution.iterations);
  Kokkos::deep_copy(space, buffers.rows(buffers.status), solution.status);
  space.fence();
  context.phases.solve += timer.seconds();
}

// The returns of a chunk's shots, from their solutions (host buffers).
template <class T>
WaveformReturns chunk_returns(const ChunkContext<T>& context, const ChunkBuffers<T>& buffers) {
  WaveformReturns returns;
  for (std::int64_t s = 0; s < buffers.count; ++s) {
    const PulseShape& shape =
        context.layout.pulse_per_shot ? buffers.shapes[s] : context.shared_shape;
    find_returns(&buffers.x(s, 0), context.layout.samples, double(buffers.rnorm(s)), shape,
                 buffers.spans.empty() ? nullptr : &buffers.spans[s], context.options.returns,
                 returns);
  }
  return returns;
}

// The chunk's rows of the six per-shot outputs: compressed here (on
// compression_threads threads), stored by HDF5 as they are.
template <class T>
void write_compressed(ChunkContext<T>& context, const ChunkBuffers<T>& buffers) {
  const std::size_t first = std::size_t(buffers.first);
  const int threads = context.compression_threads;
  const auto& matrices = context.storage.matrices;
  const auto& vectors = context.storage.vectors;
  const std::vector<std::pair<const char*, hdf5::CompressedRows>> rows = {
      {"/x", hdf5::compress_rows(buffers.rows(buffers.x), first, matrices, threads)},
      {"/fit", hdf5::compress_rows(buffers.rows(buffers.fit), first, matrices, threads)},
      {"/rnorm", hdf5::compress_rows(buffers.rows(buffers.rnorm), first, vectors, threads)},
      {"/iterations",
       hdf5::compress_rows(buffers.rows(buffers.iterations), first, vectors, threads)},
      {"/status", hdf5::compress_rows(buffers.rows(buffers.status), first, vectors, threads)},
      {"/kkt_residual", hdf5::compress_rows(buffers.rows(buffers.kkt), first, vectors, threads)}};
  const std::lock_guard<std::mutex> lock(context.hdf5_lock);
  for (const auto& [dataset, compressed] : rows)
    context.output->write_compressed_rows(dataset, compressed);
}

// The same rows through HDF5 (uncompressed, or several processes' shared
// file, whose collective writes need every process in the same order).
template <class T>
void write_plain(ChunkContext<T>& context, const ChunkBuffers<T>& buffers) {
  const std::size_t first = std::size_t(buffers.first);
  const std::lock_guard<std::mutex> lock(context.hdf5_lock);
  context.output->write_rows("/x", first, buffers.rows(buffers.x));
  context.output->write_rows("/fit", first, buffers.rows(buffers.fit));
  context.output->write_rows("/rnorm", first, buffers.rows(buffers.rnorm));
  context.output->write_rows("/iterations", first, buffers.rows(buffers.iterations));
  context.output->write_rows("/status", first, buffers.rows(buffers.status));
  context.output->write_rows("/kkt_residual", first, buffers.rows(buffers.kkt));
}

// Attributes of "/" while one process writes: the chunks on disk (all
// before it complete), the returns found in them, and how many of those are
// in the returns' datasets (the rest a resume finds again from /x).
constexpr const char* chunks_written_attribute = "chunks_written";
constexpr const char* returns_written_attribute = "returns_written";
constexpr const char* returns_stored_attribute = "returns_stored";

// /returns/offsets [W + 1], in the [W] datasets' chunks.
inline hdf5::Storage offsets_storage(const WaveformFileLayout& layout,
                                     const OutputStorage& storage) {
  return {std::min(storage.vectors.chunk_rows, std::size_t(layout.shots) + 1),
          storage.vectors.deflate_level};
}

template <class Value>
auto host_vector(const std::vector<Value>& values, std::size_t count) {
  return Kokkos::View<const Value*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
      values.data(), count);
}
template <class Value>
auto host_vector(const std::vector<Value>& values) {
  return host_vector(values, values.size());
}

// Rows compressed here and stored by direct chunk writes, or (level 0,
// plain chunks) written through HDF5.
template <class T, class View>
void store_rows(ChunkContext<T>& context, const std::string& dataset, std::size_t first,
                const View& rows, const hdf5::Storage& storage) {
  if (storage.deflate_level > 0)
    context.output->write_compressed_rows(
        dataset, hdf5::compress_rows(rows, first, storage, context.compression_threads));
  else
    context.output->write_rows(dataset, first, rows);
}

// The pending returns that fill whole chunks of the returns' datasets (all
// of them at the end) stored, at the datasets' end, and dropped.
template <class T>
void store_pending_returns(ChunkContext<T>& context, bool all) {
  const std::size_t chunk_rows = context.returns_storage.chunk_rows;
  const std::size_t pending = context.pending.sample.size();
  const std::size_t count = all ? pending : pending - pending % chunk_rows;
  if (count == 0) return;
  const std::size_t first = std::size_t(context.returns_stored);
  const bool elevations = context.layout.has_elevations();
  auto& returns = context.pending;
  for (auto [name, values] :
       {std::pair{"/returns/sample", &returns.sample},
        std::pair{"/returns/elevation", elevations ? &returns.elevation : nullptr},
        std::pair{"/returns/energy", &returns.energy}}) {
    if (values == nullptr) continue;
    context.output->resize_rows(name, first + count);
    store_rows(context, name, first, host_vector(*values, count), context.returns_storage);
    values->erase(values->begin(), values->begin() + std::ptrdiff_t(count));
  }
  context.returns_stored += std::int64_t(count);
}

// One process, in order: a chunk's rows of /returns/offsets (where each of
// its shots' returns start, and after the last shot the returns in all) and
// its returns after the others'. Nothing on disk is written twice, so that a
// crash cannot spoil what an earlier flush() left: offsets go whole chunk by
// whole chunk, the returns themselves once they fill a chunk of theirs.
template <class T>
void append_returns(ChunkContext<T>& context, std::int64_t first,
                    const WaveformReturns& returns) {
  const bool last = first + std::int64_t(returns.counts.size()) == context.layout.shots;
  std::vector<std::int64_t> offsets(returns.counts.size() + (last ? 1 : 0));
  std::int64_t next = context.returns_written;
  for (std::size_t s = 0; s < offsets.size(); ++s) {
    offsets[s] = next;
    if (s < returns.counts.size()) next += returns.counts[s];
  }
  store_rows(context, "/returns/offsets", std::size_t(first), host_vector(offsets),
             offsets_storage(context.layout, context.storage));
  auto& pending = context.pending;
  pending.sample.insert(pending.sample.end(), returns.sample.begin(), returns.sample.end());
  if (context.layout.has_elevations())
    pending.elevation.insert(pending.elevation.end(), returns.elevation.begin(),
                             returns.elevation.end());
  pending.energy.insert(pending.energy.end(), returns.energy.begin(), returns.energy.end());
  context.returns_written = next;
  store_pending_returns(context, last);
}

template <class T>
void write_chunk(ChunkContext<T>& context, ChunkBuffers<T>& buffers) {
  Kokkos::Timer timer;
  WaveformReturns returns = chunk_returns(context, buffers);
  if (context.storage.matrices.deflate_level > 0)
    write_compressed(context, buffers);
  else
    write_plain(context, buffers);
  for (std::int64_t s = 0; s < buffers.count; ++s) ++context.tally.status_counts[buffers.status(s)];
  context.tally.items += buffers.count;
  ++context.tally.chunks;
  if (context.in_order) {
    // Every chunk before this one is on disk too: a resume starts after it.
    const std::lock_guard<std::mutex> lock(context.hdf5_lock);
    append_returns(context, buffers.first, returns);
    context.output->write_attribute("/", chunks_written_attribute,
                                    std::int64_t(buffers.first / context.chunk + 1));
    context.output->write_attribute("/", returns_written_attribute, context.returns_written);
    context.output->write_attribute("/", returns_stored_attribute, context.returns_stored);
    context.output->flush();
  } else {
    context.returns[buffers.first] = std::move(returns);
  }
  context.phases.write += timer.seconds();
  if (context.options.progress)
    context.options.progress(buffers.first + buffers.count, context.layout.shots);
}

}  // namespace kpl::deconvolution_detail
