// The boosted GAM on every backend: the B-spline basis against the textbook
// Cox-de Boor recursion, the compact-basis products against dense host
// products, lambda(df) round trips, R mboost's fits (tests/data/gam: the same
// covariate at every iteration, predictions within 1e-6) in the direct,
// dense and Gram modes and in float, the Binomial and Poisson families
// against a plain host implementation of Algorithm 2, cross-validation, the
// simulation's informative covariates, and the input errors.
#include "execution_space_test.hpp"

#include <kpl/bspline.hpp>
#include <kpl/compact_basis.hpp>
#include <kpl/error.hpp>
#include <kpl/evaluated_basis.hpp>
#include <kpl/gam.hpp>
#include <kpl/gam_file.hpp>
#include <kpl/gam_penalty.hpp>
#include <kpl/hdf5_io.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using HostMatrix = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;
using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;

// A host View's copy in Space's memory.
template <class Space, class View>
auto on_device(const View& host) {
  return Kokkos::create_mirror_view_and_copy(typename Space::memory_space(), host);
}

// KPL_SOURCE_DIR in the environment finds the data where a build was moved.
const std::string data_directory =
    std::string(std::getenv("KPL_SOURCE_DIR") ? std::getenv("KPL_SOURCE_DIR") : KPL_SOURCE_DIR) +
    "/tests/data/gam/";

// The textbook definition (de Boor 1978): N_{i,0} = 1 on [t_i, t_{i+1}),
// N_{i,d} = (x - t_i)/(t_{i+d} - t_i) N_{i,d-1} + (t_{i+d+1} - x)/(t_{i+d+1} - t_{i+1})
// N_{i+1,d-1}, on mboost's knot mesh; x = upper is taken from the left.
double cox_de_boor(const std::vector<double>& knots, int i, int degree, double x) {
  if (degree == 0) return (knots[i] <= x && x < knots[i + 1]) ? 1.0 : 0.0;
  double value = 0;
  const double left_span = knots[i + degree] - knots[i];
  const double right_span = knots[i + degree + 1] - knots[i + 1];
  if (left_span > 0) value += (x - knots[i]) / left_span * cox_de_boor(knots, i, degree - 1, x);
  if (right_span > 0)
    value += (knots[i + degree + 1] - x) / right_span * cox_de_boor(knots, i + 1, degree - 1, x);
  return value;
}

std::vector<double> reference_row(const kpl::BsplineMesh& mesh, double x) {
  const int k = mesh.basis_size, d = mesh.degree;
  const double h = mesh.spacing();
  std::vector<double> knots(k + d + 1);
  for (int q = 0; q < k + d + 1; ++q) knots[q] = mesh.lower + (q - d) * h;
  // Evaluate inside [lower, upper]; at upper use the left limit; outside,
  // extend linearly with a one-sided difference of the textbook values.
  const auto inside = [&](double at) {
    std::vector<double> row(k);
    const double x_eval = at >= mesh.upper ? std::nextafter(mesh.upper, mesh.lower) : at;
    for (int a = 0; a < k; ++a) row[a] = cox_de_boor(knots, a, d, x_eval);
    return row;
  };
  if (x >= mesh.lower && x <= mesh.upper) return inside(x);
  // The textbook derivative, N'_{a,d} = d / (t_{a+d} - t_a) N_{a,d-1}
  // - d / (t_{a+d+1} - t_{a+1}) N_{a+1,d-1}, at the boundary (from inside).
  const double boundary = x < mesh.lower ? mesh.lower : mesh.upper;
  const double inside_boundary =
      x < mesh.lower ? mesh.lower : std::nextafter(mesh.upper, mesh.lower);
  const auto at_boundary = inside(boundary);
  std::vector<double> row(k);
  for (int a = 0; a < k; ++a) {
    double slope = 0;
    if (d > 0) {
      slope += d / (knots[a + d] - knots[a]) * cox_de_boor(knots, a, d - 1, inside_boundary);
      slope -=
          d / (knots[a + d + 1] - knots[a + 1]) * cox_de_boor(knots, a + 1, d - 1, inside_boundary);
    }
    row[a] = at_boundary[a] + slope * (x - boundary);
  }
  return row;
}

template <class Space>
void check_basis_against_cox_de_boor() {
  Space space;
  std::mt19937_64 generator(11);
  for (int degree : {1, 2, 3, 4}) {
    for (int k : {degree + 2, 9, 24}) {
      const kpl::BsplineMesh mesh{-1.5, 2.25, k, degree};
      std::vector<double> points{mesh.lower, mesh.upper, mesh.lower + mesh.spacing(),
                                 mesh.lower - 0.3, mesh.upper + 0.7};
      std::uniform_real_distribution<double> uniform(mesh.lower, mesh.upper);
      for (int r = 0; r < 60; ++r) points.push_back(uniform(generator));
      const std::int64_t n = points.size();
      Kokkos::View<double**, Kokkos::LayoutLeft, typename Space::memory_space> X("X", n, 1);
      auto host_X = Kokkos::create_mirror_view(X);
      for (std::int64_t i = 0; i < n; ++i) host_X(i, 0) = points[i];
      Kokkos::deep_copy(X, host_X);
      Kokkos::View<kpl::BsplineMesh*, typename Space::memory_space> meshes("meshes", 1);
      auto host_meshes = Kokkos::create_mirror_view(meshes);
      host_meshes(0) = mesh;
      Kokkos::deep_copy(meshes, host_meshes);
      kpl::CompactBasis<double, typename Space::memory_space> basis("basis", 1, n, degree + 1, k);
      kpl::build_bspline_basis(space, X, meshes, basis);
      auto first = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), basis.first);
      auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), basis.values);
      for (std::int64_t i = 0; i < n; ++i) {
        const auto expected = reference_row(mesh, points[i]);
        std::vector<double> got(k, 0.0);
        ASSERT_GE(first(0, i), 0);
        ASSERT_LE(first(0, i) + degree, k - 1);
        for (int q = 0; q <= degree; ++q) got[first(0, i) + q] = values(0, q, i);
        double sum = 0;
        for (int a = 0; a < k; ++a) {
          const double tolerance = 1e-12;
          EXPECT_NEAR(got[a], expected[a], tolerance)
              << "degree " << degree << " k " << k << " x " << points[i] << " function " << a;
          sum += got[a];
        }
        EXPECT_NEAR(sum, 1.0, 1e-13) << "partition of unity at x = " << points[i];
      }
    }
  }
}

KPL_EXECUTION_SPACE_SUITE(Gam);

KPL_EXECUTION_SPACE_TEST(Gam, BsplineBasisMatchesCoxDeBoor) {
  check_basis_against_cox_de_boor<TypeParam>();
}

// Chunk partial sums added by vector lanes (the GPU way for many chunks),
// with teams of up to 2 threads of 2 lanes here, against the host's sums in
// chunk order; the same bits on a second call.
KPL_EXECUTION_SPACE_TEST(Gam, ChunkSumsByLanesMatchTheHostSums) {
  using Memory = typename TypeParam::memory_space;
  TypeParam space;
  const std::int64_t blocks = 3, chunks = 75, entries = 5;
  Kokkos::View<double*, Memory> partials("partials", blocks * chunks * entries);
  auto host_partials = Kokkos::create_mirror_view(partials);
  std::mt19937_64 generator(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (std::size_t i = 0; i < host_partials.size(); ++i) host_partials(i) = uniform(generator);
  Kokkos::deep_copy(partials, host_partials);
  Kokkos::View<double*, Memory> out("out", blocks * entries);
  const auto add = [&] {
    kpl::impl::add_chunks_by_lanes(space, partials, blocks, chunks, entries, out,
                                   std::min(2, space.concurrency()), 2);
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  };
  const auto first = add();
  const auto second = add();
  for (std::int64_t j = 0; j < blocks; ++j)
    for (std::int64_t e = 0; e < entries; ++e) {
      double expected = 0;
      for (std::int64_t c = 0; c < chunks; ++c)
        expected += host_partials((j * chunks + c) * entries + e);
      EXPECT_NEAR(first(j * entries + e), expected, 1e-12) << "block " << j << " entry " << e;
      EXPECT_EQ(second(j * entries + e), first(j * entries + e));
    }
}

// kpl::impl::BsplineRows, the rows of one mesh evaluated in a kernel, against
// bspline_row_of_degree bit for bit (first index and every value): cubic rows
// in range (at the knots, both ends, just inside them), beyond both ends, at
// NaN, on a mesh whose reciprocal spacing overflows, and quadratic rows.
template <class Space>
void check_bspline_rows() {
  using Memory = typename Space::memory_space;
  const kpl::BsplineMesh meshes[] = {
      {-0.3, 1.7, 24, 3}, {0.0, 5e-308, 10, 3}, {2.0, 3.0, 7, 3}, {-1.0, 4.0, 9, 2}};
  for (const kpl::BsplineMesh& mesh : meshes) {
    SCOPED_TRACE("mesh [" + std::to_string(mesh.lower) + ", " + std::to_string(mesh.upper) +
                 "] degree " + std::to_string(mesh.degree));
    const double width = mesh.upper - mesh.lower;
    std::vector<double> host_x{mesh.lower,
                               mesh.upper,
                               std::nextafter(mesh.upper, -1e300),
                               std::nextafter(mesh.lower, 1e300),
                               mesh.lower - 0.25 * width,
                               mesh.upper + 0.5 * width,
                               std::numeric_limits<double>::quiet_NaN()};
    for (int t = 0; t <= mesh.intervals(); ++t)
      host_x.push_back(mesh.lower + t * (width / mesh.intervals()));
    std::mt19937_64 generator(3);
    std::uniform_real_distribution<double> uniform(0, 1);
    for (int r = 0; r < 200; ++r) host_x.push_back(mesh.lower + width * uniform(generator));
    const int points = static_cast<int>(host_x.size()), width_of_row = mesh.degree + 1;
    const auto x =
        on_device<Space>(Kokkos::View<double*, Kokkos::HostSpace>(host_x.data(), host_x.size()));
    Kokkos::View<double**, Kokkos::LayoutRight, Memory> rows("rows", 2 * points, width_of_row + 1);
    Kokkos::parallel_for(
        "test::bspline_rows", Kokkos::RangePolicy<Space>(0, points), KOKKOS_LAMBDA(const int i) {
          double fast[kpl::bspline_max_degree + 1], general[kpl::bspline_max_degree + 1];
          int first_fast, first_general;
          if (mesh.degree == 3) {
            first_fast =
                kpl::impl::BsplineRows(mesh).row(x(i), fast, std::integral_constant<int, 3>());
            first_general = kpl::impl::bspline_row_of_degree(mesh, x(i), general,
                                                             std::integral_constant<int, 3>());
          } else {
            first_fast = kpl::impl::BsplineRows(mesh).row(x(i), fast, mesh.degree);
            first_general = kpl::impl::bspline_row_of_degree(mesh, x(i), general, mesh.degree);
          }
          rows(2 * i, 0) = first_fast;
          rows(2 * i + 1, 0) = first_general;
          for (int q = 0; q <= mesh.degree; ++q) {
            rows(2 * i, q + 1) = fast[q];
            rows(2 * i + 1, q + 1) = general[q];
          }
        });
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rows);
    for (int i = 0; i < points; ++i)
      for (int q = 0; q <= width_of_row; ++q) {
        std::uint64_t fast_bits, general_bits;
        std::memcpy(&fast_bits, &host(2 * i, q), sizeof fast_bits);
        std::memcpy(&general_bits, &host(2 * i + 1, q), sizeof general_bits);
        EXPECT_EQ(fast_bits, general_bits) << "x = " << host_x[i] << ", entry " << q;
      }
  }
}
KPL_EXECUTION_SPACE_TEST(Gam, BsplineRowsHaveTheGeneralRowsBits) {
  check_bspline_rows<TypeParam>();
}

// A range so narrow that its reciprocal spacing overflows (the evaluation
// divides there instead of multiplying) gives the basis of the unit range at
// the same relative positions, inside and past both ends.
KPL_EXECUTION_SPACE_TEST(Gam, BsplineOfATinyRangeIsTheUnitRangesBasis) {
  using Memory = typename TypeParam::memory_space;
  TypeParam space;
  const double width = 5e-308;  // intervals / width overflows a double
  const kpl::BsplineMesh tiny{0.0, width, 24, 3}, unit{0.0, 1.0, 24, 3};
  ASSERT_FALSE(tiny.intervals() / (tiny.upper - tiny.lower) <= 1.7e308);
  const std::vector<double> positions{0.0, 1.0, 0.3, 0.61, 0.999, -0.4, 1.25};
  const std::int64_t n = positions.size();
  const auto basis_at = [&](const kpl::BsplineMesh& mesh, double scale) {
    Kokkos::View<double**, Kokkos::LayoutLeft, Memory> X("X", n, 1);
    auto host_X = Kokkos::create_mirror_view(X);
    for (std::int64_t i = 0; i < n; ++i) host_X(i, 0) = positions[i] * scale;
    Kokkos::deep_copy(X, host_X);
    Kokkos::View<kpl::BsplineMesh*, Memory> meshes("meshes", 1);
    auto host_meshes = Kokkos::create_mirror_view(meshes);
    host_meshes(0) = mesh;
    Kokkos::deep_copy(meshes, host_meshes);
    kpl::CompactBasis<double, Memory> basis("basis", 1, n, 4, 24);
    kpl::build_bspline_basis(space, X, meshes, basis);
    return std::make_pair(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), basis.first),
                          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), basis.values));
  };
  const auto [tiny_first, tiny_values] = basis_at(tiny, width);
  const auto [unit_first, unit_values] = basis_at(unit, 1.0);
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(tiny_first(0, i), unit_first(0, i)) << "position " << positions[i];
    for (int q = 0; q < 4; ++q)
      EXPECT_NEAR(tiny_values(0, q, i), unit_values(0, q, i), 1e-9)
          << "position " << positions[i] << " value " << q;
  }
}

