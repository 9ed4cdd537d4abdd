// The three stages of `kpl deconv`'s chunks (private to kpl_algorithms):
// read (input rows to host buffers, ready to solve), solve (to the device,
// kpl::deconvolve, back) and write (returns, compression, output rows). One
// process runs them overlapped (impl/overlapped_stages.hpp), several in
// sequence, each its own chunks.
#pragma once

#include "deconvolution_context.hpp"
#include "deconvolution_returns.hpp"

#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <cstdint>
#include <mutex>

namespace kpl::deconvolution_detail {

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

// The chunk's rows of the six per-shot outputs: compressed here, together
// (on compression_threads threads), stored by HDF5 as they are.
template <class T>
void write_compressed(ChunkContext<T>& context, const ChunkBuffers<T>& buffers) {
  const std::size_t first = std::size_t(buffers.first);
  const auto& matrices = context.storage.matrices;
  const auto& vectors = context.storage.vectors;
  hdf5::CompressionBatch batch;
  const std::pair<const char*, const hdf5::CompressedRows*> rows[] = {
      {"/x", &batch.add(buffers.rows(buffers.x), first, matrices)},
      {"/fit", &batch.add(buffers.rows(buffers.fit), first, matrices)},
      {"/rnorm", &batch.add(buffers.rows(buffers.rnorm), first, vectors)},
      {"/iterations", &batch.add(buffers.rows(buffers.iterations), first, vectors)},
      {"/status", &batch.add(buffers.rows(buffers.status), first, vectors)},
      {"/kkt_residual", &batch.add(buffers.rows(buffers.kkt), first, vectors)}};
  batch.run(context.compression_threads);
  const std::lock_guard<std::mutex> lock(context.hdf5_lock);
  for (const auto& [dataset, compressed] : rows)
    context.output->write_compressed_rows(dataset, *compressed);
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
