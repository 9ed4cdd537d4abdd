// kpl::reduce on every backend against a plain host reference in double:
// every operation and element type, lengths around team and vector sizes,
// both ways of combining teams, device-View results, strided inputs, the
// team-level building blocks, and the float-accuracy requirement.
#include "execution_space_test.hpp"

#include <kpl/reduce.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

const std::vector<std::int64_t> lengths = {0, 1, 31, 32, 33, 1000, (1 << 20) + 7};

template <class T>
std::vector<T> random_values(std::int64_t length, std::uint64_t seed, bool near_one = false) {
  std::mt19937_64 generator(seed);
  std::vector<T> values(static_cast<std::size_t>(length));
  for (auto& value : values) {
    if constexpr (std::is_floating_point_v<T>) {
      value = near_one ? T(1) + std::uniform_real_distribution<T>(-1e-3, 1e-3)(generator)
                       : std::uniform_real_distribution<T>(-100, 100)(generator);
    } else {
      // Small integers: products stay exact (mostly +-1) and sums never overflow.
      value =
          near_one
              ? (std::uniform_int_distribution<int>(0, 1)(generator) ? 1 : -1)
              : static_cast<T>(std::uniform_int_distribution<int>(-1000000, 1000000)(generator));
    }
  }
  return values;
}

template <class ExecutionSpace, class T>
Kokkos::View<T*, typename ExecutionSpace::memory_space> to_device(const std::vector<T>& values) {
  Kokkos::View<T*, typename ExecutionSpace::memory_space> device("input", values.size());
  Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(values.data(),
                                                                          values.size());
  Kokkos::deep_copy(device, host);
  return device;
}

// A user-supplied binary operation (at namespace scope: nvcc refuses local
// types as kernel template arguments).
template <class T>
struct LargestMagnitude {
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    const T magnitude_a = a < 0 ? -a : a;
    const T magnitude_b = b < 0 ? -b : b;
    return magnitude_a < magnitude_b ? magnitude_b : magnitude_a;
  }
};

template <class ExecutionSpace, class T>
void check_every_operation(std::int64_t length, kpl::cross_team combine) {
  const ExecutionSpace space;
  const auto values = random_values<T>(length, 1000 + length);
  const auto ones = random_values<T>(length, 2000 + length, true);
  const auto x = to_device<ExecutionSpace>(values);
  const auto y = to_device<ExecutionSpace>(ones);
  const kpl::ReduceOptions options{combine, 0};

  double sum = 0, absolute_sum = 0, product = 1;
  T smallest = kpl::largest<T>(), largest = kpl::smallest<T>();
  std::int64_t argmin = -1, argmax = -1;
  for (std::int64_t i = 0; i < length; ++i) {
    const T v = values[i];
    sum += double(v);
    absolute_sum += std::abs(double(v));
    product *= double(ones[i]);
    if (argmin < 0 || v < values[argmin]) argmin = i;
    if (argmax < 0 || v > values[argmax]) argmax = i;
    smallest = std::min(smallest, v);
    largest = std::max(largest, v);
  }

  const double sum_tolerance = std::is_floating_point_v<T> ? 1e-12 * absolute_sum : 0.0;
  EXPECT_NEAR(double(kpl::reduce(space, x, kpl::Sum<T>{}, options)), sum, sum_tolerance);
  EXPECT_EQ(kpl::reduce(space, x, kpl::Min<T>{}, options), smallest);
  EXPECT_EQ(kpl::reduce(space, x, kpl::Max<T>{}, options), largest);
  // MinMax has an atomic form (one 8-byte compare-and-swap) for 4-byte types.
  if (combine != kpl::cross_team::atomics || sizeof(T) == 4) {
    const auto extremes = kpl::reduce(space, x, kpl::MinMax<T>{}, options);
    EXPECT_EQ(extremes.min, smallest);
    EXPECT_EQ(extremes.max, largest);
  }
  if (combine == kpl::cross_team::atomics) return;  // the rest cannot use atomics

  const double product_tolerance = std::is_same_v<T, float> ? 1e-3 : 1e-10;
  EXPECT_NEAR(double(kpl::reduce(space, y, kpl::Product<T>{}, options)), product,
              product_tolerance * std::abs(product));
  const auto lowest = kpl::reduce(space, x, kpl::ArgMin<T>{}, options);
  const auto highest = kpl::reduce(space, x, kpl::ArgMax<T>{}, options);
  EXPECT_EQ(lowest.index, argmin);
  EXPECT_EQ(highest.index, argmax);
  if (length > 0) {
    EXPECT_EQ(lowest.value, smallest);
    EXPECT_EQ(highest.value, largest);
  }

  // A user's operation: the largest absolute value, identity 0.
  T largest_magnitude = 0;
  for (const T v : values) largest_magnitude = std::max<T>(largest_magnitude, v < 0 ? -v : v);
  EXPECT_EQ(kpl::reduce(space, x, kpl::custom<T>(LargestMagnitude<T>{}, T(0)), options),
            largest_magnitude);

  // Several reductions, one pass.
  const auto [several_sum, several_max, several_min] =
      kpl::reduce(space, x, kpl::Sum<T>{}, kpl::Max<T>{}, kpl::Min<T>{});
  EXPECT_NEAR(double(several_sum), sum, sum_tolerance);
  EXPECT_EQ(several_max, largest);
  EXPECT_EQ(several_min, smallest);
}