// Products with a random compact basis against the same basis stored densely.
template <class Space>
void check_compact_products(std::int64_t n, std::int64_t p, int k, int degree) {
  using Memory = typename Space::memory_space;
  Space space;
  std::mt19937_64 generator(n * 131 + p * 17 + k);
  std::uniform_real_distribution<double> uniform(0, 1);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> X("X", n, p);
  auto host_X = Kokkos::create_mirror_view(X);
  std::vector<kpl::BsplineMesh> mesh_list(p);
  for (std::int64_t j = 0; j < p; ++j) mesh_list[j] = {0.05 * j, 1 + 0.05 * j, k, degree};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < p; ++j) host_X(i, j) = -0.1 + 1.3 * uniform(generator);
  Kokkos::deep_copy(X, host_X);
  Kokkos::View<kpl::BsplineMesh*, Memory> meshes("meshes", p);
  auto host_meshes = Kokkos::create_mirror_view(meshes);
  for (std::int64_t j = 0; j < p; ++j) host_meshes(j) = mesh_list[j];
  Kokkos::deep_copy(meshes, host_meshes);
  kpl::CompactBasis<double, Memory> basis("basis", p, n, degree + 1, k);
  kpl::build_bspline_basis(space, X, meshes, basis);
  if (n > 0) {  // the build's value bound: the largest |value| it stored
    auto stored = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), basis.values);
    double largest = 0;
    for (std::size_t e = 0; e < stored.span(); ++e)
      largest = std::max(largest, std::fabs(stored.data()[e]));
    EXPECT_EQ(basis.value_bound, largest);
  }
  // Dense host copy B [n, p k] from the independent evaluation.
  HostMatrix dense("dense", n, p * k);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < p; ++j) {
      const auto row = reference_row(mesh_list[j], host_X(i, j));
      for (int a = 0; a < k; ++a) dense(i, j * k + a) = row[a];
    }
  Kokkos::View<double*, Memory> u("u", n), w("w", n), c("c", p * k), y("y", n),
      coefficients("coefficients", p * k), cross("cross", p * k * k);
  auto host_u = Kokkos::create_mirror_view(u);
  auto host_w = Kokkos::create_mirror_view(w);
  auto host_coefficients = Kokkos::create_mirror_view(coefficients);
  for (std::int64_t i = 0; i < n; ++i) {
    host_u(i) = uniform(generator) - 0.5;
    host_w(i) = i % 3 == 0 ? 0.0 : 1.0;
  }
  for (std::int64_t e = 0; e < p * k; ++e) host_coefficients(e) = uniform(generator) - 0.5;
  Kokkos::deep_copy(u, host_u);
  Kokkos::deep_copy(w, host_w);
  Kokkos::deep_copy(coefficients, host_coefficients);
  const double tolerance = 1e-12;
  kpl::transpose_product(space, basis, u, c);
  auto host_c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  for (std::int64_t e = 0; e < p * k; ++e) {
    double expected = 0;
    for (std::int64_t i = 0; i < n; ++i) expected += dense(i, e) * host_u(i);
    EXPECT_NEAR(host_c(e), expected, tolerance * (1 + std::fabs(expected))) << "c[" << e << "]";
  }
  kpl::apply(space, basis, coefficients, y);
  auto host_y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  for (std::int64_t i = 0; i < n; ++i) {
    double expected = 0;
    for (std::int64_t e = 0; e < p * k; ++e) expected += dense(i, e) * host_coefficients(e);
    EXPECT_NEAR(host_y(i), expected, tolerance * (1 + std::fabs(expected))) << "y[" << i << "]";
  }
  for (std::int64_t partner : {std::int64_t(-1), p - 1}) {
    kpl::cross_products(space, basis, w, partner, cross);
    auto host_cross = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cross);
    for (std::int64_t j = 0; j < p; ++j) {
      const std::int64_t other = partner < 0 ? j : partner;
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b) {
          double expected = 0;
          for (std::int64_t i = 0; i < n; ++i)
            expected += host_w(i) * dense(i, j * k + a) * dense(i, other * k + b);
          EXPECT_NEAR(host_cross((j * k + a) * k + b), expected,
                      tolerance * (1 + std::fabs(expected)))
              << "block " << j << " partner " << other << " (" << a << ", " << b << ")";
        }
    }
  }
}

// The GPU strategies of B^T u (one owner per entry) and B^T W B (exact fixed
// point), run on this space with teams of up to 2 threads and chunks of 700
// rows (their partial sums added in order; B^T W B's in parts of 300),
// against the dense host products; weights of both signs.
template <class Space>
void check_team_strategies(std::int64_t n, std::int64_t p, int k, int degree) {
  SCOPED_TRACE("team strategies n " + std::to_string(n) + " k " + std::to_string(k));
  using Memory = typename Space::memory_space;
  Space space;
  const int team_size = std::min(2, Space().concurrency());
  std::mt19937_64 generator(n * 7 + k);
  std::uniform_real_distribution<double> uniform(0, 1);
  HostMatrix host_X("X", n, p), dense("dense", n, p * k);
  std::vector<kpl::BsplineMesh> mesh_list(p);
  Kokkos::View<kpl::BsplineMesh*, Kokkos::HostSpace> host_meshes("meshes", p);
  for (std::int64_t j = 0; j < p; ++j) host_meshes(j) = mesh_list[j] = {0, 1 + 0.1 * j, k, degree};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < p; ++j) {
      host_X(i, j) = 1.2 * uniform(generator) - 0.05;
      const auto row = reference_row(mesh_list[j], host_X(i, j));
      for (int a = 0; a < k; ++a) dense(i, j * k + a) = row[a];
    }
  kpl::CompactBasis<double, Memory> basis("basis", p, n, degree + 1, k);
  kpl::build_bspline_basis(space, on_device<Space>(host_X), on_device<Space>(host_meshes), basis);
  HostVector host_u("u", n), host_w("w", n);
  for (std::int64_t i = 0; i < n; ++i) {
    host_u(i) = uniform(generator) - 0.5;
    // Some negative: terms of both signs in the GPU's fixed point.
    const double sign = i % 4 == 3 ? -1.0 : 1.0;
    host_w(i) = i % 4 == 1 ? 0.0 : sign * (0.5 + uniform(generator));
  }
  const std::int64_t rows_per_team = 700, chunks = (n + rows_per_team - 1) / rows_per_team;
  Kokkos::View<double*, Memory> c("c", p * k), cross("cross", p * k * k),
      partials("partials", p * chunks * k * k);
  const kpl::impl::ChunkSums<decltype(c)> c_sums{c, partials, chunks, k};
  kpl::impl::transpose_product_by_owners(space, basis, on_device<Space>(host_u), rows_per_team,
                                         c_sums, team_size);
  if (chunks > 1) kpl::impl::add_chunks_in_order(space, partials, p, chunks, k, c);
  const auto host_c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  for (std::int64_t e = 0; e < p * k; ++e) {
    double expected = 0;
    for (std::int64_t i = 0; i < n; ++i) expected += dense(i, e) * host_u(i);
    EXPECT_NEAR(host_c(e), expected, 1e-12 * (1 + std::fabs(expected))) << "c[" << e << "]";
  }
  // Chunks of 700 rows in parts of 300: three teams a chunk (the last part
  // of each 100 rows).
  kpl::CompactProductWorkspace<Memory> workspace;
  kpl::impl::cross_products_in_fixed_point(space, basis, on_device<Space>(host_w), p - 1,
                                           rows_per_team, 300, cross, workspace, team_size);
  const auto host_cross = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cross);
  for (std::int64_t j = 0; j < p; ++j)
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) {
        double expected = 0;
        for (std::int64_t i = 0; i < n; ++i)
          expected += host_w(i) * dense(i, j * k + a) * dense(i, (p - 1) * k + b);
        EXPECT_NEAR(host_cross((j * k + a) * k + b), expected, 1e-12 * (1 + std::fabs(expected)))
            << "block " << j << " (" << a << ", " << b << ")";
      }
  // Integer sums: one thread a team and one team a chunk, adding the rows in
  // order, gives the bits that parts and threads gave adding them in any
  // order. The workspace is filled with garbage first: a chunk's only team
  // stores every one of its sums.
  Kokkos::View<double*, Memory> cross_one("cross_one", p * k * k);
  Kokkos::deep_copy(workspace.fixed_point_partials, 0x5555555555555555ull);
  kpl::impl::cross_products_in_fixed_point(space, basis, on_device<Space>(host_w), p - 1,
                                           rows_per_team, rows_per_team, cross_one, workspace, 1);
  const auto host_one = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cross_one);
  for (std::int64_t e = 0; e < p * k * k; ++e)
    ASSERT_EQ(host_one(e), host_cross(e)) << "entry " << e << " with one thread a team";
  // The workspace now holds one-part chunks' sums, stored without zeroing:
  // parts of 300 again (added to zeroed sums) must give the first bits.
  kpl::impl::cross_products_in_fixed_point(space, basis, on_device<Space>(host_w), p - 1,
                                           rows_per_team, 300, cross_one, workspace, team_size);
  Kokkos::deep_copy(host_one, cross_one);
  for (std::int64_t e = 0; e < p * k * k; ++e)
    ASSERT_EQ(host_one(e), host_cross(e)) << "entry " << e << " in parts after one part a chunk";
  // A NaN weight leaves its chunk without a finite bound: every sum is NaN.
  host_w(n / 2) = std::nan("");
  kpl::impl::cross_products_in_fixed_point(space, basis, on_device<Space>(host_w), p - 1,
                                           rows_per_team, 300, cross_one, workspace, team_size);
  const auto host_nan = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cross_one);
  for (std::int64_t e = 0; e < p * k * k; ++e)
    ASSERT_TRUE(std::isnan(host_nan(e))) << "entry " << e << " with a NaN weight";
}

// B^T u from the evaluated basis (kpl/evaluated_basis.hpp), by the space's
// own strategy and by the GPU one (teams of up to 2 threads, chunks of 700
// rows, 2 blocks per team), against the dense host product of the textbook
// basis; covariates reach past the meshes (values above 1). On CPUs the
// space's own strategy gives the compact basis' bits exactly; everywhere a
// second call gives the first's bits, and a NaN in u reaches every block's
// sums.
template <class Space, class T>
void check_evaluated_products(std::int64_t n, std::int64_t p, int k, int degree) {
  SCOPED_TRACE("evaluated n " + std::to_string(n) + " p " + std::to_string(p) + " k " +
               std::to_string(k) + " degree " + std::to_string(degree) +
               (std::is_same_v<T, float> ? " float" : " double"));
  using Memory = typename Space::memory_space;
  Space space;
  std::mt19937_64 generator(n * 31 + p * 7 + k + degree);
  std::uniform_real_distribution<double> uniform(0, 1);
  HostMatrix host_X("X", n, p);
  HostVector host_u("u", n);
  std::vector<kpl::BsplineMesh> meshes(p);
  Kokkos::View<kpl::BsplineMesh*, Kokkos::HostSpace> host_meshes("meshes", p);
  for (std::int64_t j = 0; j < p; ++j)
    host_meshes(j) = meshes[j] = {-0.2 * j, 1 + 0.1 * j, k, degree};
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) host_X(i, j) = -0.3 * j - 0.1 + 1.5 * uniform(generator);
    host_u(i) = uniform(generator) - 0.3;
  }
  // The dense reference and the bound of each sum's terms.
  std::vector<double> expected(p * k, 0.0), magnitude(p * k, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < p; ++j) {
      const auto row = reference_row(meshes[j], host_X(i, j));
      for (int a = 0; a < k; ++a) {
        expected[j * k + a] += double(T(row[a])) * host_u(i);
        magnitude[j * k + a] += std::fabs(row[a] * host_u(i));
      }
    }
  const auto X = on_device<Space>(host_X);
  const auto u = on_device<Space>(host_u);
  const auto basis = kpl::evaluated_bspline_basis<T>(space, "evaluated", X, meshes);
  const double tolerance = std::is_same_v<T, float> ? 1e-6 : 1e-11;
  const auto check = [&](const Kokkos::View<double*, Memory>& c, const std::string& strategy) {
    const auto host_c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
    for (std::int64_t e = 0; e < p * k; ++e)
      EXPECT_NEAR(host_c(e), expected[e], tolerance * (1 + magnitude[e]))
          << strategy << " c[" << e << "]";
    return std::vector<double>(host_c.data(), host_c.data() + host_c.size());
  };
  Kokkos::View<double*, Memory> c("c", p * k);
  kpl::transpose_product(space, basis, u, c);
  const auto own = check(c, "own strategy");
  kpl::transpose_product(space, basis, u, c);
  EXPECT_EQ(check(c, "own strategy, again"), own);
  if constexpr (kpl::impl::compact_basis_on_host<Space>) {
    kpl::CompactBasis<T, Memory> compact("compact", p, n, degree + 1, k);
    kpl::build_bspline_basis(space, on_device<Space>(host_X), on_device<Space>(host_meshes),
                             compact);
    kpl::transpose_product(space, compact, u, c);
    EXPECT_EQ(check(c, "compact basis"), own) << "the CPU sums are the compact basis' own";
  }
  const std::int64_t rows_per_team = 700, chunks = (n + rows_per_team - 1) / rows_per_team;
  Kokkos::View<double*, Memory> partials("partials", p * chunks * k);
  const kpl::impl::ChunkSums<decltype(c)> sums{c, partials, chunks, k};
  const auto by_teams = [&](const decltype(u)& weights) {
    kpl::impl::evaluated_transpose_product_by_columns(space, basis, weights, rows_per_team, sums,
                                                      std::min(2, space.concurrency()), 2);
    if (chunks > 1) kpl::impl::add_chunks_in_order(space, partials, p, chunks, k, c);
  };
  by_teams(u);
  const auto teams = check(c, "by columns");
  by_teams(u);
  EXPECT_EQ(check(c, "by columns, again"), teams);
  if (n > 0) {
    auto host_bad = Kokkos::create_mirror_view(u);
    Kokkos::deep_copy(host_bad, host_u);
    host_bad(n - 1) = std::numeric_limits<double>::quiet_NaN();
    const auto bad = on_device<Space>(host_bad);
    for (int strategy = 0; strategy < 2; ++strategy) {
      if (strategy == 0)
        kpl::transpose_product(space, basis, bad, c);
      else
        by_teams(bad);
      const auto host_c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
      for (std::int64_t j = 0; j < p; ++j) {
        int not_a_number = 0;
        for (int a = 0; a < k; ++a) not_a_number += std::isnan(host_c(j * k + a));
        EXPECT_GT(not_a_number, 0) << "block " << j << " strategy " << strategy;
      }
    }
  }
}

