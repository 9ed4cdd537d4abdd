// kpl::broadcast on the shapes, float, on every backend: each variant
// (general §III-B/C, sliding factor §III-D, scratch §III-E), the automatic
// choice, and the naive baseline a Kokkos user writes today (an MDRangePolicy
// over the output, indexing the broadcast operands with 0). Also the seed's
// figure (Çoban et al., Figs. 6-8): bandwidth against the matrix's Y length for
// a vector of 1024, and a sweep of the sliding factor. Bytes: each input read
// once and the output written once.
#include <kpl/broadcast.hpp>
#include <kpl/execution_spaces.hpp>

#include "benchmark_report.hpp"

#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Shape = std::vector<std::int64_t>;

// Which operand is broadcast: a row vector [1, N], a column vector [M, 1] or
// the 4-D case [64,1,256,128] + [1,512,1,128].
enum class Case { matrix_plus_row, matrix_plus_column, four_dimensional };

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

template <class MemorySpace>
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>;
template <class MemorySpace>
using Array4 = Kokkos::View<float****, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>;

template <class MemorySpace>
Matrix<MemorySpace> rank2(float* data, const Shape& s) {
  return Matrix<MemorySpace>(data, s[0], s[1]);
}
template <class MemorySpace>
Array4<MemorySpace> rank4(float* data, const Shape& s) {
  return Array4<MemorySpace>(data, s[0], s[1], s[2], s[3]);
}

// The naive baseline: what a user writes with plain Kokkos.
template <class ExecutionSpace, class MemorySpace>
void naive_broadcast(const ExecutionSpace& space, Case which, const Matrix<MemorySpace>& a,
                     const Matrix<MemorySpace>& b, const Matrix<MemorySpace>& out) {
  using Policy = Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>;
  const Policy policy(space, {0, 0}, {std::int64_t(out.extent(0)), std::int64_t(out.extent(1))});
  if (which == Case::matrix_plus_row) {
    Kokkos::parallel_for(
        "naive::matrix_plus_row", policy,
        KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
          out(i, j) = a(i, j) + b(0, j);
        });
  } else {
    Kokkos::parallel_for(
        "naive::matrix_plus_column", policy,
        KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
          out(i, j) = a(i, j) + b(i, 0);
        });
  }
}

template <class ExecutionSpace, class MemorySpace>
void naive_broadcast(const ExecutionSpace& space, const Array4<MemorySpace>& a,
                     const Array4<MemorySpace>& b, const Array4<MemorySpace>& out) {
  using Policy = Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<4>>;
  const Policy policy(space, {0, 0, 0, 0},
                      {std::int64_t(out.extent(0)), std::int64_t(out.extent(1)),
                       std::int64_t(out.extent(2)), std::int64_t(out.extent(3))});
  Kokkos::parallel_for(
      "naive::four_dimensional", policy,
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j, const std::int64_t k,
                    const std::int64_t l) { out(i, j, k, l) = a(i, 0, k, l) + b(0, j, 0, l); });
}

struct Variant {
  std::string name;
  bool naive;
  kpl::BroadcastOptions options;
};

template <class ExecutionSpace>
void run(benchmark::State& state, Case which, const Variant& variant, Shape a_shape, Shape b_shape,
         Shape out_shape) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  auto a = filled<MemorySpace>(count(a_shape), 1.5f);
  auto b = filled<MemorySpace>(count(b_shape), 2.0f);
  auto out = filled<MemorySpace>(count(out_shape), 0.0f);
  const auto call = [&] {
    if (which == Case::four_dimensional) {
      const auto a4 = rank4<MemorySpace>(a.data(), a_shape);
      const auto b4 = rank4<MemorySpace>(b.data(), b_shape);
      const auto out4 = rank4<MemorySpace>(out.data(), out_shape);
      if (variant.naive) {
        naive_broadcast(space, a4, b4, out4);
      } else {
        kpl::broadcast(space, kpl::Add{}, a4, b4, out4, variant.options);
      }
    } else {
      const auto a2 = rank2<MemorySpace>(a.data(), a_shape);
      const auto b2 = rank2<MemorySpace>(b.data(), b_shape);
      const auto out2 = rank2<MemorySpace>(out.data(), out_shape);
      if (variant.naive) {
        naive_broadcast(space, which, a2, b2, out2);
      } else {
        kpl::broadcast(space, kpl::Add{}, a2, b2, out2, variant.options);
      }
    }
    space.fence();
  };
  // One untimed call: first touch, and whether a forced variant applies to
  // the shape at all (the scratch tile of a long row can outgrow a team's
  // scratch memory); if not, the benchmark says why and the suite runs on.
  try {
    call();
  } catch (const std::invalid_argument& error) {
    state.SkipWithError(error.what());
  }
  for (auto _ : state) call();
  const double bytes = 4.0 * double(count(a_shape) + count(b_shape) + count(out_shape));
  kpl::perf::report_bytes(state, bytes, ExecutionSpace::name());
}

