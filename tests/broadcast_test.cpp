// kpl::broadcast on every backend against a host reference: ranks 1 to 6 with
// every pattern of broadcast dimensions, missing leading dimensions,
// non-contiguous inputs, in-place use and the shape errors.
#include "execution_space_test.hpp"

#include <kpl/broadcast.hpp>

#include <random>
#include <vector>

namespace {

using Shape = std::vector<std::int64_t>;

// Host reference: NumPy's rule written out with explicit coordinates.
double reference_value(const std::vector<double>& values, const Shape& shape,
                       const Shape& out_shape, const Shape& coordinate) {
  std::int64_t index = 0;
  const std::size_t offset = out_shape.size() - shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t c = shape[d] == 1 ? 0 : coordinate[offset + d];
    index = index * shape[d] + c;
  }
  return values[index];
}

// Runs broadcast(op) for shapes a and b: flat device buffers seen through
// LayoutStride Views of the exact ranks; the output is poisoned with NaN so an
// element the kernel misses cannot pass.
template <class ExecutionSpace, int RankA, int RankB, int RankOut, class Op>
void check_shapes(const Shape& a_shape, const Shape& b_shape, const Op& op,
                  double (*host_op)(double, double)) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  auto make = [](const Shape& shape, std::uint64_t seed, std::vector<double>& values) {
    std::int64_t size = 1;
    for (auto e : shape) size *= e;
    values.resize(size);
    std::mt19937_64 generator(seed);
    for (auto& v : values) v = std::uniform_real_distribution<double>(-10, 10)(generator);
    return size;
  };
  std::vector<double> a_values, b_values;
  make(a_shape, 100 + a_shape.size(), a_values);
  make(b_shape, 200 + b_shape.size(), b_values);
  Shape out_shape(RankOut);
  for (int d = 0; d < RankOut; ++d) {
    const int da = static_cast<int>(a_shape.size()) - RankOut + d;
    const int db = static_cast<int>(b_shape.size()) - RankOut + d;
    const std::int64_t ea = da >= 0 ? a_shape[da] : 1, eb = db >= 0 ? b_shape[db] : 1;
    out_shape[d] = ea == 1 ? eb : ea;
  }
  auto strided = [](double* data, const Shape& shape) {
    Kokkos::LayoutStride layout;
    std::int64_t stride = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      layout.dimension[d] = shape[d];
      layout.stride[d] = stride;
      stride *= shape[d];
    }
    return layout;
  };
  std::int64_t out_size = 1;
  for (auto e : out_shape) out_size *= e;
  Kokkos::View<double*, MemorySpace> a_flat("a", a_values.size()), b_flat("b", b_values.size()),
      out_flat("out", out_size);
  Kokkos::deep_copy(a_flat, Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                a_values.data(), a_values.size()));
  Kokkos::deep_copy(b_flat, Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                b_values.data(), b_values.size()));
  auto view_of_rank = [&](auto rank_tag, double* data, const Shape& shape) {
    constexpr int Rank = decltype(rank_tag)::value;
    using Type = std::conditional_t<
        Rank == 1, double*,
        std::conditional_t<
            Rank == 2, double**,
            std::conditional_t<
                Rank == 3, double***,
                std::conditional_t<Rank == 4, double****,
                                   std::conditional_t<Rank == 5, double*****, double******>>>>>;
    return Kokkos::View<Type, Kokkos::LayoutStride, MemorySpace, Kokkos::MemoryUnmanaged>(
        data, strided(data, shape));
  };
  const auto a = view_of_rank(std::integral_constant<int, RankA>{}, a_flat.data(), a_shape);
  const auto b = view_of_rank(std::integral_constant<int, RankB>{}, b_flat.data(), b_shape);
  const auto out = view_of_rank(std::integral_constant<int, RankOut>{}, out_flat.data(), out_shape);
  std::vector<double> expected(out_size);
  Shape coordinate(RankOut, 0);
  for (std::int64_t i = 0; i < out_size; ++i) {
    std::int64_t remainder = i;
    for (int d = RankOut - 1; d >= 0; --d) {
      coordinate[d] = remainder % out_shape[d];
      remainder /= out_shape[d];
    }
    expected[i] = host_op(reference_value(a_values, a_shape, out_shape, coordinate),
                          reference_value(b_values, b_shape, out_shape, coordinate));
  }
  // Every variant, with automatic and explicit sliding factors (1, 3 and one
  // above the number of rows); the scratch variant only where the merged
  // shape is a matrix and vectors, and otherwise it must refuse.
  const auto plan =
      kpl::impl::plan_broadcast(kpl::describe(a), kpl::describe(b), kpl::describe(out));
  using kpl::BroadcastVariant;
  const std::vector<kpl::BroadcastOptions> every_option = {
      {BroadcastVariant::automatic, 0},      {BroadcastVariant::general, 0},
      {BroadcastVariant::sliding_factor, 0}, {BroadcastVariant::sliding_factor, 1},
      {BroadcastVariant::sliding_factor, 3}, {BroadcastVariant::sliding_factor, 100000},
      {BroadcastVariant::scratch, 0},        {BroadcastVariant::scratch, 1},
      {BroadcastVariant::scratch, 3}};
  std::vector<double> result(out_size);
  for (const auto& options : every_option) {
    SCOPED_TRACE("variant " + std::to_string(static_cast<int>(options.variant)) +
                 ", sliding factor " + std::to_string(options.sliding_factor));
    if (options.variant == BroadcastVariant::scratch && plan.rank > 2) {
      EXPECT_THROW(kpl::broadcast(space, op, a, b, out, options), std::invalid_argument);
      continue;
    }
    Kokkos::deep_copy(out_flat, std::nan(""));
    kpl::broadcast(space, op, a, b, out, options);
    Kokkos::deep_copy(
        Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(result.data(), out_size),
        out_flat);
    for (std::int64_t i = 0; i < out_size; ++i) {
      ASSERT_EQ(result[i], expected[i]) << "element " << i;
    }
  }
}

