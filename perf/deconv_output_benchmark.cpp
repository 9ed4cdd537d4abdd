// What `kpl deconv` does to its outputs besides solving: shuffle + deflate of
// /x and /fit rows at each level (kpl::hdf5::compress_rows, the chunks kpl
// stores with direct chunk writes), and finding the returns in x. Inputs are
// real solutions: LVIS-like waveforms (kpl's simulator) deconvolved once on
// the default execution space. The counters give the bytes per second that
// go in (uncompressed) and the stored size over the raw size, the figures
// behind kpl::default_deflate_level (perf/RESULTS.md).
#include <kpl/deconvolution.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/waveform_returns.hpp>

#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::int64_t waveforms = 8192, samples = 432;  // 27 chunks a dataset

// x and fit of the simulated waveforms [waveforms, samples], on the host, in
// precision T (plain vectors: they outlive Kokkos).
template <class T>
struct Solutions {
  std::vector<T> x, fit, rnorm;
  std::vector<kpl::PulseShape> shapes;
};

template <class T>
auto rows_of(const std::vector<T>& values) {
  return Kokkos::View<const T**, Kokkos::LayoutRight, Kokkos::HostSpace,
                      Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values.data(), waveforms, samples);
}

template <class View>
auto copied(const View& view) {
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, view);
  return std::vector<typename View::non_const_value_type>(host.data(), host.data() + host.span());
}

template <class T>
const Solutions<T>& solutions() {
  static const Solutions<T> solved = [] {
    using Space = Kokkos::DefaultExecutionSpace;
    kpl::DeconvolutionSimulation simulation;
    simulation.waveforms = waveforms;
    simulation.samples = samples;
    simulation.seed = 2011;
    const auto simulated = kpl::WaveformSimulator(simulation).next(waveforms);
    const std::int64_t L = kpl::WaveformSimulator::pulse_window;
    Kokkos::View<T**, Kokkos::LayoutRight, Space::memory_space> y("y", waveforms, samples),
        pulses("pulses", waveforms, L), fit("fit", waveforms, samples);
    auto y_host = Kokkos::create_mirror_view(y);
    auto pulses_host = Kokkos::create_mirror_view(pulses);
    Solutions<T> result;
    for (std::int64_t w = 0; w < waveforms; ++w) {
      for (std::int64_t i = 0; i < samples; ++i) y_host(w, i) = T(simulated.waveforms(w, i));
      for (std::int64_t t = 0; t < L; ++t) pulses_host(w, t) = T(simulated.pulses(w, t));
      result.shapes.push_back(kpl::pulse_shape(&pulses_host(w, 0), L, 0));
    }
    Kokkos::deep_copy(y, y_host);
    Kokkos::deep_copy(pulses, pulses_host);
    kpl::NnlsSolution<Space, T> solution(waveforms, samples);
    kpl::deconvolve<Space, T>(Space{}, pulses, y, solution, fit);
    result.x = copied(solution.x);
    result.fit = copied(fit);
    result.rnorm = copied(solution.residual_norm);
    return result;
  }();
  return solved;
}

int compression_threads() {
  return std::max(1, int(std::thread::hardware_concurrency()) - 2);
}

// One dataset's rows, compressed at state.range(0) on state.range(1) threads
// in `kpl deconv`'s chunks (a mebibyte of rows).
template <class T>
void compress(benchmark::State& state, bool fit) {
  const auto& solved = solutions<T>();
  const auto rows = rows_of(fit ? solved.fit : solved.x);
  const std::size_t chunk_rows = (std::size_t(1) << 20) / (samples * sizeof(T));
  const kpl::hdf5::Storage storage{chunk_rows, int(state.range(0))};
  const int threads = state.range(1) == 0 ? compression_threads() : int(state.range(1));
  std::size_t stored = 0;
  for (auto _ : state) {
    const auto compressed = kpl::hdf5::compress_rows(rows, 0, storage, threads);
    stored = compressed.stored_bytes();
    benchmark::DoNotOptimize(stored);
  }
  const double raw = double(rows.span() * sizeof(T));
  state.counters["bytes/s"] =
      benchmark::Counter(raw * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["stored/raw"] = double(stored) / raw;
  state.counters["threads"] = threads;
}

template <class T>
void find_returns(benchmark::State& state) {
  const auto& solved = solutions<T>();
  std::int64_t found = 0;
  for (auto _ : state) {
    kpl::WaveformReturns returns;
    for (std::int64_t w = 0; w < waveforms; ++w)
      kpl::find_returns(&solved.x[w * samples], samples, double(solved.rnorm[w]), solved.shapes[w],
                        nullptr, kpl::ReturnsOptions{}, returns);
    found = std::int64_t(returns.sample.size());
    benchmark::DoNotOptimize(found);
  }
  state.counters["waveforms/s"] = benchmark::Counter(double(waveforms * state.iterations()),
                                                     benchmark::Counter::kIsRate);
  state.counters["returns/waveform"] = double(found) / double(waveforms);
}

template <class T>
void register_for(const char* precision) {
  for (const bool fit : {false, true}) {
    const std::string name =
        std::string("deconv_output/compress/") + (fit ? "fit/" : "x/") + precision;
    auto* bench = benchmark::RegisterBenchmark(
        name.c_str(), [fit](benchmark::State& state) { compress<T>(state, fit); });
    bench->ArgNames({"level", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
    for (const int level : {0, 1, 2, 3, 4, 6, 9}) bench->Args({level, 1});
    for (const int level : {1, 4}) bench->Args({level, 0});  // 0: kpl deconv's thread count
    bench->Args({1, 2});
  }
  benchmark::RegisterBenchmark((std::string("deconv_output/returns/") + precision).c_str(),
                               find_returns<T>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

const bool registered = [] {
  register_for<double>("double");
  register_for<float>("float");
  return true;
}();

}  // namespace
