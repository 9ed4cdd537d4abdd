// kpl::nnls on every backend: scipy's solutions of the reference cases
// (tests/data/nnls, scipy.optimize.nnls 1.10.1), a plain host Lawson–Hanson
// solver in double (fresh least squares every step, no updating), the cases
// of scipy's and Eigen's NNLS tests in spirit (zero b, exact non-negative
// solutions, badly scaled columns, cycling-prone monotone fits, iteration
// caps), non-finite input, the passive-set cap, the QR update/downdate
// against a fresh QR of the same passive set, and the errors.
#include "execution_space_test.hpp"
#include "kkt_reference.hpp"

#include <kpl/hdf5_io.hpp>
#include <kpl/nnls.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using kpl::NnlsOptions;
using kpl::NnlsStatus;

// Row-major host matrices and batches in double.
struct Matrix {
  std::int64_t rows = 0, columns = 0;
  std::vector<double> values;
  double operator()(std::int64_t i, std::int64_t j) const { return values[i * columns + j]; }
  double& operator()(std::int64_t i, std::int64_t j) { return values[i * columns + j]; }
};

Matrix make_matrix(std::int64_t rows, std::int64_t columns) {
  return {rows, columns, std::vector<double>(std::size_t(rows * columns), 0.0)};
}

Matrix random_matrix(std::int64_t rows, std::int64_t columns, std::mt19937_64& generator) {
  std::normal_distribution<double> normal;
  Matrix a = make_matrix(rows, columns);
  for (auto& value : a.values) value = normal(generator);
  return a;
}

Matrix row(const Matrix& batch, std::int64_t r) {
  Matrix one = make_matrix(1, batch.columns);
  std::copy(batch.values.begin() + r * batch.columns,
            batch.values.begin() + (r + 1) * batch.columns, one.values.begin());
  return one;
}

// ------------------------------------------------------- host reference
// Lawson–Hanson as in the 1974 book, with the passive least-squares problem
// solved from scratch (modified Gram-Schmidt, twice) at every step.
std::vector<double> passive_least_squares(const Matrix& a, const std::vector<double>& b,
                                          const std::vector<int>& passive) {
  const std::int64_t m = a.rows;
  const std::size_t k = passive.size();
  std::vector<std::vector<double>> q(k, std::vector<double>(std::size_t(m)));
  std::vector<std::vector<double>> r(k, std::vector<double>(k, 0.0));
  for (std::size_t c = 0; c < k; ++c) {
    for (std::int64_t i = 0; i < m; ++i) q[c][i] = a(i, passive[c]);
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t p = 0; p < c; ++p) {
        double dot = 0;
        for (std::int64_t i = 0; i < m; ++i) dot += q[p][i] * q[c][i];
        for (std::int64_t i = 0; i < m; ++i) q[c][i] -= dot * q[p][i];
        r[p][c] += dot;
      }
    }
    double norm = 0;
    for (std::int64_t i = 0; i < m; ++i) norm += q[c][i] * q[c][i];
    norm = std::sqrt(norm);
    r[c][c] = norm;
    for (std::int64_t i = 0; i < m; ++i) q[c][i] /= norm;
  }
  std::vector<double> z(k);
  for (std::size_t c = 0; c < k; ++c) {
    double dot = 0;
    for (std::int64_t i = 0; i < m; ++i) dot += q[c][i] * b[i];
    z[c] = dot;
  }
  for (std::size_t c = k; c-- > 0;) {
    for (std::size_t p = c + 1; p < k; ++p) z[c] -= r[c][p] * z[p];
    z[c] /= r[c][c];
  }
  return z;
}

std::vector<double> reference_nnls(const Matrix& a, const std::vector<double>& b) {
  const std::int64_t m = a.rows, n = a.columns;
  std::vector<double> x(std::size_t(n), 0.0);
  std::vector<int> passive;
  std::vector<bool> in_passive(std::size_t(n), false);
  double one_norm = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    double sum = 0;
    for (std::int64_t i = 0; i < m; ++i) sum += std::abs(a(i, j));
    one_norm = std::max(one_norm, sum);
  }
  const double tolerance = 10 * 2.220446049250313e-16 * one_norm * double(std::max(m, n));
  for (int iteration = 0; iteration < 3 * n + 10; ++iteration) {
    std::vector<double> residual(b);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) residual[i] -= a(i, j) * x[j];
    int best = -1;
    double best_gradient = tolerance;
    for (std::int64_t j = 0; j < n; ++j) {
      if (in_passive[j]) continue;
      double gradient = 0;
      for (std::int64_t i = 0; i < m; ++i) gradient += a(i, j) * residual[i];
      if (gradient > best_gradient) best_gradient = gradient, best = int(j);
    }
    if (best < 0) break;
    passive.push_back(best);
    in_passive[best] = true;
    while (true) {
      const auto z = passive_least_squares(a, b, passive);
      double alpha = 2;
      for (std::size_t p = 0; p < passive.size(); ++p)
        if (z[p] <= 0) alpha = std::min(alpha, x[passive[p]] / (x[passive[p]] - z[p]));
      if (alpha == 2) {
        for (std::size_t p = 0; p < passive.size(); ++p) x[passive[p]] = z[p];
        break;
      }
      for (std::size_t p = 0; p < passive.size(); ++p)
        x[passive[p]] += alpha * (z[p] - x[passive[p]]);
      std::vector<int> kept;
      for (int j : passive) {
        if (x[j] > 1e-300) {
          kept.push_back(j);
        } else {
          x[j] = 0;
          in_passive[j] = false;
        }
      }
      passive = kept;
    }
  }
  return x;
}

// ---------------------------------------------------------- the solver
struct Solved {
  Matrix x;
  std::vector<double> residual_norm;
  std::vector<int> iterations;
  std::vector<int> status;
  std::vector<double> kkt_residual;
};

enum class AStorage { shared_left, shared_right, per_system_right };

