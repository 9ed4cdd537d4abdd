// Benchmark driver: Kokkos lives for the whole run; --kokkos-* arguments go to
// Kokkos, the rest to Google Benchmark.
#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
      Kokkos::finalize();
      return 2;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  Kokkos::finalize();
  return 0;
}