template <class ExecutionSpace>
void check_all_types(kpl::cross_team combine) {
  for (const auto length : lengths) {
    SCOPED_TRACE("length " + std::to_string(length));
    check_every_operation<ExecutionSpace, double>(length, combine);
    check_every_operation<ExecutionSpace, float>(length, combine);
    check_every_operation<ExecutionSpace, std::int32_t>(length, combine);
    check_every_operation<ExecutionSpace, std::int64_t>(length, combine);
  }
}

// Results into a device View, without a fence in between: the next kernel on
// the same space reads them.
template <class ExecutionSpace>
void check_device_result_and_strided_input() {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const std::int64_t length = 100003;
  const auto values = random_values<double>(2 * length, 7);
  const auto all = to_device<ExecutionSpace>(values);
  // Every other element: a LayoutStride View.
  Kokkos::View<double*, Kokkos::LayoutStride, MemorySpace> every_other(
      all.data(), Kokkos::LayoutStride(length, 2));
  double expected = 0;
  for (std::int64_t i = 0; i < length; ++i) expected += values[2 * i];

  for (const auto combine : {kpl::cross_team::atomics, kpl::cross_team::second_pass}) {
    Kokkos::View<double, MemorySpace> result("result");
    kpl::reduce(space, every_other, kpl::Sum<double>{}, result, {combine, 0});
    Kokkos::View<double, MemorySpace> doubled("doubled");
    Kokkos::parallel_for(
        "kpl::test::use_result", Kokkos::RangePolicy<ExecutionSpace>(space, 0, 1),
        KOKKOS_LAMBDA(int) { doubled() = 2 * result(); });
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, doubled);
    EXPECT_NEAR(host(), 2 * expected, 1e-9 * length * 100);
  }
  // An explicit team count, including more teams than elements.
  for (const int teams : {1, 3, 1000}) {
    const auto small = Kokkos::subview(all, Kokkos::pair<std::int64_t, std::int64_t>(0, 500));
    double small_expected = 0;
    for (int i = 0; i < 500; ++i) small_expected += values[i];
    EXPECT_NEAR(
        kpl::reduce(space, small, kpl::Sum<double>{}, {kpl::cross_team::second_pass, teams}),
        small_expected, 1e-9);
  }
}

// The float-accuracy requirement: 2^28 floats summed within 1e-6 of the exact
// sum. Values k/64 for k in 0..255 are exact in float, so the exact sum is an
// integer computation.
template <class ExecutionSpace>
void check_float_sum_of_two_to_the_28() {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const std::int64_t length = std::int64_t(1) << 28;
  Kokkos::View<float*, MemorySpace> values(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "values"), length);
  Kokkos::parallel_for(
      "kpl::test::fill_pattern", Kokkos::RangePolicy<ExecutionSpace>(space, 0, length),
      KOKKOS_LAMBDA(const std::int64_t i) {
        values(i) = static_cast<float>((i * 2654435761LL) % 256) / 64.0f;
      });
  // Exact: every residue 0..255 appears equally often in each block of 256
  // consecutive i (2654435761 is odd, so i -> i*c mod 256 is a bijection).
  const double exact = double(length / 256) * (255.0 * 256.0 / 2.0) / 64.0;
  const double sum = kpl::reduce(space, values, kpl::Sum<float>{});
  EXPECT_LE(std::abs(sum - exact) / exact, 1e-6) << "sum " << sum << " exact " << exact;
}

