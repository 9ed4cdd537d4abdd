// kpl::gemv, every strategy, against KokkosBlas::gemv (cuBLAS through its TPL
// on CUDA, the CPU BLAS on host backends) and, on host backends, OpenBLAS
// called directly; column-major (LayoutLeft) matrices as in the anchors.
//
// Bytes (the fewest a gemv must move): A once, x once, y written once
// (beta = 0): rows * columns + rows + columns elements.
//
// Timings per case:
//   gemv/...         each call followed by a fence: what one synchronous call
//                    costs, launch included (the anchors' C++ table);
//   gemv_stream/...  16 calls back to back, then one fence, time / 16: the
//                    cost of a call inside a longer computation (the GAM's
//                    loop), close to the kernel time that profilers and
//                    PyTorch's CUDA-event timings report;
//   gemv_graph/...   (CUDA, n <= 1e5) the same 16 calls captured once into a
//                    CUDA graph, its replays timed with CUDA events, / 16.
//                    For kernels shorter than a launch, gemv_stream measures
//                    the host's launch rate (Kokkos' launch path, noisy on a
//                    VM); graph replay takes the host out and leaves the
//                    GPU's time for the kernels, which is what the
//                    strategies differ in.
//
// Names: gemv[_stream|_graph]/<N|T>/<float|double>/<strategy>/<backend>/rows:R/columns:C;
// gemv_tuning/... (graph replays on CUDA, back to back elsewhere) adds
// /rows_per_team:M (GemvOptions::rows_per_team).
#include <kpl/execution_spaces.hpp>
#include <kpl/gemv.hpp>

#include "benchmark_report.hpp"

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#ifdef KPL_PERF_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

using kpl::GemvStrategy;
using kpl::Transpose;

constexpr int calls_per_stream = 16;

template <class View>
void fill(const View& view, std::int64_t salt) {
  using T = typename View::non_const_value_type;
  using ExecutionSpace = typename View::execution_space;
  Kokkos::View<T*, typename View::memory_space, Kokkos::MemoryUnmanaged> flat(view.data(),
                                                                              view.span());
  Kokkos::parallel_for(
      "kpl::perf::fill", Kokkos::RangePolicy<ExecutionSpace>(0, flat.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        flat(i) = static_cast<T>(((i + salt) * 2654435761LL) % 1000) / T(1000) - T(0.5);
      });
  Kokkos::fence();
}

enum class Timing { fenced, stream, graph };

#ifdef KOKKOS_ENABLE_CUDA
bool cuda_failed(benchmark::State& state, cudaError_t error, const char* what) {
  if (error == cudaSuccess) return false;
  state.SkipWithError((std::string(what) + ": " + cudaGetErrorString(error)).c_str());
  return true;
}

// calls_per_stream calls captured into a CUDA graph on the space's stream;
// each iteration replays it between two events.
template <class Call>
void time_graph_replays(benchmark::State& state, const Kokkos::Cuda& space, const Call& call) {
  const cudaStream_t stream = space.cuda_stream();
  cudaGraph_t graph = nullptr;
  if (cuda_failed(state, cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
                  "cudaStreamBeginCapture"))
    return;
  for (int i = 0; i < calls_per_stream; ++i) call();
  if (cuda_failed(state, cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture")) return;
  std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> graph_owner(graph, cudaGraphDestroy);
  cudaGraphExec_t replay = nullptr;
  if (cuda_failed(state, cudaGraphInstantiate(&replay, graph, 0), "cudaGraphInstantiate")) return;
  std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)> replay_owner(
      replay, cudaGraphExecDestroy);
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaGraphLaunch(replay, stream);  // warm-up replay
  if (!cuda_failed(state, cudaStreamSynchronize(stream), "graph replay")) {
    for (auto _ : state) {
      cudaEventRecord(start, stream);
      cudaGraphLaunch(replay, stream);
      cudaEventRecord(stop, stream);
      cudaEventSynchronize(stop);
      float milliseconds = 0;
      cudaEventElapsedTime(&milliseconds, start, stop);
      state.SetIterationTime(milliseconds * 1e-3 / calls_per_stream);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}
#endif

// Runs `call` once per iteration with a fence (fenced), calls_per_stream
// times and then a fence (stream), or as a replayed graph of
// calls_per_stream calls (graph, CUDA only), reporting the time per call.
template <Timing Mode, class ExecutionSpace, class Call>
void time_calls(benchmark::State& state, const ExecutionSpace& space, const Call& call) {
  call();  // warm-up: first-touch, workspace, Kokkos Kernels' lazy set-up
  space.fence();
  if constexpr (Mode == Timing::graph) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>)
      time_graph_replays(state, space, call);
#endif
  } else {
    for (auto _ : state) {
      if constexpr (Mode == Timing::stream) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < calls_per_stream; ++i) call();
        space.fence();
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        state.SetIterationTime(elapsed.count() / calls_per_stream);
      } else {
        call();
        space.fence();
      }
    }
  }
}