double add(double x, double y) { return x + y; }
double subtract(double x, double y) { return x - y; }

template <class ExecutionSpace, int Rank>
void check_every_pattern() {
  // Extents 2, 3, 4, ... so that mixed-up dimensions show; each dimension of
  // a and of b is either full or 1 (every one of the 2^Rank x 2^Rank pairs).
  Shape full(Rank);
  for (int d = 0; d < Rank; ++d) full[d] = 2 + d % 3;
  for (int pattern_a = 0; pattern_a < (1 << Rank); ++pattern_a) {
    for (int pattern_b = 0; pattern_b < (1 << Rank); ++pattern_b) {
      if (Rank > 4 && (pattern_a + pattern_b) % 7 != 0) continue;  // keep rank 5-6 affordable
      Shape a_shape = full, b_shape = full;
      for (int d = 0; d < Rank; ++d) {
        if (pattern_a & (1 << d)) a_shape[d] = 1;
        if (pattern_b & (1 << d)) b_shape[d] = 1;
      }
      SCOPED_TRACE("pattern " + std::to_string(pattern_a) + "/" + std::to_string(pattern_b));
      check_shapes<ExecutionSpace, Rank, Rank, Rank>(a_shape, b_shape, kpl::Subtract{}, subtract);
    }
  }
}

}  // namespace

KPL_EXECUTION_SPACE_SUITE(Broadcast);

KPL_EXECUTION_SPACE_TEST(Broadcast, EveryPatternOfBroadcastDimensionsRanksOneToSix) {
  check_every_pattern<TypeParam, 1>();
  check_every_pattern<TypeParam, 2>();
  check_every_pattern<TypeParam, 3>();
  check_every_pattern<TypeParam, 4>();
  check_every_pattern<TypeParam, 5>();
  check_every_pattern<TypeParam, 6>();
}

