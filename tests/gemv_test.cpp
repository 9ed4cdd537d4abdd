// kpl::gemv and kpl::gemv_batched on every backend against a host reference
// in double: every strategy x op x layout x precision, the shapes
// (0x0, 1x1, 1xN, Mx1, 17x33, 1000x16, 1e5x64, 513x4097), alpha/beta
// combinations (beta = 0 with NaN in y), overridden team shapes, teams of
// two threads on CPUs, misaligned and strided Views, batches, and the errors.
#include "execution_space_test.hpp"

#include <kpl/gemv.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using kpl::GemvOptions;
using kpl::GemvStrategy;
using kpl::Transpose;

struct Shape {
  std::int64_t rows;
  std::int64_t columns;
};

const std::vector<Shape> shapes = {{0, 0},     {1, 1},       {1, 300},    {300, 1}, {17, 33},
                                   {1000, 16}, {100000, 64}, {513, 4097}, {0, 5},   {5, 0}};

const std::vector<GemvStrategy> strategies = {
    GemvStrategy::automatic, GemvStrategy::thread_per_row, GemvStrategy::team_per_dot,
    GemvStrategy::partial_rows, GemvStrategy::kokkos_kernels};

enum class Layout { left, right, strided, misaligned };

std::string name(Layout layout) {
  switch (layout) {
    case Layout::left:
      return "LayoutLeft";
    case Layout::right:
      return "LayoutRight";
    case Layout::strided:
      return "LayoutStride";
    case Layout::misaligned:
      return "LayoutLeft subview from (1, 1)";
  }
  return "?";
}

// Uniform in [-1, 1) from a fixed seed (splitmix64: the big shapes need
// millions of values per case, which std::mt19937 makes the slowest part).
template <class T>
std::vector<T> uniform(std::int64_t count, std::uint64_t seed) {
  std::vector<T> values(static_cast<std::size_t>(count));
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& value : values) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    value = T(double(z >> 11) * 0x1.0p-52 - 1.0);
  }
  return values;
}

template <class T>
double tolerance() {
  return std::is_same_v<T, double> ? 1e-12 : 1e-5;
}

// A dense host copy of a matrix and of x, y: what the reference reads.
struct HostProblem {
  std::int64_t rows, columns;
  std::vector<double> matrix;  // row-major
  std::vector<double> x, y;
};

// For every output: y_ref = alpha op(A) x + beta y (beta = 0: y ignored) and
// the error bound tol * (|alpha| |row| |x| + |beta y|) (Cauchy-Schwarz scale).
template <class YHost>
void expect_matches(const HostProblem& host, Transpose transpose, double alpha, double beta,
                    const YHost& result, double tol) {
  const bool normal = transpose == Transpose::no;
  const std::int64_t outputs = normal ? host.rows : host.columns;
  ASSERT_EQ(static_cast<std::int64_t>(result.extent(0)), outputs);
  double x_norm = 0;
  for (double v : host.x) x_norm += v * v;
  x_norm = std::sqrt(x_norm);
  // Row-major storage: accumulate op N row by row and op T column-wise
  // (row by row of A), so both walk memory in order.
  std::vector<double> dots(std::size_t(outputs), 0.0), squares(std::size_t(outputs), 0.0);
  for (std::int64_t i = 0; i < host.rows; ++i) {
    const double* row = host.matrix.data() + i * host.columns;
    for (std::int64_t j = 0; j < host.columns; ++j) {
      const std::int64_t output = normal ? i : j;
      const double x_term = host.x[normal ? j : i];
      dots[output] += row[j] * x_term;
      squares[output] += row[j] * row[j];
    }
  }
  int failures = 0;
  for (std::int64_t r = 0; r < outputs; ++r) {
    const double expected = alpha * dots[r] + (beta == 0 ? 0.0 : beta * host.y[r]);
    const double scale =
        std::abs(alpha) * std::sqrt(squares[r]) * x_norm + std::abs(beta * host.y[r]) + 1e-300;
    const double got = double(result(r));
    if (!(std::abs(got - expected) <= tol * scale) && failures++ < 5) {
      ADD_FAILURE() << "y(" << r << ") = " << got << ", expected " << expected << " (bound "
                    << tol * scale << ")";
    }
  }
  EXPECT_EQ(failures, 0);
}

