// kpl::reduce against plain Kokkos::parallel_reduce, on every backend.
// Bytes: the input read once (n * sizeof(T)); GB/s beside the copy ceiling
// of kpl_copy_benchmark in the same run.
#include <kpl/execution_spaces.hpp>
#include <kpl/reduce.hpp>

#include "benchmark_report.hpp"

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <chrono>
#include <string>

namespace {

template <class ExecutionSpace, class T>
Kokkos::View<T*, typename ExecutionSpace::memory_space> random_input(std::int64_t length) {
  Kokkos::View<T*, typename ExecutionSpace::memory_space> values(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "values"), length);
  Kokkos::parallel_for(
      "kpl::bench::fill", Kokkos::RangePolicy<ExecutionSpace>(0, length),
      KOKKOS_LAMBDA(const std::int64_t i) {
        values(i) = static_cast<T>((i * 2654435761LL) % 1000) / T(8);
      });
  Kokkos::fence();
  return values;
}

enum class Which { sum, max, minmax };

template <class ExecutionSpace, class T, Which which>
void kpl_reduce(benchmark::State& state) {
  const ExecutionSpace space;
  const auto values = random_input<ExecutionSpace, T>(state.range(0));
  for (auto _ : state) {
    if constexpr (which == Which::sum) {
      benchmark::DoNotOptimize(kpl::reduce(space, values, kpl::Sum<T>{}));
    } else if constexpr (which == Which::max) {
      benchmark::DoNotOptimize(kpl::reduce(space, values, kpl::Max<T>{}));
    } else {
      benchmark::DoNotOptimize(kpl::reduce(space, values, kpl::MinMax<T>{}));
    }
  }
  kpl::perf::report_bytes(state, state.range(0) * std::int64_t(sizeof(T)), ExecutionSpace::name());
}

// Results into preallocated device Views (atomics for Sum and Max, a second
// pass for MinMax): the path a caller that keeps the result on the device
// takes.
template <class ExecutionSpace, class T, Which which>
struct IntoDeviceView {
  using MemorySpace = typename ExecutionSpace::memory_space;
  Kokkos::View<typename kpl::Sum<T>::value_type, MemorySpace> sum{"sum"};
  Kokkos::View<T, MemorySpace> largest{"largest"};
  Kokkos::View<kpl::MinMaxValue<T>, MemorySpace> extremes{"extremes"};

  template <class Values>
  void operator()(const ExecutionSpace& space, const Values& values) const {
    if constexpr (which == Which::sum) {
      kpl::reduce(space, values, kpl::Sum<T>{}, sum);
    } else if constexpr (which == Which::max) {
      kpl::reduce(space, values, kpl::Max<T>{}, largest);
    } else {
      kpl::reduce(space, values, kpl::MinMax<T>{}, extremes);
    }
  }
};

// Into a device View, fenced each iteration.
template <class ExecutionSpace, class T, Which which>
void kpl_reduce_into_view(benchmark::State& state) {
  const ExecutionSpace space;
  const auto values = random_input<ExecutionSpace, T>(state.range(0));
  const IntoDeviceView<ExecutionSpace, T, which> reduce_into;
  for (auto _ : state) {
    reduce_into(space, values);
    space.fence();
  }
  kpl::perf::report_bytes(state, state.range(0) * std::int64_t(sizeof(T)), ExecutionSpace::name());
}

// 16 calls of `call` back to back, then one fence: the time per call.
template <class ExecutionSpace, class Call>
void time_back_to_back(benchmark::State& state, const ExecutionSpace& space, const Call& call) {
  constexpr int calls = 16;
  call();
  space.fence();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    space.fence();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(elapsed.count() / calls);
  }
}

// Into a device View, 16 calls back to back, then one fence, time / 16: the
// kernel time that CUDA-event timings (ANCHORS.md's CUB figures) report, the
// launch's latency hidden behind the previous call.
template <class ExecutionSpace, class T, Which which>
void kpl_reduce_stream(benchmark::State& state) {
  const ExecutionSpace space;
  const auto values = random_input<ExecutionSpace, T>(state.range(0));
  const IntoDeviceView<ExecutionSpace, T, which> reduce_into;
  time_back_to_back(state, space, [&] { reduce_into(space, values); });
  kpl::perf::report_bytes(state, state.range(0) * std::int64_t(sizeof(T)), ExecutionSpace::name());
}