KPL_EXECUTION_SPACE_TEST(Broadcast, MissingLeadingDimensionsAndLargeShapes) {
  check_shapes<TypeParam, 2, 1, 2>({1000, 37}, {37}, kpl::Add{}, add);       // matrix + row
  check_shapes<TypeParam, 2, 2, 2>({1000, 37}, {1000, 1}, kpl::Add{}, add);  // matrix + column
  check_shapes<TypeParam, 4, 4, 4>({6, 1, 25, 12}, {1, 51, 1, 12}, kpl::Add{}, add);
  check_shapes<TypeParam, 1, 3, 3>({5}, {3, 1, 5}, kpl::Add{}, add);
  check_shapes<TypeParam, 2, 2, 2>({0, 4}, {1, 4}, kpl::Add{}, add);  // empty output
  check_shapes<TypeParam, 1, 1, 1>({1}, {1}, kpl::Add{}, add);
  // Several column tiles of the scratch variant (256 on GPUs, 4096 on CPUs)
  // and row counts that are not multiples of the unrolling or the factor.
  check_shapes<TypeParam, 2, 1, 2>({70, 600}, {600}, kpl::Add{}, add);
  check_shapes<TypeParam, 2, 2, 2>({3, 5000}, {3, 1}, kpl::Add{}, add);
  check_shapes<TypeParam, 2, 2, 2>({1, 9}, {1, 1}, kpl::Add{}, add);  // matrix + scalar
  check_shapes<TypeParam, 3, 3, 3>({7, 5, 3}, {7, 1, 3}, kpl::Add{}, add);
}

namespace {
template <class ExecutionSpace>
void check_non_contiguous_and_in_place(const kpl::BroadcastOptions& options) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const int rows = 33, columns = 17;
  // A column-major matrix, a strided row (every other element of a vector)
  // and a transposed (column-major viewed as row-major) output.
  Kokkos::View<double**, Kokkos::LayoutLeft, MemorySpace> a("a", rows, columns);
  Kokkos::View<double*, MemorySpace> long_vector("long", 2 * columns);
  auto host_a = Kokkos::create_mirror_view(a);
  auto host_long = Kokkos::create_mirror_view(long_vector);
  std::mt19937_64 generator(5);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < columns; ++j)
      host_a(i, j) = std::uniform_real_distribution<double>(-1, 1)(generator);
  for (int j = 0; j < 2 * columns; ++j) host_long(j) = j;
  Kokkos::deep_copy(a, host_a);
  Kokkos::deep_copy(long_vector, host_long);
  const Kokkos::View<double*, Kokkos::LayoutStride, MemorySpace> every_other(
      long_vector.data(), Kokkos::LayoutStride(columns, 2));
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> out("out", rows, columns);
  kpl::broadcast(space, kpl::Multiply{}, a, every_other, out, options);
  auto host_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < columns; ++j) ASSERT_EQ(host_out(i, j), host_a(i, j) * (2 * j));

  // In place: a = max(a, column vector).
  Kokkos::View<double**, MemorySpace> column("column", rows, 1);
  Kokkos::deep_copy(column, 0.25);
  kpl::broadcast(space, kpl::Maximum{}, a, column, a, options);
  auto host_in_place = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < columns; ++j) ASSERT_EQ(host_in_place(i, j), std::max(host_a(i, j), 0.25));
}
}  // namespace

KPL_EXECUTION_SPACE_TEST(Broadcast, NonContiguousInputsAndInPlace) {
  using kpl::BroadcastVariant;
  for (auto variant : {BroadcastVariant::automatic, BroadcastVariant::general,
                       BroadcastVariant::sliding_factor, BroadcastVariant::scratch}) {
    SCOPED_TRACE("variant " + std::to_string(static_cast<int>(variant)));
    check_non_contiguous_and_in_place<TypeParam>({variant, 0});
  }
}