// Builds A (rows x columns) in the given layout, x and y (strided for
// Layout::strided), runs kpl::gemv, and checks against the host reference.
template <class ExecutionSpace, class T, class ALayout, class VectorLayout>
void run_case(Layout layout, Shape shape, Transpose transpose, double alpha, double beta,
              const GemvOptions& options, std::uint64_t seed) {
  using Memory = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  const std::int64_t rows = shape.rows, columns = shape.columns;
  const bool normal = transpose == Transpose::no;
  const std::int64_t x_length = normal ? columns : rows;
  const std::int64_t y_length = normal ? rows : columns;

  HostProblem host{rows, columns, {}, {}, {}};
  const auto a_values = uniform<T>(rows * columns, seed);
  host.matrix.assign(a_values.begin(), a_values.end());
  const auto x_values = uniform<T>(x_length, seed + 1);
  host.x.assign(x_values.begin(), x_values.end());
  const auto y_values = uniform<T>(y_length, seed + 2);
  host.y.assign(y_values.begin(), y_values.end());

  // Storage with room for strides and offsets, then the Views into it.
  std::size_t a_strides[2];
  std::size_t a_offset = 0;
  switch (layout) {
    case Layout::left:
      a_strides[0] = 1;
      a_strides[1] = std::size_t(rows);
      break;
    case Layout::right:
      a_strides[0] = std::size_t(columns);
      a_strides[1] = 1;
      break;
    case Layout::strided:  // neither dimension contiguous
      a_strides[0] = 2;
      a_strides[1] = std::size_t(2 * rows + 1);
      break;
    case Layout::misaligned:  // a LayoutLeft block that starts one element in
      a_strides[0] = 1;
      a_strides[1] = std::size_t(rows + 1);
      a_offset = 1;
      break;
  }
  const std::size_t a_span = a_offset + 1 + (rows > 0 ? std::size_t(rows - 1) * a_strides[0] : 0) +
                             (columns > 0 ? std::size_t(columns - 1) * a_strides[1] : 0);
  const std::int64_t pad = layout == Layout::strided ? 2 : 1;
  Kokkos::View<T*, Memory> a_storage(Kokkos::view_alloc(Kokkos::WithoutInitializing, "A storage"),
                                     a_span);
  Kokkos::View<T*, Memory> x_storage("x storage", std::size_t(x_length * pad + 1));
  Kokkos::View<T*, Memory> y_storage("y storage", std::size_t(y_length * pad + 1));
  T* a_data = a_storage.data() + a_offset;
  Kokkos::View<T**, Kokkos::LayoutStride, Memory> A(
      a_data,
      Kokkos::LayoutStride(std::size_t(rows), a_strides[0], std::size_t(columns), a_strides[1]));
  const std::size_t vector_stride = layout == Layout::strided ? 2 : 1;
  const std::size_t offset = layout == Layout::misaligned ? 1 : 0;
  Kokkos::View<T*, Kokkos::LayoutStride, Memory> x(
      x_storage.data() + offset, Kokkos::LayoutStride(std::size_t(x_length), vector_stride));
  Kokkos::View<T*, Kokkos::LayoutStride, Memory> y(
      y_storage.data() + offset, Kokkos::LayoutStride(std::size_t(y_length), vector_stride));

  // The same strided Views over host copies of the storage: elements are set
  // there and the storage copied whole (a non-contiguous View cannot be
  // deep-copied between memory spaces).
  auto a_storage_host = Kokkos::create_mirror_view(a_storage);
  auto x_storage_host = Kokkos::create_mirror_view(x_storage);
  auto y_storage_host = Kokkos::create_mirror_view(y_storage);
  Kokkos::View<T**, Kokkos::LayoutStride, Kokkos::HostSpace> A_host(
      a_storage_host.data() + a_offset, A.layout());
  Kokkos::View<T*, Kokkos::LayoutStride, Kokkos::HostSpace> x_host(x_storage_host.data() + offset,
                                                                   x.layout());
  Kokkos::View<T*, Kokkos::LayoutStride, Kokkos::HostSpace> y_host(y_storage_host.data() + offset,
                                                                   y.layout());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < columns; ++j) A_host(i, j) = a_values[i * columns + j];
  for (std::int64_t i = 0; i < x_length; ++i) x_host(i) = x_values[i];
  for (std::int64_t i = 0; i < y_length; ++i)
    y_host(i) = beta == 0 ? std::numeric_limits<T>::quiet_NaN() : y_values[i];
  Kokkos::deep_copy(a_storage, a_storage_host);
  Kokkos::deep_copy(x_storage, x_storage_host);
  Kokkos::deep_copy(y_storage, y_storage_host);

  // The View types users hold: LayoutLeft / LayoutRight Views where the
  // layout allows, LayoutStride otherwise.
  if constexpr (std::is_same_v<ALayout, Kokkos::LayoutStride>) {
    kpl::gemv(space, transpose, T(alpha), A, x, T(beta), y, options);
  } else {
    Kokkos::View<T**, ALayout, Memory, Kokkos::MemoryUnmanaged> A_typed(A.data(), rows, columns);
    Kokkos::View<T*, VectorLayout, Memory, Kokkos::MemoryUnmanaged> x_typed(x.data(), x_length);
    Kokkos::View<T*, VectorLayout, Memory, Kokkos::MemoryUnmanaged> y_typed(y.data(), y_length);
    kpl::gemv(space, transpose, T(alpha), A_typed, x_typed, T(beta), y_typed, options);
  }
  space.fence();
  Kokkos::deep_copy(y_storage_host, y_storage);
  expect_matches(host, transpose, alpha, beta, y_host, tolerance<T>());
}