// Every system reported converged satisfies the KKT conditions, checked on
// the host from the data the solver saw (rounded to T), and the device's own
// check says the same.
template <class T>
void expect_verified_kkt(const std::vector<Matrix>& matrices, const Matrix& b, const Solved& solved,
                         const NnlsOptions& options) {
  const std::int64_t m = matrices.front().rows, n = matrices.front().columns;
  const double tolerance =
      options.kkt_tolerance >= 0 ? options.kkt_tolerance : kpl::testing::kkt_tolerance<T>(m, n);
  for (std::int64_t s = 0; s < b.rows; ++s) {
    if (solved.status[s] != int(NnlsStatus::converged)) continue;
    const Matrix& a = matrices[matrices.size() == 1 ? 0 : s];
    const double host = kpl::testing::kkt_residual(
        m, n, [&](std::int64_t i, std::int64_t j) { return double(T(a(i, j))); },
        [&](std::int64_t i) { return double(T(b(s, i))); },
        [&](std::int64_t j) { return solved.x(s, j); });
    EXPECT_LE(host, tolerance) << "system " << s << " reported converged";
    EXPECT_LE(solved.kkt_residual[s], tolerance) << "system " << s;
  }
}

// Solves b's rows with A (shared) or with As (one per system) on Space in T.
template <class Space, class T>
Solved solve(const std::vector<Matrix>& matrices, const Matrix& b, const NnlsOptions& options = {},
             AStorage storage = AStorage::shared_left) {
  const std::int64_t systems = b.rows;
  const std::int64_t m = matrices.front().rows, n = matrices.front().columns;
  using Memory = typename Space::memory_space;
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> b_device("b", systems, m);
  auto b_host = Kokkos::create_mirror_view(b_device);
  for (std::int64_t s = 0; s < systems; ++s)
    for (std::int64_t i = 0; i < m; ++i) b_host(s, i) = T(b(s, i));
  Kokkos::deep_copy(b_device, b_host);
  kpl::NnlsSolution<Space, T> solution(systems, n);
  const Space space;
  if (storage == AStorage::per_system_right) {
    Kokkos::View<T***, Kokkos::LayoutRight, Memory> a("A", systems, m, n);
    auto a_host = Kokkos::create_mirror_view(a);
    for (std::int64_t s = 0; s < systems; ++s)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) a_host(s, i, j) = T(matrices[s](i, j));
    Kokkos::deep_copy(a, a_host);
    kpl::nnls(space, a, b_device, solution, options);
  } else {
    // One shared A, in the layout asked for.
    const auto solve_shared = [&](auto a) {
      auto a_host = Kokkos::create_mirror_view(a);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) a_host(i, j) = T(matrices.front()(i, j));
      Kokkos::deep_copy(a, a_host);
      kpl::nnls(space, a, b_device, solution, options);
    };
    if (storage == AStorage::shared_right) {
      solve_shared(Kokkos::View<T**, Kokkos::LayoutRight, Memory>("A", m, n));
    } else {
      solve_shared(Kokkos::View<T**, Kokkos::LayoutLeft, Memory>("A", m, n));
    }
  }
  space.fence();
  Solved solved{make_matrix(systems, n), {}, {}, {}};
  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.x);
  const auto residual =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.residual_norm);
  const auto iterations =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.iterations);
  const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.status);
  const auto kkt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.kkt_residual);
  for (std::int64_t s = 0; s < systems; ++s) {
    for (std::int64_t j = 0; j < n; ++j) solved.x(s, j) = x(s, j);
    solved.residual_norm.push_back(residual(s));
    solved.iterations.push_back(iterations(s));
    solved.status.push_back(status(s));
    solved.kkt_residual.push_back(kkt(s));
  }
  expect_verified_kkt<T>(matrices, b, solved, options);
  return solved;
}

using HostMatrixView = Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using HostVectorView =
    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

kpl::KktCertificate certificate(const Matrix& a, const Matrix& b, const Matrix& x, std::int64_t s) {
  return kpl::kkt_certificate(HostMatrixView(a.values.data(), a.rows, a.columns),
                              HostVectorView(b.values.data() + s * b.columns, b.columns),
                              HostVectorView(x.values.data() + s * x.columns, x.columns));
}

double max_abs_difference(const Matrix& a, const Matrix& b, std::int64_t r) {
  double worst = 0;
  for (std::int64_t j = 0; j < a.columns; ++j) worst = std::max(worst, std::abs(a(r, j) - b(r, j)));
  return worst;
}
double max_abs(const Matrix& a, std::int64_t r) {
  double worst = 0;
  for (std::int64_t j = 0; j < a.columns; ++j) worst = std::max(worst, std::abs(a(r, j)));
  return worst;
}

double one_norm(const Matrix& a) {
  double norm = 0;
  for (std::int64_t j = 0; j < a.columns; ++j) {
    double sum = 0;
    for (std::int64_t i = 0; i < a.rows; ++i) sum += std::abs(a(i, j));
    norm = std::max(norm, sum);
  }
  return norm;
}
double row_norm(const Matrix& b, std::int64_t s) {
  double sum = 0;
  for (std::int64_t i = 0; i < b.columns; ++i) sum += b(s, i) * b(s, i);
  return std::sqrt(sum);
}

// Gradient violations are judged against the scale of w = A^T r.
double kkt_scale(const Matrix& a, const Matrix& b, std::int64_t s) {
  return one_norm(a) * std::max(row_norm(b, s), 1e-300);
}

// -------------------------------------------------- reference cases (scipy)
struct ReferenceCase {
  Matrix a, b, x_reference;
  std::vector<double> residual_reference;
};

Matrix to_matrix(const kpl::hdf5::HostArray<double, 2>& array) {
  Matrix m = make_matrix(array.extent(0), array.extent(1));
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (std::int64_t j = 0; j < m.columns; ++j) m(i, j) = array(i, j);
  return m;
}

ReferenceCase load_case(const std::string& name) {
  // KPL_SOURCE_DIR in the environment finds the data where a build was
  // copied to another machine (the GPU runs).
  const char* moved = std::getenv("KPL_SOURCE_DIR");
  const std::string directory = std::string(moved ? moved : KPL_SOURCE_DIR) + "/tests/data/nnls/";
  const kpl::hdf5::InputFile input(directory + "nnls_" + name + ".h5");
  const kpl::hdf5::InputFile reference(directory + "nnls_" + name + "_ref.h5");
  ReferenceCase c;
  if (input.has_dataset("/A")) {
    c.a = to_matrix(input.read<double, 2>("/A"));
  } else {
    // gauss512 ships without its 2 MiB matrix: the shifted Gaussians
    // (sigma 4.32) it holds are rebuilt here (to 1.1e-16 of the file's).
    c.a = make_matrix(512, 512);
    for (std::int64_t i = 0; i < 512; ++i)
      for (std::int64_t j = 0; j < 512; ++j) {
        const double d = double(i - j) / 4.32;
        c.a(i, j) = std::exp(-0.5 * d * d);
      }
  }
  c.b = to_matrix(input.read<double, 2>("/b"));
  c.x_reference = to_matrix(reference.read<double, 2>("/x_ref"));
  const auto rnorm = reference.read<double, 1>("/rnorm_ref");
  for (std::size_t s = 0; s < rnorm.extent(0); ++s) c.residual_reference.push_back(rnorm(s));
  return c;
}