namespace {
// Float, whose 16-byte packs hold 4 elements on GPUs: an aligned matrix, the
// same matrix seen from its second column (unaligned rows, width 43), and a
// row vector; every variant against the host.
template <class ExecutionSpace>
void check_float_alignment() {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const int rows = 37, columns = 44;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> a("a", rows, columns),
      out("out", rows, columns);
  Kokkos::View<float*, MemorySpace> row("row", columns);
  auto host_a = Kokkos::create_mirror_view(a);
  auto host_row = Kokkos::create_mirror_view(row);
  std::mt19937_64 generator(11);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < columns; ++j)
      host_a(i, j) = std::uniform_real_distribution<float>(-1, 1)(generator);
  for (int j = 0; j < columns; ++j)
    host_row(j) = std::uniform_real_distribution<float>(-1, 1)(generator);
  Kokkos::deep_copy(a, host_a);
  Kokkos::deep_copy(row, host_row);
  using kpl::BroadcastVariant;
  for (int first_column : {0, 1}) {
    const auto range = std::make_pair(first_column, columns);
    const auto a_part = Kokkos::subview(a, Kokkos::ALL, range);
    const auto out_part = Kokkos::subview(out, Kokkos::ALL, range);
    const auto row_part = Kokkos::subview(row, range);
    for (auto variant :
         {BroadcastVariant::general, BroadcastVariant::sliding_factor, BroadcastVariant::scratch}) {
      SCOPED_TRACE("first column " + std::to_string(first_column) + ", variant " +
                   std::to_string(static_cast<int>(variant)));
      Kokkos::deep_copy(out, std::nanf(""));
      kpl::broadcast(space, kpl::Multiply{}, a_part, row_part, out_part, {variant, 0});
      auto host_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
      for (int i = 0; i < rows; ++i)
        for (int j = first_column; j < columns; ++j)
          ASSERT_EQ(host_out(i, j), host_a(i, j) * host_row(j)) << i << ", " << j;
    }
  }
}
}  // namespace

namespace {
// A scratch tile larger than a team's scratch memory is refused before any
// kernel runs (checked where that memory is small enough to exceed cheaply:
// GPUs).
template <class ExecutionSpace>
void check_scratch_too_large() {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const auto available = Kokkos::TeamPolicy<ExecutionSpace>::scratch_size_max(0);
  if (available > (1 << 24)) return;
  const std::int64_t rows = available / sizeof(double) + 1;
  Kokkos::View<double**, MemorySpace> a("a", rows, 2), column("column", rows, 1),
      out("out", rows, 2);
  EXPECT_THROW(kpl::broadcast(ExecutionSpace{}, kpl::Add{}, a, column, out,
                              {kpl::BroadcastVariant::scratch, rows}),
               std::invalid_argument);
  kpl::broadcast(ExecutionSpace{}, kpl::Add{}, a, column, out, {kpl::BroadcastVariant::scratch, 0});
  ExecutionSpace{}.fence();
}

// The automatic rows-per-tile of the scratch variant fits the tile into a
// team's scratch memory however tall the matrix (rows / (4 x concurrency)
// staged values of a column vector outgrew it on CPUs: the perf suite hit it).
template <class ExecutionSpace>
void check_scratch_automatic_factor_fits() {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const std::int64_t available = Kokkos::TeamPolicy<ExecutionSpace>::scratch_size_max(0);
  const std::int64_t rows =
      std::min<std::int64_t>(8 * std::int64_t(space.concurrency()) * available / sizeof(float),
                             std::int64_t(1) << 22) +
      3;
  Kokkos::View<float**, MemorySpace> a("a", rows, 2), column("column", rows, 1),
      out("out", rows, 2);
  Kokkos::deep_copy(a, 1.0f);
  Kokkos::deep_copy(column, 2.0f);
  kpl::broadcast(space, kpl::Add{}, a, column, out, {kpl::BroadcastVariant::scratch, 0});
  const auto result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < 2; ++j) wrong += result(i, j) != 3.0f;
  EXPECT_EQ(wrong, 0);
}
}  // namespace

KPL_EXECUTION_SPACE_TEST(Broadcast, ScratchAutomaticFactorFitsScratchMemory) {
  check_scratch_automatic_factor_fits<TypeParam>();
}

KPL_EXECUTION_SPACE_TEST(Broadcast, ScratchTileLargerThanScratchMemoryIsRefused) {
  check_scratch_too_large<TypeParam>();
}