// A baseline outside kpl's strategies: OpenBLAS, called directly.
constexpr int openblas = -1;

// An instance of the space; for graphs on CUDA, on a stream of its own (the
// legacy default stream cannot be captured).
template <class ExecutionSpace, Timing Mode>
struct BenchmarkSpace {
  ExecutionSpace space;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct BenchmarkSpace<Kokkos::Cuda, Timing::graph> {
  cudaStream_t stream = [] {
    cudaStream_t created = nullptr;
    cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
    return created;
  }();
  Kokkos::Cuda space{stream};
  ~BenchmarkSpace() {
    space = Kokkos::Cuda();  // release the instance before its stream
    cudaStreamDestroy(stream);
  }
};
#endif

template <class ExecutionSpace, class T, Timing Mode>
void gemv(benchmark::State& state, Transpose transpose, int strategy, int rows_per_team = 0,
          int threads_per_dot = 0, int team_size = 0) {
  using Memory = typename ExecutionSpace::memory_space;
  const std::int64_t rows = state.range(0), columns = state.range(1);
  const bool normal = transpose == Transpose::no;
  const BenchmarkSpace<ExecutionSpace, Mode> instance;
  const ExecutionSpace& space = instance.space;
  Kokkos::View<T**, Kokkos::LayoutLeft, ExecutionSpace> A(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "A"), rows, columns);
  Kokkos::View<T*, ExecutionSpace> x(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"),
                                     normal ? columns : rows);
  Kokkos::View<T*, ExecutionSpace> y("y", normal ? rows : columns);
  fill(A, 1);
  fill(x, 2);
  kpl::GemvWorkspace<ExecutionSpace, T> workspace;
  if (strategy == openblas) {
#ifdef KPL_PERF_HAVE_OPENBLAS
    if constexpr (std::is_same_v<Memory, Kokkos::HostSpace>) {
      const auto operation = normal ? CblasNoTrans : CblasTrans;
      const int m = int(rows), n = int(columns), lda = int(std::max<std::int64_t>(rows, 1));
      time_calls<Mode>(state, space, [&] {
        if constexpr (std::is_same_v<T, float>) {
          cblas_sgemv(CblasColMajor, operation, m, n, 1.0f, A.data(), lda, x.data(), 1, 0.0f,
                      y.data(), 1);
        } else {
          cblas_dgemv(CblasColMajor, operation, m, n, 1.0, A.data(), lda, x.data(), 1, 0.0,
                      y.data(), 1);
        }
      });
    }
#endif
  } else {
    const kpl::GemvOptions options{static_cast<GemvStrategy>(strategy), threads_per_dot,
                                   rows_per_team, team_size};
    time_calls<Mode>(state, space,
                     [&] { kpl::gemv(space, transpose, T(1), A, x, T(0), y, workspace, options); });
  }
  const double bytes = double(sizeof(T)) * (double(rows) * columns + rows + columns);
  kpl::perf::report_bytes(state, bytes, ExecutionSpace::name());
}