// B^T W B in exact parts (kpl::cross_product_parts) over rows [first, first +
// count) of X, on `grid`: the host copy of parts [3 p k k]. strategy: 0 the
// space's own, 1 the GPU one with teams of up to 2 threads and chunks of
// rows_per_team, 2 the CPU one with chunks of rows_per_team (host only);
// `bounds`: the rows' CrossProductBounds. evaluated: from the evaluated
// basis (kpl/evaluated_basis.hpp) instead of the compact one.
template <class Space, class T>
std::vector<double> exact_parts_of_rows(const HostMatrix& host_X, const HostVector& host_w,
                                        std::int64_t first, std::int64_t count, int k, int degree,
                                        const kpl::ExactSumGrid& grid, int strategy = 0,
                                        std::int64_t rows_per_team = 700,
                                        kpl::CrossProductBounds* bounds = nullptr,
                                        int team_size = 0, bool evaluated = false) {
  using Memory = typename Space::memory_space;
  Space space;
  const std::int64_t p = host_X.extent(1);
  Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> X("X", count, p);
  HostVector w("w", count);
  Kokkos::View<kpl::BsplineMesh*, Kokkos::HostSpace> meshes("meshes", p);
  for (std::int64_t j = 0; j < p; ++j) meshes(j) = {-0.05, 1.15 + 0.1 * j, k, degree};
  for (std::int64_t i = 0; i < count; ++i) {
    for (std::int64_t j = 0; j < p; ++j) X(i, j) = T(host_X(first + i, j));
    w(i) = host_w(first + i);
  }
  const std::int64_t entries = p * k * k, parts = kpl::ExactSumGrid::parts;
  Kokkos::View<double*, Memory> out("parts", parts * entries);
  const auto device_w = on_device<Space>(w);
  const auto parts_of = [&](const auto& basis) {
    if (bounds) *bounds = kpl::cross_product_bounds(space, basis, device_w);
    if (strategy == 0) {
      kpl::cross_product_parts(space, basis, device_w, -1, grid, out);
      return;
    }
    const std::int64_t chunks =
        std::max<std::int64_t>(1, (count + rows_per_team - 1) / rows_per_team);
    const kpl::impl::ExactPartSums<decltype(out)> sums{out, chunks, k * k};
    if (strategy == 1) {
      kpl::impl::cross_product_parts_by_atomics(
          space, basis, device_w, -1, grid, rows_per_team, sums,
          team_size > 0 ? team_size : std::min(2, space.concurrency()));
    } else if constexpr (kpl::impl::compact_basis_on_host<Space> &&
                         !kpl::impl::is_evaluated_basis<std::decay_t<decltype(basis)>>::value) {
      kpl::impl::cross_product_parts_in_row_order(space, basis, device_w, -1, grid, rows_per_team,
                                                  sums);
    }
  };
  if (evaluated) {
    parts_of(kpl::evaluated_bspline_basis<T>(
        space, "evaluated", on_device<Space>(X),
        std::vector<kpl::BsplineMesh>(meshes.data(), meshes.data() + p)));
  } else {
    kpl::CompactBasis<T, Memory> basis("basis", p, count, degree + 1, k);
    kpl::build_bspline_basis(space, on_device<Space>(X), on_device<Space>(meshes), basis);
    parts_of(basis);
  }
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  return std::vector<double>(host.data(), host.data() + host.size());
}

// The exact parts of B^T W B: the parts of a split of the rows add up to the
// parts of all rows bit for bit (as one process's and several processes'
// must), whichever strategy and chunks summed them; their value matches the
// dense host product; weights of widely different sizes, a float basis.
template <class Space, class T>
void check_exact_parts(std::int64_t n, std::int64_t p, int k, int degree,
                       double double_tolerance = 1e-14) {
  SCOPED_TRACE("exact parts n " + std::to_string(n) + " k " + std::to_string(k));
  std::mt19937_64 generator(n * 13 + k);
  std::uniform_real_distribution<double> uniform(0, 1);
  HostMatrix host_X("X", n, p), dense("dense", n, p * k);
  HostVector host_w("w", n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) host_X(i, j) = T(1.2 * uniform(generator) - 0.05);
    host_w(i) = i % 5 == 2 ? 0.0 : std::pow(10.0, 6 * uniform(generator) - 3);
  }
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < p; ++j) {
      const auto row = reference_row({-0.05, 1.15 + 0.1 * j, k, degree}, host_X(i, j));
      for (int a = 0; a < k; ++a) dense(i, j * k + a) = row[a];
    }
  // The grid from both parts' bounds, each factor's largest taken first as
  // processes agree on it: the bound of all rows, which one process uses.
  const std::int64_t half = n / 3;
  kpl::CrossProductBounds first_rows, last_rows, all_rows;
  const auto probe = kpl::ExactSumGrid::covering(1, n);
  exact_parts_of_rows<Space, T>(host_X, host_w, 0, half, k, degree, probe, 0, 700, &first_rows);
  exact_parts_of_rows<Space, T>(host_X, host_w, half, n - half, k, degree, probe, 0, 700,
                                &last_rows);
  exact_parts_of_rows<Space, T>(host_X, host_w, 0, n, k, degree, probe, 0, 700, &all_rows);
  const kpl::CrossProductBounds agreed{std::max(first_rows.weight, last_rows.weight),
                                       std::max(first_rows.value, last_rows.value)};
  EXPECT_EQ(agreed.term(), all_rows.term());
  const auto grid = kpl::ExactSumGrid::covering(agreed.term(), n);
  const auto all = exact_parts_of_rows<Space, T>(host_X, host_w, 0, n, k, degree, grid);
  auto split = exact_parts_of_rows<Space, T>(host_X, host_w, 0, half, k, degree, grid);
  const auto second =
      exact_parts_of_rows<Space, T>(host_X, host_w, half, n - half, k, degree, grid);
  for (std::size_t e = 0; e < split.size(); ++e) split[e] += second[e];
  EXPECT_EQ(all, split) << "the parts of a split of the rows differ from all rows'";
  for (std::int64_t l = 0; l < kpl::ExactSumGrid::parts; ++l)  // B_j^T W B_j: exactly symmetric
    for (std::int64_t j = 0; j < p; ++j)
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < a; ++b) {
          const std::int64_t block = (l * p + j) * k * k;
          ASSERT_EQ(all[block + a * k + b], all[block + b * k + a])
              << "part " << l << " block " << j << " (" << a << ", " << b << ")";
        }
  EXPECT_EQ(all, (exact_parts_of_rows<Space, T>(host_X, host_w, 0, n, k, degree, grid, 1, 333)));
  if constexpr (kpl::impl::compact_basis_on_host<Space>)
    EXPECT_EQ(all, (exact_parts_of_rows<Space, T>(host_X, host_w, 0, n, k, degree, grid, 2, 91)));
  else  // teams beyond the launch bounds: the unbounded kernel
    EXPECT_EQ(all, (exact_parts_of_rows<Space, T>(host_X, host_w, 0, n, k, degree, grid, 1, 333,
                                                  nullptr, 512)));
  // The evaluated basis computes the compact basis' rows from x: the same
  // bounds and the same parts, by the space's own strategy and by teams of
  // two threads (of one, the space's own on CPUs).
  kpl::CrossProductBounds evaluated_rows;
  EXPECT_EQ(all, (exact_parts_of_rows<Space, T>(host_X, host_w, 0, n, k, degree, grid, 0, 700,
                                                &evaluated_rows, 0, true)));
  EXPECT_EQ(evaluated_rows.weight, all_rows.weight);
  EXPECT_EQ(evaluated_rows.value, all_rows.value);
  EXPECT_EQ(all, (exact_parts_of_rows<Space, T>(host_X, host_w, 0, n, k, degree, grid, 1, 333,
                                                nullptr, 0, true)));
  const std::int64_t entries = p * k * k;
  // A float basis holds its values rounded to float; the reference is double's.
  const double tolerance = std::is_same_v<T, float> ? 1e-6 : double_tolerance;
  for (std::int64_t j = 0; j < p; ++j)
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) {
        long double expected = 0, magnitude = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const long double term =
              (long double)host_w(i) * dense(i, j * k + a) * dense(i, j * k + b);
          expected += term;
          magnitude += std::fabs(term);
        }
        const std::int64_t e = (j * k + a) * k + b;
        EXPECT_NEAR(grid.value(all, entries, e), double(expected),
                    tolerance * double(magnitude) + 1e-300)
            << "block " << j << " (" << a << ", " << b << ")";
      }
}

KPL_EXECUTION_SPACE_TEST(Gam, ExactPartsOfCrossProductsDoNotDependOnTheSplit) {
  check_exact_parts<TypeParam, double>(2000, 3, 10, 3);
  check_exact_parts<TypeParam, double>(301, 2, 7, 2);
  check_exact_parts<TypeParam, float>(1500, 2, 24, 3);
  // k = 64: the GPU strategy's sums of one part at a time (a pass each),
  // which must give the CPU's bits. Against the dense reference the sums
  // of both differ by up to 3e-13 of their magnitude here (1e-14 at k <= 24),
  // and the sums are not the cause: kpl's rows and the reference's own each
  // carry the mesh's rounding (a knot, or x's position among the knots, is
  // off by rounding errors that grow with the interval's index), and the
  // tail values of a row (s^3 / 6 for a small s) carry it as a relative
  // error.
  check_exact_parts<TypeParam, double>(400, 1, 64, 3, 1e-12);
}

// The evaluated basis' value bound (the exact parts' grid) sees every row:
// the largest value, a cubic spline's 2/3 at a knot, in one row of one
// covariate only, every other x in the middle of an interval (values of
// 23/48 at most), that row first, in the middle or last, so that it falls
// in a team's groups of rows loaded together or in their remainder.
KPL_EXECUTION_SPACE_TEST(Gam, EvaluatedValueBoundSeesEveryRow) {
  using Space = TypeParam;
  const kpl::BsplineMesh mesh{0.0, 1.0, 10, 3};
  const double interval = 1.0 / 7;  // k - degree intervals
  for (const std::int64_t n : {1, 7, 4101, 12419}) {
    for (const std::int64_t special : {std::int64_t(0), n / 2, n - 1}) {
      HostMatrix X("X", n, 2);
      double expected = 0;
      for (std::int64_t i = 0; i < n; ++i)
        for (int j = 0; j < 2; ++j) {
          X(i, j) = j == 1 && i == special ? 3 * interval : (i % 7 + 0.5) * interval;
          for (const double value : reference_row(mesh, X(i, j)))
            expected = std::max(expected, std::fabs(value));
        }
      ASSERT_NEAR(expected, 2.0 / 3, 1e-14);
      const auto basis =
          kpl::evaluated_bspline_basis<double>(Space(), "bound", on_device<Space>(X), {mesh, mesh});
      const auto bounds = kpl::cross_product_bounds(
          Space(), basis, Kokkos::View<double*, typename Space::memory_space>());
      EXPECT_NEAR(bounds.value, expected, 1e-14) << "n " << n << ", row " << special;
      EXPECT_EQ(bounds.weight, 1.0);
    }
  }
}

// A NaN or infinite weight makes the parts NaN; weights of zero, zero; no
// rows at all, zero.
KPL_EXECUTION_SPACE_TEST(Gam, ExactPartsOfNonFiniteAndZeroWeights) {
  HostMatrix host_X("X", 50, 1);
  HostVector host_w("w", 50);
  for (std::int64_t i = 0; i < 50; ++i) host_X(i, 0) = 0.02 * i;
  const auto zeros = exact_parts_of_rows<TypeParam, double>(host_X, host_w, 0, 50, 6, 3,
                                                            kpl::ExactSumGrid::covering(0, 50));
  EXPECT_EQ(zeros, std::vector<double>(zeros.size(), 0.0));
  const auto none = exact_parts_of_rows<TypeParam, double>(host_X, host_w, 0, 0, 6, 3,
                                                           kpl::ExactSumGrid::covering(0, 0));
  EXPECT_EQ(none, std::vector<double>(none.size(), 0.0));
  for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    for (std::int64_t i = 0; i < 50; ++i) host_w(i) = i == 7 ? bad : 1.0;
    kpl::CrossProductBounds bounds;
    exact_parts_of_rows<TypeParam, double>(host_X, host_w, 0, 50, 6, 3,
                                           kpl::ExactSumGrid::covering(1, 50), 0, 700, &bounds);
    const auto grid = kpl::ExactSumGrid::covering(bounds.term(), 50);
    const auto parts = exact_parts_of_rows<TypeParam, double>(host_X, host_w, 0, 50, 6, 3, grid);
    int not_a_number = 0;
    for (std::int64_t e = 0; e < 36; ++e) not_a_number += std::isnan(grid.value(parts, 36, e));
    EXPECT_GT(not_a_number, 0) << bad;  // the entries row 7 touches
  }
  EXPECT_THROW(kpl::ExactSumGrid::covering(1, std::int64_t(1) << 50), std::invalid_argument);
}