KPL_EXECUTION_SPACE_TEST(Broadcast, FloatPacksAlignedAndUnaligned) {
  check_float_alignment<TypeParam>();
}

TEST(BroadcastShapes, IncompatibleShapesAreAnErrorNamingBoth) {
  Kokkos::View<double**, Kokkos::HostSpace> a("a", 3, 4), out("out", 3, 4);
  Kokkos::View<double*, Kokkos::HostSpace> b("b", 5);
  try {
    kpl::broadcast(Kokkos::DefaultHostExecutionSpace{}, kpl::Add{}, a, b, out);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("[3, 4]"), std::string::npos) << message;
    EXPECT_NE(message.find("[5]"), std::string::npos) << message;
  }
  Kokkos::View<double*, Kokkos::HostSpace> c("c", 4);
  Kokkos::View<double**, Kokkos::HostSpace> wrong_out("wrong", 4, 4);
  EXPECT_THROW(kpl::broadcast(Kokkos::DefaultHostExecutionSpace{}, kpl::Add{}, a, c, wrong_out),
               std::invalid_argument);
  const auto shape =
      kpl::broadcast_shape(kpl::describe(Kokkos::View<double***, Kokkos::HostSpace>("x", 8, 1, 6)),
                           kpl::describe(Kokkos::View<double**, Kokkos::HostSpace>("y", 7, 1)));
  EXPECT_EQ(kpl::shape_text(shape), "[8, 7, 6]");
  EXPECT_THROW(kpl::broadcast(Kokkos::DefaultHostExecutionSpace{}, kpl::Add{}, a, c, out,
                              {kpl::BroadcastVariant::sliding_factor, -1}),
               std::invalid_argument);
}

namespace {

// The team variants with teams of two threads on the host: matrix - row
// vector, matrix - column vector and row vector - column vector (both staged
// by the scratch variant), every element against a host loop. The scratch
// tiles are tall (sliding factor 64) and many, so a thread that read a staged
// vector element before its teammate wrote it (no barrier between staging
// and use) would see the previous tile's value.
void check_teams_of_two(kpl::BroadcastVariant variant, int repeats) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  const Host space;
  const std::int64_t rows = 64 * 200, columns = 6;
  Kokkos::View<double**, Kokkos::HostSpace> matrix("matrix", rows, columns),
      column("column", rows, 1), row("row", 1, columns), out("out", rows, columns);
  for (std::int64_t i = 0; i < rows; ++i) {
    column(i, 0) = double(3 * i + 1);
    for (std::int64_t j = 0; j < columns; ++j) matrix(i, j) = double(1000 * i + j);
  }
  for (std::int64_t j = 0; j < columns; ++j) row(0, j) = double(7 * j + 5);
  const kpl::BroadcastOptions options{variant, 64, 2};
  const auto expect = [&](const auto& a, const auto& b, const auto& reference, const char* what) {
    Kokkos::deep_copy(out, std::nan(""));
    kpl::broadcast(space, kpl::Subtract{}, a, b, out, options);
    space.fence();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < columns; ++j) wrong += !(out(i, j) == reference(i, j));
    EXPECT_EQ(wrong, 0) << what;
  };
  for (int repeat = 0; repeat < repeats; ++repeat) {
    expect(
        matrix, row, [&](std::int64_t i, std::int64_t j) { return matrix(i, j) - row(0, j); },
        "matrix - row");
    expect(
        matrix, column,
        [&](std::int64_t i, std::int64_t j) { return matrix(i, j) - column(i, 0); },
        "matrix - column");
    expect(
        row, column, [&](std::int64_t i, std::int64_t j) { return row(0, j) - column(i, 0); },
        "row - column");
  }
}

}  // namespace

TEST(BroadcastOnTheHost, TeamVariantsWithTeamsOfTwoThreads) {
  if (Kokkos::DefaultHostExecutionSpace().concurrency() < 2) {
    GTEST_SKIP() << "the host space runs one thread";
  }
  check_teams_of_two(kpl::BroadcastVariant::general, 1);
  check_teams_of_two(kpl::BroadcastVariant::scratch, 20);
}