template <class ExecutionSpace, class T>
void check_strategy(GemvStrategy strategy) {
  const GemvOptions options{strategy, 0, 0};
  std::uint64_t seed = 100;
  for (Layout layout : {Layout::left, Layout::right, Layout::strided, Layout::misaligned}) {
    for (Transpose transpose : {Transpose::no, Transpose::yes}) {
      for (const Shape& shape : shapes) {
        SCOPED_TRACE(name(layout) + (transpose == Transpose::no ? " op N " : " op T ") +
                     std::to_string(shape.rows) + "x" + std::to_string(shape.columns));
        auto run = [&](double alpha, double beta) {
          SCOPED_TRACE("alpha " + std::to_string(alpha) + " beta " + std::to_string(beta));
          switch (layout) {
            case Layout::left:
              run_case<ExecutionSpace, T, Kokkos::LayoutLeft, Kokkos::LayoutLeft>(
                  layout, shape, transpose, alpha, beta, options, seed++);
              break;
            case Layout::right:
              run_case<ExecutionSpace, T, Kokkos::LayoutRight, Kokkos::LayoutRight>(
                  layout, shape, transpose, alpha, beta, options, seed++);
              break;
            default:
              run_case<ExecutionSpace, T, Kokkos::LayoutStride, Kokkos::LayoutStride>(
                  layout, shape, transpose, alpha, beta, options, seed++);
          }
        };
        run(1.0, 0.0);  // y poisoned with NaN: must not be read
        run(-0.75, 1.5);
        if (shape.rows * shape.columns < 100000) {
          run(0.0, -2.0);  // alpha = 0: y = beta y
          run(2.0, 1.0);
        }
      }
    }
  }
}

KPL_EXECUTION_SPACE_SUITE(Gemv);