KPL_EXECUTION_SPACE_SUITE(Nnls);

template <class Space>
void check_reference_cases() {
  const std::vector<std::string> unique = {"rand256", "exact80x25"};
  const std::vector<std::string> all = {"rand256",      "exact80x25", "gauss512",    "hilbert20",
                                        "rankdef60x30", "wide50x100", "zerocol40x12"};
  for (const auto& [orthogonalization, gradient] :
       {std::pair{kpl::NnlsOrthogonalization::classical_twice, kpl::NnlsGradient::from_residual},
        std::pair{kpl::NnlsOrthogonalization::modified_gram_schmidt,
                  kpl::NnlsGradient::from_residual},
        std::pair{kpl::NnlsOrthogonalization::classical_twice,
                  kpl::NnlsGradient::from_cross_products},
        std::pair{kpl::NnlsOrthogonalization::modified_gram_schmidt,
                  kpl::NnlsGradient::from_cross_products}}) {
    NnlsOptions options;
    options.orthogonalization = orthogonalization;
    options.gradient = gradient;
    for (const auto& name : all) {
      SCOPED_TRACE(name +
                   (orthogonalization == kpl::NnlsOrthogonalization::classical_twice
                        ? " classical twice"
                        : " modified Gram-Schmidt") +
                   (gradient == kpl::NnlsGradient::from_residual ? ", gradient from residual"
                                                                 : ", gradient from A^T A"));
      const auto c = load_case(name);
      const auto solved = solve<Space, double>({c.a}, c.b, options);
      const bool compare_x = std::find(unique.begin(), unique.end(), name) != unique.end();
      for (std::int64_t s = 0; s < c.b.rows; ++s) {
        SCOPED_TRACE("system " + std::to_string(s));
        EXPECT_EQ(solved.status[s], int(NnlsStatus::converged));
        if (compare_x) {
          EXPECT_LE(max_abs_difference(solved.x, c.x_reference, s),
                    1e-8 * std::max(max_abs(c.x_reference, s), 1e-300));
        }
        const auto kkt = certificate(c.a, c.b, solved.x, s);
        EXPECT_LE(kkt.residual_norm, c.residual_reference[s] + 1e-10);
        EXPECT_NEAR(solved.residual_norm[s], kkt.residual_norm, 1e-10 * (1 + kkt.residual_norm));
        EXPECT_EQ(kkt.negativity, 0.0);
        EXPECT_LE(kkt.zero_set_gradient, 1e-9 * kkt_scale(c.a, c.b, s));
        EXPECT_LE(kkt.positive_gradient, 1e-9 * kkt_scale(c.a, c.b, s));
      }
    }
  }
}
KPL_EXECUTION_SPACE_TEST(Nnls, ScipyReferenceCases) { check_reference_cases<TypeParam>(); }

// ------------------------------------------- against the host reference
struct Size {
  std::int64_t rows, columns;
};
const std::vector<Size> sizes = {{1, 1},   {1, 5},   {5, 1},    {17, 33},
                                 {33, 17}, {40, 40}, {100, 37}, {130, 97}};

template <class Space, class T>
void check_against_host_reference(AStorage storage,
                                  kpl::NnlsGradient gradient = kpl::NnlsGradient::automatic,
                                  NnlsOptions options = {}) {
  options.gradient = gradient;
  std::mt19937_64 generator(20261122);
  for (const auto size : sizes) {
    SCOPED_TRACE(std::to_string(size.rows) + " x " + std::to_string(size.columns));
    const std::int64_t systems = 5;
    std::vector<Matrix> matrices;
    for (std::int64_t s = 0; s < (storage == AStorage::per_system_right ? systems : 1); ++s)
      matrices.push_back(random_matrix(size.rows, size.columns, generator));
    const Matrix b = random_matrix(systems, size.rows, generator);
    const auto solved = solve<Space, T>(matrices, b, options, storage);
    for (std::int64_t s = 0; s < systems; ++s) {
      SCOPED_TRACE("system " + std::to_string(s));
      const Matrix& a = matrices[storage == AStorage::per_system_right ? s : 0];
      const auto bs = row(b, 0 + s);
      const auto expected = reference_nnls(a, bs.values);
      Matrix expected_x = make_matrix(1, a.columns);
      expected_x.values = expected;
      const auto reference_kkt = certificate(a, bs, expected_x, 0);
      const auto kkt = certificate(a, b, solved.x, s);
      EXPECT_EQ(solved.status[s], int(NnlsStatus::converged));
      EXPECT_EQ(kkt.negativity, 0.0);
      if (std::is_same_v<T, double>) {
        // m >= n Gaussian matrices have full column rank: x is unique.
        if (a.rows >= a.columns) {
          Matrix solved_row = row(solved.x, s);
          EXPECT_LE(max_abs_difference(solved_row, expected_x, 0),
                    1e-9 * std::max(max_abs(expected_x, 0), 1.0));
        }
        EXPECT_LE(kkt.residual_norm, reference_kkt.residual_norm + 1e-10);
        EXPECT_LE(kkt.zero_set_gradient, 1e-10 * kkt_scale(a, b, s));
        EXPECT_LE(kkt.positive_gradient, 1e-10 * kkt_scale(a, b, s));
      } else {
        // Rounding in A x grows with ||A|| ||x||: wide systems fit b exactly
        // with large x, and float leaves residuals of ~1e-6 ||A|| ||x||.
        const double rounding_scale = std::max(1.0, one_norm(a) * max_abs(expected_x, 0));
        EXPECT_LE(kkt.residual_norm,
                  reference_kkt.residual_norm * (1 + 1e-4) + 1e-5 * rounding_scale);
        EXPECT_LE(kkt.zero_set_gradient, 1e-4 * kkt_scale(a, b, s));
        EXPECT_LE(kkt.positive_gradient, 1e-4 * kkt_scale(a, b, s));
      }
    }
  }
}
KPL_EXECUTION_SPACE_TEST(Nnls, HostReferenceSharedLayoutLeftDouble) {
  check_against_host_reference<TypeParam, double>(AStorage::shared_left,
                                                  kpl::NnlsGradient::from_residual);
  check_against_host_reference<TypeParam, double>(AStorage::shared_left,
                                                  kpl::NnlsGradient::from_cross_products);
}
KPL_EXECUTION_SPACE_TEST(Nnls, HostReferenceSharedLayoutRightDouble) {
  check_against_host_reference<TypeParam, double>(AStorage::shared_right,
                                                  kpl::NnlsGradient::from_residual);
  check_against_host_reference<TypeParam, double>(AStorage::shared_right,
                                                  kpl::NnlsGradient::from_cross_products);
}
KPL_EXECUTION_SPACE_TEST(Nnls, HostReferencePerSystemDouble) {
  check_against_host_reference<TypeParam, double>(AStorage::per_system_right);
}
KPL_EXECUTION_SPACE_TEST(Nnls, HostReferenceFloat) {
  check_against_host_reference<TypeParam, float>(AStorage::shared_left,
                                                 kpl::NnlsGradient::from_residual);
  check_against_host_reference<TypeParam, float>(AStorage::shared_left,
                                                 kpl::NnlsGradient::from_cross_products);
  check_against_host_reference<TypeParam, float>(AStorage::per_system_right);
}