// Past 2^24 elements: the GPU launch shape runs several device-fulls of
// teams (reduce_tree.hpp's reduction_shape) and a host result goes through a
// device one. Integers and small whole doubles add exactly in any order, so
// every path must return the closed form; 5 extra elements leave a tail
// outside the 16-byte chunks.
template <class ExecutionSpace>
void check_exact_sums_past_two_to_the_24() {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const std::int64_t length = (std::int64_t(1) << 24) + 5;
  Kokkos::View<std::int64_t*, MemorySpace> counts(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "counts"), length);
  Kokkos::View<double*, MemorySpace> residues(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "residues"), length);
  Kokkos::parallel_for(
      "kpl::test::fill_counts", Kokkos::RangePolicy<ExecutionSpace>(space, 0, length),
      KOKKOS_LAMBDA(const std::int64_t i) {
        counts(i) = i;
        residues(i) = double(i % 1024);
      });
  const std::int64_t count_sum = length * (length - 1) / 2;
  const std::int64_t whole_blocks = length / 1024, rest = length % 1024;
  const double residue_sum =
      double(whole_blocks) * (1023.0 * 1024.0 / 2.0) + double(rest * (rest - 1) / 2);
  for (const auto combine :
       {kpl::cross_team::automatic, kpl::cross_team::atomics, kpl::cross_team::second_pass}) {
    SCOPED_TRACE("combine " + std::to_string(int(combine)));
    const kpl::ReduceOptions options{combine};
    EXPECT_EQ(kpl::reduce(space, counts, kpl::Sum<std::int64_t>{}, options), count_sum);
    EXPECT_EQ(kpl::reduce(space, counts, kpl::Max<std::int64_t>{}, options), length - 1);
    EXPECT_EQ(kpl::reduce(space, residues, kpl::Sum<double>{}, options), residue_sum);
    Kokkos::View<double, MemorySpace> device_sum("device_sum");
    kpl::reduce(space, residues, kpl::Sum<double>{}, device_sum, options);
    double from_device = 0;
    Kokkos::deep_copy(from_device, device_sum);
    EXPECT_EQ(from_device, residue_sum);
  }
}

// The building blocks inside a user's own team kernel: each team reduces one
// row with vector_reduce and team_reduce.
template <class ExecutionSpace>
struct RowMaxima {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Kokkos::View<const double**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space> matrix;
  Kokkos::View<double*, typename ExecutionSpace::memory_space> maxima;
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const int row = member.league_rank();
    const int columns = static_cast<int>(matrix.extent(1));
    const kpl::Max<double> op;
    // Each thread takes a slice of columns; its vector lanes share the slice.
    const int threads = member.team_size();
    const int slice = (columns + threads - 1) / threads;
    const int begin = member.team_rank() * slice;
    const int count = begin < columns ? (columns - begin < slice ? columns - begin : slice) : 0;
    const double thread_max =
        kpl::vector_reduce(member, count, op, [&](int k) { return matrix(row, begin + k); });
    const double team_max = kpl::team_reduce(member, op, thread_max);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { maxima(row) = team_max; });
  }
};

template <class ExecutionSpace>
void check_team_building_blocks() {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const int rows = 37, columns = 1001;
  const auto values = random_values<double>(rows * columns, 11);
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> matrix("matrix", rows, columns);
  Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>
      host_matrix(values.data(), rows, columns);
  Kokkos::deep_copy(matrix, host_matrix);
  Kokkos::View<double*, MemorySpace> maxima("maxima", rows);
  const int team_size = kpl::impl::runs_on_host_v<ExecutionSpace> ? 1 : 8;
  const int vector_length = kpl::impl::runs_on_host_v<ExecutionSpace> ? 1 : 32;
  Kokkos::parallel_for("kpl::test::row_maxima",
                       Kokkos::TeamPolicy<ExecutionSpace>(rows, team_size, vector_length),
                       RowMaxima<ExecutionSpace>{matrix, maxima});
  const auto result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, maxima);
  for (int i = 0; i < rows; ++i) {
    double expected = -INFINITY;
    for (int j = 0; j < columns; ++j) expected = std::max(expected, values[i * columns + j]);
    EXPECT_EQ(result(i), expected) << "row " << i;
  }
}

