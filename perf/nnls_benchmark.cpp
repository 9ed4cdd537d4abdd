// Batched NNLS and the deconvolution on every backend, on the seed's cases
// (Luo & Duraiswami 2011, §7): 512 x 512 matrices whose columns are shifted
// Gaussians (sigma 4.32) or uniform random, shared by 1 to 192 systems with
// uniform random b (their Table 7.2 columns), and LVIS-like waveforms of 432
// samples (Table 7.1; kpl's simulator). Reports systems (or waveforms) per
// second and, per system, the passive solves and the QR updates/downdates,
// the work the active-set method did. The scipy baseline on the same CPU is
// perf/scipy_nnls_baseline.py.
#include <kpl/deconvolution.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/nnls.hpp>

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

enum class Matrix { shifted_gaussians, uniform };

template <class T, class Memory>
Kokkos::View<T**, Kokkos::LayoutLeft, Memory> make_matrix(Matrix kind, std::int64_t size) {
  Kokkos::View<T**, Kokkos::LayoutLeft, Memory> a("A", size, size);
  auto host = Kokkos::create_mirror_view(a);
  std::mt19937_64 generator(512);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double sigma = 4.32;
  for (std::int64_t j = 0; j < size; ++j)
    for (std::int64_t i = 0; i < size; ++i) {
      const double d = double(i - j) / sigma;
      host(i, j) =
          T(kind == Matrix::shifted_gaussians ? std::exp(-0.5 * d * d) : uniform(generator));
    }
  Kokkos::deep_copy(a, host);
  return a;
}

template <class Solution>
void report_work(benchmark::State& state, const Solution& solution, double items,
                 const char* unit) {
  const auto iterations =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.iterations);
  const auto changes =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.column_changes);
  const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.status);
  double solves = 0, updates = 0, downdates = 0, converged = 0;
  const std::size_t systems = iterations.extent(0);
  for (std::size_t s = 0; s < systems; ++s) {
    solves += iterations(s);
    updates += changes(s, 0);
    downdates += changes(s, 1);
    converged += status(s) == int(kpl::NnlsStatus::converged);
  }
  state.counters[unit] = benchmark::Counter(items, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["solves/system"] = solves / double(systems);
  state.counters["updates/system"] = updates / double(systems);
  state.counters["downdates/system"] = downdates / double(systems);
  state.counters["converged"] = converged / double(systems);
}

template <class Space, class T>
void nnls_batch(benchmark::State& state, Matrix kind, kpl::NnlsOptions options) {
  using Memory = typename Space::memory_space;
  const std::int64_t systems = state.range(0), size = 512;
  const auto a = make_matrix<T, Memory>(kind, size);
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> b("b", systems, size);
  {
    auto host = Kokkos::create_mirror_view(b);
    std::mt19937_64 generator(7);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (std::int64_t s = 0; s < systems; ++s)
      for (std::int64_t i = 0; i < size; ++i) host(s, i) = T(uniform(generator));
    Kokkos::deep_copy(b, host);
  }
  const Space space;
  kpl::NnlsSolution<Space, T> solution(systems, size);
  kpl::NnlsWorkspace<Space, T> workspace;
  for (auto _ : state) {
    kpl::nnls(space, a, b, solution, options, &workspace);
    space.fence();
  }
  report_work(state, solution, double(systems), "systems/s");
  state.SetLabel(std::string("backend=") + Space::name());
}

template <class Space, class T>
void deconvolution(benchmark::State& state, const kpl::DeconvolutionOptions& options = {}) {
  using Memory = typename Space::memory_space;
  const std::int64_t waveforms = state.range(0);
  kpl::DeconvolutionSimulation simulation;
  simulation.waveforms = waveforms;
  simulation.samples = 432;
  simulation.seed = 2011;
  const auto simulated = kpl::WaveformSimulator(simulation).next(waveforms);
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> y("waveforms", waveforms, simulation.samples);
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> pulses("pulses", waveforms,
                                                        kpl::WaveformSimulator::pulse_window);
  {
    auto y_host = Kokkos::create_mirror_view(y);
    auto pulses_host = Kokkos::create_mirror_view(pulses);
    for (std::int64_t w = 0; w < waveforms; ++w) {
      for (std::int64_t i = 0; i < simulation.samples; ++i)
        y_host(w, i) = T(simulated.waveforms(w, i));
      for (std::int64_t t = 0; t < kpl::WaveformSimulator::pulse_window; ++t)
        pulses_host(w, t) = T(simulated.pulses(w, t));
    }
    Kokkos::deep_copy(y, y_host);
    Kokkos::deep_copy(pulses, pulses_host);
  }
  const Space space;
  kpl::NnlsSolution<Space, T> solution(waveforms, simulation.samples);
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> fit("fit", waveforms, simulation.samples);
  kpl::NnlsWorkspace<Space, T> workspace;
  for (auto _ : state) {
    kpl::deconvolve<Space, T>(space, pulses, y, solution, fit, options, &workspace);
    space.fence();
  }
  report_work(state, solution, double(waveforms), "waveforms/s");
  state.SetLabel(std::string("backend=") + Space::name());
}