// ------------------------------------------------------ special systems
template <class Space>
void check_special_systems() {
  std::mt19937_64 generator(7);
  // Zero b: x = 0 without a single passive solve.
  {
    const Matrix a = random_matrix(30, 20, generator);
    const auto solved = solve<Space, double>({a}, make_matrix(3, 30));
    for (int s = 0; s < 3; ++s) {
      EXPECT_EQ(solved.status[s], int(NnlsStatus::converged));
      EXPECT_LE(solved.iterations[s], 1);
      EXPECT_EQ(max_abs(solved.x, s), 0.0);
      EXPECT_EQ(solved.residual_norm[s], 0.0);
    }
  }
  // Exact non-negative solutions (a third of x zero) are recovered.
  {
    const Matrix a = random_matrix(60, 24, generator);
    Matrix x_true = make_matrix(4, 24), b = make_matrix(4, 60);
    std::uniform_real_distribution<double> uniform(0.5, 2.0);
    for (int s = 0; s < 4; ++s)
      for (int j = 0; j < 24; ++j) x_true(s, j) = j % 3 == s % 3 ? 0.0 : uniform(generator);
    for (int s = 0; s < 4; ++s)
      for (int i = 0; i < 60; ++i)
        for (int j = 0; j < 24; ++j) b(s, i) += a(i, j) * x_true(s, j);
    const auto solved = solve<Space, double>({a}, b);
    for (int s = 0; s < 4; ++s) {
      EXPECT_EQ(solved.status[s], int(NnlsStatus::converged));
      EXPECT_LE(max_abs_difference(solved.x, x_true, s), 1e-10);
      EXPECT_LE(solved.residual_norm[s], 1e-10);
    }
  }
  // Badly scaled columns (1e-6 .. 1e6): the solution scales inversely.
  {
    Matrix a = random_matrix(50, 13, generator);
    for (int j = 0; j < 13; ++j)
      for (int i = 0; i < 50; ++i) a(i, j) *= std::pow(10.0, j - 6);
    const Matrix b = random_matrix(3, 50, generator);
    const auto solved = solve<Space, double>({a}, b);
    for (int s = 0; s < 3; ++s) {
      const auto expected = reference_nnls(a, row(b, s).values);
      EXPECT_EQ(solved.status[s], int(NnlsStatus::converged));
      for (int j = 0; j < 13; ++j)
        EXPECT_NEAR(solved.x(s, j), expected[j],
                    1e-8 * std::max(std::abs(expected[j]), 1e-6 * std::pow(10.0, 6 - j)));
    }
  }
  // Monotone fits (isotonic regression through cumulative-sum columns), where
  // many columns enter and leave: prone to cycling without Lawson–Hanson's care.
  {
    const int m = 64;
    Matrix a = make_matrix(m, m);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j <= i; ++j) a(i, j) = 1.0;
    Matrix b = random_matrix(4, m, generator);
    for (int s = 0; s < 4; ++s)
      for (int i = 0; i < m; ++i) b(s, i) += 0.05 * i * (s % 2 == 0 ? 1 : -1);
    const auto solved = solve<Space, double>({a}, b);
    for (int s = 0; s < 4; ++s) {
      const auto expected = reference_nnls(a, row(b, s).values);
      EXPECT_EQ(solved.status[s], int(NnlsStatus::converged));
      Matrix expected_x = make_matrix(1, m);
      expected_x.values = expected;
      EXPECT_LE(max_abs_difference(row(solved.x, s), expected_x, 0), 1e-9);
    }
  }
  // Banded matrices, one per system, each with an all-zero column (which
  // must stay at zero): Gram-Schmidt and the rotations meet many exact zeros.
  {
    const int m = 70, n = 45, systems = 3;
    std::vector<Matrix> matrices;
    for (int s = 0; s < systems; ++s) {
      Matrix a = random_matrix(m, n, generator);
      const int half_width = 3 + 5 * s;
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
          if (std::abs(i - j * m / n) > half_width || j == 10 + s) a(i, j) = 0.0;
      matrices.push_back(a);
    }
    const Matrix b = random_matrix(systems, m, generator);
    const auto solved = solve<Space, double>(matrices, b, {}, AStorage::per_system_right);
    for (int s = 0; s < systems; ++s) {
      const auto expected = reference_nnls(matrices[s], row(b, s).values);
      EXPECT_EQ(solved.status[s], int(NnlsStatus::converged));
      Matrix expected_x = make_matrix(1, n);
      expected_x.values = expected;
      EXPECT_LE(max_abs_difference(row(solved.x, s), expected_x, 0),
                1e-9 * std::max(max_abs(expected_x, 0), 1.0));
      EXPECT_EQ(solved.x(s, 10 + s), 0.0);
    }
  }
}
KPL_EXECUTION_SPACE_TEST(Nnls, SpecialSystems) { check_special_systems<TypeParam>(); }