// Several operations at once, with the cross-team combine forced: explicit
// team counts (several teams even on Serial), a second pass or Kokkos'
// inter-team stage, into a device View or to the host; each member against
// a plain host loop. team_size 2 runs the team level with two threads on
// the host (OpenMP with 2 threads).
template <class ExecutionSpace>
void check_several_operations_across_teams(int team_size) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const std::int64_t length = 100003;
  const auto values = random_values<float>(length, 4242);
  const auto x = to_device<ExecutionSpace>(values);
  double sum = 0, scale = 0;
  float low = values[0], high = values[0];
  std::int64_t argmin = 0, argmax = 0;
  for (std::int64_t i = 0; i < length; ++i) {
    sum += double(values[i]);
    scale += std::abs(double(values[i]));
    if (values[i] < low) low = values[i], argmin = i;
    if (values[i] > high) high = values[i], argmax = i;
  }
  const auto ops = kpl::several(kpl::Sum<float>{}, kpl::MinMax<float>{}, kpl::ArgMin<float>{},
                                kpl::ArgMax<float>{}, kpl::Max<float>{});
  using Pack = typename decltype(ops)::value_type;
  const auto check = [&](const Pack& pack) {
    EXPECT_NEAR(kpl::get<0>(pack), sum, 1e-12 * scale);
    EXPECT_EQ(kpl::get<1>(pack).min, low);
    EXPECT_EQ(kpl::get<1>(pack).max, high);
    EXPECT_EQ(kpl::get<2>(pack).index, argmin);
    EXPECT_EQ(kpl::get<2>(pack).value, low);
    EXPECT_EQ(kpl::get<3>(pack).index, argmax);
    EXPECT_EQ(kpl::get<3>(pack).value, high);
    EXPECT_EQ(kpl::get<4>(pack), high);
  };
  for (const int teams : {2, 7, 64, 1000}) {
    SCOPED_TRACE("teams " + std::to_string(teams) + ", team size " + std::to_string(team_size));
    for (const auto combine : {kpl::cross_team::automatic, kpl::cross_team::second_pass}) {
      check(kpl::reduce(space, x, ops, {combine, teams, team_size}));
    }
    Kokkos::View<Pack, MemorySpace> result("result");
    kpl::reduce(space, x, ops, result, {kpl::cross_team::second_pass, teams, team_size});
    check(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, result)());
  }
}

// Every operation with teams of team_size threads and several teams, by
// atomics and by a second pass.
template <class ExecutionSpace>
void check_chosen_team_size(int team_size) {
  const ExecutionSpace space;
  for (const std::int64_t length : {std::int64_t(1), std::int64_t(33), std::int64_t(5000)}) {
    const auto values = random_values<std::int64_t>(length, 77 + length);
    const auto x = to_device<ExecutionSpace>(values);
    std::int64_t sum = 0, high = values[0];
    for (const auto v : values) sum += v, high = std::max(high, v);
    for (const int teams : {1, 3, 16}) {
      SCOPED_TRACE("length " + std::to_string(length) + ", teams " + std::to_string(teams));
      for (const auto combine : {kpl::cross_team::atomics, kpl::cross_team::second_pass}) {
        EXPECT_EQ(kpl::reduce(space, x, kpl::Sum<std::int64_t>{}, {combine, teams, team_size}),
                  sum);
        EXPECT_EQ(kpl::reduce(space, x, kpl::Max<std::int64_t>{}, {combine, teams, team_size}),
                  high);
      }
    }
  }
}

}  // namespace

KPL_EXECUTION_SPACE_SUITE(Reduce);

KPL_EXECUTION_SPACE_TEST(Reduce, SeveralOperationsCombinedAcrossTeams) {
  check_several_operations_across_teams<TypeParam>(0);
}

// Teams of two threads on the host (OpenMP with at least 2 threads): the
// team level of the tree with more than one thread.
TEST(ReduceOnTheHost, TeamsOfTwoThreads) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  if (Host().concurrency() < 2) GTEST_SKIP() << "the host space runs one thread";
  check_several_operations_across_teams<Host>(2);
  check_chosen_team_size<Host>(2);
}