// A grid whose bound some term exceeds (a caller's mistake): the sums are no
// longer exact, but their value stays the product's (a strategy that held
// the slices as fixed-width integers would wrap); NaN weights give NaN
// there too. Both strategies, teams of one and two threads.
KPL_EXECUTION_SPACE_TEST(Gam, ExactPartsOfTermsBeyondTheGrid) {
  constexpr std::int64_t n = 50;
  constexpr int k = 6, degree = 3;
  HostMatrix host_X("X", n, 1);
  HostVector host_w("w", n);
  for (std::int64_t i = 0; i < n; ++i) {
    host_X(i, 0) = 0.02 * i;
    host_w(i) = i == 7 ? std::ldexp(1.0, 40) : 1.0;
  }
  const auto grid = kpl::ExactSumGrid::covering(1, n);
  for (const int strategy : {0, 1}) {
    SCOPED_TRACE("strategy " + std::to_string(strategy));
    const auto parts =
        exact_parts_of_rows<TypeParam, double>(host_X, host_w, 0, n, k, degree, grid, strategy, 20);
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) {
        long double expected = 0, magnitude = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const auto row = reference_row({-0.05, 1.15, k, degree}, host_X(i, 0));
          const long double term = (long double)host_w(i) * row[a] * row[b];
          expected += term;
          magnitude += std::fabs(term);
        }
        EXPECT_NEAR(grid.value(parts, k * k, a * k + b), double(expected),
                    1e-12 * double(magnitude) + 1e-300)
            << "(" << a << ", " << b << ")";
      }
    host_w(7) = std::nan("");
    const auto not_numbers =
        exact_parts_of_rows<TypeParam, double>(host_X, host_w, 0, n, k, degree, grid, strategy, 20);
    host_w(7) = std::ldexp(1.0, 40);
    int not_a_number = 0;
    for (int e = 0; e < k * k; ++e) not_a_number += std::isnan(grid.value(not_numbers, k * k, e));
    EXPECT_GT(not_a_number, 0);
  }
}

KPL_EXECUTION_SPACE_TEST(Gam, TeamStrategiesOfCompactProductsMatchDense) {
  check_team_strategies<TypeParam>(2000, 3, 10, 3);
  check_team_strategies<TypeParam>(300, 2, 7, 2);
}

KPL_EXECUTION_SPACE_TEST(Gam, EvaluatedBasisProductsMatchDense) {
  check_evaluated_products<TypeParam, double>(0, 2, 6, 3);
  check_evaluated_products<TypeParam, double>(1, 1, 4, 1);
  check_evaluated_products<TypeParam, double>(3000, 5, 16, 3);
  check_evaluated_products<TypeParam, double>(1500, 3, 9, 2);
  check_evaluated_products<TypeParam, float>(2500, 3, 12, 3);
  check_evaluated_products<TypeParam, double>(900, 2, 100, 3);  // many blocks' sums per team
}

KPL_EXECUTION_SPACE_TEST(Gam, CompactBasisProductsMatchDense) {
  check_compact_products<TypeParam>(0, 2, 6, 3);
  check_compact_products<TypeParam>(1, 1, 4, 1);
  check_compact_products<TypeParam>(17, 3, 9, 3);
  check_compact_products<TypeParam>(1000, 2, 8, 2);
  check_compact_products<TypeParam>(5000, 3, 16, 3);
  check_compact_products<TypeParam>(300, 2, 100, 3);  // k x k sums beyond GPU shared memory
}

TEST(GamPenalty, DifferencePenaltyIsDTD) {
  const auto first = kpl::difference_penalty(4, 1);
  const std::vector<double> expected_first{1, -1, 0, 0, -1, 2, -1, 0, 0, -1, 2, -1, 0, 0, -1, 1};
  EXPECT_EQ(first, expected_first);
  const auto second = kpl::difference_penalty(5, 2);
  EXPECT_EQ(second[0], 1);
  EXPECT_EQ(second[1], -2);
  EXPECT_EQ(second[2], 1);
  EXPECT_EQ(second[2 * 5 + 2], 6);  // 1 + 4 + 1
  const auto ridge = kpl::difference_penalty(3, 0);
  EXPECT_EQ(ridge, (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_THROW(kpl::difference_penalty(3, 3), std::invalid_argument);
}

TEST(GamPenalty, SymmetricEigenvaluesOfKnownMatrices) {
  // [[2, 1], [1, 2]] has eigenvalues 3 and 1; a random Q diag(...) Q^T those.
  const auto two = kpl::symmetric_eigenvalues({2, 1, 1, 2}, 2);
  EXPECT_NEAR(two[0], 3, 1e-14);
  EXPECT_NEAR(two[1], 1, 1e-14);
  const auto penalty = kpl::difference_penalty(6, 1);  // eigenvalues 2 - 2 cos(pi i / 6)
  auto eigenvalues = kpl::symmetric_eigenvalues(penalty, 6);
  std::sort(eigenvalues.begin(), eigenvalues.end());
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(eigenvalues[i], 2 - 2 * std::cos(M_PI * i / 6), 1e-13) << i;
  // Q diag(lambda) Q^T for a random orthogonal Q (Gram-Schmidt of random
  // columns), with repeated, zero and negative eigenvalues, sizes 1 to 40.
  std::mt19937_64 generator(77);
  std::normal_distribution<double> normal(0, 1);
  for (int k : {1, 2, 3, 7, 24, 40}) {
    std::vector<double> expected(k), q(k * k), matrix(k * k, 0.0);
    for (int i = 0; i < k; ++i)
      expected[i] = i % 5 == 0 ? 0.0 : (i % 3 == 0 ? 2.5 : normal(generator) * 10);
    for (int j = 0; j < k; ++j) {
      for (int i = 0; i < k; ++i) q[i * k + j] = normal(generator);
      for (int previous = 0; previous < j; ++previous) {
        double dot = 0;
        for (int i = 0; i < k; ++i) dot += q[i * k + j] * q[i * k + previous];
        for (int i = 0; i < k; ++i) q[i * k + j] -= dot * q[i * k + previous];
      }
      double norm = 0;
      for (int i = 0; i < k; ++i) norm += q[i * k + j] * q[i * k + j];
      for (int i = 0; i < k; ++i) q[i * k + j] /= std::sqrt(norm);
    }
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        for (int i = 0; i < k; ++i) matrix[a * k + b] += q[a * k + i] * expected[i] * q[b * k + i];
    auto computed = kpl::symmetric_eigenvalues(matrix, k);
    std::sort(expected.begin(), expected.end(), std::greater<>());
    ASSERT_EQ(computed.size(), expected.size());
    for (int i = 0; i < k; ++i)
      EXPECT_NEAR(computed[i], expected[i], 1e-11) << "k " << k << " i " << i;
  }
}

// A B-spline Gram matrix of covariate values spread over the range.
std::vector<double> sample_gram(int k, int degree, int n, std::uint64_t seed) {
  const kpl::BsplineMesh mesh{0, 1, k, degree};
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<double> gram(k * k, 0.0);
  double row[kpl::bspline_max_degree + 1];
  for (int i = 0; i < n; ++i) {
    const int first = kpl::bspline_row(mesh, uniform(generator), row);
    for (int q = 0; q <= degree; ++q)
      for (int r = 0; r <= degree; ++r) gram[(first + q) * k + first + r] += row[q] * row[r];
  }
  return gram;
}

// R = M (G + 2 lambda K) M by plain triple loops, against the learner's R
// within 1e-10 of R's largest entry.
void expect_reduction_matches(const std::vector<double>& gram, const std::vector<double>& penalty,
                              int k, const kpl::LearnerPenalty& learner) {
  std::vector<double> left(k * k, 0.0), expected(k * k, 0.0);
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b)
      for (int c = 0; c < k; ++c)
        left[a * k + b] += learner.inverse[a * k + c] *
                           (gram[c * k + b] + 2 * learner.lambda * penalty[c * k + b]);
  double largest = 0;
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b) {
      for (int c = 0; c < k; ++c)
        expected[a * k + b] += left[a * k + c] * learner.inverse[c * k + b];
      largest = std::max(largest, std::abs(expected[a * k + b]));
    }
  for (int e = 0; e < k * k; ++e)
    EXPECT_NEAR(learner.reduction[e], expected[e], 1e-10 * largest) << "entry " << e;
}

TEST(GamPenalty, LambdaFromDfRoundTrip) {
  for (auto definition : {kpl::DfDefinition::trace, kpl::DfDefinition::trace_2s_sts}) {
    for (int differences : {0, 1, 2, 3}) {
      const int k = 20;
      const auto gram = sample_gram(k, 3, 500, 3 + differences);
      const auto penalty = kpl::difference_penalty(k, differences);
      const auto eigenvalues = kpl::demmler_reinsch_eigenvalues(gram, penalty, k);
      for (double df : {differences + 0.5, 4.0, 7.25, 19.5}) {
        if (df <= differences) continue;
        const auto learner =
            kpl::penalise_learner(gram, penalty, k, df, definition, "test", differences);
        EXPECT_GT(learner.lambda, 0);
        EXPECT_NEAR(kpl::degrees_of_freedom(eigenvalues, learner.lambda, definition), df, 1e-10)
            << "differences " << differences << " df " << df;
        // M (G + lambda K) = I, and R = M (G + 2 lambda K) M.
        for (int a = 0; a < k; ++a)
          for (int b = 0; b < k; ++b) {
            double product = 0;
            for (int c = 0; c < k; ++c)
              product += learner.inverse[a * k + c] *
                         (gram[c * k + b] + learner.lambda * penalty[c * k + b]);
            EXPECT_NEAR(product, a == b ? 1.0 : 0.0, 1e-8);
          }
        expect_reduction_matches(gram, penalty, k, learner);
      }
      // df = k: no penalty; below the null space: an error naming the learner.
      EXPECT_EQ(kpl::penalise_learner(gram, penalty, k, k, definition, "test").lambda, 0);
      if (differences > 0) {
        try {
          kpl::penalise_learner(gram, penalty, k, differences, definition, "covariate 7",
                                differences);
          ADD_FAILURE() << "no error for df below the null-space dimension";
        } catch (const std::invalid_argument& error) {
          EXPECT_NE(std::string(error.what()).find("covariate 7"), std::string::npos);
        }
      }
    }
  }
  {
    // A penalty that is not banded: second differences plus u u^T, u dense.
    const int k = 12;
    const auto gram = sample_gram(k, 3, 300, 11);
    auto penalty = kpl::difference_penalty(k, 2);
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) penalty[a * k + b] += 0.01 * (1 + a % 3) * (1 + b % 3);
    const auto learner =
        kpl::penalise_learner(gram, penalty, k, 4.0, kpl::DfDefinition::trace_2s_sts, "dense K", 1);
    EXPECT_GT(learner.lambda, 0);
    expect_reduction_matches(gram, penalty, k, learner);
  }
  const auto gram = sample_gram(8, 3, 100, 1);
  const auto penalty = kpl::difference_penalty(8, 2);
  EXPECT_THROW(kpl::penalise_learner(gram, penalty, 8, 0, kpl::DfDefinition::trace, "t"),
               std::invalid_argument);
  EXPECT_THROW(kpl::penalise_learner(gram, penalty, 8, 8.5, kpl::DfDefinition::trace, "t"),
               std::invalid_argument);
}

// The df -> lambda step against 60-digit references (scripts/penalty_reference.py):
// eight learners' B^T W B, the last one singular but for mboost's 1e-9 K ridge
// (a basis function with one row of positive weight), where the small
// Demmler-Reinsch eigenvalues that df hangs on sit beside one of 1e9.
TEST(GamPenalty, EigenvaluesAndLambdaMatchHighPrecisionReferences) {
  const kpl::hdf5::InputFile file(data_directory + "penalty_reference.h5");
  const auto grams = file.read<double, 3>("/gram");
  const auto penalty_array = file.read<double, 2>("/penalty");
  const auto eigenvalues = file.read<double, 2>("/eigenvalues");
  const auto lambdas = file.read<double, 1>("/lambda");
  const int k = static_cast<int>(penalty_array.extent(0));
  const std::vector<double> penalty(penalty_array.data(), penalty_array.data() + k * k);
  ASSERT_EQ(grams.extent(0), 8u);
  for (std::size_t c = 0; c < grams.extent(0); ++c) {
    const std::vector<double> gram(grams.data() + c * k * k, grams.data() + (c + 1) * k * k);
    const auto computed = kpl::demmler_reinsch_eigenvalues(gram, penalty, k);
    for (int i = 0; i < k; ++i) {
      const double expected = eigenvalues(c, i);
      if (!(expected > 1e-12 * eigenvalues(c, 0))) continue;  // K's null space: zero in either
      // A direction G nearly lacks has d ~ 1e9 from the ridge alone, known only
      // to G's conditioning; with lambda ~ 1e3 its share of df is below 1e-11.
      const double tolerance = expected < 1e6 ? 1e-11 : 1e-8;
      EXPECT_NEAR(computed[i], expected, tolerance * expected) << "case " << c << " d_" << i;
    }
    const auto learner = kpl::penalise_learner(gram, penalty, k, 4, kpl::DfDefinition::trace_2s_sts,
                                               "case " + std::to_string(c), 2);
    EXPECT_NEAR(learner.lambda, lambdas(c), 1e-12 * lambdas(c)) << "case " << c;
  }
}

// ---------------------------------------------------- mboost's reference fits

struct Reference {
  kpl::GamOptions options;
  std::vector<std::int64_t> selected;
  std::vector<double> risk, prediction_train, prediction_test;
};

Reference read_reference(const std::string& name) {
  const kpl::hdf5::InputFile file(data_directory + name);
  Reference reference;
  reference.options.basis_size = static_cast<int>(file.read_integer_attribute("/", "basis_size"));
  reference.options.degree = static_cast<int>(file.read_integer_attribute("/", "degree"));
  reference.options.differences =
      static_cast<int>(file.read_integer_attribute("/", "penalty_differences"));
  reference.options.df = file.read_number_attribute("/", "df");
  reference.options.df_definition = file.read_string_attribute("/", "df_definition") == "trace(S)"
                                        ? kpl::DfDefinition::trace
                                        : kpl::DfDefinition::trace_2s_sts;
  reference.options.mstop = static_cast<int>(file.read_integer_attribute("/", "mstop"));
  reference.options.nu = file.read_number_attribute("/", "nu");
  const auto selected = file.read<std::int64_t, 1>("/selected");
  reference.selected.assign(selected.data(), selected.data() + selected.size());
  const auto as_vector = [&](const std::string& dataset) {
    const auto values = file.read<double, 1>(dataset);
    return std::vector<double>(values.data(), values.data() + values.size());
  };
  reference.risk = as_vector("/risk");
  reference.prediction_train = as_vector("/pred_train");
  reference.prediction_test = as_vector("/pred_test");
  return reference;
}