template <class Space>
void check_stops() {
  const auto c = load_case("rand256");
  // An iteration cap that is too small.
  NnlsOptions capped;
  capped.max_iterations = 2;
  const auto solved = solve<Space, double>({c.a}, c.b, capped);
  for (std::int64_t s = 0; s < c.b.rows; ++s) {
    EXPECT_EQ(solved.status[s], int(NnlsStatus::max_iterations));
    EXPECT_EQ(solved.iterations[s], 2);
    const auto kkt = certificate(c.a, c.b, solved.x, s);
    EXPECT_EQ(kkt.negativity, 0.0);
    EXPECT_NEAR(solved.residual_norm[s], kkt.residual_norm, 1e-10 * kkt.residual_norm);
  }
  // A passive-set cap below what the solution needs.
  NnlsOptions small_passive;
  small_passive.max_passive = 3;
  const auto limited = solve<Space, double>({c.a}, c.b, small_passive);
  for (std::int64_t s = 0; s < c.b.rows; ++s) {
    EXPECT_EQ(limited.status[s], int(NnlsStatus::passive_set_full));
    int positives = 0;
    for (std::int64_t j = 0; j < c.a.columns; ++j) positives += limited.x(s, j) > 0;
    EXPECT_LE(positives, 3);
  }
  // NaN and Inf: those systems report a numerical issue, the others solve.
  Matrix b = c.b;
  b(1, 7) = std::numeric_limits<double>::quiet_NaN();
  b(3, 0) = std::numeric_limits<double>::infinity();
  const auto mixed = solve<Space, double>({c.a}, b);
  for (std::int64_t s = 0; s < b.rows; ++s) {
    if (s == 1 || s == 3) {
      EXPECT_EQ(mixed.status[s], int(NnlsStatus::numerical_issue));
      EXPECT_EQ(max_abs(mixed.x, s), 0.0);
      EXPECT_TRUE(std::isnan(mixed.residual_norm[s]));
    } else {
      EXPECT_EQ(mixed.status[s], int(NnlsStatus::converged));
      EXPECT_LE(max_abs_difference(mixed.x, c.x_reference, s), 1e-8 * max_abs(c.x_reference, s));
    }
  }
  Matrix a_nan = c.a;
  a_nan(5, 5) = std::numeric_limits<double>::quiet_NaN();
  const auto all_bad = solve<Space, double>({a_nan}, c.b);
  for (std::int64_t s = 0; s < b.rows; ++s)
    EXPECT_EQ(all_bad.status[s], int(NnlsStatus::numerical_issue));
}
KPL_EXECUTION_SPACE_TEST(Nnls, IterationCapPassiveCapAndNonFiniteInput) {
  check_stops<TypeParam>();
}

template <class Space>
void check_empty_systems() {
  // m = 0: x = 0; n = 0: nothing to solve; zero systems: nothing happens.
  std::mt19937_64 generator(3);
  const auto no_rows = solve<Space, double>({make_matrix(0, 4)}, make_matrix(2, 0));
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(no_rows.status[s], int(NnlsStatus::converged));
    EXPECT_EQ(max_abs(no_rows.x, s), 0.0);
  }
  const Matrix b = random_matrix(2, 6, generator);
  const auto no_columns = solve<Space, double>({make_matrix(6, 0)}, b);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(no_columns.status[s], int(NnlsStatus::converged));
    EXPECT_NEAR(no_columns.residual_norm[s], row_norm(b, s), 1e-14);
  }
  const auto no_systems = solve<Space, double>({make_matrix(6, 4)}, make_matrix(0, 6));
  EXPECT_TRUE(no_systems.status.empty());
}
KPL_EXECUTION_SPACE_TEST(Nnls, EmptySystems) { check_empty_systems<TypeParam>(); }

// ------------------------------------------------- units do not matter
// A x 10^i and b x 10^j across the whole range each precision holds without
// overflow in A^2, A b and b^2 (10^+-15 in float, 10^+-150 in double): x
// scales by 10^(j - i), to the rounding of the scaled inputs, and every
// system keeps its status.
template <class T>
constexpr int scale_exponent_range() {
  return std::is_same_v<T, float> ? 15 : 150;
}

Matrix scaled(const Matrix& matrix, int exponent) {
  Matrix result = matrix;
  for (auto& value : result.values) value = double((long double)value * std::pow(10.0L, exponent));
  return result;
}

// Shifted Gaussians (the seed's deconvolution matrices, narrower) and
// b = A x_true + noise with a few returns.
void gaussian_pulse_system(std::int64_t m, double sigma, std::int64_t systems,
                           std::mt19937_64& generator, Matrix& a, Matrix& b) {
  a = make_matrix(m, m);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      const double d = double(i - j) / sigma;
      a(i, j) = std::exp(-0.5 * d * d);
    }
  b = make_matrix(systems, m);
  std::uniform_int_distribution<std::int64_t> position(0, m - 1);
  std::uniform_real_distribution<double> amplitude(0.2, 1.0);
  std::normal_distribution<double> noise(0.0, 0.01);
  for (std::int64_t s = 0; s < systems; ++s) {
    std::vector<double> x(std::size_t(m), 0.0);
    for (int r = 0; r < 3; ++r) x[position(generator)] += amplitude(generator);
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < m; ++j) b(s, i) += a(i, j) * x[j];
      b(s, i) += noise(generator);
    }
  }
}

double relative_difference(const Matrix& x, const Matrix& reference, std::int64_t s,
                           double factor) {
  double difference = 0, size = 0;
  for (std::int64_t j = 0; j < x.columns; ++j) {
    difference = std::max(difference, std::abs(x(s, j) * factor - reference(s, j)));
    size = std::max(size, std::abs(reference(s, j)));
  }
  return size > 0 ? difference / size : difference;
}

template <class Space, class T>
void check_units_drop_out(const Matrix& a, const Matrix& b, AStorage storage,
                          kpl::NnlsGradient gradient) {
  NnlsOptions options;
  options.gradient = gradient;
  const std::vector<Matrix> per_system(std::size_t(b.rows), a);
  const auto matrices = [&](const std::vector<Matrix>& each) {
    return storage == AStorage::per_system_right ? each : std::vector<Matrix>{each.front()};
  };
  const auto reference = solve<Space, T>(matrices(per_system), b, options, storage);
  const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-9;
  const int range = scale_exponent_range<T>();
  for (const int i : {-range, -range / 2, -1, 0, 7, range / 2, range}) {
    for (const int j : {-range, -range / 2, 0, 3, range / 2, range}) {
      SCOPED_TRACE("A x 1e" + std::to_string(i) + ", b x 1e" + std::to_string(j));
      const std::vector<Matrix> a_scaled(std::size_t(b.rows), scaled(a, i));
      const auto solved = solve<Space, T>(matrices(a_scaled), scaled(b, j), options, storage);
      for (std::int64_t s = 0; s < b.rows; ++s) {
        EXPECT_EQ(solved.status[s], reference.status[s]) << "system " << s;
        EXPECT_LE(relative_difference(solved.x, reference.x, s, std::pow(10.0, double(i - j))),
                  tolerance)
            << "system " << s;
        EXPECT_NEAR(solved.residual_norm[s] * std::pow(10.0, double(-j)),
                    reference.residual_norm[s],
                    tolerance * std::max(1.0, double(reference.residual_norm[s])))
            << "system " << s;
      }
    }
  }
}

