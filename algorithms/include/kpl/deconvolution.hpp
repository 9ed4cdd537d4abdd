// Non-negative deconvolution of many waveforms (Luo & Duraiswami 2011, §6:
// NASA LVIS lidar returns). Each recorded waveform y (m samples) is modelled
// as y = A x with x >= 0 the ground returns and A the m x m Toeplitz matrix of
// the transmitted pulse s (L samples):
//   A[i, j] = s[i - j + c]  (zero outside 0 <= i - j + c < L),
// with origin c = 0 (a causal pulse, the seed's equation 6.2) or floor(L / 2)
// (a pulse centred on its return). A is never stored: its columns come from
// the pulse on the fly (ToeplitzColumns), and only a column's L-sample band
// enters the solver's dot products.
//
// deconvolve() solves a batch that fits in device memory; deconvolve_file()
// (`kpl deconv`) streams any number of waveforms through a memory budget,
// chunk by chunk, and writes each chunk's results as it goes.
#pragma once

#include <kpl/nnls.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kpl {

enum class PulseOrigin { start, center };

inline std::string to_string(PulseOrigin origin) {
  return origin == PulseOrigin::start ? "start" : "center";
}

// Column source (kpl/nnls.hpp) of the Toeplitz matrices: one pulse for all
// waveforms (pulse_stride 0) or one per waveform.
template <class T>
struct ToeplitzColumns {
  const T* pulse;
  std::int64_t pulse_stride;  // between waveforms' pulses; 0 when shared
  std::int64_t pulse_length;  // L
  std::int64_t samples;       // m = rows = columns
  std::int64_t origin;        // c

  KOKKOS_INLINE_FUNCTION T operator()(std::int64_t system, std::int64_t row,
                                      std::int64_t column) const {
    const std::int64_t tap = row - column + origin;
    return tap >= 0 && tap < pulse_length ? pulse[system * pulse_stride + tap] : T(0);
  }
  KOKKOS_INLINE_FUNCTION RowRange rows_of(std::int64_t, std::int64_t column) const {
    const std::int64_t begin = column - origin;
    const std::int64_t end = begin + pulse_length;
    return {begin > 0 ? begin : 0, end < samples ? end : samples};
  }
};

template <class T>
ToeplitzColumns<T> make_toeplitz_columns(const T* pulse, std::int64_t pulse_stride,
                                         std::int64_t pulse_length, std::int64_t samples,
                                         PulseOrigin origin) {
  return {pulse, pulse_stride, pulse_length, samples,
          origin == PulseOrigin::start ? 0 : pulse_length / 2};
}

struct DeconvolutionOptions {
  PulseOrigin origin = PulseOrigin::start;
  NnlsOptions nnls;  // max_passive < 0: adaptive (see deconvolve)
  // Adaptive passive cap: the first solve's, doubled for the waveforms that
  // reach it. 64 holds the simulated LVIS waveforms' passive sets (1-4
  // returns, noise fitted by a few dozen small spikes) at 432 samples.
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
  const std::int64_t cap = deconvolution_first_passive_cap(samples, options);
  // Waveform, x and fit; residual norm and KKT residual; iterations,
  // status, 2 column counts; the pulse.
  const std::int64_t vectors = 3 * samples * sizeof(T) + 2 * sizeof(T) + 4 * sizeof(int) +
                               (pulse_per_waveform ? pulse_length * sizeof(T) : 0);
  // A retried waveform's copies (waveform, pulse, solution, index): at most
  // one per waveform of the chunk, so the retries stay inside the budget.
  const std::int64_t retry =
      2 * samples * sizeof(T) + pulse_length * sizeof(T) + 2 * sizeof(T) + 5 * sizeof(int);
  return nnls_workspace_bytes_per_system<T>(samples, samples, cap) + vectors + retry;
}