template <class T, class Space>
Kokkos::View<T**, Kokkos::LayoutLeft, typename Space::memory_space> to_device_matrix(
    const kpl::hdf5::HostArray<double, 2>& host) {
  Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace> converted("X", host.extent(0),
                                                                     host.extent(1));
  for (std::size_t i = 0; i < host.extent(0); ++i)
    for (std::size_t j = 0; j < host.extent(1); ++j) converted(i, j) = T(host(i, j));
  return Kokkos::create_mirror_view_and_copy(typename Space::memory_space(), converted);
}

template <class T, class Space>
Kokkos::View<T*, typename Space::memory_space> to_device_vector(
    const kpl::hdf5::HostArray<double, 1>& host) {
  Kokkos::View<T*, Kokkos::HostSpace> converted("y", host.extent(0));
  for (std::size_t i = 0; i < host.extent(0); ++i) converted(i) = T(host(i));
  return Kokkos::create_mirror_view_and_copy(typename Space::memory_space(), converted);
}

template <class Space, class XView>
std::vector<double> predict(const kpl::GamModel& model, const XView& X) {
  Space space;
  Kokkos::View<double*, typename Space::memory_space> prediction("prediction", X.extent(0));
  kpl::predict_gam(space, model, X, prediction,
                   Kokkos::View<double**, typename Space::memory_space>());
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), prediction);
  return std::vector<double>(host.data(), host.data() + host.size());
}

double relative_difference(const std::vector<double>& got, const std::vector<double>& expected) {
  double largest_error = 0, scale = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    largest_error = std::max(largest_error, std::fabs(got[i] - expected[i]));
    scale = std::max(scale, std::fabs(expected[i]));
  }
  return largest_error / scale;
}

template <class Space, class T>
void check_mboost_reference(const std::string& name, kpl::GamMode mode, kpl::GamBasis basis,
                            int gram_refresh = 100, std::int64_t gram_cache_bytes = 1 << 30) {
  SCOPED_TRACE(name + " mode " + kpl::to_string(mode) + " basis " + kpl::to_string(basis) +
               (std::is_same_v<T, float> ? " float" : " double"));
  const auto reference = read_reference(name);
  const kpl::hdf5::InputFile train(data_directory + "gam_small.h5");
  const kpl::hdf5::InputFile test(data_directory + "gam_small_test.h5");
  const auto X = to_device_matrix<T, Space>(train.read<double, 2>("/X"));
  const auto y = to_device_vector<T, Space>(train.read<double, 1>("/y"));
  const auto X_test = to_device_matrix<T, Space>(test.read<double, 2>("/X"));
  auto options = reference.options;
  options.mode = mode;
  options.basis = basis;
  options.gram_refresh = gram_refresh;
  options.gram_cache_bytes = gram_cache_bytes;
  const auto model = kpl::fit_gam(Space(), X, y, options);
  ASSERT_EQ(model.selected.size(), reference.selected.size());
  std::int64_t first_mismatch = -1;
  for (std::size_t m = 0; m < reference.selected.size() && first_mismatch < 0; ++m)
    if (model.selected[m] != reference.selected[m]) first_mismatch = m;
  EXPECT_EQ(first_mismatch, -1) << "first iteration selecting another covariate than mboost";
  if constexpr (std::is_same_v<T, double>) {
    EXPECT_LT(relative_difference(model.risk, reference.risk), 1e-9);
    EXPECT_LT(relative_difference(predict<Space>(model, X), reference.prediction_train), 1e-6);
    EXPECT_LT(relative_difference(predict<Space>(model, X_test), reference.prediction_test), 1e-6);
  } else {
    EXPECT_LT(relative_difference(predict<Space>(model, X_test), reference.prediction_test), 1e-3);
  }
}

KPL_EXECUTION_SPACE_TEST(Gam, MatchesMboostRidge) {
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k16_d0.h5", kpl::GamMode::direct,
                                            kpl::GamBasis::compact);
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k16_d0.h5", kpl::GamMode::gram,
                                            kpl::GamBasis::compact);
}

KPL_EXECUTION_SPACE_TEST(Gam, MatchesMboostPspline) {
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k24_d2.h5", kpl::GamMode::direct,
                                            kpl::GamBasis::compact);
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k24_d2.h5", kpl::GamMode::gram,
                                            kpl::GamBasis::compact);
}

KPL_EXECUTION_SPACE_TEST(Gam, MatchesMboostWithEvaluatedBasis) {
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k16_d0.h5", kpl::GamMode::direct,
                                            kpl::GamBasis::evaluated);
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k24_d2.h5", kpl::GamMode::direct,
                                            kpl::GamBasis::evaluated);
  check_mboost_reference<TypeParam, float>("gam_small_mboost_k24_d2.h5", kpl::GamMode::direct,
                                           kpl::GamBasis::evaluated);
}

// The evaluated basis' direct mode keeps no compact basis: the update of f
// and B^T W B read its rows from x, the values the compact basis stores. On
// CPUs every sum is then the compact basis' own, so the model is the same bit
// for bit; on GPUs B^T u sums in another order (the same selections,
// coefficients within 1e-12). The fit's device memory holds x's copy (8 bytes
// a value) instead of the compact basis (an index and four doubles). A Gram
// fit from a booster built for the direct mode builds the compact basis
// for its cross products, from that copy.
template <class Space>
void check_evaluated_fit_without_compact_basis() {
  constexpr bool host = kpl::impl::runs_on_host_v<Space>;
  const std::int64_t n = 3000, p = 4;
  HostMatrix host_X("X", n, p);
  HostVector host_y("y", n);
  std::mt19937_64 generator(5);
  std::uniform_real_distribution<double> uniform(-1, 2);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) host_X(i, j) = uniform(generator);
    host_y(i) = std::sin(2 * host_X(i, 1)) + host_X(i, 3) * host_X(i, 3) + 0.1 * uniform(generator);
  }
  const auto X = to_device_matrix<double, Space>(host_X);
  const auto y = to_device_vector<double, Space>(host_y);
  kpl::GamOptions options;
  options.basis_size = 12;
  options.mstop = 40;
  const auto fit = [&](kpl::GamBasis basis, kpl::GamMode mode, kpl::GamTimings* timings) {
    options.basis = basis;
    options.mode = mode;
    return kpl::fit_gam(Space(), X, y, options, timings);
  };
  const auto expect_same = [&](const kpl::GamModel& model, const kpl::GamModel& reference) {
    EXPECT_EQ(model.selected, reference.selected);
    ASSERT_EQ(model.coefficients.size(), reference.coefficients.size());
    if (host) {
      EXPECT_EQ(model.coefficients, reference.coefficients);
      EXPECT_EQ(model.risk, reference.risk);
    }
    for (std::size_t e = 0; e < model.coefficients.size(); ++e)
      EXPECT_NEAR(model.coefficients[e], reference.coefficients[e],
                  1e-12 * (1 + std::fabs(reference.coefficients[e])))
          << e;
  };
  kpl::GamTimings compact_timings, evaluated_timings;
  const auto compact = fit(kpl::GamBasis::compact, kpl::GamMode::direct, &compact_timings);
  const auto evaluated = fit(kpl::GamBasis::evaluated, kpl::GamMode::direct, &evaluated_timings);
  expect_same(evaluated, compact);
  EXPECT_EQ(evaluated_timings.device_bytes,
            compact_timings.device_bytes - n * p * (4 + 4 * 8) + n * p * 8);
  const auto compact_gram = fit(kpl::GamBasis::compact, kpl::GamMode::gram, nullptr);
  options.basis = kpl::GamBasis::evaluated;
  options.mode = kpl::GamMode::direct;
  kpl::impl::GamBooster<Space, double> booster(Space(), X, y, options);
  kpl::GamTimings gram_timings;
  expect_same(booster.fit({}, options.mstop, kpl::GamMode::gram, &gram_timings, {}), compact_gram);
  EXPECT_GT(gram_timings.device_bytes, evaluated_timings.device_bytes + n * p * (4 + 4 * 8) - 1);
}

KPL_EXECUTION_SPACE_TEST(Gam, EvaluatedDirectFitKeepsNoCompactBasis) {
  check_evaluated_fit_without_compact_basis<TypeParam>();
}

// GamBasis::automatic (the default) is the evaluated basis on GPUs and the
// compact one on CPUs; a fit records what it used; the memory estimate
// counts the evaluated basis' copy of X (8 bytes a value) where it is used,
// and the compact basis (an index and d + 1 values a row and covariate)
// only where it is kept: not in the evaluated basis' direct mode.
template <class Space>
void check_automatic_basis() {
  constexpr bool host = kpl::impl::runs_on_host_v<Space>;
  const auto expected = host ? kpl::GamBasis::compact : kpl::GamBasis::evaluated;
  EXPECT_EQ(kpl::gam_basis_for<Space>(kpl::GamBasis::automatic), expected);
  for (auto basis : {kpl::GamBasis::compact, kpl::GamBasis::dense, kpl::GamBasis::evaluated})
    EXPECT_EQ(kpl::gam_basis_for<Space>(basis), basis);
  kpl::GamOptions options;
  EXPECT_EQ(options.basis, kpl::GamBasis::automatic);
  const std::int64_t n = 1000, p = 7, stored = n * p * (4 + 4 * 8);  // cubic rows in double
  options.basis = kpl::GamBasis::compact;
  const auto compact = kpl::gam_device_bytes(n, p, options, 8);
  options.basis = kpl::GamBasis::evaluated;
  EXPECT_EQ(kpl::gam_device_bytes(n, p, options, 8), compact - stored + n * p * 8);
  options.basis = kpl::GamBasis::automatic;
  EXPECT_EQ(kpl::gam_device_bytes(n, p, options, 8), compact);
  options.mode = kpl::GamMode::gram;
  options.basis = kpl::GamBasis::compact;
  const auto compact_gram = kpl::gam_device_bytes(n, p, options, 8);
  options.basis = kpl::GamBasis::evaluated;
  EXPECT_EQ(kpl::gam_device_bytes(n, p, options, 8), compact_gram + n * p * 8);
  options.basis = kpl::GamBasis::automatic;
  EXPECT_EQ(kpl::gam_device_bytes(n, p, options, 8), compact_gram + n * p * 8);
  options.mode = kpl::GamMode::direct;
  HostMatrix X("X", n, 2);
  HostVector y("y", n);
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = std::sin(0.37 * i);
    X(i, 1) = std::cos(0.11 * i);
    y(i) = X(i, 0) * X(i, 0) + 0.1 * std::sin(3.0 * i);
  }
  options.mstop = 5;
  const auto model = kpl::fit_gam(Space(), to_device_matrix<double, Space>(X),
                                  to_device_vector<double, Space>(y), options);
  EXPECT_EQ(model.options.basis, expected);
}

KPL_EXECUTION_SPACE_TEST(Gam, AutomaticBasisIsEvaluatedOnGpusCompactOnCpus) {
  check_automatic_basis<TypeParam>();
}

KPL_EXECUTION_SPACE_TEST(Gam, MatchesMboostWithDenseBasisAndGemv) {
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k16_d0.h5", kpl::GamMode::direct,
                                            kpl::GamBasis::dense);
}

// Gram mode with a refresh every 7 iterations and room for one cached block
// (every other selection recomputes B_j^T B_s): still mboost's path.
KPL_EXECUTION_SPACE_TEST(Gam, GramModeWithSmallCacheAndFrequentRefresh) {
  check_mboost_reference<TypeParam, double>("gam_small_mboost_k24_d2.h5", kpl::GamMode::gram,
                                            kpl::GamBasis::compact, 7, 100 * 24 * 24 * 8);
}

KPL_EXECUTION_SPACE_TEST(Gam, FloatSelectsTheSameCovariates) {
  check_mboost_reference<TypeParam, float>("gam_small_mboost_k16_d0.h5", kpl::GamMode::direct,
                                           kpl::GamBasis::compact);
  check_mboost_reference<TypeParam, float>("gam_small_mboost_k24_d2.h5", kpl::GamMode::direct,
                                           kpl::GamBasis::compact);
  check_mboost_reference<TypeParam, float>("gam_small_mboost_k16_d0.h5", kpl::GamMode::gram,
                                           kpl::GamBasis::dense);
}

// ----------------------------------------- families against a host reference

// Each family's negative gradient and loss per observation, written out from
// their definitions (f the linear predictor), independent of the library:
// Gaussian: loss (y - f)^2, gradient y - f (mboost's sum of squares takes
//   the negative gradient of (y - f)^2 / 2);
// Binomial, y in {0, 1}, f the log-odds, p = 1 / (1 + e^-f): loss the
//   negative log-likelihood -(y log p + (1 - y) log(1 - p)), gradient y - p;
// Poisson, f = log(mean) = log(mu): loss -log(mu^y e^-mu / y!)
//   = mu - y f + log(y!), gradient y - mu.
double reference_negative_gradient(kpl::GamFamily family, double y, double f) {
  switch (family) {
    case kpl::GamFamily::binomial:
      return y - std::exp(f) / (1 + std::exp(f));
    case kpl::GamFamily::poisson:
      return y - std::exp(f);
    default:
      return y - f;
  }
}

double log_factorial(double y) {
  double sum = 0;
  for (int i = 2; i <= static_cast<int>(y); ++i) sum += std::log(double(i));
  return sum;
}

