// Sizes past 2^31 elements: every index and byte count on the way is 64-bit.
// One reduction, one broadcast and the gemv strategies on data of more than
// 2^31 elements, and HDF5 rows read and written past element 2^31. Each
// checks values at the far end, where a 32-bit index would have wrapped.
// These allocate up to 8.6 GB: they carry CTest's `large` label and run once
// in CI, outside the sanitizer build.
#include "execution_space_test.hpp"

#include <kpl/broadcast.hpp>
#include <kpl/gemv.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/reduce.hpp>
#include <kpl/resources.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace {

constexpr std::int64_t beyond_int = (std::int64_t(1) << 31) + 37;

// Skips (with a message) when the device cannot hold `bytes` now.
bool room_for(std::int64_t bytes) {
  return kpl::device_memory_available() > bytes + (std::int64_t(1) << 30);
}

KPL_EXECUTION_SPACE_SUITE(LargeSizes);

template <class Space>
void check_reduce() {
  using Memory = typename Space::memory_space;
  if (!room_for(beyond_int)) GTEST_SKIP() << "too little memory for 2^31 bytes";
  Kokkos::View<std::uint8_t*, Memory> values(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "values"), beyond_int);
  const Space space;
  Kokkos::parallel_for(
      "kpl::test::fill",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, beyond_int),
      KOKKOS_LAMBDA(const std::int64_t i) {
        values(i) = i == beyond_int - 5 ? 200 : std::uint8_t(i % 101);
      });
  const auto largest = kpl::reduce(space, values, kpl::ArgMax<std::uint8_t>{});
  EXPECT_EQ(int(largest.value), 200);
  EXPECT_EQ(largest.index, beyond_int - 5);
  const auto smallest = kpl::reduce(space, values, kpl::ArgMin<std::uint8_t>{});
  EXPECT_EQ(int(smallest.value), 0);
  EXPECT_EQ(smallest.index, 0);
}
KPL_EXECUTION_SPACE_TEST(LargeSizes, ReduceFindsAnIndexPast2To31) { check_reduce<TypeParam>(); }

template <class Space>
void check_broadcast() {
  using Memory = typename Space::memory_space;
  if (!room_for(2 * beyond_int)) GTEST_SKIP() << "too little memory for 2 x 2^31 bytes";
  const std::int64_t columns = 1 << 16, rows = beyond_int / columns + 1;  // > 2^31 elements
  Kokkos::View<std::int8_t**, Kokkos::LayoutRight, Memory> matrix(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "matrix"), rows, columns);
  Kokkos::View<std::int8_t**, Kokkos::LayoutRight, Memory> out(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "out"), rows, columns);
  Kokkos::View<std::int8_t*, Memory> row("row", columns);
  const Space space;
  Kokkos::parallel_for(
      "kpl::test::fill",
      Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>(space, {0, 0}, {rows, columns}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        matrix(i, j) = std::int8_t((i + 3 * j) % 50);
        if (i == 0) row(j) = std::int8_t(j % 7);
      });
  kpl::broadcast(space, kpl::Add{}, matrix, row, out);
  space.fence();
  // The last rows, past element 2^31, on the host.
  const auto tail = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace{}, Kokkos::subview(out, std::make_pair(rows - 2, rows), Kokkos::ALL));
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t j = 0; j < columns; j += 997) {
      const std::int64_t i = rows - 2 + r;
      ASSERT_EQ(int(tail(r, j)), int((i + 3 * j) % 50 + j % 7)) << "row " << i << ", column " << j;
    }
}
KPL_EXECUTION_SPACE_TEST(LargeSizes, BroadcastWritesPast2To31) { check_broadcast<TypeParam>(); }

template <class Space>
void check_gemv() {
  using Memory = typename Space::memory_space;
  // Tall and narrow, as a GAM basis: > 2^31 floats in 16 columns.
  const std::int64_t columns = 16, rows = beyond_int / columns + 1;
  if (!room_for(rows * columns * 4)) GTEST_SKIP() << "too little memory for 8.6 GB";
  Kokkos::View<float**, Kokkos::LayoutRight, Memory> A(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "A"), rows, columns);
  Kokkos::View<float*, Memory> x("x", columns), y("y", rows), z("z", columns);
  const Space space;
  // A(i, j) = ((i + j) mod 5) - 2 and x = 1: row sums and column sums are
  // small integers, exact in float.
  Kokkos::parallel_for(
      "kpl::test::fill",
      Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>(space, {0, 0}, {rows, columns}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        A(i, j) = float((i + j) % 5) - 2.0f;
        if (i == 0) x(j) = 1.0f;
      });
  Kokkos::View<float*, Memory> ones("ones", rows);
  Kokkos::deep_copy(space, ones, 1.0f);
  for (const auto strategy : {kpl::GemvStrategy::automatic, kpl::GemvStrategy::thread_per_row,
                              kpl::GemvStrategy::team_per_dot, kpl::GemvStrategy::partial_rows}) {
    SCOPED_TRACE(std::string(kpl::to_string(strategy)));
    kpl::GemvOptions options;
    options.strategy = strategy;
    kpl::gemv(space, kpl::Transpose::no, 1.0f, A, x, 0.0f, y, options);
    kpl::gemv(space, kpl::Transpose::yes, 1.0f, A, ones, 0.0f, z, options);
    space.fence();
    const auto y_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, y);
    const auto z_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, z);
    // Full cycles of -2..2 sum to 0: a row's (column's) sum is that of its
    // last columns mod 5 (rows mod 5) values.
    for (const std::int64_t i : {std::int64_t(0), rows / 2, rows - 1}) {
      double expected = 0;
      for (std::int64_t j = columns - columns % 5; j < columns; ++j)
        expected += double((i + j) % 5) - 2;
      ASSERT_EQ(double(y_host(i)), expected) << "row " << i;
    }
    for (const std::int64_t j : {std::int64_t(0), std::int64_t(1), columns - 1}) {
      double expected = 0;
      for (std::int64_t i = rows - rows % 5; i < rows; ++i) expected += double((i + j) % 5) - 2;
      ASSERT_EQ(double(z_host(j)), expected) << "column " << j;
    }
  }
}
KPL_EXECUTION_SPACE_TEST(LargeSizes, GemvReadsPast2To31) { check_gemv<TypeParam>(); }

// HDF5 rows past element 2^31 of a [2^31 + 37] dataset, written and read
// back as slices (the file holds only what was written: its other blocks
// stay unallocated holes).
TEST(LargeSizes, Hdf5RowsPast2To31) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("kpl_large_" + std::to_string(::getpid()) + ".h5"))
          .string();
  {
    kpl::hdf5::OutputFile output(path);
    output.create_dataset<std::int32_t>("/values", {std::size_t(beyond_int)});
    kpl::hdf5::HostArray<std::int32_t, 1> tail("tail", 7);
    for (int i = 0; i < 7; ++i) tail(i) = 1000 + i;
    output.write_rows("/values", std::size_t(beyond_int - 7), tail);
    output.commit();
  }
  const kpl::hdf5::InputFile input(path);
  EXPECT_EQ(input.shape("/values")[0], std::size_t(beyond_int));
  EXPECT_EQ(input.bytes("/values", 4), beyond_int * 4);
  const auto read = input.read_rows<std::int32_t, 1>("/values", std::size_t(beyond_int - 5), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(read(i), 1002 + i);
  std::filesystem::remove(path);
}

}  // namespace