// The GAM's B_j^T g for all learners at once: a batch of column-major
// [n, k] blocks stored side by side (the stacked [n, batch * k] matrix).
// "batched": gemv_batched over the [batch, n, k] view; "stacked": one gemv on
// the [n, batch * k] matrix. Same memory, same result.
template <class ExecutionSpace, class T, bool Batched>
void gemv_blocks(benchmark::State& state, int strategy) {
  const std::int64_t batch = state.range(0), rows = state.range(1), columns = state.range(2);
  const ExecutionSpace space;
  Kokkos::View<T**, Kokkos::LayoutLeft, ExecutionSpace> stacked(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "B"), rows, batch * columns);
  Kokkos::View<T*, ExecutionSpace> g(Kokkos::view_alloc(Kokkos::WithoutInitializing, "g"), rows);
  Kokkos::View<T*, ExecutionSpace> c("c", batch * columns);
  fill(stacked, 3);
  fill(g, 4);
  Kokkos::View<T***, Kokkos::LayoutStride, ExecutionSpace> blocks(
      stacked.data(), Kokkos::LayoutStride(batch, rows * columns, rows, 1, columns, rows));
  // c as [batch, k]: row b holds block b's k results.
  Kokkos::View<T**, Kokkos::LayoutRight, ExecutionSpace, Kokkos::MemoryUnmanaged> c_blocks(
      c.data(), batch, columns);
  kpl::GemvWorkspace<ExecutionSpace, T> workspace;
  const kpl::GemvOptions options{static_cast<GemvStrategy>(strategy), 0, 0};
  time_calls<Timing::stream>(state, space, [&] {
    if constexpr (Batched) {
      kpl::gemv_batched(space, Transpose::yes, T(1), blocks, g, T(0), c_blocks, workspace, options);
    } else {
      kpl::gemv(space, Transpose::yes, T(1), stacked, g, T(0), c, workspace, options);
    }
  });
  const double bytes =
      double(sizeof(T)) * (double(rows) * batch * columns + rows + batch * columns);
  kpl::perf::report_bytes(state, bytes, ExecutionSpace::name());
}

const std::vector<GemvStrategy> strategies = {
    GemvStrategy::automatic, GemvStrategy::thread_per_row, GemvStrategy::team_per_dot,
    GemvStrategy::partial_rows, GemvStrategy::kokkos_kernels};

template <class ExecutionSpace, class T>
void register_for() {
  const std::string backend = ExecutionSpace::name();
  const std::string precision = std::is_same_v<T, float> ? "float" : "double";
  constexpr bool host = std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;
  std::vector<int> implementations;
  for (auto strategy : strategies) implementations.push_back(static_cast<int>(strategy));
#ifdef KPL_PERF_HAVE_OPENBLAS
  if (host) implementations.push_back(openblas);
#endif
  auto implementation_name = [](int implementation) {
    return implementation == openblas
               ? std::string("openblas")
               : std::string(kpl::to_string(static_cast<GemvStrategy>(implementation)));
  };
  for (Transpose transpose : {Transpose::yes, Transpose::no}) {
    const std::string op = transpose == Transpose::no ? "N" : "T";
    for (int implementation : implementations) {
      const std::string suffix =
          op + "/" + precision + "/" + implementation_name(implementation) + "/" + backend;
      // The seed's grid (Sieminski & Lee Fig. 4) and the square and GAM shapes.
      auto add_shapes = [&](benchmark::internal::Benchmark* benchmark, bool stream) {
        for (std::int64_t rows : {1000, 10000, 100000, 1000000})
          for (std::int64_t columns : {16, 32, 64}) benchmark->Args({rows, columns});
        benchmark->Args({16384, 16384});
        if (transpose == Transpose::yes) benchmark->Args({100000, 6400});
        benchmark->ArgNames({"rows", "columns"})->Unit(benchmark::kMicrosecond);
        if (stream) {
          benchmark->UseManualTime();
        } else {
          benchmark->UseRealTime();
        }
      };
      add_shapes(benchmark::RegisterBenchmark(("gemv/" + suffix).c_str(),
                                              [=](benchmark::State& state) {
                                                gemv<ExecutionSpace, T, Timing::fenced>(
                                                    state, transpose, implementation);
                                              }),
                 false);
      add_shapes(benchmark::RegisterBenchmark(("gemv_stream/" + suffix).c_str(),
                                              [=](benchmark::State& state) {
                                                gemv<ExecutionSpace, T, Timing::stream>(
                                                    state, transpose, implementation);
                                              }),
                 true);
#ifdef KOKKOS_ENABLE_CUDA
      if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) {
        auto* benchmark = benchmark::RegisterBenchmark(
            ("gemv_graph/" + suffix).c_str(), [=](benchmark::State& state) {
              gemv<ExecutionSpace, T, Timing::graph>(state, transpose, implementation);
            });
        for (std::int64_t rows : {1000, 10000, 100000})
          for (std::int64_t columns : {16, 32, 64}) benchmark->Args({rows, columns});
        benchmark->ArgNames({"rows", "columns"})->UseManualTime()->Unit(benchmark::kMicrosecond);
      }
#endif
    }
  }
  // The overridable M' (GemvOptions::rows_per_team) swept over the grid's
  // small shapes, where the best setting is a matter of latency rather than
  // bandwidth: what automatic's choices for those shapes rest on. Timed as
  // graph replays on CUDA (see the top of this file), back to back elsewhere.
  constexpr Timing tuning_timing =