double reference_loss(kpl::GamFamily family, double y, double f) {
  switch (family) {
    case kpl::GamFamily::binomial: {
      const double p = std::exp(f) / (1 + std::exp(f));
      return -(y * std::log(p) + (1 - y) * std::log(1 - p));
    }
    case kpl::GamFamily::poisson:
      return std::exp(f) - y * f + log_factorial(y);
    default:
      return (y - f) * (y - f);
  }
}

// The library's family functions, evaluated in Space, against the
// definitions above on a grid of responses and predictors.
template <class Space>
void check_family_functions(kpl::GamFamily family) {
  SCOPED_TRACE("family " + kpl::to_string(family));
  std::vector<double> ys;
  if (family == kpl::GamFamily::binomial)
    ys = {0, 1};
  else if (family == kpl::GamFamily::poisson)
    ys = {0, 1, 2, 5, 17};
  else
    ys = {-3.5, 0, 0.25, 7};
  const std::vector<double> fs{-4, -1.5, -0.2, 0, 0.3, 1, 2.5, 6};
  const std::int64_t count = ys.size() * fs.size();
  Kokkos::View<double*, Kokkos::HostSpace> host_y("y", count), host_f("f", count);
  for (std::size_t a = 0; a < ys.size(); ++a)
    for (std::size_t b = 0; b < fs.size(); ++b) {
      host_y(a * fs.size() + b) = ys[a];
      host_f(a * fs.size() + b) = fs[b];
    }
  const auto y = on_device<Space>(host_y);
  const auto f = on_device<Space>(host_f);
  Kokkos::View<double*, typename Space::memory_space> gradient("gradient", count),
      loss("loss", count);
  const kpl::impl::GamFamilyFunctions functions{family};
  Kokkos::parallel_for(
      "test::gam::family", Kokkos::RangePolicy<Space>(0, count), KOKKOS_LAMBDA(const int i) {
        gradient(i) = functions.negative_gradient(y(i), f(i));
        loss(i) = functions.loss(y(i), f(i));
      });
  const auto host_gradient = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gradient);
  const auto host_loss = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), loss);
  for (std::int64_t i = 0; i < count; ++i) {
    const double expected_gradient = reference_negative_gradient(family, host_y(i), host_f(i));
    const double expected_loss = reference_loss(family, host_y(i), host_f(i));
    EXPECT_NEAR(host_gradient(i), expected_gradient, 1e-12 * (1 + std::fabs(expected_gradient)))
        << "y " << host_y(i) << " f " << host_f(i);
    EXPECT_NEAR(host_loss(i), expected_loss, 1e-12 * (1 + std::fabs(expected_loss)))
        << "y " << host_y(i) << " f " << host_f(i);
  }
}

KPL_EXECUTION_SPACE_TEST(Gam, FamilyGradientsAndLossesMatchTheirDefinitions) {
  for (auto family : {kpl::GamFamily::gaussian, kpl::GamFamily::binomial, kpl::GamFamily::poisson})
    check_family_functions<TypeParam>(family);
}

// Algorithm 2 written out on the host in double with dense matrices: the
// basis from the textbook recursion, lambda from penalise_learner (tested
// above), the families' gradients and losses from their definitions (above),
// each learner's fit formed and its RSS summed explicitly.
// With mboost_binomial, the model as mboost's Binomial() writes it: y coded
// -1/+1, f half the log-odds, the negative gradient of log2(1 + e^(-2yf)).
kpl::GamModel host_boosting(const HostMatrix& X, const std::vector<double>& y,
                            const kpl::GamOptions& options, bool mboost_binomial = false) {
  const std::int64_t n = X.extent(0), p = X.extent(1);
  const int k = options.basis_size;
  kpl::GamModel model;
  std::vector<std::vector<double>> B(p, std::vector<double>(n * k));
  std::vector<std::vector<double>> inverse(p);
  const auto penalty = kpl::difference_penalty(k, options.differences);
  for (std::int64_t j = 0; j < p; ++j) {
    double lower = X(0, j), upper = X(0, j);
    for (std::int64_t i = 0; i < n; ++i) {
      lower = std::min(lower, X(i, j));
      upper = std::max(upper, X(i, j));
    }
    const kpl::BsplineMesh mesh{lower, upper, k, options.degree};
    std::vector<double> gram(k * k, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto row = reference_row(mesh, X(i, j));
      for (int a = 0; a < k; ++a) B[j][i * k + a] = row[a];
    }
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        for (std::int64_t i = 0; i < n; ++i) gram[a * k + b] += B[j][i * k + a] * B[j][i * k + b];
    inverse[j] =
        kpl::penalise_learner(gram, penalty, k, options.df, options.df_definition, "x").inverse;
  }
  double mean = 0;
  for (double value : y) mean += value / n;
  model.offset = options.family == kpl::GamFamily::binomial  ? std::log(mean / (1 - mean))
                 : options.family == kpl::GamFamily::poisson ? std::log(mean)
                                                             : mean;
  if (mboost_binomial) model.offset /= 2;
  std::vector<double> f(n, model.offset), u(n);
  model.coefficients.assign(p * k, 0.0);
  const auto risk = [&] {
    double sum = 0;
    for (std::int64_t i = 0; i < n; ++i) sum += reference_loss(options.family, y[i], f[i]);
    return sum;
  };
  model.risk.push_back(risk());
  for (int m = 0; m < options.mstop; ++m) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (mboost_binomial) {
        const double sign = 2 * y[i] - 1, e = std::exp(-2 * sign * f[i]);
        u[i] = 2 * sign * e / (std::log(2.0) * (1 + e));
      } else {
        u[i] = reference_negative_gradient(options.family, y[i], f[i]);
      }
    }
    double best_rss = std::numeric_limits<double>::infinity();
    std::int64_t best = -1;
    std::vector<double> best_fit, best_gamma;
    for (std::int64_t j = 0; j < p; ++j) {
      std::vector<double> c(k, 0.0), gamma(k, 0.0), fit(n, 0.0);
      for (int a = 0; a < k; ++a)
        for (std::int64_t i = 0; i < n; ++i) c[a] += B[j][i * k + a] * u[i];
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b) gamma[a] += inverse[j][a * k + b] * c[b];
      double rss = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        for (int a = 0; a < k; ++a) fit[i] += B[j][i * k + a] * gamma[a];
        rss += (u[i] - fit[i]) * (u[i] - fit[i]);
      }
      if (rss < best_rss) {
        best_rss = rss;
        best = j;
        best_fit = fit;
        best_gamma = gamma;
      }
    }
    model.selected.push_back(best);
    for (std::int64_t i = 0; i < n; ++i) f[i] += options.nu * best_fit[i];
    for (int a = 0; a < k; ++a) model.coefficients[best * k + a] += options.nu * best_gamma[a];
    model.risk.push_back(risk());
  }
  return model;
}

template <class Space>
void check_family_against_host(kpl::GamFamily family) {
  SCOPED_TRACE("family " + kpl::to_string(family));
  const std::int64_t n = 301, p = 4;
  std::mt19937_64 generator(5);
  std::uniform_real_distribution<double> uniform(0, 1);
  HostMatrix X("X", n, p);
  std::vector<double> y(n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) X(i, j) = uniform(generator);
    const double eta = std::sin(2 * M_PI * X(i, 1)) + 0.8 * X(i, 2) - 0.4;
    if (family == kpl::GamFamily::binomial) {
      y[i] = uniform(generator) < 1 / (1 + std::exp(-eta)) ? 1 : 0;
    } else {
      std::poisson_distribution<int> poisson(std::exp(eta));
      y[i] = poisson(generator);
    }
  }
  kpl::GamOptions options;
  options.basis_size = 9;
  options.family = family;
  options.mstop = 40;
  options.nu = 0.3;
  const auto expected = host_boosting(X, y, options);
  auto device_X = on_device<Space>(X);
  Kokkos::View<double*, Kokkos::HostSpace> host_y("y", n);
  for (std::int64_t i = 0; i < n; ++i) host_y(i) = y[i];
  auto device_y = on_device<Space>(host_y);
  const auto model = kpl::fit_gam(Space(), device_X, device_y, options);
  EXPECT_EQ(model.selected, expected.selected);
  EXPECT_NEAR(model.offset, expected.offset, 1e-12);
  EXPECT_LT(relative_difference(model.risk, expected.risk), 1e-10);
  EXPECT_LT(relative_difference(model.coefficients, expected.coefficients), 1e-9);
}

KPL_EXECUTION_SPACE_TEST(Gam, BinomialMatchesHostReference) {
  check_family_against_host<TypeParam>(kpl::GamFamily::binomial);
}

// What gam.hpp and the README say about mboost's Binomial(): its fit with
// step nu is kpl's with step 4 nu / ln 2, with half the coefficients.
KPL_EXECUTION_SPACE_TEST(Gam, BinomialRelatesToMboostsCoding) {
  using Space = TypeParam;
  const std::int64_t n = 240, p = 3;
  std::mt19937_64 generator(21);
  std::uniform_real_distribution<double> uniform(0, 1);
  HostMatrix X("X", n, p);
  std::vector<double> y(n);
  Kokkos::View<double*, Kokkos::HostSpace> host_y("y", n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) X(i, j) = uniform(generator);
    const double eta = 2 * std::cos(4 * X(i, 2)) - 0.5;
    host_y(i) = y[i] = uniform(generator) < 1 / (1 + std::exp(-eta)) ? 1 : 0;
  }
  kpl::GamOptions options;
  options.basis_size = 8;
  options.family = kpl::GamFamily::binomial;
  options.mstop = 30;
  options.nu = 0.05;
  const auto mboost = host_boosting(X, y, options, true);
  options.nu = 4 * 0.05 / std::log(2.0);
  auto device_X = on_device<Space>(X);
  auto device_y = on_device<Space>(host_y);
  const auto model = kpl::fit_gam(Space(), device_X, device_y, options);
  EXPECT_EQ(model.selected, mboost.selected);
  EXPECT_NEAR(model.offset, 2 * mboost.offset, 1e-12);
  std::vector<double> doubled(mboost.coefficients);
  for (double& value : doubled) value *= 2;
  EXPECT_LT(relative_difference(model.coefficients, doubled), 1e-9);
}

KPL_EXECUTION_SPACE_TEST(Gam, PoissonMatchesHostReference) {
  check_family_against_host<TypeParam>(kpl::GamFamily::poisson);
}

KPL_EXECUTION_SPACE_TEST(Gam, GaussianMatchesHostReferenceOnOddSizes) {
  using Space = TypeParam;
  const std::int64_t n = 37, p = 3;
  std::mt19937_64 generator(9);
  std::uniform_real_distribution<double> uniform(-2, 3);
  HostMatrix X("X", n, p);
  std::vector<double> y(n);
  Kokkos::View<double*, Kokkos::HostSpace> host_y("y", n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) X(i, j) = uniform(generator);
    host_y(i) = y[i] = X(i, 0) * X(i, 0) + uniform(generator);
  }
  for (int degree : {1, 2, 3}) {
    kpl::GamOptions options;
    options.basis_size = 7;
    options.degree = degree;
    options.differences = degree == 1 ? 1 : 2;
    options.df = 3.5;
    options.mstop = 25;
    const auto expected = host_boosting(X, y, options);
    auto device_X = on_device<Space>(X);
    auto device_y = on_device<Space>(host_y);
    for (auto mode : {kpl::GamMode::direct, kpl::GamMode::gram}) {
      options.mode = mode;
      const auto model = kpl::fit_gam(Space(), device_X, device_y, options);
      EXPECT_EQ(model.selected, expected.selected) << "degree " << degree;
      EXPECT_LT(relative_difference(model.coefficients, expected.coefficients), 1e-9);
    }
    options.mstop = 0;  // the offset alone
    const auto empty = kpl::fit_gam(Space(), device_X, device_y, options);
    EXPECT_TRUE(empty.selected.empty());
    ASSERT_EQ(empty.risk.size(), 1u);
    EXPECT_NEAR(empty.risk[0], expected.risk[0], 1e-9 * expected.risk[0]);
  }
}

// The simulation of Sieminski & Lee with n rows, p covariates of which
// `informative` carry signal.
kpl::GamSimulation simulation_of(std::int64_t n, std::int64_t p, std::int64_t informative,
                                 std::uint64_t seed) {
  kpl::GamSimulation simulation;
  simulation.observations = n;
  simulation.covariates = p;
  simulation.informative = informative;
  simulation.seed = seed;
  return simulation;
}

// Gram mode without weights copies a block selected before from the
// transpose in its own cache slot (on host backends) instead of summing it
// again; with weights it sums every block. Weights of one give the same sums
// term by term, so both fits must agree to the last bit.
KPL_EXECUTION_SPACE_TEST(Gam, GramModeReusedBlocksKeepTheBits) {
  using Space = TypeParam;
  const auto data = kpl::simulate_gam(simulation_of(1500, 40, 8, 5));
  auto X = on_device<Space>(data.X);
  auto y = on_device<Space>(data.y);
  kpl::GamOptions options;
  options.mstop = 200;
  options.mode = kpl::GamMode::gram;
  const auto plain = kpl::fit_gam(Space(), X, y, options);
  const std::set<std::int64_t> chosen(plain.selected.begin(), plain.selected.end());
  ASSERT_GE(chosen.size(), 3u);  // blocks to reuse
  kpl::GamObservations<typename Space::memory_space> observations;
  kpl::hdf5::HostArray<double, 1> ones("ones", 1500);
  Kokkos::deep_copy(ones, 1.0);
  observations.weights = to_device_vector<double, Space>(ones);
  const auto weighted = kpl::fit_gam(Space(), X, y, observations, options);
  EXPECT_EQ(plain.selected, weighted.selected);
  EXPECT_EQ(plain.risk, weighted.risk);
  EXPECT_EQ(plain.coefficients, weighted.coefficients);
}