KPL_EXECUTION_SPACE_TEST(Reduce, EveryOperationAndTypeCombiningTeamsAutomatically) {
  check_all_types<TypeParam>(kpl::cross_team::automatic);
}
KPL_EXECUTION_SPACE_TEST(Reduce, EveryOperationAndTypeCombiningTeamsInASecondPass) {
  check_all_types<TypeParam>(kpl::cross_team::second_pass);
}
KPL_EXECUTION_SPACE_TEST(Reduce, AtomicOperationsCombiningTeamsByAtomics) {
  check_all_types<TypeParam>(kpl::cross_team::atomics);
}
KPL_EXECUTION_SPACE_TEST(Reduce, DeviceResultStridedInputAndTeamCounts) {
  check_device_result_and_strided_input<TypeParam>();
}
KPL_EXECUTION_SPACE_TEST(Reduce, FloatSumOfTwoToThe28IsAccurate) {
  check_float_sum_of_two_to_the_28<TypeParam>();
}
KPL_EXECUTION_SPACE_TEST(Reduce, ExactSumsPastTwoToThe24OnEveryPath) {
  check_exact_sums_past_two_to_the_24<TypeParam>();
}
KPL_EXECUTION_SPACE_TEST(Reduce, TeamBuildingBlocks) { check_team_building_blocks<TypeParam>(); }

TEST(ReduceOptions, AtomicsAreRefusedForOperationsWithoutThem) {
  Kokkos::View<double*, Kokkos::HostSpace> values("values", 10);
  EXPECT_THROW(kpl::reduce(Kokkos::DefaultHostExecutionSpace{}, values, kpl::MinMax<double>{},
                           {kpl::cross_team::atomics, 0}),
               std::invalid_argument);
}

// ---------------------------------------------------- rows and columns

namespace {

// A rows x columns matrix of random_values and its host mirror.
template <class Matrix>
std::pair<Matrix, typename Matrix::HostMirror> random_matrix(std::int64_t rows,
                                                             std::int64_t columns,
                                                             std::uint64_t seed) {
  const auto values = random_values<typename Matrix::value_type>(rows * columns, seed);
  Matrix matrix("matrix", rows, columns);
  auto host_matrix = Kokkos::create_mirror_view(matrix);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < columns; ++j) host_matrix(i, j) = values[i * columns + j];
  Kokkos::deep_copy(matrix, host_matrix);
  return {matrix, host_matrix};
}

// Reference: the same operation applied in order on the host to each of
// `outputs` runs of `reduced` elements (element(o, k)); sums in double,
// compared within 1e-12 of the sum of magnitudes, other operations exactly.
template <class T, class Op, class Result, class Element>
void expect_reduced(const Op& op, const Result& result, std::int64_t outputs, std::int64_t reduced,
                    const Element& element, const std::string& what) {
  for (std::int64_t o = 0; o < outputs; ++o) {
    double sum = 0, scale = 0;
    typename Op::value_type folded = op.identity();
    for (std::int64_t k = 0; k < reduced; ++k) {
      sum += double(element(o, k));
      scale += std::abs(double(element(o, k)));
      op.combine(folded, op.lift(element(o, k), k));
    }
    if constexpr (std::is_same_v<Op, kpl::Sum<T>>) {
      EXPECT_LE(std::abs(double(result(o)) - sum), 1e-12 * scale) << what << " " << o;
    } else if constexpr (std::is_same_v<Op, kpl::MinMax<T>>) {
      EXPECT_EQ(result(o).min, folded.min) << what << " " << o;
      EXPECT_EQ(result(o).max, folded.max) << what << " " << o;
    } else {
      EXPECT_EQ(result(o), folded) << what << " " << o;
    }
  }
}

template <class ExecutionSpace, class Layout, class T, class Op>
void check_rows_and_columns(std::int64_t rows, std::int64_t columns, const Op& op) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  using value_type = typename Op::value_type;
  const ExecutionSpace space;
  // Not a structured binding: lambdas below capture host_matrix (C++20).
  const auto made =
      random_matrix<Kokkos::View<T**, Layout, MemorySpace>>(rows, columns, 31 * rows + columns);
  const auto& matrix = made.first;
  const auto& host_matrix = made.second;

  Kokkos::View<value_type*, MemorySpace> row_result("rows", rows);
  Kokkos::View<value_type*, MemorySpace> column_result("columns", columns);
  kpl::reduce_rows(space, matrix, op, row_result);
  kpl::reduce_columns(space, matrix, op, column_result);
  const auto row_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, row_result);
  const auto column_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, column_result);

  expect_reduced<T>(
      op, row_host, rows, columns,
      [&](std::int64_t i, std::int64_t j) { return host_matrix(i, j); }, "row");
  expect_reduced<T>(
      op, column_host, columns, rows,
      [&](std::int64_t j, std::int64_t i) { return host_matrix(i, j); }, "column");
}