#ifdef KOKKOS_ENABLE_CUDA
      std::is_same_v<ExecutionSpace, Kokkos::Cuda> ? Timing::graph :
#endif
                                                   Timing::stream;
  for (Transpose transpose : {Transpose::yes, Transpose::no}) {
    for (auto strategy : {GemvStrategy::team_per_dot, GemvStrategy::partial_rows}) {
      // partial_rows reads M' only where dot products run along memory.
      if (strategy == GemvStrategy::partial_rows && transpose == Transpose::no) continue;
      const std::string op = transpose == Transpose::no ? "N" : "T";
      auto* benchmark = benchmark::RegisterBenchmark(
          ("gemv_tuning/" + op + "/" + precision + "/" + std::string(kpl::to_string(strategy)) +
           "/" + backend)
              .c_str(),
          [=](benchmark::State& state) {
            gemv<ExecutionSpace, T, tuning_timing>(state, transpose, static_cast<int>(strategy),
                                                   int(state.range(2)));
          });
      for (std::int64_t rows : {1000, 10000, 100000})
        for (std::int64_t columns : {16, 32, 64})
          for (std::int64_t rows_per_team : {1, 2, 4, 8, 16})
            benchmark->Args({rows, columns, rows_per_team});
      benchmark->ArgNames({"rows", "columns", "rows_per_team"})
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  // The GAM's tall, skinny B^T g (n = 1e6, k = 16) through partial_rows'
  // row-block kernel: segments (GemvOptions::threads_per_dot), rows per
  // block and threads per team swept, back to back (gemv_stream's timing).
  if constexpr (!kpl::impl::runs_on_host_v<ExecutionSpace>) {
    auto* benchmark = benchmark::RegisterBenchmark(
        ("gemv_shape/T/" + precision + "/partial-rows/" + backend).c_str(),
        [=](benchmark::State& state) {
          gemv<ExecutionSpace, T, Timing::stream>(
              state, Transpose::yes, static_cast<int>(GemvStrategy::partial_rows),
              int(state.range(3)), int(state.range(2)), int(state.range(4)));
        });
    for (std::int64_t segments : {0, 66, 132, 264, 528, 1056})
      for (std::int64_t rows_per_team : {1, 2, 4, 8, 16})
        for (std::int64_t team_size : {4, 8})
          benchmark->Args({1000000, 16, segments, rows_per_team, team_size});
    benchmark->ArgNames({"rows", "columns", "segments", "rows_per_team", "team_size"})
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (auto strategy : strategies) {
    const std::string suffix =
        precision + "/" + std::string(kpl::to_string(strategy)) + "/" + backend;
    for (bool batched : {true, false}) {
      auto* benchmark = benchmark::RegisterBenchmark(
          ((batched ? "gemv_batched/T/" : "gemv_stacked/T/") + suffix).c_str(),
          [=](benchmark::State& state) {
            if (batched) {
              gemv_blocks<ExecutionSpace, T, true>(state, static_cast<int>(strategy));
            } else {
              gemv_blocks<ExecutionSpace, T, false>(state, static_cast<int>(strategy));
            }
          });
      benchmark->Args({100, 100000, 64})
          ->Args({100, 10000, 16})
          ->ArgNames({"batch", "rows", "columns"})
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

const bool registered = [] {
  kpl::for_each_execution_space([](auto tag) {
    using ExecutionSpace = typename decltype(tag)::type;
    register_for<ExecutionSpace, float>();
    register_for<ExecutionSpace, double>();
  });
  return true;
}();

}  // namespace
