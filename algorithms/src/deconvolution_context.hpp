// What the chunks of one `kpl deconv` run share (private to
// kpl_algorithms): the host buffers a chunk goes through, the context every
// chunk uses and adds to, the output's storage, and the small pieces the
// stages (deconvolution_stages.hpp), the returns (deconvolution_returns.hpp)
// and a resume (deconvolution_resume.hpp) have in common.
#pragma once

#include <kpl/deconvolution.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/impl/nnls_file_group.hpp>
#include <kpl/waveform_file.hpp>
#include <kpl/waveform_returns.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kpl::deconvolution_detail {

// Buffers in flight on one process: one being read, one solved, one written.
constexpr std::int64_t overlapped_buffers = 3;
// The returns per shot a run expects (LVIS: ground and a few canopy
// layers): the returns' chunks are sized for them, and on several processes,
// which gather the returns at the end, the pre-flight counts their memory.
constexpr std::int64_t expected_returns_per_shot = 4;
constexpr std::int64_t bytes_per_return = 3 * sizeof(double);
// Chunks of at most this many bytes: HDF5 readers cache a mebibyte of
// chunks per dataset by default, so reading one shot decompresses its chunk
// once, not once per shot.
constexpr std::int64_t chunk_bytes = std::int64_t(1) << 20;

// Threads that compress output chunks: the cores but the reader's and the
// solver's (the writer thread compresses too).
inline int compression_threads() {
  return std::max(1, int(std::thread::hardware_concurrency()) - 2);
}

inline std::int64_t power_of_two_at_most(std::int64_t value) {
  std::int64_t power = 1;
  while (power * 2 <= value) power *= 2;
  return power;
}

// Chunks of returns: at most a mebibyte of doubles.
constexpr std::size_t returns_chunk_rows = std::size_t(1) << 17;

using Space = Kokkos::DefaultExecutionSpace;

// Host memory the device copies from and to: pinned on a GPU, so that the
// copies run at the bus's speed.
using StagingSpace = kpl::impl::PinnedHostSpace;

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
  std::int64_t chunk = 0;        // shots per chunk (the last may have fewer)
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

}  // namespace kpl::deconvolution_detail
