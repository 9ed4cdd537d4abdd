// Non-negative deconvolution of many waveforms (Luo & Duraiswami 2011, §6:
// NASA LVIS lidar returns). Each recorded waveform y (m samples) is modelled
// as y = A x with x >= 0 the ground returns and A the m x m Toeplitz matrix of
// the transmitted pulse s (L samples), A[i, j] = s[i - j + c] (zero outside
// 0 <= i - j + c < L), origin c = 0 (a causal pulse, the seed's equation 6.2)
// or floor(L / 2) (a pulse centred on its return). A is never stored
// (impl/deconvolution_toeplitz.hpp).
//
// deconvolve() solves a batch that fits in device memory; deconvolve_file()
// (`kpl deconv`) streams any number of waveforms through a memory budget,
// chunk by chunk, and writes each chunk's results as it goes; on a group of
// processes (kpl/process_group.hpp) the chunks are shared out among them.
#pragma once

#include <kpl/impl/deconvolution_adaptive_cap.hpp>
#include <kpl/impl/deconvolution_simulation.hpp>
#include <kpl/impl/deconvolution_toeplitz.hpp>
#include <kpl/impl/nnls_file_group.hpp>
#include <kpl/nnls.hpp>
#include <kpl/process_group.hpp>
#include <kpl/waveform_file.hpp>
#include <kpl/waveform_returns.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace kpl {

// PulseOrigin { start, center } (c = 0 or floor(L / 2)): impl/deconvolution_toeplitz.hpp.
inline std::string to_string(PulseOrigin origin) {
  return origin == PulseOrigin::start ? "start" : "center";
}

// The Toeplitz matrices as a column source of kpl::nnls_columns.
using impl::make_toeplitz_columns;
using impl::ToeplitzColumns;

struct DeconvolutionOptions {
  PulseOrigin origin = PulseOrigin::start;
  NnlsOptions nnls;  // max_passive < 0: adaptive (see deconvolve)
  // Adaptive passive cap: the first solve's, doubled for the waveforms that
  // reach it; room for 1-4 returns and the small spikes that fit noise.
  int first_passive_cap = 64;
};

// The passive-set cap deconvolve starts from, and the device bytes one
// waveform needs at that cap (workspace, waveform, solution, fit, pulse, and
// the copies a retry at a larger cap makes): what deconvolve_file divides its
// memory budget by.
inline std::int64_t deconvolution_first_passive_cap(std::int64_t samples,
                                                    const DeconvolutionOptions& options) {
  if (options.nnls.max_passive > 0)
    return std::min<std::int64_t>(options.nnls.max_passive, samples);
  return std::min<std::int64_t>(samples, std::max(options.first_passive_cap, 1));
}

template <class T>
std::int64_t deconvolution_bytes_per_waveform(std::int64_t samples, std::int64_t pulse_length,
                                              bool pulse_per_waveform,
                                              const DeconvolutionOptions& options) {
  return impl::adaptive_cap_bytes_per_waveform<T>(
      samples, pulse_length, pulse_per_waveform,
      deconvolution_first_passive_cap(samples, options));
}

// Deconvolves waveforms [W, m] with pulses [1, L] (shared) or [W, L] on the
// device. Unless options.nnls.max_passive is given, the passive set is capped
// adaptively (impl/deconvolution_adaptive_cap.hpp): memory follows the
// passive set actually reached. solution is [W, m]; fit [W, m] receives A x;
// iterations add up over the attempts. Throws std::invalid_argument on
// mismatched shapes.
template <class ExecutionSpace, class T>
void deconvolve(
    const ExecutionSpace& space,
    const Kokkos::View<const T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>&
        pulses,
    const Kokkos::View<const T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>&
        waveforms,
    NnlsSolution<ExecutionSpace, T>& solution,
    const Kokkos::View<T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>& fit,
    const DeconvolutionOptions& options = {},
    NnlsWorkspace<ExecutionSpace, T>* workspace = nullptr) {
  const std::int64_t count = waveforms.extent(0), m = waveforms.extent(1);
  const std::int64_t pulse_length = pulses.extent(1);
  if (pulses.extent(0) != 1 && std::int64_t(pulses.extent(0)) != count)
    throw std::invalid_argument("kpl::deconvolve: " + std::to_string(pulses.extent(0)) +
                                " pulses for " + std::to_string(count) + " waveforms");
  if (pulse_length < 1 || pulse_length > m)
    throw std::invalid_argument("kpl::deconvolve: the pulse has " + std::to_string(pulse_length) +
                                " samples; it needs 1 to " + std::to_string(m) +
                                " (the waveform length)");
  if (std::int64_t(fit.extent(0)) != count || std::int64_t(fit.extent(1)) != m)
    throw std::invalid_argument("kpl::deconvolve: fit must be [waveforms, samples]");
  if (count == 0) return;
  NnlsWorkspace<ExecutionSpace, T> local_workspace;
  impl::deconvolve_adaptive<ExecutionSpace, T>(
      space, pulses, waveforms, solution, fit, options.nnls,
      deconvolution_first_passive_cap(m, options), options.nnls.max_passive <= 0, options.origin,
      workspace ? *workspace : local_workspace);
}

