// What scaling out across MPI ranks costs, as kpl's MPI layer does it (the
// inputs of perf/SCALING.md): an allreduce of the sizes the GAM sums every
// iteration (p k doubles), a take from the one-sided work queue that hands
// out deconvolution/NNLS chunks, and a shared HDF5 output written by every
// rank (parallel HDF5, independent row writes, collective create and close).
//
//   mpiexec -n 2 build/perf/kpl_mpi_benchmark
//
// Every rank runs every benchmark a fixed number of iterations (they are
// collective, so the ranks must agree on the count); rank 0 reports.
#include <kpl/mpi.hpp>

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

const kpl::mpi::ProcessGroup* ranks = nullptr;

// Element-wise sum of `values` doubles over the ranks, in place.
void BM_Allreduce(benchmark::State& state) {
  std::vector<double> values(state.range(0), 1.0 + ranks->rank());
  for (auto _ : state) {
    ranks->sum(values.data(), static_cast<std::int64_t>(values.size()));
    benchmark::DoNotOptimize(values.data());
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * std::int64_t(sizeof(double)));
  state.counters["ranks"] = ranks->size();
}
// 1: a scalar (latency); 3200: p = 100 learners of k = 32; 32000: p = 1000.
BENCHMARK(BM_Allreduce)->Arg(1)->Arg(3200)->Arg(32000)->Arg(1 << 20)->Iterations(200)
    ->Unit(benchmark::kMicrosecond);

// One item from the shared counter (MPI_Fetch_and_op on rank 0's window).
void BM_WorkQueueTake(benchmark::State& state) {
  const auto queue = ranks->work_queue(std::int64_t(1) << 40);
  for (auto _ : state) benchmark::DoNotOptimize(queue->next());
  state.counters["ranks"] = ranks->size();
}
BENCHMARK(BM_WorkQueueTake)->Iterations(2000)->Unit(benchmark::kMicrosecond);

// Every rank writes range(0) MiB of rows into one shared file, committed
// (closed, renamed) each iteration: the aggregate write rate; range(1) = 1:
// in one collective transfer (kpl::RowWrites::collective).
void BM_SharedOutputWrite(benchmark::State& state) {
  const auto writes = state.range(1) ? kpl::RowWrites::collective : kpl::RowWrites::independent;
  const std::int64_t columns = 1024;
  const std::int64_t rows_per_rank = state.range(0) * (1 << 20) / (columns * 8);
  std::string directory = std::filesystem::temp_directory_path().string();
  ranks->broadcast(directory);
  const std::string path = directory + "/kpl_mpi_benchmark_" + std::to_string(::getpid()) + ".h5";
  std::string shared_path = path;
  ranks->broadcast(shared_path);
  kpl::hdf5::HostArray<double, 2> rows("rows", rows_per_rank, columns);
  Kokkos::deep_copy(rows, 1.0);
  for (auto _ : state) {
    auto output = ranks->create_output(shared_path, writes);
    output->create_dataset<double>(
        "/rows", {std::size_t(rows_per_rank * ranks->size()), std::size_t(columns)});
    output->write_rows("/rows", std::size_t(rows_per_rank * ranks->rank()), rows);
    kpl::agreed(*ranks, [&] { output->commit(); });
  }
  if (ranks->rank() == 0) std::filesystem::remove(shared_path);
  state.SetBytesProcessed(state.iterations() * rows_per_rank * columns * 8 * ranks->size());
  state.counters["ranks"] = ranks->size();
}
BENCHMARK(BM_SharedOutputWrite)->Args({64, 0})->Args({64, 1})->Iterations(5)->Unit(benchmark::kMillisecond)
    ->UseRealTime();

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  Kokkos::initialize(argc, argv);
  {
    const kpl::mpi::ProcessGroup group(MPI_COMM_WORLD);
    ranks = &group;
    benchmark::Initialize(&argc, argv);
    if (group.rank() == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      SilentReporter silent;
      benchmark::RunSpecifiedBenchmarks(&silent);
    }
    benchmark::Shutdown();
  }
  Kokkos::finalize();
  MPI_Finalize();
  return 0;
}