KPL_EXECUTION_SPACE_TEST(Gemv, AutomaticDouble) {
  check_strategy<TypeParam, double>(GemvStrategy::automatic);
}
KPL_EXECUTION_SPACE_TEST(Gemv, AutomaticFloat) {
  check_strategy<TypeParam, float>(GemvStrategy::automatic);
}
KPL_EXECUTION_SPACE_TEST(Gemv, ThreadPerRowDouble) {
  check_strategy<TypeParam, double>(GemvStrategy::thread_per_row);
}
KPL_EXECUTION_SPACE_TEST(Gemv, ThreadPerRowFloat) {
  check_strategy<TypeParam, float>(GemvStrategy::thread_per_row);
}
KPL_EXECUTION_SPACE_TEST(Gemv, TeamPerDotDouble) {
  check_strategy<TypeParam, double>(GemvStrategy::team_per_dot);
}
KPL_EXECUTION_SPACE_TEST(Gemv, TeamPerDotFloat) {
  check_strategy<TypeParam, float>(GemvStrategy::team_per_dot);
}
KPL_EXECUTION_SPACE_TEST(Gemv, PartialRowsDouble) {
  check_strategy<TypeParam, double>(GemvStrategy::partial_rows);
}
KPL_EXECUTION_SPACE_TEST(Gemv, PartialRowsFloat) {
  check_strategy<TypeParam, float>(GemvStrategy::partial_rows);
}
KPL_EXECUTION_SPACE_TEST(Gemv, KokkosKernelsDouble) {
  check_strategy<TypeParam, double>(GemvStrategy::kokkos_kernels);
}
KPL_EXECUTION_SPACE_TEST(Gemv, KokkosKernelsFloat) {
  check_strategy<TypeParam, float>(GemvStrategy::kokkos_kernels);
}

// What automatic runs (impl/gemv_dispatch.hpp, impl::automatic_strategy): partial_rows
// on CPUs; on GPUs team_per_dot for outputs-contiguous products with few
// outputs (one per 128 resident threads) and >= 16 terms, or at most four
// elements per resident thread and >= 64 terms; thread_per_row for dot
// products of <= 64 terms when partial_rows' pack threads would fill at most
// an eighth of the device; partial_rows otherwise.
template <class ExecutionSpace>
void check_automatic_choice() {
  const ExecutionSpace space;
  // Column-major [rows, columns] with op N (outputs contiguous) or op T
  // (reduction contiguous).
  auto choice = [&](std::int64_t rows, std::int64_t columns, Transpose transpose) {
    const bool normal = transpose == Transpose::no;
    const kpl::impl::GemvProblem<double> problem{nullptr,
                                                   nullptr,
                                                   nullptr,
                                                   1,
                                                   normal ? rows : columns,
                                                   normal ? columns : rows,
                                                   0,
                                                   normal ? 1 : rows,
                                                   normal ? rows : 1,
                                                   1,
                                                   0,
                                                   1,
                                                   1.0,
                                                   0.0};
    return kpl::impl::automatic_strategy(space, problem);
  };
  const bool gpu = !kpl::impl::runs_on_host_v<ExecutionSpace>;
  const auto lanes_win = gpu ? GemvStrategy::team_per_dot : GemvStrategy::partial_rows;
  const std::int64_t resident = space.concurrency();
  const std::int64_t few = std::max<std::int64_t>(resident / 128, 1);
  const auto threads_win = gpu ? GemvStrategy::thread_per_row : GemvStrategy::partial_rows;
  EXPECT_EQ(choice(few, 16, Transpose::no), lanes_win);
  EXPECT_EQ(choice(few, 8, Transpose::no), threads_win);
  EXPECT_EQ(choice(4 * few, 16, Transpose::no), threads_win);
  EXPECT_EQ(choice(resident / 8, 65, Transpose::no), GemvStrategy::partial_rows);
  EXPECT_EQ(choice(resident / 16, 64, Transpose::no), lanes_win);
  EXPECT_EQ(choice(resident, 64, Transpose::no), GemvStrategy::partial_rows);
  EXPECT_EQ(choice(resident, 16, Transpose::no), GemvStrategy::partial_rows);
  EXPECT_EQ(choice(few, 64, Transpose::yes), GemvStrategy::partial_rows);
  EXPECT_EQ(choice(resident, 16, Transpose::yes), GemvStrategy::partial_rows);
}

KPL_EXECUTION_SPACE_TEST(Gemv, AutomaticChoice) { check_automatic_choice<TypeParam>(); }