// What a shape benchmark sums: n = argument 0 doubles into a device View,
// launched with arguments 1 and 2 (teams, team_size).
template <class ExecutionSpace>
struct ShapeSweep {
  ExecutionSpace space;
  Kokkos::View<const double*, typename ExecutionSpace::memory_space> values;
  Kokkos::View<double, typename ExecutionSpace::memory_space> sum{"sum"};
  kpl::ReduceOptions options;

  explicit ShapeSweep(const benchmark::State& state)
      : values(random_input<ExecutionSpace, double>(state.range(0))) {
    options.teams = static_cast<int>(state.range(1));
    options.team_size = static_cast<int>(state.range(2));
  }
  void into_view() const { kpl::reduce(space, values, kpl::Sum<double>{}, sum, options); }
  double to_host() const { return kpl::reduce(space, values, kpl::Sum<double>{}, options); }
  void report(benchmark::State& state) const {
    kpl::perf::report_bytes(state, state.range(0) * std::int64_t(sizeof(double)),
                            ExecutionSpace::name());
  }
};

// The launch shape (teams, team_size) of the back-to-back sum of n doubles
// into a device View: reduction_shape's choice for sizes below 2^28.
template <class ExecutionSpace>
void kpl_reduce_stream_shape(benchmark::State& state) {
  const ShapeSweep<ExecutionSpace> sweep(state);
  time_back_to_back(state, sweep.space, [&] { sweep.into_view(); });
  sweep.report(state);
}

// The launch shape swept (ReduceOptions::teams and team_size, of 32 lanes on
// GPUs) for the sum of 2^28 doubles, its result into a device View (result:0)
// or returned to the host (result:1): the figures behind reduction_shape's
// choice (impl/reduce_tree.hpp).
template <class ExecutionSpace>
void kpl_reduce_shape(benchmark::State& state) {
  const ShapeSweep<ExecutionSpace> sweep(state);
  const auto result = state.range(3);
  for (auto _ : state) {
    if (result == 0) {
      sweep.into_view();
      sweep.space.fence();
    } else {
      benchmark::DoNotOptimize(sweep.to_host());
    }
  }
  sweep.report(state);
}

// The baseline users write today: one parallel_reduce with a built-in reducer.
template <class ExecutionSpace, class T, Which which>
void kokkos_parallel_reduce(benchmark::State& state) {
  const ExecutionSpace space;
  const auto values = random_input<ExecutionSpace, T>(state.range(0));
  const auto policy = Kokkos::RangePolicy<ExecutionSpace>(space, 0, values.extent(0));
  for (auto _ : state) {
    if constexpr (which == Which::sum) {
      T total = 0;
      Kokkos::parallel_reduce(
          "kpl::bench::kokkos_sum", policy,
          KOKKOS_LAMBDA(const std::int64_t i, T& partial) { partial += values(i); }, total);
      benchmark::DoNotOptimize(total);
    } else if constexpr (which == Which::max) {
      T largest;
      Kokkos::parallel_reduce(
          "kpl::bench::kokkos_max", policy,
          KOKKOS_LAMBDA(const std::int64_t i, T& partial) {
            if (partial < values(i)) partial = values(i);
          },
          Kokkos::Max<T>(largest));
      benchmark::DoNotOptimize(largest);
    } else {
      typename Kokkos::MinMax<T>::value_type extremes;
      Kokkos::parallel_reduce(
          "kpl::bench::kokkos_minmax", policy,
          KOKKOS_LAMBDA(const std::int64_t i, typename Kokkos::MinMax<T>::value_type& partial) {
            if (values(i) < partial.min_val) partial.min_val = values(i);
            if (partial.max_val < values(i)) partial.max_val = values(i);
          },
          Kokkos::MinMax<T>(extremes));
      benchmark::DoNotOptimize(extremes);
    }
  }
  kpl::perf::report_bytes(state, state.range(0) * std::int64_t(sizeof(T)), ExecutionSpace::name());
}

