// The boosted GAM on every backend (Sieminski & Lee 2023 §4: p = 100
// covariates of their simulation, 20 informative): whole fits, basis
// construction and lambda search included, for the seed's grid of n and k
// per basis storage, mode and gemv strategy, and the kernels of one
// iteration. A fit reports fits/s and its time split (basis, lambda,
// boosting seconds); the per-iteration kernels report the bytes they must
// read (the basis once) as GB/s. The mboost baseline (one core of the 2-core
// machine) is in perf/RESULTS.md.
#include "benchmark_report.hpp"

#include <kpl/compact_basis.hpp>
#include <kpl/evaluated_basis.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/gam.hpp>
#include <kpl/gam_file.hpp>

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::int64_t covariates = 100;

// The seed's simulated data, made once per size and kept for the run (as
// plain vectors: Views may not outlive Kokkos).
struct Simulated {
  std::vector<double> X, y;  // X row-major [n, p]
};

const Simulated& simulated(std::int64_t n) {
  static std::map<std::int64_t, Simulated> cache;
  auto found = cache.find(n);
  if (found == cache.end()) {
    kpl::GamSimulation simulation;
    simulation.observations = n;
    simulation.covariates = covariates;
    simulation.seed = 2023;
    const auto data = kpl::simulate_gam(simulation);
    Simulated copy{std::vector<double>(data.X.data(), data.X.data() + data.X.size()),
                   std::vector<double>(data.y.data(), data.y.data() + data.y.size())};
    found = cache.emplace(n, std::move(copy)).first;
  }
  return found->second;
}

template <class Space, class T>
std::pair<Kokkos::View<T**, Kokkos::LayoutLeft, typename Space::memory_space>,
          Kokkos::View<T*, typename Space::memory_space>>
device_data(std::int64_t n) {
  const auto& data = simulated(n);
  Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace> X("X", n, covariates);
  Kokkos::View<T*, Kokkos::HostSpace> y("y", n);
  for (std::int64_t i = 0; i < n; ++i) {
    y(i) = T(data.y[i]);
    for (std::int64_t j = 0; j < covariates; ++j) X(i, j) = T(data.X[i * covariates + j]);
  }
  return {Kokkos::create_mirror_view_and_copy(typename Space::memory_space(), X),
          Kokkos::create_mirror_view_and_copy(typename Space::memory_space(), y)};
}

// The seed's benchmark setting: ridge learners with df = trace(S) = 1.
kpl::GamOptions seed_options(int k, int mstop) {
  kpl::GamOptions options;
  options.basis_size = k;
  options.differences = 0;
  options.df = 1;
  options.df_definition = kpl::DfDefinition::trace;
  options.mstop = mstop;
  options.basis = kpl::GamBasis::compact;  // rows name their basis; not the automatic choice
  return options;
}