// P and M' given by the caller, including values that are not powers of two
// or exceed the work (rounded or clamped, never wrong).
template <class ExecutionSpace>
void check_overrides() {
  std::uint64_t seed = 7000;
  for (GemvStrategy strategy : {GemvStrategy::team_per_dot, GemvStrategy::partial_rows}) {
    for (int threads_per_dot : {1, 3, 7, 64, 100000}) {
      for (int rows_per_team : {1, 3, 16, 40}) {
        for (Transpose transpose : {Transpose::no, Transpose::yes}) {
          for (Layout layout : {Layout::left, Layout::right}) {
            SCOPED_TRACE(std::string(kpl::to_string(strategy)) + " P " +
                         std::to_string(threads_per_dot) + " M' " + std::to_string(rows_per_team) +
                         " " + name(layout) + (transpose == Transpose::no ? " N" : " T"));
            const GemvOptions options{strategy, threads_per_dot, rows_per_team};
            if (layout == Layout::left) {
              run_case<ExecutionSpace, double, Kokkos::LayoutLeft, Kokkos::LayoutLeft>(
                  layout, {1000, 37}, transpose, 1.0, 0.5, options, seed++);
            } else {
              run_case<ExecutionSpace, float, Kokkos::LayoutRight, Kokkos::LayoutRight>(
                  layout, {37, 1003}, transpose, 1.0, 0.0, options, seed++);
            }
          }
        }
      }
    }
  }
}

KPL_EXECUTION_SPACE_TEST(Gemv, OverriddenTeamShapes) { check_overrides<TypeParam>(); }

// The team code paths with teams of two threads, which CPUs otherwise never
// take (team_per_dot and partial_rows' row-block kernel default to one
// thread a team there): on OpenMP with two or more threads the teams are 2
// (Serial allows 1). Data where the dot products run along memory (the
// row-block kernel's), blocks of outputs cut short, terms after the last
// pack, and one or several segments (several: the last team of a block adds
// the partial sums).
template <class ExecutionSpace>
void check_teams_of_two() {
  std::uint64_t seed = 9500;
  const std::vector<GemvOptions> team_options = {
      {GemvStrategy::team_per_dot, 0, 2, 0},  {GemvStrategy::team_per_dot, 4, 2, 0},
      {GemvStrategy::partial_rows, 0, 0, 2},  {GemvStrategy::partial_rows, 1, 0, 2},
      {GemvStrategy::partial_rows, 3, 4, 2},  {GemvStrategy::partial_rows, 16, 16, 2},
      {GemvStrategy::partial_rows, 1, 2, 2}};
  for (const GemvOptions& options : team_options) {
    for (Transpose transpose : {Transpose::no, Transpose::yes}) {
      SCOPED_TRACE(std::string(kpl::to_string(options.strategy)) + " P " +
                   std::to_string(options.threads_per_dot) + " M' " +
                   std::to_string(options.rows_per_team) + " team " +
                   std::to_string(options.team_size) + (transpose == Transpose::no ? " N" : " T"));
      const Shape tall = transpose == Transpose::no ? Shape{37, 1003} : Shape{1003, 37};
      const Shape wide = transpose == Transpose::no ? Shape{5, 4099} : Shape{4099, 5};
      for (const Shape& shape : {tall, wide}) {
        // Dot products along memory: LayoutRight for op N, LayoutLeft for op T.
        if (transpose == Transpose::no) {
          run_case<ExecutionSpace, double, Kokkos::LayoutRight, Kokkos::LayoutRight>(
              Layout::right, shape, transpose, 1.0, 0.5, options, seed++);
          run_case<ExecutionSpace, float, Kokkos::LayoutRight, Kokkos::LayoutRight>(
              Layout::right, shape, transpose, -0.75, 0.0, options, seed++);
        } else {
          run_case<ExecutionSpace, double, Kokkos::LayoutLeft, Kokkos::LayoutLeft>(
              Layout::left, shape, transpose, 1.0, 0.5, options, seed++);
          run_case<ExecutionSpace, float, Kokkos::LayoutLeft, Kokkos::LayoutLeft>(
              Layout::left, shape, transpose, -0.75, 0.0, options, seed++);
        }
      }
      // Strided data: team_per_dot's element-wise lanes.
      run_case<ExecutionSpace, double, Kokkos::LayoutStride, Kokkos::LayoutStride>(
          Layout::strided, {300, 41}, transpose, 1.0, 0.5, options, seed++);
    }
  }
}

KPL_EXECUTION_SPACE_TEST(Gemv, TeamsOfTwo) { check_teams_of_two<TypeParam>(); }