// Row and column sums of a square float matrix (row-major): the along-
// contiguous and across-strided kernels. Bytes: the matrix once.
template <class ExecutionSpace, bool Columns>
void kpl_matrix_sum(benchmark::State& state) {
  const ExecutionSpace space;
  const std::int64_t n = state.range(0);
  const auto flat = random_input<ExecutionSpace, float>(n * n);
  Kokkos::View<const float**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space> matrix(
      flat.data(), n, n);
  Kokkos::View<double*, typename ExecutionSpace::memory_space> sums("sums", n);
  for (auto _ : state) {
    if constexpr (Columns) {
      kpl::reduce_columns(space, matrix, kpl::Sum<float>{}, sums);
    } else {
      kpl::reduce_rows(space, matrix, kpl::Sum<float>{}, sums);
    }
    space.fence();
  }
  kpl::perf::report_bytes(state, n * n * std::int64_t(sizeof(float)), ExecutionSpace::name());
}

template <class ExecutionSpace, class T, Which which>
void register_pair(const std::string& type, const std::string& operation) {
  const std::string suffix = operation + "/" + type + "/" + ExecutionSpace::name();
  for (auto* bench :
       {benchmark::RegisterBenchmark(("reduce/kpl/" + suffix).c_str(),
                                     kpl_reduce<ExecutionSpace, T, which>),
        benchmark::RegisterBenchmark(("reduce/kokkos/" + suffix).c_str(),
                                     kokkos_parallel_reduce<ExecutionSpace, T, which>)}) {
    bench->Arg(1000)
        ->Arg(10000)
        ->Arg(100000)
        ->Arg(1000000)
        ->Arg(std::int64_t(1) << 28)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark(("reduce/kpl_into_view/" + suffix).c_str(),
                               kpl_reduce_into_view<ExecutionSpace, T, which>)
      ->Arg(1000000)
      ->Arg(std::int64_t(1) << 28)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  if constexpr (!kpl::impl::runs_on_host_v<ExecutionSpace>) {
    // 17e6: as many values as B^T g reads for B = 1e6 x 16 (B and g): the
    // streaming floor of gemv_stream's tall-skinny case.
    benchmark::RegisterBenchmark(("reduce_stream/kpl_into_view/" + suffix).c_str(),
                                 kpl_reduce_stream<ExecutionSpace, T, which>)
        ->Arg(17000000)
        ->Arg(std::int64_t(1) << 28)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

const bool registered = [] {
  kpl::for_each_execution_space([](auto tag) {
    using Space = typename decltype(tag)::type;
    register_pair<Space, float, Which::sum>("float", "sum");
    register_pair<Space, double, Which::sum>("double", "sum");
    register_pair<Space, float, Which::max>("float", "max");
    register_pair<Space, float, Which::minmax>("float", "minmax");
    const std::string backend = Space::name();
    if constexpr (!kpl::impl::runs_on_host_v<Space>) {
      auto* shapes = benchmark::RegisterBenchmark(
          ("reduce_shape/kpl_into_view/sum/double/" + backend).c_str(), kpl_reduce_shape<Space>);
      for (std::int64_t result : {0, 1})
        for (std::int64_t teams : {0, 1056, 4224, 8448, 16896})
          for (std::int64_t team_size : {8, 16})
            shapes->Args({std::int64_t(1) << 28, teams, team_size, result});
      shapes->ArgNames({"n", "teams", "team_size", "result"})->UseRealTime()->Unit(benchmark::kMicrosecond);
      auto* stream_shapes = benchmark::RegisterBenchmark(
          ("reduce_stream_shape/kpl_into_view/sum/double/" + backend).c_str(),
          kpl_reduce_stream_shape<Space>);
      for (std::int64_t n : {std::int64_t(1) << 21, std::int64_t(17000000), std::int64_t(1) << 26})
        for (std::int64_t teams : {0, 264, 528, 1056, 2112, 4224})
          for (std::int64_t team_size : {8, 16}) stream_shapes->Args({n, teams, team_size});
      stream_shapes->ArgNames({"n", "teams", "team_size"})->UseManualTime()->Unit(
          benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(("reduce_rows/kpl/sum/float/" + backend).c_str(),
                                 kpl_matrix_sum<Space, false>)
        ->Arg(4096)
        ->Arg(16384)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("reduce_columns/kpl/sum/float/" + backend).c_str(),
                                 kpl_matrix_sum<Space, true>)
        ->Arg(4096)
        ->Arg(16384)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  });
  return true;
}();

}  // namespace