namespace impl {

// fit = A x, one thread per sample: fit[w, i] = sum_j s[i - j + c] x[w, j],
// summed with the pulse brought to unit scale by a power of two (exact), so
// that no partial sum overflows unless the fit itself does. A waveform whose
// fit is not finite (its x or fit past the precision's range) is marked
// numerical_issue.
template <class ExecutionSpace, class T, class XView, class FitView, class StatusView>
void toeplitz_apply(const ExecutionSpace& space, const ToeplitzColumns<T>& columns, const XView& x,
                    const FitView& fit, const StatusView& status) {
  const std::int64_t waveforms = fit.extent(0), m = fit.extent(1);
  Kokkos::parallel_for(
      "kpl::deconvolution::fit",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(space, {0, 0}, {waveforms, m}),
      KOKKOS_LAMBDA(const std::int64_t w, const std::int64_t i) {
        T pulse_max = 0;
        for (std::int64_t t = 0; t < columns.pulse_length; ++t) {
          const T tap = compat::math::fabs(columns.pulse[w * columns.pulse_stride + t]);
          if (tap > pulse_max) pulse_max = tap;
        }
        const int exponent = impl::unit_scale_exponent(pulse_max);
        const T scale = impl::power_of_two<T>(-exponent);
        // Columns j whose band holds row i: i - j + c in [0, L).
        const std::int64_t first = i + columns.origin - columns.pulse_length + 1;
        const std::int64_t last = i + columns.origin;
        T sum = 0;
        for (std::int64_t j = first > 0 ? first : 0; j <= last && j < m; ++j)
          sum += scale * columns(w, i, j) * x(w, j);
        fit(w, i) = impl::scale_by_power_of_two(sum, exponent);
      });
  Kokkos::parallel_for(
      "kpl::deconvolution::check_fit", Kokkos::RangePolicy<ExecutionSpace>(space, 0, waveforms),
      KOKKOS_LAMBDA(const std::int64_t w) {
        bool finite = true;
        for (std::int64_t i = 0; i < m; ++i) finite = finite && compat::math::isfinite(fit(w, i));
        if (!finite) status(w) = static_cast<int>(NnlsStatus::numerical_issue);
      });
}

}  // namespace impl

