// The adaptive passive-set cap behind kpl::deconvolve. Returns are sparse
// (Luo & Duraiswami 2011, §6: a few ground returns per lidar waveform), so
// the passive set is first capped small (Q is m x cap per waveform, not
// m x m); the waveforms that reach the cap are solved again, in batches that
// fit the first solve's workspace, with the cap doubled up to m: memory
// follows the passive set actually reached.
#pragma once

#include <kpl/impl/deconvolution_toeplitz.hpp>
#include <kpl/nnls.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kpl::impl {

template <class ExecutionSpace, class T>
using DeconvolutionMatrix =
    Kokkos::View<T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>;
template <class ExecutionSpace, class T>
using DeconvolutionInput =
    Kokkos::View<const T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>;

// Device bytes one waveform needs at passive cap `cap`: the solver's
// workspace, the waveform, x and fit, residual norm and KKT residual,
// iterations, status, 2 column counts, the pulse when each waveform has its
// own, and a retried waveform's copies (waveform, pulse, solution, index: at
// most one per waveform of the chunk, so the retries stay inside the budget).
template <class T>
std::int64_t adaptive_cap_bytes_per_waveform(std::int64_t samples, std::int64_t pulse_length,
                                             bool pulse_per_waveform, std::int64_t cap) {
  const std::int64_t vectors = 3 * samples * sizeof(T) + 2 * sizeof(T) + 4 * sizeof(int) +
                               (pulse_per_waveform ? pulse_length * sizeof(T) : 0);
  const std::int64_t retry =
      2 * samples * sizeof(T) + pulse_length * sizeof(T) + 2 * sizeof(T) + 5 * sizeof(int);
  return nnls_workspace_bytes_per_system<T>(samples, samples, cap) + vectors + retry;
}

// The waveforms whose passive set filled (status on the host: W ints).
template <class ExecutionSpace, class T>
std::vector<int> waveforms_at_cap(const NnlsSolution<ExecutionSpace, T>& solution) {
  const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.status);
  std::vector<int> full;
  for (std::int64_t w = 0; w < std::int64_t(status.extent(0)); ++w)
    if (status(w) == int(NnlsStatus::passive_set_full)) full.push_back(int(w));
  return full;
}

// One batch of retried waveforms: their indices, waveforms and pulses
// (one shared pulse, or one per waveform) copied out of the whole set.
template <class ExecutionSpace, class T>
struct RetryBatch {
  Kokkos::View<int*, typename ExecutionSpace::memory_space> indices;
  DeconvolutionMatrix<ExecutionSpace, T> waveforms, pulses;
};

template <class ExecutionSpace, class T>
RetryBatch<ExecutionSpace, T> gather_retry_batch(const ExecutionSpace& space,
                                                 const DeconvolutionInput<ExecutionSpace, T>& pulses,
                                                 const DeconvolutionInput<ExecutionSpace, T>& waveforms,
                                                 const int* full, std::int64_t size,
                                                 bool per_waveform) {
  const std::int64_t m = waveforms.extent(1), pulse_length = pulses.extent(1);
  RetryBatch<ExecutionSpace, T> batch{
      Kokkos::View<int*, typename ExecutionSpace::memory_space>(
          "kpl::deconvolution::retry_indices", size),
      DeconvolutionMatrix<ExecutionSpace, T>("kpl::deconvolution::retry_waveforms", size, m),
      DeconvolutionMatrix<ExecutionSpace, T>("kpl::deconvolution::retry_pulses",
                                             per_waveform ? size : 1, pulse_length)};
  {
    auto host = Kokkos::create_mirror_view(batch.indices);
    for (std::int64_t r = 0; r < size; ++r) host(r) = full[r];
    Kokkos::deep_copy(space, batch.indices, host);
  }
  const auto indices = batch.indices;
  const auto retry_waveforms = batch.waveforms;
  const auto retry_pulses = batch.pulses;
  Kokkos::parallel_for(
      "kpl::deconvolution::gather", Kokkos::RangePolicy<ExecutionSpace>(space, 0, size),
      KOKKOS_LAMBDA(const std::int64_t r) {
        const int w = indices(r);
        for (std::int64_t i = 0; i < m; ++i) retry_waveforms(r, i) = waveforms(w, i);
        if (per_waveform || r == 0)
          for (std::int64_t t = 0; t < pulse_length; ++t)
            retry_pulses(r, t) = pulses(per_waveform ? w : 0, t);
      });
  return batch;
}

