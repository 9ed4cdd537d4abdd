// The bandwidth ceiling every memory-bound kpl kernel is compared with: a
// device-to-device copy in the same run, counting bytes read plus written.
// Two copies: Kokkos::deep_copy (the vendor's copy) and the simplest
// Kokkos kernel, one thread per element (what a parallel_for can reach).
#include <kpl/execution_spaces.hpp>

#include "benchmark_report.hpp"

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <string>

namespace {

// Element-by-element copy through the simplest Kokkos kernel: the ceiling for
// a plain RangePolicy kernel.
template <class ExecutionSpace, class View>
void copy_by_kernel(const ExecutionSpace& space, const View& destination, const View& source) {
  Kokkos::parallel_for(
      "kpl::perf::copy_kernel",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
          space, 0, static_cast<std::int64_t>(source.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) { destination(i) = source(i); });
}

// ByKernel false: Kokkos::deep_copy; true: copy_by_kernel.
template <class ExecutionSpace, bool ByKernel>
void copy(benchmark::State& state) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const auto length = static_cast<std::size_t>(state.range(0));
  const ExecutionSpace space;
  Kokkos::View<float*, MemorySpace> source(Kokkos::view_alloc(space, "source"), length);
  Kokkos::View<float*, MemorySpace> destination(Kokkos::view_alloc(space, "destination"), length);
  Kokkos::deep_copy(space, source, 1.0f);
  space.fence();
  for (auto _ : state) {
    if constexpr (ByKernel) {
      copy_by_kernel(space, destination, source);
    } else {
      Kokkos::deep_copy(space, destination, source);
    }
    space.fence();
  }
  const double bytes = 2.0 * sizeof(float) * static_cast<double>(length);
  kpl::perf::report_bytes(state, bytes, ExecutionSpace::name());
}

const bool registered = [] {
  kpl::for_each_execution_space([](auto tag) {
    using ExecutionSpace = typename decltype(tag)::type;
    benchmark::RegisterBenchmark((std::string("copy/float/") + ExecutionSpace::name()).c_str(),
                                 copy<ExecutionSpace, false>)
        ->RangeMultiplier(16)
        ->Range(1 << 16, 1 << 28)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(
        (std::string("copy_kernel/float/") + ExecutionSpace::name()).c_str(),
        copy<ExecutionSpace, true>)
        ->RangeMultiplier(16)
        ->Range(1 << 16, 1 << 28)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  });
  return true;
}();

}  // namespace