template <class Space, class T>
void check_scale_invariance() {
  std::mt19937_64 generator(2026);
  const Matrix random_a = random_matrix(40, 24, generator);
  const Matrix random_b = random_matrix(4, 40, generator);
  Matrix pulse_a, pulse_b;
  gaussian_pulse_system(48, 1.5, 4, generator, pulse_a, pulse_b);
  for (const auto& [name, a, b] : {std::tuple{"random", random_a, random_b},
                                   std::tuple{"Gaussian pulses", pulse_a, pulse_b}}) {
    SCOPED_TRACE(name);
    check_units_drop_out<Space, T>(a, b, AStorage::shared_left, kpl::NnlsGradient::from_residual);
    check_units_drop_out<Space, T>(a, b, AStorage::shared_right,
                                   kpl::NnlsGradient::from_cross_products);
    check_units_drop_out<Space, T>(a, b, AStorage::per_system_right, kpl::NnlsGradient::automatic);
  }
}
KPL_EXECUTION_SPACE_TEST(Nnls, UnitsDoNotMatterDouble) {
  check_scale_invariance<TypeParam, double>();
}
KPL_EXECUTION_SPACE_TEST(Nnls, UnitsDoNotMatterFloat) {
  check_scale_invariance<TypeParam, float>();
}

// ---------------------------------------------------- statuses that say why
template <class Space>
void check_honest_statuses() {
  // a1 = e1 and a2 = e2 enter (b = e1 + 0.1 e2 + 0.01 e3); a3 = (e1 + e2 +
  // 1e-14 e3) / sqrt(2) is then in their span to within its R diagonal
  // (below the dependence threshold 10 eps m), yet its gradient per unit
  // norm (7e-17) is above a tolerance of 1e-18. Every violator rejected:
  // dependent_columns, with x the feasible iterate (1, 0.1, 0).
  Matrix a = make_matrix(6, 3), b = make_matrix(1, 6);
  a(0, 0) = 1.0;
  a(1, 1) = 1.0;
  a(0, 2) = a(1, 2) = std::sqrt(0.5);
  a(2, 2) = 1e-14 * std::sqrt(0.5);
  b(0, 0) = 1.0;
  b(0, 1) = 0.1;
  b(0, 2) = 0.01;
  NnlsOptions strict;
  strict.tolerance = 1e-18;
  strict.kkt_tolerance = 1e-18;
  const auto dependent = solve<Space, double>({a}, b, strict);
  EXPECT_EQ(dependent.status[0], int(NnlsStatus::dependent_columns));
  EXPECT_NEAR(dependent.kkt_residual[0], 1e-16 * std::sqrt(0.5) / std::sqrt(1.0101), 1e-18);
  EXPECT_EQ(dependent.x(0, 0), 1.0);
  EXPECT_NEAR(dependent.x(0, 1), 0.1, 1e-16);
  EXPECT_EQ(dependent.x(0, 2), 0.0);

  // A tolerance that stops the method early: the check after the solve finds
  // zero-set gradients above the KKT tolerance and says so.
  std::mt19937_64 generator(5);
  const Matrix random_a = random_matrix(30, 20, generator);
  const Matrix random_b = random_matrix(3, 30, generator);
  NnlsOptions loose;
  loose.tolerance = 0.3;
  const auto early = solve<Space, double>({random_a}, random_b, loose);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(early.status[s], int(NnlsStatus::kkt_not_met)) << "system " << s;
    EXPECT_GT(early.kkt_residual[s], kpl::testing::kkt_tolerance<double>(30, 20));
    EXPECT_LE(early.kkt_residual[s], 0.3 * (1 + 1e-12));
    for (std::int64_t j = 0; j < 20; ++j) EXPECT_GE(early.x(s, j), 0.0);
  }
  // The same systems solved through: converged, and the device's residual
  // agrees with the host's.
  const auto full = solve<Space, double>({random_a}, random_b);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(full.status[s], int(NnlsStatus::converged));
    const double host = kpl::testing::kkt_residual(
        30, 20, [&](std::int64_t i, std::int64_t j) { return random_a(i, j); },
        [&](std::int64_t i) { return random_b(s, i); },
        [&](std::int64_t j) { return full.x(s, j); });
    EXPECT_NEAR(full.kkt_residual[s], host, 1e-14);
  }
}
KPL_EXECUTION_SPACE_TEST(Nnls, StatusesSayWhyNotConverged) { check_honest_statuses<TypeParam>(); }

// ------------------------------------------- QR update and downdate alone
// Runs a sequence of appends (column index >= 0) and removals (-(position +
// 1)) on one team, as the solver does, and leaves the factorisation behind.
template <class Space>
struct QrSequence {
  using Batch = kpl::impl::NnlsBatch<double, kpl::DenseColumns<double>, Space>;
  Batch batch;
  Kokkos::View<const int*, typename Space::memory_space> operations;
  Kokkos::View<int, typename Space::memory_space> passive_count;
  KOKKOS_INLINE_FUNCTION void operator()(const typename Batch::Member& member) const {
    const auto& parameters = batch.parameters;
    const auto storage =
        batch.workspace.system(0, parameters.rows, parameters.columns, parameters.max_passive);
    // Columns at their own scale (measure_system would set these).
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, parameters.columns), [&](std::int64_t j) {
      storage.position[j] = kpl::impl::not_passive;
      storage.column_scales[j] = 1.0;
      storage.column_exponents[j] = 0;
    });
    member.team_barrier();
    int k = 0;
    for (std::size_t o = 0; o < operations.extent(0); ++o) {
      const int operation = operations(o);
      if (operation >= 0) {
        kpl::impl::reordered_mgs_append(member, batch, 0, storage, operation, k);
        ++k;
      } else {
        kpl::impl::givens_downdate(member, batch, storage, -operation - 1, k);
        --k;
      }
      member.team_barrier();
    }
    Kokkos::single(Kokkos::PerTeam(member), [&] { passive_count() = k; });
  }
};