// The deflate level kpl deconv compresses its outputs at by default
// (perf/compression_benchmark.cpp measures size against time per level).
constexpr int default_deflate_level = 1;

struct DeconvolutionFileOptions {
  DeconvolutionOptions deconvolution;
  bool single_precision = false;
  std::int64_t memory_budget_bytes = std::int64_t(1) << 30;
  // Several processes: chunks handed out as processes come free, each
  // writing its rows alone (independent), or dealt round-robin with each
  // round's rows written together (collective: MPI-IO aggregates them).
  RowWrites row_writes = RowWrites::independent;
  // Which datasets hold what (kpl/waveform_file.hpp): empty, the layout's.
  WaveformDatasetNames datasets;
  ReturnsOptions returns;  // kpl/waveform_returns.hpp
  // Every output dataset is stored in chunks along the shot axis, deflated
  // at this level (1-9; 0: not compressed; -1: default_deflate_level on one
  // process, 0 on several). Compression needs one process: parallel HDF5
  // 1.10 writes compressed data only collectively.
  int deflate_level = -1;
  // One process: an interrupted run (a signal, a crash) leaves its partial
  // output, "<output>.partial-<pid>", and resume goes on from its last
  // complete chunk instead of starting again (same input and options);
  // without resume, partial files left by earlier runs are removed first.
  bool resume = false;
  // Called after each chunk is written, with the shots done and in all
  // (one process: from the writing thread).
  std::function<void(std::int64_t done, std::int64_t total)> progress;
  // Called with what a user should know as it happens ("--resume: ...").
  std::function<void(const std::string& note)> note;
};

// Seconds per phase of a file run (summed over its chunks; on several
// processes the slowest process's). Reading, solving and writing overlap
// on one process, so they add up to more than the wall time.
struct DeconvolutionPhases {
  double setup = 0;   // checks, pre-flight, the output's creation
  double read = 0;    // input rows to host buffers, ready to solve
  double solve = 0;   // copies to and from the device and the solver
  double solver = 0;  // the solver alone (kpl::deconvolve)
  double write = 0;   // returns, compression and output writes
  double finish = 0;  // the returns' assembly, settings and commit
};

struct DeconvolutionSummary {
  std::int64_t waveforms = 0;
  std::int64_t chunks = 0;  // over all processes
  std::int64_t waveforms_per_chunk = 0;
  std::int64_t status_counts[nnls_status_count] = {};  // by NnlsStatus
  std::int64_t returns = 0;
  std::int64_t resumed_waveforms = 0;  // taken from an interrupted run's partial file
  std::string layout;                  // WaveformLayoutKind's name
  double seconds = 0;   // reading, solving and writing the chunks (the slowest process)
  DeconvolutionPhases phases;
  WorkBalance balance;  // WorkBalance: impl/nnls_file_group.hpp
};

// `kpl deconv`: reads waveforms and pulses (kpl/waveform_file.hpp: kpl's
// layout, LVIS Level-1B, or named datasets) from input_path, deconvolves on
// the default execution space in chunks that fit the budget, and writes
// /x, /fit [W, m], /rnorm, /iterations, /status, /kkt_residual [W], the
// returns (/returns/offsets [W + 1], /returns/sample, /returns/energy and,
// with elevations, /returns/elevation: kpl/waveform_returns.hpp), an LVIS
// file's shot identity and geolocation, and the settings to output_path
// (nothing appears there unless all succeeds). On one process reading,
// solving and writing overlap. Bad input is a kpl::input_error naming the
// file, dataset and row. On a group of several processes (each calls it
// with the same arguments) the chunks are handed out first come, first
// served, several per process; the output is the one process's, bit for bit
// (but its waveforms_per_chunk attribute), and the summary is the same on
// every process.
DeconvolutionSummary deconvolve_file(const ProcessGroup& group, const std::string& input_path,
                                     const std::string& output_path,
                                     const DeconvolutionFileOptions& options);
DeconvolutionSummary deconvolve_file(const std::string& input_path, const std::string& output_path,
                                     const DeconvolutionFileOptions& options);  // one process

// `kpl simulate deconv` (simulate_deconvolution_file) and its generator
// (WaveformSimulator): impl/deconvolution_simulation.hpp.

}  // namespace kpl