template <class Space>
void add(const std::string& name, Case which, const Variant& variant, const Shape& a_shape,
         const Shape& b_shape, const Shape& out_shape) {
  benchmark::RegisterBenchmark(name.c_str(),
                               [=](benchmark::State& state) {
                                 run<Space>(state, which, variant, a_shape, b_shape, out_shape);
                               })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

// A matrix rows x columns plus a row or a column vector.
template <class Space>
void add_matrix(const std::string& prefix, Case which, const Variant& variant, std::int64_t rows,
                std::int64_t columns) {
  const bool row = which == Case::matrix_plus_row;
  const std::string name = prefix + (row ? "matrix_plus_row/" : "matrix_plus_column/") +
                           std::to_string(rows) + "x" + std::to_string(columns) + "/float/" +
                           Space::name();
  add<Space>(name, which, variant, {rows, columns}, {row ? 1 : rows, row ? columns : 1},
             {rows, columns});
}

const bool registered = [] {
  using kpl::BroadcastVariant;
  const std::vector<Variant> variants = {
      {"automatic", false, {BroadcastVariant::automatic, 0}},
      {"general", false, {BroadcastVariant::general, 0}},
      {"sliding_factor", false, {BroadcastVariant::sliding_factor, 0}},
      {"scratch", false, {BroadcastVariant::scratch, 0}},
      {"naive", true, {}}};
  kpl::for_each_execution_space([&](auto tag) {
    using Space = typename decltype(tag)::type;
    // 2^28 outputs on GPUs, 2^24 on CPUs (same shapes, fewer rows).
    const bool host = std::is_same_v<typename Space::memory_space, Kokkos::HostSpace>;
    const std::int64_t scale = host ? 16 : 1;
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
        {262144 / scale, 1024}, {1024 / scale, 262144}, {4194304 / scale, 64}};
    for (const auto& variant : variants) {
      for (auto which : {Case::matrix_plus_row, Case::matrix_plus_column}) {
        for (const auto& [rows, columns] : shapes) {
          add_matrix<Space>("broadcast/" + variant.name + "/", which, variant, rows, columns);
        }
      }
      if (variant.options.variant == BroadcastVariant::scratch) continue;  // rank 4 after merging
      const std::int64_t leading = host ? 4 : 64;
      add<Space>(
          "broadcast/" + variant.name + "/64x1x256x128_plus_1x512x1x128/float/" + Space::name(),
          Case::four_dimensional, variant, {leading, 1, 256, 128}, {1, 512, 1, 128},
          {leading, 512, 256, 128});
    }
    // The seed's figure: Y x 1024 matrix plus a vector of 1024 (row) or a
    // Y x 1 column, Y from 16 to 2^18 (2^14 on CPUs).
    for (const auto& variant : variants) {
      for (auto which : {Case::matrix_plus_row, Case::matrix_plus_column}) {
        for (std::int64_t rows = 16; rows <= 262144 / scale; rows *= 4) {
          add_matrix<Space>("broadcast_y_length/" + variant.name + "/", which, variant, rows, 1024);
        }
      }
    }
    // The sliding factor against the automatic one, on the first shape.
    for (std::int64_t factor = 1; factor <= 256; factor *= 2) {
      const Variant variant{"sliding_factor_" + std::to_string(factor),
                            false,
                            {BroadcastVariant::sliding_factor, factor}};
      for (auto which : {Case::matrix_plus_row, Case::matrix_plus_column}) {
        add_matrix<Space>("broadcast_factor_sweep/" + variant.name + "/", which, variant,
                          262144 / scale, 1024);
      }
      add<Space>("broadcast_factor_sweep/" + variant.name +
                     "/64x1x256x128_plus_1x512x1x128/float/" + Space::name(),
                 Case::four_dimensional, variant, {host ? 4 : 64, 1, 256, 128}, {1, 512, 1, 128},
                 {host ? 4 : 64, 512, 256, 128});
    }
  });
  return true;
}();

}  // namespace
