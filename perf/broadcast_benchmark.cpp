// kpl::broadcast (general kernel) on the shapes, float, on every
// backend. Bytes: each input read once and the output written once.
#include <kpl/broadcast.hpp>
#include <kpl/execution_spaces.hpp>

#include "benchmark_report.hpp"

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

namespace {

using Shape = std::vector<std::int64_t>;

template <class MemorySpace>
Kokkos::View<float*, MemorySpace> filled(std::int64_t size, float value) {
  Kokkos::View<float*, MemorySpace> values(Kokkos::view_alloc(Kokkos::WithoutInitializing, "v"),
                                           size);
  Kokkos::deep_copy(values, value);
  return values;
}

std::int64_t count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

// Views of rank 2 or 4 over flat buffers (LayoutRight).
template <class MemorySpace>
auto rank2(float* data, const Shape& s) {
  return Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>(
      data, s[0], s[1]);
}
template <class MemorySpace>
auto rank4(float* data, const Shape& s) {
  return Kokkos::View<float****, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>(
      data, s[0], s[1], s[2], s[3]);
}

template <class ExecutionSpace, int Rank>
void general(benchmark::State& state, Shape a_shape, Shape b_shape, Shape out_shape) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  auto a = filled<MemorySpace>(count(a_shape), 1.5f);
  auto b = filled<MemorySpace>(count(b_shape), 2.0f);
  auto out = filled<MemorySpace>(count(out_shape), 0.0f);
  for (auto _ : state) {
    if constexpr (Rank == 2) {
      kpl::broadcast(space, kpl::Add{}, rank2<MemorySpace>(a.data(), a_shape),
                     rank2<MemorySpace>(b.data(), b_shape),
                     rank2<MemorySpace>(out.data(), out_shape));
    } else {
      kpl::broadcast(space, kpl::Add{}, rank4<MemorySpace>(a.data(), a_shape),
                     rank4<MemorySpace>(b.data(), b_shape),
                     rank4<MemorySpace>(out.data(), out_shape));
    }
    space.fence();
  }
  const double bytes = 4.0 * double(count(a_shape) + count(b_shape) + count(out_shape));
  kpl::perf::report_bytes(state, bytes, ExecutionSpace::name());
}

const bool registered = [] {
  kpl::for_each_execution_space([](auto tag) {
    using Space = typename decltype(tag)::type;
    const std::string backend = Space::name();
    // 2^28 outputs on GPUs, 2^24 on CPUs (same shapes, fewer rows).
    const bool host = std::is_same_v<typename Space::memory_space, Kokkos::HostSpace>;
    const std::int64_t scale = host ? 16 : 1;
    const std::vector<std::pair<std::string, std::vector<Shape>>> cases2 = {
        {"matrix_plus_row/262144x1024",
         {{262144 / scale, 1024}, {1, 1024}, {262144 / scale, 1024}}},
        {"matrix_plus_column/262144x1024",
         {{262144 / scale, 1024}, {262144 / scale, 1}, {262144 / scale, 1024}}},
        {"matrix_plus_row/1024x262144",
         {{1024 / scale, 262144}, {1, 262144}, {1024 / scale, 262144}}},
        {"matrix_plus_column/1024x262144",
         {{1024 / scale, 262144}, {1024 / scale, 1}, {1024 / scale, 262144}}},
        {"matrix_plus_row/4194304x64", {{4194304 / scale, 64}, {1, 64}, {4194304 / scale, 64}}},
        {"matrix_plus_column/4194304x64",
         {{4194304 / scale, 64}, {4194304 / scale, 1}, {4194304 / scale, 64}}}};
    for (const auto& [name, shapes] : cases2) {
      benchmark::RegisterBenchmark(("broadcast/general/" + name + "/float/" + backend).c_str(),
                                   [shapes = shapes](benchmark::State& state) {
                                     general<Space, 2>(state, shapes[0], shapes[1], shapes[2]);
                                   })
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    const std::int64_t leading = host ? 4 : 64;
    benchmark::RegisterBenchmark(
        ("broadcast/general/64x1x256x128_plus_1x512x1x128/float/" + backend).c_str(),
        [leading](benchmark::State& state) {
          general<Space, 4>(state, {leading, 1, 256, 128}, {1, 512, 1, 128},
                            {leading, 512, 256, 128});
        })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  });
  return true;
}();

}  // namespace