// One workspace across many calls of different shapes and segment counts:
// the partial-rows kernels' partial sums and arrival counters must be left
// ready for the next call (a counter not reset shows as a wrong y).
template <class ExecutionSpace>
void check_workspace_reuse() {
  using Memory = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  kpl::GemvWorkspace<ExecutionSpace, double> workspace;
  std::uint64_t seed = 8000;
  for (int round = 0; round < 3; ++round) {
    for (const Shape& shape : std::vector<Shape>{{4096, 16}, {1000, 37}, {20000, 3}, {513, 4097}}) {
      for (int segments : {0, 5, 64}) {
        SCOPED_TRACE("round " + std::to_string(round) + " " + std::to_string(shape.rows) + "x" +
                     std::to_string(shape.columns) + " P " + std::to_string(segments));
        const auto a_values = uniform<double>(shape.rows * shape.columns, seed++);
        const auto x_values = uniform<double>(shape.rows, seed++);
        Kokkos::View<double**, Kokkos::LayoutLeft, Memory> A("A", shape.rows, shape.columns);
        Kokkos::View<double*, Memory> x("x", shape.rows), y("y", shape.columns);
        auto A_host = Kokkos::create_mirror_view(A);
        auto x_host = Kokkos::create_mirror_view(x);
        for (std::int64_t i = 0; i < shape.rows; ++i) {
          x_host(i) = x_values[i];
          for (std::int64_t j = 0; j < shape.columns; ++j)
            A_host(i, j) = a_values[i * shape.columns + j];
        }
        Kokkos::deep_copy(A, A_host);
        Kokkos::deep_copy(x, x_host);
        kpl::gemv(space, Transpose::yes, 1.0, A, x, 0.0, y, workspace,
                  GemvOptions{GemvStrategy::partial_rows, segments, 0});
        space.fence();
        auto result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
        HostProblem host{shape.rows,
                         shape.columns,
                         {a_values.begin(), a_values.end()},
                         {x_values.begin(), x_values.end()},
                         std::vector<double>(shape.columns)};
        expect_matches(host, Transpose::yes, 1.0, 0.0, result, tolerance<double>());
      }
    }
  }
}

KPL_EXECUTION_SPACE_TEST(Gemv, WorkspaceReuse) { check_workspace_reuse<TypeParam>(); }