// Writes a retry's results over the waveforms' earlier ones; iterations and
// column changes add up over the attempts.
template <class ExecutionSpace, class T>
void scatter_retry(const ExecutionSpace& space,
                   const Kokkos::View<int*, typename ExecutionSpace::memory_space>& indices,
                   const NnlsSolution<ExecutionSpace, T>& retry,
                   const NnlsSolution<ExecutionSpace, T>& solution) {
  const std::int64_t m = solution.x.extent(1);
  const auto x = solution.x;
  const auto residual_norm = solution.residual_norm;
  const auto kkt_residual = solution.kkt_residual;
  const auto iterations = solution.iterations;
  const auto status = solution.status;
  const auto column_changes = solution.column_changes;
  Kokkos::parallel_for(
      "kpl::deconvolution::scatter",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, indices.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t r) {
        const int w = indices(r);
        for (std::int64_t j = 0; j < m; ++j) x(w, j) = retry.x(r, j);
        residual_norm(w) = retry.residual_norm(r);
        kkt_residual(w) = retry.kkt_residual(r);
        iterations(w) += retry.iterations(r);
        status(w) = retry.status(r);
        column_changes(w, 0) += retry.column_changes(r, 0);
        column_changes(w, 1) += retry.column_changes(r, 1);
      });
}

// Solves the waveforms listed in `full` again at passive cap `cap`, in
// batches whose workspace stays within workspace_budget bytes.
template <class ExecutionSpace, class T>
void retry_at_cap(const ExecutionSpace& space, const DeconvolutionInput<ExecutionSpace, T>& pulses,
                  const DeconvolutionInput<ExecutionSpace, T>& waveforms,
                  const std::vector<int>& full, NnlsSolution<ExecutionSpace, T>& solution,
                  NnlsOptions nnls_options, std::int64_t cap, std::int64_t workspace_budget,
                  PulseOrigin origin, bool per_waveform,
                  NnlsWorkspace<ExecutionSpace, T>& workspace) {
  const std::int64_t m = waveforms.extent(1), pulse_length = pulses.extent(1);
  nnls_options.max_passive = static_cast<int>(cap);
  const std::int64_t batch =
      std::max<std::int64_t>(1, workspace_budget / nnls_workspace_bytes_per_system<T>(m, m, cap));
  for (std::size_t first = 0; first < full.size(); first += std::size_t(batch)) {
    const std::int64_t size = std::min<std::int64_t>(batch, std::int64_t(full.size() - first));
    const auto retry = gather_retry_batch<ExecutionSpace, T>(space, pulses, waveforms,
                                                             full.data() + first, size,
                                                             per_waveform);
    NnlsSolution<ExecutionSpace, T> retried(size, m);
    const auto columns = make_toeplitz_columns(
        retry.pulses.data(), per_waveform ? pulse_length : 0, pulse_length, m, origin);
    nnls_columns(space, columns, m, m, retry.waveforms, retried, nnls_options, &workspace);
    scatter_retry(space, retry.indices, retried, solution);
  }
}

// The first solve at `first_cap`, then (when `adaptive`) rounds of retries
// with the cap doubled until no waveform fills it or it reaches m; then
// fit = A x.
template <class ExecutionSpace, class T>
void deconvolve_adaptive(const ExecutionSpace& space,
                         const DeconvolutionInput<ExecutionSpace, T>& pulses,
                         const DeconvolutionInput<ExecutionSpace, T>& waveforms,
                         NnlsSolution<ExecutionSpace, T>& solution,
                         const DeconvolutionMatrix<ExecutionSpace, T>& fit, NnlsOptions nnls_options,
                         std::int64_t first_cap, bool adaptive, PulseOrigin origin,
                         NnlsWorkspace<ExecutionSpace, T>& workspace) {
  const std::int64_t count = waveforms.extent(0), m = waveforms.extent(1);
  const std::int64_t pulse_length = pulses.extent(1);
  const bool per_waveform = pulses.extent(0) != 1 || count == 1;
  const auto columns = make_toeplitz_columns(pulses.data(), per_waveform ? pulse_length : 0,
                                             pulse_length, m, origin);
  std::int64_t cap = first_cap;
  nnls_options.max_passive = static_cast<int>(cap);
  nnls_columns(space, columns, m, m, waveforms, solution, nnls_options, &workspace);
  const std::int64_t workspace_budget = count * nnls_workspace_bytes_per_system<T>(m, m, cap);
  while (adaptive && cap < m) {
    const std::vector<int> full = waveforms_at_cap(solution);
    if (full.empty()) break;
    cap = std::min<std::int64_t>(2 * cap, m);
    retry_at_cap(space, pulses, waveforms, full, solution, nnls_options, cap, workspace_budget,
                 origin, per_waveform, workspace);
  }
  toeplitz_apply(space, columns, solution.x, fit, solution.status);
}

}  // namespace kpl::impl