template <class ExecutionSpace, class Layout>
void check_matrix_shapes() {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {0, 0},
      {0, 5},
      {5, 0},
      {1, 1},
      {17, 33},
      {33, 17},
      {1000, 31},
      {31, 1000},
      {3, 100003},
      {100003, 3},
      {513, 4097},
      // Multiples of 4 (16-byte packs of float and int32, 2 of double on GPUs).
      {64, 96},
      {1000, 32},
      {32, 1000},
      {6, 4100},
      // Few outputs of many elements: the reduced dimension in segments where
      // it runs contiguously (two on two CPU threads, many on a GPU).
      {1, 100003},
      {100003, 1},
      {2, 65536},
      {65536, 2}};
  for (const auto& [rows, columns] : shapes) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(columns));
    check_rows_and_columns<ExecutionSpace, Layout, double>(rows, columns, kpl::Sum<double>{});
    check_rows_and_columns<ExecutionSpace, Layout, float>(rows, columns, kpl::Max<float>{});
    check_rows_and_columns<ExecutionSpace, Layout, std::int32_t>(rows, columns,
                                                                 kpl::Min<std::int32_t>{});
    // No atomic form on GPUs (16-byte values): the strided kernel's segments
    // combined by a second kernel, as the GAM's covariate ranges are.
    check_rows_and_columns<ExecutionSpace, Layout, double>(rows, columns, kpl::MinMax<double>{});
  }
}

// The contiguous kernel with its reduced dimension cut into a given number
// of segments (the automatic choice cuts only where the outputs are too few
// to fill the device, which two CPU threads never are): the columns of a
// column-major matrix, against the operation applied in order on the host.
template <class ExecutionSpace, class T, class Op>
void check_columns_in_segments(std::int64_t rows, std::int64_t columns, const Op& op) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft, MemorySpace>;
  using value_type = typename Op::value_type;
  const auto made = random_matrix<Matrix>(rows, columns, 7 * rows + columns);
  const auto& matrix = made.first;
  const auto& host_matrix = made.second;
  for (std::int64_t segments : {1, 2, 3, 7, 64}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(columns) + ", " +
                 std::to_string(segments) + " segments");
    Kokkos::View<value_type*, MemorySpace> result("columns", columns);
    kpl::impl::reduce_along_contiguous_in_segments<true>(
        ExecutionSpace(), kpl::impl::Oriented<Matrix, true>{matrix}, op, result, segments);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, result);
    expect_reduced<T>(
        op, host, columns, rows, [&](std::int64_t j, std::int64_t i) { return host_matrix(i, j); },
        "column");
  }
}

}  // namespace

KPL_EXECUTION_SPACE_TEST(Reduce, ColumnsInSegmentsOfTheContiguousDimension) {
  for (const auto& [rows, columns] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {100003, 3}, {4096, 2}, {1000, 1}, {64, 5}}) {
    check_columns_in_segments<TypeParam, double>(rows, columns, kpl::Sum<double>{});
    check_columns_in_segments<TypeParam, float>(rows, columns, kpl::Max<float>{});
    check_columns_in_segments<TypeParam, std::int32_t>(rows, columns, kpl::Min<std::int32_t>{});
  }
}

KPL_EXECUTION_SPACE_TEST(Reduce, RowsAndColumnsOfRowMajorMatrices) {
  check_matrix_shapes<TypeParam, Kokkos::LayoutRight>();
}
KPL_EXECUTION_SPACE_TEST(Reduce, RowsAndColumnsOfColumnMajorMatrices) {
  check_matrix_shapes<TypeParam, Kokkos::LayoutLeft>();
}

TEST(ReduceMatrix, RejectsAnOutputOfTheWrongLength) {
  Kokkos::View<double**, Kokkos::HostSpace> matrix("matrix", 4, 3);
  Kokkos::View<double*, Kokkos::HostSpace> output("output", 3);
  try {
    kpl::reduce_rows(Kokkos::DefaultHostExecutionSpace{}, matrix, kpl::Sum<double>{}, output);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("4 rows"), std::string::npos) << error.what();
  }
}