// Gram mode launches its iterations in batches that double, up to the next
// refresh, while no selection halts them (impl/gam_gram_iteration.hpp); a
// learner selected for the first time halts the device's run, and the
// iterations launched after it in its batch must change nothing until its
// blocks are formed. With one refresh at the end, learners selected first
// well after the one before halt inside such batches: the fit still follows
// the direct mode's path, and its progress is reported between batches
// with the risks of the model.
KPL_EXECUTION_SPACE_TEST(Gam, GramModeHaltsInsideBatchesOfIterations) {
  using Space = TypeParam;
  const auto data = kpl::simulate_gam(simulation_of(1500, 40, 20, 5));
  auto X = on_device<Space>(data.X);
  auto y = on_device<Space>(data.y);
  kpl::GamOptions options;
  options.mstop = 300;
  options.basis = kpl::GamBasis::compact;
  const auto direct = kpl::fit_gam(Space(), X, y, options);
  options.mode = kpl::GamMode::gram;
  options.gram_refresh = 1000;
  std::vector<std::pair<int, double>> reports;
  kpl::GamProgress progress;
  progress.interval_seconds = 0;
  progress.report = [&](int m, double risk) { reports.push_back({m, risk}); };
  const auto gram = kpl::fit_gam(Space(), X, y, options, nullptr, progress);
  std::vector<std::int64_t> first_selections;
  for (std::size_t m = 0; m < gram.selected.size(); ++m)
    if (std::find(gram.selected.begin(), gram.selected.begin() + m, gram.selected[m]) ==
        gram.selected.begin() + m)
      first_selections.push_back(m);
  std::int64_t widest_gap = 0;
  for (std::size_t i = 1; i < first_selections.size(); ++i)
    widest_gap = std::max(widest_gap, first_selections[i] - first_selections[i - 1]);
  ASSERT_GE(widest_gap, 8) << "no learner is first selected inside a batch of several iterations";
  EXPECT_EQ(gram.selected, direct.selected);
  EXPECT_LT(relative_difference(gram.risk, direct.risk), 1e-9);
  EXPECT_LT(relative_difference(gram.coefficients, direct.coefficients), 1e-9);
  ASSERT_FALSE(reports.empty());
  EXPECT_LT(reports.size(), 300u);  // between batches, not after every iteration
  EXPECT_EQ(reports.back().first, 300);
  for (std::size_t r = 0; r < reports.size(); ++r) {
    if (r > 0) EXPECT_GT(reports[r].first, reports[r - 1].first);
    EXPECT_EQ(reports[r].second, gram.risk[reports[r].first]) << "after " << reports[r].first;
  }
}

// A Gram iteration copies four k x k blocks to team scratch; with k = 80
// they outgrow a GPU's shared memory and go to level-1 scratch instead.
KPL_EXECUTION_SPACE_TEST(Gam, GramModeWithBlocksBeyondSharedMemory) {
  using Space = TypeParam;
  const auto data = kpl::simulate_gam(simulation_of(1500, 6, 3, 11));
  auto X = on_device<Space>(data.X);
  auto y = on_device<Space>(data.y);
  kpl::GamOptions options;
  options.basis_size = 80;
  options.mstop = 40;
  options.basis = kpl::GamBasis::compact;
  const auto direct = kpl::fit_gam(Space(), X, y, options);
  options.mode = kpl::GamMode::gram;
  const auto gram = kpl::fit_gam(Space(), X, y, options);
  EXPECT_EQ(gram.selected, direct.selected);
  EXPECT_LT(relative_difference(gram.risk, direct.risk), 1e-9);
  EXPECT_LT(relative_difference(gram.coefficients, direct.coefficients), 1e-9);
}

// ------------------------------------------------ simulation and validation

KPL_EXECUTION_SPACE_TEST(Gam, FindsTheSimulationsInformativeCovariates) {
  using Space = TypeParam;
  const auto data = kpl::simulate_gam(simulation_of(1500, 40, 8, 3));
  ASSERT_EQ(data.informative.size(), 8u);
  auto X = on_device<Space>(data.X);
  auto y = on_device<Space>(data.y);
  kpl::GamOptions options;
  options.mstop = 300;
  const auto model = kpl::fit_gam(Space(), X, y, options);
  const std::set<std::int64_t> chosen(model.selected.begin(), model.selected.end());
  for (auto j : data.informative) EXPECT_TRUE(chosen.count(j)) << "informative covariate " << j;
  // The informative covariates take nearly every iteration.
  std::int64_t informative_steps = 0;
  for (auto j : model.selected)
    informative_steps += std::count(data.informative.begin(), data.informative.end(), j);
  EXPECT_GT(informative_steps, 0.95 * options.mstop);
  EXPECT_LT(model.risk.back(), 0.05 * model.risk.front());
}

KPL_EXECUTION_SPACE_TEST(Gam, CrossValidationPicksTheLeastOutOfFoldRisk) {
  using Space = TypeParam;
  auto simulation = simulation_of(400, 6, 2, kpl::GamSimulation().seed);
  simulation.noise_variance = 4;
  const auto data = kpl::simulate_gam(simulation);
  auto X = on_device<Space>(data.X);
  auto y = on_device<Space>(data.y);
  kpl::GamOptions options;
  options.mstop = 60;
  options.nu = 0.3;
  const auto cv = kpl::cross_validate_gam(Space(), X, y, options, 4, 7);
  ASSERT_EQ(cv.risk.size(), 4u * 61);
  std::vector<double> mean(61, 0.0);
  for (int fold = 0; fold < 4; ++fold)
    for (int m = 0; m <= 60; ++m) mean[m] += cv.risk[fold * 61 + m] / 4;
  EXPECT_EQ(cv.best_mstop, std::min_element(mean.begin(), mean.end()) - mean.begin());
  EXPECT_LT(mean[cv.best_mstop], 0.6 * mean[0]);  // boosting helps out of fold
  // At m = 0 the out-of-fold risk is the held-out rows' squared deviation
  // from the training rows' mean: about the variance of y.
  double y_mean = 0, y_variance = 0;
  for (std::size_t i = 0; i < data.y.extent(0); ++i) y_mean += data.y(i) / data.y.extent(0);
  for (std::size_t i = 0; i < data.y.extent(0); ++i)
    y_variance += (data.y(i) - y_mean) * (data.y(i) - y_mean) / data.y.extent(0);
  EXPECT_NEAR(mean[0], y_variance, 0.1 * y_variance);
  // Exactly, per fold: the folds come from the documented permutation, and
  // at m = 0 a fold's risk is the mean squared deviation of its rows from
  // the other rows' mean.
  const std::int64_t n = data.y.extent(0);
  std::vector<std::int64_t> order(n);
  for (std::int64_t i = 0; i < n; ++i) order[i] = i;
  // Fisher-Yates over mt19937_64 outputs, j uniform in [0, i] by rejecting
  // outputs below 2^64 mod (i + 1): the same permutation on every library.
  std::mt19937_64 generator(7);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const std::uint64_t count = i + 1, threshold = (0 - count) % count;
    std::uint64_t value = generator();
    while (value < threshold) value = generator();
    std::swap(order[i], order[value % count]);
  }
  for (int fold = 0; fold < 4; ++fold) {
    double sum = 0, count = 0;
    for (std::int64_t position = 0; position < n; ++position)
      if (position % 4 != fold) {
        sum += data.y(order[position]);
        count += 1;
      }
    const double training_mean = sum / count;
    double risk = 0, rows = 0;
    for (std::int64_t position = 0; position < n; ++position)
      if (position % 4 == fold) {
        const double deviation = data.y(order[position]) - training_mean;
        risk += deviation * deviation;
        rows += 1;
      }
    EXPECT_NEAR(cv.risk[fold * 61], risk / rows, 1e-10 * risk / rows) << "fold " << fold;
    // and boosting lowers every fold's out-of-fold risk at first.
    EXPECT_LT(cv.risk[fold * 61 + 10], cv.risk[fold * 61]) << "fold " << fold;
  }
  EXPECT_THROW(kpl::cross_validate_gam(Space(), X, y, options, 1), std::invalid_argument);
}

template <class Space>
void expect_fit_error(HostMatrix X, std::vector<double> y_values, kpl::GamOptions options,
                      const std::string& message_part) {
  Kokkos::View<double*, Kokkos::HostSpace> y("y", y_values.size());
  for (std::size_t i = 0; i < y_values.size(); ++i) y(i) = y_values[i];
  auto device_X = on_device<Space>(X);
  auto device_y = on_device<Space>(y);
  try {
    kpl::fit_gam(Space(), device_X, device_y, options);
    ADD_FAILURE() << "no error; expected one mentioning '" << message_part << "'";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find(message_part), std::string::npos)
        << "message: " << error.what();
  }
}

KPL_EXECUTION_SPACE_TEST(Gam, BadInputIsAClearError) {
  using Space = TypeParam;
  const std::int64_t n = 50;
  HostMatrix X("X", n, 2);
  std::vector<double> y(n);
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = i * 0.1;
    X(i, 1) = std::sin(double(i));
    y[i] = i % 2;
  }
  kpl::GamOptions options;
  options.basis_size = 8;
  expect_fit_error<Space>(HostMatrix("X", 5, 2), std::vector<double>(5, 1.0), options,
                          "fewer than the basis size");
  expect_fit_error<Space>(HostMatrix("X", n, 0), y, options, "no covariates");
  expect_fit_error<Space>(X, std::vector<double>(n - 1, 1.0), options, "y 49 values");
  HostMatrix constant("X", n, 2);
  Kokkos::deep_copy(constant, X);
  for (std::int64_t i = 0; i < n; ++i) constant(i, 1) = 2.5;
  expect_fit_error<Space>(constant, y, options, "covariate 1 (0-based column of X) is constant");
  HostMatrix with_nan("X", n, 2);
  Kokkos::deep_copy(with_nan, X);
  with_nan(3, 1) = std::numeric_limits<double>::quiet_NaN();
  expect_fit_error<Space>(with_nan, y, options, "NaN or infinite");
  auto infinite_y = y;
  infinite_y[7] = std::numeric_limits<double>::infinity();
  expect_fit_error<Space>(X, infinite_y, options, "NaN or infinite");
  auto binomial = options;
  binomial.family = kpl::GamFamily::binomial;
  auto not_binary = y;
  not_binary[4] = 2;
  expect_fit_error<Space>(X, not_binary, binomial, "not 0 or 1");
  expect_fit_error<Space>(X, std::vector<double>(n, 1.0), binomial, "single class");
  auto poisson = options;
  poisson.family = kpl::GamFamily::poisson;
  auto negative = y;
  negative[0] = -1;
  expect_fit_error<Space>(X, negative, poisson, "negative");
  auto bad_df = options;
  bad_df.df = 0;
  expect_fit_error<Space>(X, y, bad_df, "df 0");
  bad_df.df = 8.5;
  expect_fit_error<Space>(X, y, bad_df, "outside (0, basis size 8]");
  bad_df.df = 1.5;  // below the second-difference penalty's null space (2)
  expect_fit_error<Space>(X, y, bad_df, "not reachable");
  auto gram_binomial = binomial;
  gram_binomial.mode = kpl::GamMode::gram;
  expect_fit_error<Space>(X, y, gram_binomial, "Gram mode needs the Gaussian family");
}

// ------------------------------------------------------------ determinism
// The same fit on the same backend and thread count selects the same
// learners and produces the same bits every time, float basis included:
// covariates 0 and 1 are the same column (an exact tie, which the lowest
// index must win every time), covariate 2 differs from them by 1e-12 (a near
// tie). Rows enough for several chunks per learner, so that partial sums are
// combined across teams.
template <class Space, class T>
void check_repeatable(kpl::GamBasis basis) {
  SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float" : "double") + " basis " +
               kpl::to_string(basis));
  const std::int64_t n = 20000;
  HostMatrix X("X", n, 3);
  Kokkos::View<double*, Kokkos::HostSpace> y("y", n);
  std::mt19937_64 generator(99);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::normal_distribution<double> noise(0, 0.3);
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = X(i, 1) = uniform(generator);
    X(i, 2) = X(i, 0) * (1 + 1e-12);
    y(i) = std::sin(6 * X(i, 0)) + noise(generator);
  }
  const auto device_X = to_device_matrix<T, Space>(X);
  const auto device_y = to_device_vector<T, Space>(y);
  kpl::GamOptions options;
  options.basis_size = 12;
  options.mstop = 40;
  options.basis = basis;
  const auto first = kpl::fit_gam(Space(), device_X, device_y, options);
  for (const auto s : first.selected) EXPECT_NE(s, 1) << "the exact tie went to the higher index";
  for (int run = 1; run < 20; ++run) {
    const auto again = kpl::fit_gam(Space(), device_X, device_y, options);
    ASSERT_EQ(again.selected, first.selected) << "run " << run;
    ASSERT_EQ(again.coefficients, first.coefficients) << "run " << run;
    ASSERT_EQ(again.risk, first.risk) << "run " << run;
  }
}
KPL_EXECUTION_SPACE_TEST(Gam, SameFitSameSelectionsEveryRun) {
  check_repeatable<TypeParam, double>(kpl::GamBasis::compact);
  check_repeatable<TypeParam, float>(kpl::GamBasis::compact);
  check_repeatable<TypeParam, float>(kpl::GamBasis::dense);
  check_repeatable<TypeParam, double>(kpl::GamBasis::evaluated);
}