// The factorisation a QrSequence leaves: Q [max_passive][m], R
// [max_passive][max_passive] (column-major), Q^T b, and the passive list.
struct QrResult {
  std::vector<double> values;
  std::vector<int> passive;
  int k;
};

// Runs `sequence` (see QrSequence) on the columns of a [m, n] with b [1, m].
template <class Space>
QrResult run_qr_sequence(const Matrix& a, const Matrix& b, const std::vector<int>& sequence,
                         kpl::NnlsOrthogonalization orthogonalization, int max_passive,
                         int host_threads) {
  const std::int64_t m = a.rows, n = a.columns;
  using Memory = typename Space::memory_space;
  Kokkos::View<double**, Kokkos::LayoutLeft, Memory> a_device("A", m, n);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> b_device("b", 1, m);
  {
    auto a_host = Kokkos::create_mirror_view(a_device);
    auto b_host = Kokkos::create_mirror_view(b_device);
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) a_host(i, j) = a(i, j);
      b_host(0, i) = b(0, i);
    }
    Kokkos::deep_copy(a_device, a_host);
    Kokkos::deep_copy(b_device, b_host);
  }
  Kokkos::View<int*, Memory> operations("operations", sequence.size());
  auto operations_host = Kokkos::create_mirror_view(operations);
  for (std::size_t o = 0; o < sequence.size(); ++o) operations_host(o) = sequence[o];
  Kokkos::deep_copy(operations, operations_host);

  NnlsOptions options;
  options.orthogonalization = orthogonalization;
  options.max_passive = max_passive;
  auto parameters = kpl::impl::nnls_parameters<double>(1, m, n, options, true);
  using Pointers = kpl::impl::NnlsWorkspacePointers<double>;
  Kokkos::View<double*, Memory> values("values", Pointers::values_needed(m, n, max_passive));
  Kokkos::View<int*, Memory> indices("indices", Pointers::indices_needed(n, max_passive));
  const Pointers pointers{values.data(), indices.data(), std::int64_t(values.extent(0)),
                          std::int64_t(indices.extent(0))};
  kpl::DenseColumns<double> columns{a_device.data(), 0, 1, m, m};
  typename QrSequence<Space>::Batch batch{columns,    b_device.data(), m, 1,
                                          parameters, pointers,        {}};
  Kokkos::View<int, Memory> passive_count("passive_count");
  const QrSequence<Space> qr_sequence{batch, operations, passive_count};
  const int host_team_max =
      Kokkos::TeamPolicy<Space>(1, 1).team_size_max(qr_sequence, Kokkos::ParallelForTag());
  const int threads = kpl::impl::runs_on_host_v<Space> ? std::min(host_threads, host_team_max) : 8;
  const int lanes = kpl::impl::runs_on_host_v<Space> ? 1 : 32;
  Kokkos::parallel_for("kpl::test::qr_sequence", Kokkos::TeamPolicy<Space>(1, threads, lanes),
                       qr_sequence);
  Kokkos::fence();
  const auto values_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, values);
  const auto indices_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, indices);
  QrResult result{{values_host.data(), values_host.data() + values_host.extent(0)},
                  {indices_host.data(), indices_host.data() + indices_host.extent(0)},
                  0};
  Kokkos::deep_copy(result.k, passive_count);
  return result;
}

template <class Space>
void check_update_downdate(kpl::NnlsOrthogonalization orthogonalization, int host_threads = 1) {
  std::mt19937_64 generator(11);
  const std::int64_t m = 45, n = 30;
  const Matrix a = random_matrix(m, n, generator);
  const Matrix b = random_matrix(1, m, generator);
  // Appends, removals at the front, middle and end, re-entries.
  const std::vector<int> sequence = {3,  17, 0,  29, 8,  11, 21, -2, 5,  -1,
                                     -6, 2,  17, 19, -4, 23, 1,  -9, -8, 14};
  std::vector<int> expected_passive;
  for (const int operation : sequence) {
    if (operation >= 0) {
      expected_passive.push_back(operation);
    } else {
      expected_passive.erase(expected_passive.begin() + (-operation - 1));
    }
  }
  const int max_passive = 12;
  const QrResult result =
      run_qr_sequence<Space>(a, b, sequence, orthogonalization, max_passive, host_threads);
  const int k = result.k;
  ASSERT_EQ(k, int(expected_passive.size()));
  for (int p = 0; p < k; ++p) EXPECT_EQ(result.passive[p], expected_passive[p]) << "position " << p;
  const double* q = result.values.data();
  const double* r = q + max_passive * m;
  const double* u = r + max_passive * max_passive;
  // A fresh QR of the same passive columns, in the same order.
  Matrix fresh_q = make_matrix(k, m);
  Matrix fresh_r = make_matrix(k, k);
  for (int c = 0; c < k; ++c) {
    for (std::int64_t i = 0; i < m; ++i) fresh_q(c, i) = a(i, expected_passive[c]);
    for (int pass = 0; pass < 2; ++pass)
      for (int p = 0; p < c; ++p) {
        double dot = 0;
        for (std::int64_t i = 0; i < m; ++i) dot += fresh_q(p, i) * fresh_q(c, i);
        for (std::int64_t i = 0; i < m; ++i) fresh_q(c, i) -= dot * fresh_q(p, i);
        fresh_r(p, c) += dot;
      }
    double norm = 0;
    for (std::int64_t i = 0; i < m; ++i) norm += fresh_q(c, i) * fresh_q(c, i);
    norm = std::sqrt(norm);
    fresh_r(c, c) = norm;
    for (std::int64_t i = 0; i < m; ++i) fresh_q(c, i) /= norm;
  }
  // The QR is unique up to the sign of each (q_p, row p of R) pair.
  for (int p = 0; p < k; ++p) {
    const double sign = r[p * max_passive + p] < 0 ? -1.0 : 1.0;
    for (int c = p; c < k; ++c)
      EXPECT_NEAR(sign * r[c * max_passive + p], fresh_r(p, c), 1e-12)
          << "R(" << p << ", " << c << ")";
    for (std::int64_t i = 0; i < m; ++i)
      EXPECT_NEAR(sign * q[p * m + i], fresh_q(p, i), 1e-12) << "Q(" << i << ", " << p << ")";
    double u_expected = 0;
    for (std::int64_t i = 0; i < m; ++i) u_expected += fresh_q(p, i) * b(0, i);
    EXPECT_NEAR(sign * u[p], u_expected, 1e-12) << "Q^T b at " << p;
  }
  // Below the diagonal R is exactly zero (the rotations write zeros).
  for (int c = 0; c < k; ++c)
    for (int p = c + 1; p < k; ++p)
      EXPECT_EQ(r[c * max_passive + p], 0.0) << "R(" << p << ", " << c << ")";
}
KPL_EXECUTION_SPACE_TEST(Nnls, QrUpdateDowndateMatchesFreshQr) {
  check_update_downdate<TypeParam>(kpl::NnlsOrthogonalization::classical_twice);
  check_update_downdate<TypeParam>(kpl::NnlsOrthogonalization::modified_gram_schmidt);
}