// Deconvolves waveforms [W, m] with pulses [1, L] (shared) or [W, L] on the
// device. Returns are sparse, so unless options.nnls.max_passive is given the
// passive set is first capped small (Q is m x 64 per waveform, not m x m);
// waveforms that reach the cap are solved again, in batches that fit the same
// workspace, with the cap doubled up to m: memory follows the passive set
// actually reached. solution is [W, m]; fit [W, m] receives A x; iterations
// add up over the attempts.
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
  using Memory = typename ExecutionSpace::memory_space;
  const std::int64_t count = waveforms.extent(0), m = waveforms.extent(1);
  const std::int64_t pulse_length = pulses.extent(1);
  const bool per_waveform = pulses.extent(0) != 1 || count == 1;
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
  auto& used = workspace ? *workspace : local_workspace;
  const auto columns = make_toeplitz_columns(pulses.data(), per_waveform ? pulse_length : 0,
                                             pulse_length, m, options.origin);
  NnlsOptions nnls_options = options.nnls;
  std::int64_t cap = deconvolution_first_passive_cap(m, options);
  nnls_options.max_passive = static_cast<int>(cap);
  nnls_columns(space, columns, m, m, waveforms, solution, nnls_options, &used);

  const bool adaptive = options.nnls.max_passive <= 0;
  const std::int64_t workspace_budget = count * nnls_workspace_bytes_per_system<T>(m, m, cap);
  while (adaptive && cap < m) {
    // Which waveforms filled their passive set (status on the host: W ints).
    const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.status);
    std::vector<int> full;
    for (std::int64_t w = 0; w < count; ++w)
      if (status(w) == int(NnlsStatus::passive_set_full)) full.push_back(int(w));
    if (full.empty()) break;
    cap = std::min<std::int64_t>(2 * cap, m);
    nnls_options.max_passive = static_cast<int>(cap);
    const std::int64_t batch =
        std::max<std::int64_t>(1, workspace_budget / nnls_workspace_bytes_per_system<T>(m, m, cap));
    for (std::size_t first = 0; first < full.size(); first += std::size_t(batch)) {
      const std::int64_t size = std::min<std::int64_t>(batch, std::int64_t(full.size() - first));
      Kokkos::View<int*, Memory> indices("kpl::deconvolution::retry_indices", size);
      {
        auto host = Kokkos::create_mirror_view(indices);
        for (std::int64_t r = 0; r < size; ++r) host(r) = full[first + r];
        Kokkos::deep_copy(space, indices, host);
      }
      Kokkos::View<T**, Kokkos::LayoutRight, Memory> retry_waveforms(
          "kpl::deconvolution::retry_waveforms", size, m);
      Kokkos::View<T**, Kokkos::LayoutRight, Memory> retry_pulses(
          "kpl::deconvolution::retry_pulses", per_waveform ? size : 1, pulse_length);
      Kokkos::parallel_for(
          "kpl::deconvolution::gather", Kokkos::RangePolicy<ExecutionSpace>(space, 0, size),
          KOKKOS_LAMBDA(const std::int64_t r) {
            const int w = indices(r);
            for (std::int64_t i = 0; i < m; ++i) retry_waveforms(r, i) = waveforms(w, i);
            if (per_waveform || r == 0)
              for (std::int64_t t = 0; t < pulse_length; ++t)
                retry_pulses(r, t) = pulses(per_waveform ? w : 0, t);
          });
      NnlsSolution<ExecutionSpace, T> retry(size, m);
      const auto retry_columns = make_toeplitz_columns(
          retry_pulses.data(), per_waveform ? pulse_length : 0, pulse_length, m, options.origin);
      nnls_columns(space, retry_columns, m, m, retry_waveforms, retry, nnls_options, &used);
      const auto x = solution.x;
      const auto residual_norm = solution.residual_norm;
      const auto kkt_residual = solution.kkt_residual;
      const auto iterations = solution.iterations;
      const auto status_device = solution.status;
      const auto column_changes = solution.column_changes;
      Kokkos::parallel_for(
          "kpl::deconvolution::scatter", Kokkos::RangePolicy<ExecutionSpace>(space, 0, size),
          KOKKOS_LAMBDA(const std::int64_t r) {
            const int w = indices(r);
            for (std::int64_t j = 0; j < m; ++j) x(w, j) = retry.x(r, j);
            residual_norm(w) = retry.residual_norm(r);
            kkt_residual(w) = retry.kkt_residual(r);
            iterations(w) += retry.iterations(r);
            status_device(w) = retry.status(r);
            column_changes(w, 0) += retry.column_changes(r, 0);
            column_changes(w, 1) += retry.column_changes(r, 1);
          });
    }
  }
  impl::toeplitz_apply(space, columns, solution.x, fit, solution.status);
}

struct DeconvolutionFileOptions {
  DeconvolutionOptions deconvolution;
  bool single_precision = false;
  std::int64_t memory_budget_bytes = std::int64_t(1) << 30;
};

struct DeconvolutionSummary {
  std::int64_t waveforms = 0;
  std::int64_t chunks = 0;
  std::int64_t waveforms_per_chunk = 0;
  std::int64_t status_counts[nnls_status_count] = {};  // by NnlsStatus
  double seconds = 0;
};

// `kpl deconv`: reads /pulse ([L] or [W, L]) and /waveforms [W, m] from
// input_path, deconvolves on the default execution space in chunks that fit
// the budget, writes /x, /fit [W, m], /rnorm, /iterations, /status [W] and
// the settings to output_path (nothing appears there unless all succeeds).
// Bad input is a kpl::input_error naming the file and dataset.
DeconvolutionSummary deconvolve_file(const std::string& input_path, const std::string& output_path,
                                     const DeconvolutionFileOptions& options);

// `kpl simulate deconv`: LVIS-like waveforms — per waveform a Gaussian
// transmit pulse (width 15-25 samples) in a 25-sample window, 1-4 returns at
// random positions with random amplitudes, Gaussian noise — written with the
// true returns (/x_true) and the pulses to output_path.
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