// Scores that are not finite never win the selection; data that make the
// knot spacing over- or underflow are refused before any basis is built.
template <class Space>
void check_non_finite_never_selected() {
  using Memory = typename Space::memory_space;
  Kokkos::View<double*, Memory> scores("scores", 4);
  Kokkos::View<int*, Memory> selected("selected", 1);
  Kokkos::View<int, Memory> current("current");
  auto host = Kokkos::create_mirror_view(scores);
  host(0) = std::numeric_limits<double>::quiet_NaN();
  host(1) = -3;
  host(2) = std::numeric_limits<double>::quiet_NaN();
  host(3) = -2;
  Kokkos::deep_copy(scores, host);
  // The space's own team size, then teams of 2 threads (where it has them).
  for (int team_size : {0, std::min(2, Space().concurrency())}) {
    kpl::impl::gam_select(Space(), 4, scores, selected, 0, current, team_size);
    int chosen = -1;
    Kokkos::deep_copy(chosen, current);
    EXPECT_EQ(chosen, 1) << "team size " << team_size;
  }
  // The least score wins, ties to the lowest index.
  host(0) = 4;
  host(1) = -1;
  host(2) = -5;
  host(3) = -5;
  Kokkos::deep_copy(scores, host);
  for (int team_size : {0, std::min(2, Space().concurrency())}) {
    kpl::impl::gam_select(Space(), 4, scores, selected, 0, current, team_size);
    int chosen = -1;
    Kokkos::deep_copy(chosen, current);
    EXPECT_EQ(chosen, 2) << "team size " << team_size;
  }
}
KPL_EXECUTION_SPACE_TEST(Gam, NanScoreNeverWins) { check_non_finite_never_selected<TypeParam>(); }

// Direct mode's selection and step in one kernel (impl/gam_take_step.hpp),
// by the space's own team size and by teams of 2 threads: the least score
// wins (a NaN never, ties to the lowest index), step = nu M_s c_s against
// plain host sums, coefficients_s += step and no other learner's moved;
// and the same bits as gam_select and gam_take_step launched in turn.
template <class Space>
void check_select_and_take_step() {
  using Memory = typename Space::memory_space;
  const int p = 5, k = 6, s = 2;
  const double nu = 0.1;
  std::mt19937_64 generator(11);
  std::uniform_real_distribution<double> uniform(-1, 1);
  HostVector host_scores("scores", p), host_inverse("M", p * k * k), host_c("c", p * k),
      host_start("coefficients", p * k);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double scores[p] = {0.5, nan, -2, 3, -2};
  for (int j = 0; j < p; ++j) host_scores(j) = scores[j];
  for (int e = 0; e < p * k * k; ++e) host_inverse(e) = uniform(generator);
  for (int e = 0; e < p * k; ++e) {
    host_c(e) = uniform(generator);
    host_start(e) = uniform(generator);
  }
  std::vector<double> expected_step(k);
  for (int a = 0; a < k; ++a) {
    double sum = 0;
    for (int b = 0; b < k; ++b) sum += host_inverse((s * k + a) * k + b) * host_c(s * k + b);
    expected_step[a] = nu * sum;
  }
  const auto run = [&](bool fused, int team_size) {
    const auto scores_view = on_device<Space>(host_scores);
    const auto inverse = on_device<Space>(host_inverse);
    const auto c = on_device<Space>(host_c);
    Kokkos::View<double*, Memory> coefficients("coefficients", p * k), step("step", k);
    Kokkos::deep_copy(coefficients, host_start);  // a copy: the kernels change it
    Kokkos::View<int*, Memory> selected("selected", 3);
    Kokkos::View<int, Memory> current("current");
    if (fused) {
      kpl::impl::gam_select_and_take_step(Space(), p, scores_view, selected, 1, current, k, nu,
                                          inverse, c, step, coefficients, team_size);
    } else {
      kpl::impl::gam_select(Space(), p, scores_view, selected, 1, current, team_size);
      kpl::impl::gam_take_step(Space(), k, nu, current, inverse, c, step, coefficients);
    }
    const auto host_selected = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), selected);
    int chosen = -1;
    Kokkos::deep_copy(chosen, current);
    std::vector<double> out(k + p * k);
    Kokkos::deep_copy(Kokkos::View<double*, Kokkos::HostSpace>(out.data(), k), step);
    Kokkos::deep_copy(Kokkos::View<double*, Kokkos::HostSpace>(out.data() + k, p * k),
                      coefficients);
    EXPECT_EQ(host_selected(1), s);
    EXPECT_EQ(chosen, s);
    return out;
  };
  for (int team_size : {0, std::min(2, Space().concurrency())}) {
    SCOPED_TRACE("team size " + std::to_string(team_size));
    const auto fused = run(true, team_size);
    for (int a = 0; a < k; ++a) {
      EXPECT_NEAR(fused[a], expected_step[a], 1e-15) << "step " << a;
      EXPECT_NEAR(fused[k + s * k + a], host_start(s * k + a) + expected_step[a], 1e-15);
    }
    for (int e = 0; e < p * k; ++e)
      if (e / k != s) EXPECT_EQ(fused[k + e], host_start(e)) << "coefficient " << e;
    EXPECT_EQ(fused, run(false, team_size)) << "the two kernels in turn";
  }
}
KPL_EXECUTION_SPACE_TEST(Gam, SelectAndTakeStepInOneKernel) {
  check_select_and_take_step<TypeParam>();
}

// x transposed for the evaluated basis through 32 x 32 tiles
// (impl/evaluated_basis_transpose_product.hpp), as GPUs take a row-major X:
// 70 rows and 45 covariates (partial tiles both ways), by teams of the GPU's
// 256 threads (one on CPUs) and of 2, against the transpose read off on the
// host; a value left unwritten stays NaN and fails.
template <class Space>
void check_transpose_by_tiles() {
  using Memory = typename Space::memory_space;
  const std::int64_t n = 70, p = 45;
  HostMatrix host_X("X", n, p);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < p; ++j) host_X(i, j) = 1000.0 * i + j + 0.5;
  const auto X = on_device<Space>(host_X);
  const bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible;
  for (const int team_size : {on_host ? 1 : 256, std::min(2, Space().concurrency())}) {
    Kokkos::View<double**, Kokkos::LayoutRight, Memory> covariates("covariates", p, n);
    Kokkos::deep_copy(covariates, std::numeric_limits<double>::quiet_NaN());
    kpl::impl::transpose_covariates_by_tiles(Space(), X, covariates, team_size);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), covariates);
    int wrong = 0;
    for (std::int64_t j = 0; j < p; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        if (!(host(j, i) == host_X(i, j))) ++wrong;
    EXPECT_EQ(wrong, 0) << "team size " << team_size;
  }
}
KPL_EXECUTION_SPACE_TEST(Gam, CovariatesTransposedByTiles) {
  check_transpose_by_tiles<TypeParam>();
}

KPL_EXECUTION_SPACE_TEST(Gam, KnotSpacingMustBeANormalNumber) {
  using Space = TypeParam;
  const std::int64_t n = 60;
  HostMatrix X("X", n, 2);
  std::vector<double> y(n);
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = double(i) / n;
    X(i, 1) = i % 2 == 0 ? -1e308 : 1e308;  // the range overflows
    y[i] = std::sin(double(i));
  }
  kpl::GamOptions options;
  options.basis_size = 8;
  expect_fit_error<Space>(X, y, options,
                          "covariate 1 (0-based column of X) spans [-1e+308, 1e+308]");
  for (std::int64_t i = 0; i < n; ++i) X(i, 1) = (i % 3) * 4.9e-324;  // denormals 0 to 2 ulp
  expect_fit_error<Space>(X, y, options, "knot spacing underflows");
}

KPL_EXECUTION_SPACE_TEST(Gam, PredictionContinuesLinearlyOutsideTheRange) {
  using Space = TypeParam;
  const std::int64_t n = 200;
  HostMatrix X("X", n, 1);
  Kokkos::View<double*, Kokkos::HostSpace> y("y", n);
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = double(i) / (n - 1);
    y(i) = std::cos(3 * X(i, 0)) + X(i, 0) * X(i, 0);
  }
  kpl::GamOptions options;
  options.basis_size = 10;
  options.mstop = 50;
  auto device_X = on_device<Space>(X);
  auto device_y = on_device<Space>(y);
  const auto model = kpl::fit_gam(Space(), device_X, device_y, options);
  const std::vector<double> points{1.0, 1.5, 2.0, 0.0, -0.5, -1.0};
  HostMatrix at("at", points.size(), 1);
  for (std::size_t i = 0; i < points.size(); ++i) at(i, 0) = points[i];
  auto device_at = on_device<Space>(at);
  Kokkos::View<double*, typename Space::memory_space> prediction("prediction", points.size());
  Kokkos::View<double**, typename Space::memory_space> partial("partial", points.size(), 1);
  kpl::predict_gam(Space(), model, device_at, prediction, partial);
  auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), prediction);
  auto effects = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), partial);
  EXPECT_NEAR(f(2) - f(1), f(1) - f(0), 1e-10);  // straight beyond the upper end
  EXPECT_NEAR(f(5) - f(4), f(4) - f(3), 1e-10);  // and below the lower one
  // Each effect is the model's coefficients on the textbook basis row,
  // extended linearly outside the range (reference_row).
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto row = reference_row(model.meshes[0], points[i]);
    double effect = 0;
    for (int a = 0; a < options.basis_size; ++a) effect += row[a] * model.coefficients[a];
    EXPECT_NEAR(effects(i, 0), effect, 1e-10 * (1 + std::fabs(effect))) << "x " << points[i];
    EXPECT_NEAR(f(i), model.offset + effect, 1e-10 * (1 + std::fabs(effect))) << "x " << points[i];
  }
}

}  // namespace

// ------------------------------------------- observation weights, bootstrap

// Integer weights are frequencies (mboost keeps them as they are): the fit
// with weight w_i is the fit of the data with row i repeated w_i times, a
// reference made without weights. Zero-weight rows are left out (their
// covariates still set the knots: the range here is that of every row).
KPL_EXECUTION_SPACE_TEST(Gam, IntegerWeightsAreRepeatedRows) {
  using Space = TypeParam;
  const kpl::hdf5::InputFile train(data_directory + "gam_small.h5");
  const auto X_all = train.read<double, 2>("/X");
  const auto y_all = train.read<double, 1>("/y");
  const std::int64_t n = 120, p = X_all.extent(1);
  kpl::hdf5::HostArray<double, 2> X("X", n, p);
  kpl::hdf5::HostArray<double, 1> y("y", n), w("w", n);
  std::vector<std::int64_t> repeated;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) X(i, j) = X_all(i, j);
    y(i) = y_all(i);
    w(i) = double(i % 4);  // 0, 1, 2, 3
    for (int copy = 0; copy < int(w(i)); ++copy) repeated.push_back(i);
  }
  // Keep every covariate's extremes among the repeated rows: the same knots.
  kpl::hdf5::HostArray<double, 2> X_repeated("X_repeated", repeated.size(), p);
  kpl::hdf5::HostArray<double, 1> y_repeated("y_repeated", repeated.size());
  for (std::size_t r = 0; r < repeated.size(); ++r) {
    for (std::int64_t j = 0; j < p; ++j) X_repeated(r, j) = X(repeated[r], j);
    y_repeated(r) = y(repeated[r]);
  }
  for (std::int64_t j = 0; j < p; ++j) {  // rows of weight 0 must not widen the range
    double low = X_repeated(0, j), high = low;
    for (std::size_t r = 0; r < repeated.size(); ++r) {
      low = std::min(low, X_repeated(r, j));
      high = std::max(high, X_repeated(r, j));
    }
    for (std::int64_t i = 0; i < n; ++i) X(i, j) = std::min(high, std::max(low, X(i, j)));
  }
  kpl::GamOptions options;
  options.mstop = 30;
  const auto weights = to_device_vector<double, Space>(w);
  kpl::GamObservations<typename Space::memory_space> observations;
  observations.weights = weights;
  const auto weighted = kpl::fit_gam(Space(), to_device_matrix<double, Space>(X),
                                     to_device_vector<double, Space>(y), observations, options);
  const auto plain = kpl::fit_gam(Space(), to_device_matrix<double, Space>(X_repeated),
                                  to_device_vector<double, Space>(y_repeated), options);
  EXPECT_EQ(weighted.selected, plain.selected);
  EXPECT_LT(relative_difference(weighted.risk, plain.risk), 1e-10);
  EXPECT_LT(relative_difference(weighted.coefficients, plain.coefficients), 1e-9);
  EXPECT_LT(relative_difference(weighted.lambda, plain.lambda), 1e-8);
  EXPECT_NEAR(weighted.offset, plain.offset, 1e-12 * std::fabs(plain.offset));
  // varimp divides by the rows, zero-weight ones counted: n, not the repeats.
  double reduction = 0;
  for (double v : weighted.varimp) reduction += v;
  EXPECT_NEAR(reduction * n, weighted.risk.front() - weighted.risk.back(),
              1e-10 * weighted.risk.front());
}

// The bootstrap's draws: n per resample, never a zero-weight row, each row
// drawn in proportion to its weight (within 5 standard deviations of the
// mean count over many resamples), and a block of rows (one process's) gets
// exactly the counts of those rows in the whole.
TEST(GamBootstrap, DrawsFollowTheWeights) {
  const std::int64_t n = 40;
  const int resamples = 2000;
  std::vector<double> weights(n);
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) total += weights[i] = i % 5 == 0 ? 0.0 : 0.5 + i % 3;
  const auto counts = kpl::impl::gam_bootstrap_counts(weights, true, resamples, 11, 0, n);
  std::vector<double> mean(n, 0.0);
  for (const auto& resample : counts) {
    double drawn = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      drawn += resample[i];
      mean[i] += resample[i] / resamples;
    }
    EXPECT_EQ(drawn, n);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const double probability = weights[i] / total;
    if (probability == 0) {
      EXPECT_EQ(mean[i], 0) << "row " << i << " has weight 0";
      continue;
    }
    const double expected = n * probability;
    const double deviation = std::sqrt(n * probability * (1 - probability) / resamples);
    EXPECT_NEAR(mean[i], expected, 5 * deviation) << "row " << i;
  }
  const auto block = kpl::impl::gam_bootstrap_counts(weights, true, resamples, 11, 13, 9);
  for (int b = 0; b < resamples; ++b)
    for (std::int64_t i = 0; i < 9; ++i) ASSERT_EQ(block[b][i], counts[b][13 + i]);
  const auto unweighted = kpl::impl::gam_bootstrap_counts(weights, false, 3, 11, 0, n);
  for (const auto& resample : unweighted)
    EXPECT_EQ(std::accumulate(resample.begin(), resample.end(), 0.0), double(n));
}