template <class Space, class T>
void gam_fit(benchmark::State& state, kpl::GamOptions options) {
  const std::int64_t n = state.range(0);
  const auto [X, y] = device_data<Space, T>(n);
  const Space space;
  kpl::GamTimings timings, total{};
  for (auto _ : state) {
    const auto model = kpl::fit_gam(space, X, y, options, &timings);
    benchmark::DoNotOptimize(model.risk.back());
    total.basis_seconds += timings.basis_seconds;
    total.penalty_seconds += timings.penalty_seconds;
    total.boosting_seconds += timings.boosting_seconds;
  }
  const double fits = double(state.iterations());
  state.counters["fits/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["basis_s"] = total.basis_seconds / fits;
  state.counters["lambda_s"] = total.penalty_seconds / fits;
  state.counters["boosting_s"] = total.boosting_seconds / fits;
  state.counters["ms/iteration"] = 1e3 * total.boosting_seconds / fits / options.mstop;
  state.counters["device_GB"] = double(timings.device_bytes) * 1e-9;
  state.SetLabel(std::string("backend=") + Space::name());
}

// The compact basis of the simulated data's n rows, k functions a covariate.
template <class Space, class T>
kpl::CompactBasis<T, typename Space::memory_space> compact_basis(const Space& space,
                                                                 std::int64_t n, int k) {
  using Memory = typename Space::memory_space;
  const auto [X, y] = device_data<Space, T>(n);
  Kokkos::View<kpl::BsplineMesh*, Memory> meshes("meshes", covariates);
  {
    auto host = Kokkos::create_mirror_view(meshes);
    for (std::int64_t j = 0; j < covariates; ++j) host(j) = {0.0, 1.0, k, 3};
    Kokkos::deep_copy(meshes, host);
  }
  kpl::CompactBasis<T, Memory> basis("basis", covariates, n, 4, k);
  kpl::build_bspline_basis(space, X, meshes, basis);
  return basis;
}

// Times one product over the basis a call and reports the bytes it reads.
template <class Space, class Product>
void time_product(benchmark::State& state, const Space& space, double bytes,
                  const Product& product) {
  for (auto _ : state) {
    product();
    space.fence();
  }
  kpl::perf::report_bytes(state, bytes, Space::name());
}

// B^T u for all learners from the compact basis: the direct mode's kernel.
template <class Space, class T>
void gam_transpose_product(benchmark::State& state, int k) {
  using Memory = typename Space::memory_space;
  const std::int64_t n = state.range(0);
  const Space space;
  const auto basis = compact_basis<Space, T>(space, n, k);
  Kokkos::View<double*, Memory> u("u", n), c("c", covariates * k);
  Kokkos::deep_copy(u, 1.0);
  time_product(state, space, double(basis.bytes() + n * sizeof(double)),
               [&] { kpl::transpose_product(space, basis, u, c); });
}

// B_j^T B_s for every learner j and one selected learner s: what Gram mode
// computes once for each learner boosting selects.
template <class Space, class T>
void gam_cross_products(benchmark::State& state, int k) {
  using Memory = typename Space::memory_space;
  const std::int64_t n = state.range(0);
  const Space space;
  const auto basis = compact_basis<Space, T>(space, n, k);
  const Kokkos::View<double*, Memory> no_weights("w", 0), out("out", covariates * k * k);
  kpl::CompactProductWorkspace<Memory> workspace;
  constexpr std::int64_t selected = 7;
  time_product(state, space, double(basis.bytes()), [&] {
    kpl::cross_products(space, basis, no_weights, selected, out, &workspace);
  });
}

// Every learner's own B_j^T B_j as exact parts (kpl::cross_product_parts):
// what the set-up sums once a fit for the learners' lambdas.
template <class Space, class T>
void gam_cross_product_parts(benchmark::State& state, int k) {
  using Memory = typename Space::memory_space;
  const std::int64_t n = state.range(0);
  const Space space;
  const auto basis = compact_basis<Space, T>(space, n, k);
  const Kokkos::View<double*, Memory> no_weights("w", 0);
  const Kokkos::View<double*, Memory> parts("parts",
                                            kpl::ExactSumGrid::parts * covariates * k * k);
  const auto bounds = kpl::cross_product_bounds(space, basis, no_weights);
  const auto grid = kpl::ExactSumGrid::covering(bounds.term(), n);
  time_product(state, space, double(basis.bytes()),
               [&] { kpl::cross_product_parts(space, basis, no_weights, -1, grid, parts); });
}

// B^T u for all learners from the evaluated basis (kpl/evaluated_basis.hpp):
// the direct mode's kernel with --basis evaluated; the bytes it must read
// are x and u.
template <class Space, class T>
void gam_evaluated_transpose_product(benchmark::State& state, int k) {
  using Memory = typename Space::memory_space;
  const std::int64_t n = state.range(0);
  const auto [X, y] = device_data<Space, T>(n);
  const Space space;
  const std::vector<kpl::BsplineMesh> meshes(covariates, kpl::BsplineMesh{0.0, 1.0, k, 3});
  const auto basis = kpl::evaluated_bspline_basis<T>(space, "basis", X, meshes);
  Kokkos::View<double*, Memory> u("u", n), c("c", covariates * k);
  Kokkos::deep_copy(u, 1.0);
  kpl::CompactProductWorkspace<Memory> workspace;
  time_product(state, space, double(basis.bytes() + n * sizeof(double)),
               [&] { kpl::transpose_product(space, basis, u, c, &workspace); });
}

template <class T>
const char* precision() {
  return sizeof(T) == 8 ? "double" : "float";
}

template <class Space, class T>
void register_for() {
  constexpr bool host = kpl::impl::runs_on_host_v<Space>;
  const std::string suffix = std::string("/") + precision<T>();
  // Fit time vs n, the seed's grid of k, compact basis, both modes.
  const std::vector<std::int64_t> sizes = host ? std::vector<std::int64_t>{1000, 10000}
                                               : std::vector<std::int64_t>{1000, 10000, 100000};
  for (int k : {16, 32, 64}) {
    for (auto mode : {kpl::GamMode::direct, kpl::GamMode::gram}) {
      for (int mstop : {100, 1000}) {
        if (mstop == 1000 && (host || k != 32)) continue;
        auto options = seed_options(k, mstop);
        options.mode = mode;
        auto* benchmark = benchmark::RegisterBenchmark(
            ("gam_fit/compact/" + kpl::to_string(mode) + suffix + "/k:" + std::to_string(k) +
             "/mstop:" + std::to_string(mstop) + "/" + Space::name())
                .c_str(),
            [options](benchmark::State& state) { gam_fit<Space, T>(state, options); });
        benchmark->ArgName("n")->UseRealTime()->Unit(benchmark::kMillisecond);
        for (auto n : sizes) benchmark->Arg(n);
        if (k == 32 && mstop == 100) benchmark->Arg(host ? 100000 : 1000000);  // the anchors' n
      }
    }
  }
  // The evaluated basis (B^T u from x), k = 32: the anchors' n. Direct mode,
  // and on GPUs Gram mode (its refreshes take B^T u from x; the cross
  // products still come from the stored compact basis).
  for (auto mode : {kpl::GamMode::direct, kpl::GamMode::gram}) {
    for (int mstop : {100, 1000}) {
      if (host && (mstop == 1000 || mode == kpl::GamMode::gram)) continue;
      auto options = seed_options(32, mstop);
      options.basis = kpl::GamBasis::evaluated;
      options.mode = mode;
      auto* benchmark = benchmark::RegisterBenchmark(
          ("gam_fit/evaluated/" + kpl::to_string(mode) + suffix + "/k:32/mstop:" +
           std::to_string(mstop) + "/" + Space::name())
              .c_str(),
          [options](benchmark::State& state) { gam_fit<Space, T>(state, options); });
      benchmark->ArgName("n")->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark->Arg(10000)->Arg(100000);
      if (!host && mstop == 100) benchmark->Arg(1000000);
    }
  }
  // The mboost anchor's first case: n = 2000, k = 16, mstop = 200.
  for (auto mode : {kpl::GamMode::direct, kpl::GamMode::gram}) {
    auto options = seed_options(16, 200);
    options.mode = mode;
    auto* benchmark = benchmark::RegisterBenchmark(
        ("gam_fit/compact/" + kpl::to_string(mode) + suffix + "/k:16/mstop:200/" + Space::name())
            .c_str(),
        [options](benchmark::State& state) { gam_fit<Space, T>(state, options); });
    benchmark->ArgName("n")->UseRealTime()->Unit(benchmark::kMillisecond)->Arg(2000);
  }
  // The seed's gemv strategies on the dense basis (n x p k), direct mode.
  for (int k : {16, 32, 64}) {
    for (auto strategy : {kpl::GemvStrategy::automatic, kpl::GemvStrategy::thread_per_row,
                          kpl::GemvStrategy::team_per_dot, kpl::GemvStrategy::partial_rows,
                          kpl::GemvStrategy::kokkos_kernels}) {
      auto options = seed_options(k, 100);
      options.basis = kpl::GamBasis::dense;
      options.gemv.strategy = strategy;
      auto* benchmark = benchmark::RegisterBenchmark(
          ("gam_fit/dense-" + std::string(kpl::to_string(strategy)) + "/direct" + suffix +
           "/k:" + std::to_string(k) + "/mstop:100/" + Space::name())
              .c_str(),
          [options](benchmark::State& state) { gam_fit<Space, T>(state, options); });
      benchmark->ArgName("n")->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark->Arg(1000)->Arg(10000);
      if (!host) benchmark->Arg(100000);
    }
  }
  for (int k : {16, 32, 64}) {
    auto* benchmark = benchmark::RegisterBenchmark(
        ("gam_kernel/transpose_product" + suffix + "/k:" + std::to_string(k) + "/" + Space::name())
            .c_str(),
        [k](benchmark::State& state) { gam_transpose_product<Space, T>(state, k); });
    benchmark->ArgName("n")->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark->Arg(10000)->Arg(100000);
    if (!host) benchmark->Arg(1000000);
    for (const auto& [name, run] :
         {std::pair{"cross_products", &gam_cross_products<Space, T>},
          std::pair{"cross_product_parts", &gam_cross_product_parts<Space, T>}}) {
      auto* products = benchmark::RegisterBenchmark(
          ("gam_kernel/" + std::string(name) + suffix + "/k:" + std::to_string(k) + "/" +
           Space::name())
              .c_str(),
          [k, run = run](benchmark::State& state) { run(state, k); });
      products->ArgName("n")->UseRealTime()->Unit(benchmark::kMicrosecond);
      products->Arg(10000)->Arg(100000);
      if (!host) products->Arg(1000000);
    }
    auto* evaluated = benchmark::RegisterBenchmark(
        ("gam_kernel/transpose_product_evaluated" + suffix + "/k:" + std::to_string(k) + "/" +
         Space::name())
            .c_str(),
        [k](benchmark::State& state) { gam_evaluated_transpose_product<Space, T>(state, k); });
    evaluated->ArgName("n")->UseRealTime()->Unit(benchmark::kMicrosecond);
    evaluated->Arg(10000)->Arg(100000);
    if (!host) evaluated->Arg(1000000);
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