// gemv_batched: [batch, m, n] in three layouts (the last being a stacked
// column-major matrix [m, batch * n] seen as a batch), each block checked
// against the reference.
template <class ExecutionSpace, class T>
void check_batched(GemvStrategy strategy) {
  using Memory = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  std::uint64_t seed = 9000;
  struct BatchShape {
    std::int64_t batch, rows, columns;
  };
  for (const BatchShape& s : std::vector<BatchShape>{
           {0, 4, 4}, {1, 1, 1}, {3, 1000, 16}, {7, 33, 17}, {20, 5, 64}, {4, 0, 3}}) {
    for (int layout = 0; layout < 3; ++layout) {
      for (Transpose transpose : {Transpose::no, Transpose::yes}) {
        SCOPED_TRACE("batch " + std::to_string(s.batch) + " of " + std::to_string(s.rows) + "x" +
                     std::to_string(s.columns) + " layout " + std::to_string(layout) +
                     (transpose == Transpose::no ? " N" : " T"));
        const bool normal = transpose == Transpose::no;
        const std::int64_t x_length = normal ? s.columns : s.rows;
        const std::int64_t y_length = normal ? s.rows : s.columns;
        Kokkos::View<T*, Memory> storage("A", std::size_t(s.batch * s.rows * s.columns));
        Kokkos::LayoutStride strides;
        if (layout == 0) {  // LayoutRight [batch][m][n]
          strides =
              Kokkos::LayoutStride(s.batch, s.rows * s.columns, s.rows, s.columns, s.columns, 1);
        } else if (layout == 1) {  // LayoutLeft [batch, m, n]
          strides = Kokkos::LayoutStride(s.batch, 1, s.rows, s.batch, s.columns, s.batch * s.rows);
        } else {  // stacked column-major blocks
          strides = Kokkos::LayoutStride(s.batch, s.rows * s.columns, s.rows, 1, s.columns, s.rows);
        }
        Kokkos::View<T***, Kokkos::LayoutStride, Memory> A(storage.data(), strides);
        Kokkos::View<T*, Memory> x("x", std::size_t(x_length));
        Kokkos::View<T**, Memory> Y("Y", std::size_t(s.batch), std::size_t(y_length));
        const auto a_values = uniform<T>(s.batch * s.rows * s.columns, seed++);
        const auto x_values = uniform<T>(x_length, seed++);
        const auto y_values = uniform<T>(s.batch * y_length, seed++);
        auto A_host = Kokkos::create_mirror_view(A);
        auto x_host = Kokkos::create_mirror_view(x);
        auto Y_host = Kokkos::create_mirror_view(Y);
        for (std::int64_t b = 0; b < s.batch; ++b)
          for (std::int64_t i = 0; i < s.rows; ++i)
            for (std::int64_t j = 0; j < s.columns; ++j)
              A_host(b, i, j) = a_values[(b * s.rows + i) * s.columns + j];
        for (std::int64_t i = 0; i < x_length; ++i) x_host(i) = x_values[i];
        for (std::int64_t b = 0; b < s.batch; ++b)
          for (std::int64_t i = 0; i < y_length; ++i) Y_host(b, i) = y_values[b * y_length + i];
        Kokkos::deep_copy(A, A_host);
        Kokkos::deep_copy(x, x_host);
        Kokkos::deep_copy(Y, Y_host);
        const double alpha = 1.25, beta = -0.5;
        kpl::gemv_batched(space, transpose, T(alpha), A, x, T(beta), Y,
                          GemvOptions{strategy, 0, 0});
        space.fence();
        auto result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Y);
        for (std::int64_t b = 0; b < s.batch; ++b) {
          HostProblem host{s.rows, s.columns, {}, {}, {}};
          host.matrix.assign(a_values.begin() + b * s.rows * s.columns,
                             a_values.begin() + (b + 1) * s.rows * s.columns);
          host.x.assign(x_values.begin(), x_values.end());
          host.y.assign(y_values.begin() + b * y_length, y_values.begin() + (b + 1) * y_length);
          expect_matches(host, transpose, alpha, beta, Kokkos::subview(result, b, Kokkos::ALL),
                         tolerance<T>());
        }
      }
    }
  }
}

KPL_EXECUTION_SPACE_TEST(Gemv, BatchedDouble) {
  for (GemvStrategy strategy : strategies) check_batched<TypeParam, double>(strategy);
}
KPL_EXECUTION_SPACE_TEST(Gemv, BatchedFloat) {
  for (GemvStrategy strategy : strategies) check_batched<TypeParam, float>(strategy);
}

template <class ExecutionSpace>
void check_errors() {
  using Memory = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  Kokkos::View<double**, Memory> A("A", 4, 3);
  Kokkos::View<double*, Memory> three("x", 3), four("y", 4);
  EXPECT_NO_THROW(kpl::gemv(space, Transpose::no, 1.0, A, three, 0.0, four));
  EXPECT_NO_THROW(kpl::gemv(space, Transpose::yes, 1.0, A, four, 0.0, three));
  EXPECT_THROW(kpl::gemv(space, Transpose::yes, 1.0, A, three, 0.0, four), std::invalid_argument);
  EXPECT_THROW(kpl::gemv(space, Transpose::no, 1.0, A, three, 0.0, three), std::invalid_argument);
  Kokkos::View<double***, Memory> batch("A", 2, 4, 3);
  Kokkos::View<double**, Memory> Y("Y", 3, 4);
  EXPECT_THROW(kpl::gemv_batched(space, Transpose::no, 1.0, batch, three, 0.0, Y),
               std::invalid_argument);
  EXPECT_EQ(kpl::gemv_strategy_from_string("team-per-dot"), GemvStrategy::team_per_dot);
  for (GemvStrategy strategy : strategies) {
    EXPECT_EQ(kpl::gemv_strategy_from_string(kpl::to_string(strategy)), strategy);
  }
  EXPECT_THROW(kpl::gemv_strategy_from_string("fastest"), std::invalid_argument);
}

KPL_EXECUTION_SPACE_TEST(Gemv, Errors) { check_errors<TypeParam>(); }

}  // namespace