// Classical Gram-Schmidt repeats its pass where the first cancelled most of
// the column (DGKS): columns that differ by 1e-7 of their norm still give
// Q^T Q = I to working precision (one pass alone leaves ~1e-9 here; so
// does modified Gram-Schmidt, whose loss of orthogonality grows with the
// condition number: not checked here).
template <class Space>
void check_nearly_dependent_columns(kpl::NnlsOrthogonalization orthogonalization) {
  std::mt19937_64 generator(23);
  const std::int64_t m = 40, n = 4;
  const Matrix noise = random_matrix(m, n, generator);
  Matrix a = make_matrix(m, n);
  for (std::int64_t i = 0; i < m; ++i) {
    a(i, 0) = noise(i, 0);
    a(i, 1) = noise(i, 1);
    a(i, 2) = noise(i, 0) + 1e-7 * noise(i, 2);
    a(i, 3) = noise(i, 0) - noise(i, 1) + 1e-7 * noise(i, 3);
  }
  const Matrix b = random_matrix(1, m, generator);
  const int max_passive = 4;
  const QrResult result =
      run_qr_sequence<Space>(a, b, {0, 1, 2, 3}, orthogonalization, max_passive, 1);
  ASSERT_EQ(result.k, 4);
  const double* q = result.values.data();
  for (int p = 0; p < 4; ++p)
    for (int c = 0; c <= p; ++c) {
      double dot = 0;
      for (std::int64_t i = 0; i < m; ++i) dot += q[p * m + i] * q[c * m + i];
      EXPECT_NEAR(dot, p == c ? 1.0 : 0.0, 1e-13) << "(Q^T Q)(" << p << ", " << c << ")";
    }
}
KPL_EXECUTION_SPACE_TEST(Nnls, QrOfNearlyDependentColumnsStaysOrthogonal) {
  check_nearly_dependent_columns<TypeParam>(kpl::NnlsOrthogonalization::classical_twice);
}

// ------------------------------------------- teams of two on the host
// The team code paths with more than one thread per team on a CPU: teams of
// 2 (OpenMP with 2 threads or more; Serial has one thread and clamps to 1),
// against the host reference and a fresh QR.
template <class Space>
struct NoTeamWork {
  KOKKOS_INLINE_FUNCTION void operator()(const typename Kokkos::TeamPolicy<Space>::member_type&) const {}
};

template <class Space>
void check_two_thread_teams() {
  if (kpl::impl::runs_on_host_v<Space> && Space().concurrency() >= 2) {
    ASSERT_GE(Kokkos::TeamPolicy<Space>(1, 1).team_size_max(NoTeamWork<Space>{},
                                                            Kokkos::ParallelForTag()),
              2)
        << "teams of 2 must be possible here, or this test checks nothing new";
  }
  for (const auto orthogonalization : {kpl::NnlsOrthogonalization::classical_twice,
                                       kpl::NnlsOrthogonalization::modified_gram_schmidt}) {
    SCOPED_TRACE(kpl::to_string(orthogonalization));
    NnlsOptions options;
    options.team_threads = 2;
    options.orthogonalization = orthogonalization;
    check_against_host_reference<Space, double>(AStorage::shared_left,
                                                kpl::NnlsGradient::from_residual, options);
    check_against_host_reference<Space, double>(AStorage::shared_right,
                                                kpl::NnlsGradient::from_cross_products, options);
    check_against_host_reference<Space, double>(AStorage::per_system_right,
                                                kpl::NnlsGradient::automatic, options);
    check_against_host_reference<Space, float>(AStorage::shared_left,
                                               kpl::NnlsGradient::from_residual, options);
    check_update_downdate<Space>(orthogonalization, 2);
  }
}
KPL_EXECUTION_SPACE_TEST(Nnls, HostReferenceTwoThreadTeams) { check_two_thread_teams<TypeParam>(); }

template <class Space>
void check_errors() {
  using Memory = typename Space::memory_space;
  Kokkos::View<double**, Memory> a("A", 5, 3), b("b", 2, 5), wrong_b("b", 2, 4);
  kpl::NnlsSolution<Space, double> solution(2, 3), wrong_solution(2, 4);
  const Space space;
  EXPECT_THROW(kpl::nnls(space, a, wrong_b, solution), std::invalid_argument);
  EXPECT_THROW(kpl::nnls(space, a, b, wrong_solution), std::invalid_argument);
  NnlsOptions zero_iterations;
  zero_iterations.max_iterations = 0;
  EXPECT_THROW(kpl::nnls(space, a, b, solution, zero_iterations), std::invalid_argument);
  Kokkos::View<double***, Memory> per_system("A", 3, 5, 3);
  EXPECT_THROW(kpl::nnls(space, per_system, b, solution), std::invalid_argument);
  // Cross products need one A for the whole batch.
  NnlsOptions cross_products;
  cross_products.gradient = kpl::NnlsGradient::from_cross_products;
  Kokkos::View<double***, Memory> two_systems("A", 2, 5, 3);
  EXPECT_THROW(kpl::nnls(space, two_systems, b, solution, cross_products), std::invalid_argument);
  const kpl::DenseColumns<double> dense{a.data(), 0, 1, 5, 5};
  EXPECT_THROW(kpl::nnls_columns(space, dense, 5, 3, b, solution, cross_products),
               std::invalid_argument);
  EXPECT_EQ(kpl::to_string(NnlsStatus::passive_set_full), "passive_set_full");
}
KPL_EXECUTION_SPACE_TEST(Nnls, Errors) { check_errors<TypeParam>(); }

}  // namespace