template <class T>
const char* precision() {
  return sizeof(T) == 8 ? "double" : "float";
}

template <class Space, class T>
void register_for() {
  constexpr bool host = kpl::impl::runs_on_host_v<Space>;
  const std::string suffix = std::string("/") + precision<T>();
  for (const auto& [name, kind] : {std::pair{"gauss512", Matrix::shifted_gaussians},
                                   std::pair{"uniform512", Matrix::uniform}}) {
    for (const auto orthogonalization : {kpl::NnlsOrthogonalization::classical_twice,
                                         kpl::NnlsOrthogonalization::modified_gram_schmidt}) {
      for (const auto gradient :
           {kpl::NnlsGradient::from_residual, kpl::NnlsGradient::from_cross_products}) {
        kpl::NnlsOptions options;
        options.orthogonalization = orthogonalization;
        options.gradient = gradient;
        const std::string method =
            std::string(orthogonalization == kpl::NnlsOrthogonalization::classical_twice
                            ? "classical-twice"
                            : "modified-gram-schmidt") +
            (gradient == kpl::NnlsGradient::from_residual ? "/gradient-from-residual"
                                                          : "/gradient-from-cross-products");
        auto* benchmark = benchmark::RegisterBenchmark(
            (std::string("nnls/") + name + suffix + "/" + method + "/" + Space::name()).c_str(),
            [kind = kind, options](benchmark::State& state) {
              nnls_batch<Space, T>(state, kind, options);
            });
        benchmark->ArgName("systems")->UseRealTime()->Unit(benchmark::kMillisecond);
        for (int systems : {1, 24, 48, 96, 192}) benchmark->Arg(systems);
      }
    }
  }
  // What the KKT check after the solve costs: the default configuration
  // with and without it, back to back.
  for (const bool checked : {true, false}) {
    kpl::NnlsOptions options;
    options.skip_kkt_check = !checked;
    auto* check = benchmark::RegisterBenchmark(
        (std::string("nnls_kkt_check/gauss512") + suffix + (checked ? "/checked/" : "/unchecked/") +
         Space::name())
            .c_str(),
        [options](benchmark::State& state) {
          nnls_batch<Space, T>(state, Matrix::shifted_gaussians, options);
        });
    check->ArgName("systems")->UseRealTime()->Unit(benchmark::kMillisecond)->Arg(192);
  }
  if (!host) {
    // GPU threads per team (x 32 lanes): one system per team, 192 teams.
    auto* threads = benchmark::RegisterBenchmark(
        (std::string("nnls_team_threads/gauss512") + suffix + "/" + Space::name()).c_str(),
        [](benchmark::State& state) {
          kpl::NnlsOptions options;
          options.team_threads = int(state.range(1));
          nnls_batch<Space, T>(state, Matrix::shifted_gaussians, options);
        });
    threads->ArgNames({"systems", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
    for (int count : {2, 4, 8}) threads->Args({192, count});
  }
  auto* benchmark = benchmark::RegisterBenchmark(
      (std::string("deconv/lvis432") + suffix + "/" + Space::name()).c_str(),
      [](benchmark::State& state) { deconvolution<Space, T>(state); });
  benchmark->ArgName("waveforms")->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark->Arg(192)->Arg(2000);
  if (!host) benchmark->Arg(20000)->Arg(100000);
  if (!host) {
    // GPU threads per team (x 32 lanes) for the deconvolution's small
    // systems: fewer per team, more teams per SM.
    auto* deconv_threads = benchmark::RegisterBenchmark(
        (std::string("deconv_team_threads/lvis432") + suffix + "/" + Space::name()).c_str(),
        [](benchmark::State& state) {
          kpl::DeconvolutionOptions options;
          options.nnls.team_threads = int(state.range(1));
          deconvolution<Space, T>(state, options);
        });
    deconv_threads->ArgNames({"waveforms", "threads"})->UseRealTime()->Unit(
        benchmark::kMillisecond);
    for (int count : {1, 2, 4, 8}) deconv_threads->Args({20000, count});
  }
}

const bool registered = [] {
  kpl::for_each_execution_space([](auto tag) {
    using Space = typename decltype(tag)::type;
    register_for<Space, double>();
    register_for<Space, float>();
  });
  return true;
}();

}  // namespace
