// The GAM's penalties by one team per learner (kpl/impl/gam_penalise_on_device.hpp)
// on every backend and team shape: lambda against the 60-digit references
// of tests/data/gam/penalty_reference.h5, M and R against their definitions
// in plain host arithmetic, the learners the teams must leave to the host,
// and whole fits whose covariates need the host's search.
#include "execution_space_test.hpp"

#include <kpl/bspline.hpp>
#include <kpl/error.hpp>
#include <kpl/gam.hpp>
#include <kpl/gam_penalty.hpp>
#include <kpl/hdf5_io.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

const std::string data_directory =
    std::string(std::getenv("KPL_SOURCE_DIR") ? std::getenv("KPL_SOURCE_DIR") : KPL_SOURCE_DIR) +
    "/tests/data/gam/";

using Matrix = std::vector<double>;  // row-major k x k

struct TeamResults {
  std::vector<double> lambda, df, inverse, reduction;
  std::vector<int> status;
};

template <class Space>
std::vector<double> to_host(const Kokkos::View<double*, typename Space::memory_space>& device) {
  std::vector<double> host(device.extent(0));
  Kokkos::deep_copy(
      Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(host.data(), host.size()),
      device);
  return host;
}

// The teams' penalties of the learners' G ([p k k]) with the given shape.
template <class Space>
TeamResults team_penalties(const std::vector<double>& grams, int k, int differences, double df,
                           kpl::DfDefinition definition, int team_size, int vector_length) {
  using Memory = typename Space::memory_space;
  const std::int64_t learners = grams.size() / (k * k);
  Kokkos::View<double*, Kokkos::HostSpace> host_gram("gram", grams.size());
  std::copy(grams.begin(), grams.end(), host_gram.data());
  const auto gram = Kokkos::create_mirror_view_and_copy(Memory(), host_gram);
  kpl::impl::GamPenaltyOutputs<Memory> outputs;
  outputs.lambda = Kokkos::View<double*, Memory>("lambda", learners);
  outputs.df = Kokkos::View<double*, Memory>("df", learners);
  outputs.status = Kokkos::View<int*, Memory>("status", learners);
  outputs.inverse = Kokkos::View<double*, Memory>("inverse", grams.size());
  outputs.reduction = Kokkos::View<double*, Memory>("reduction", grams.size());
  const auto inputs = kpl::impl::gam_penalty_inputs(k, differences, df, definition);
  kpl::impl::gam_penalties_on_device(Space(), inputs, gram, outputs, team_size, vector_length);
  TeamResults results;
  results.lambda = to_host<Space>(outputs.lambda);
  results.df = to_host<Space>(outputs.df);
  results.inverse = to_host<Space>(outputs.inverse);
  results.reduction = to_host<Space>(outputs.reduction);
  const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), outputs.status);
  results.status.assign(status.data(), status.data() + learners);
  return results;
}

// The team shapes each backend is tested with: its own, and on CPUs teams
// of two and three threads (races and barriers), on GPUs teams of two
// warps (more rows and pairs than threads).
template <class Space>
std::vector<std::pair<int, int>> team_shapes() {
  if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible)
    return {{0, 0}, {2, 1}, {3, 1}};
  return {{0, 0}, {2, 32}};
}

Matrix block(const std::vector<double>& values, int k, std::int64_t j) {
  return Matrix(values.begin() + j * k * k, values.begin() + (j + 1) * k * k);
}

Matrix product(const Matrix& a, const Matrix& b, int k) {
  Matrix c(k * k, 0.0);
  for (int i = 0; i < k; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < k; ++j) c[i * k + j] += a[i * k + p] * b[p * k + j];
  return c;
}

double largest_magnitude(const Matrix& a) {
  double largest = 0;
  for (const double value : a) largest = std::max(largest, std::fabs(value));
  return largest;
}

// M (G + lambda K) = I and R = M (G + 2 lambda K) M, in plain host
// arithmetic from the definitions (kpl/gam_penalty.hpp).
void expect_smoother_matrices(const Matrix& gram, const Matrix& penalty, double lambda,
                              const Matrix& inverse, const Matrix& reduction, int k) {
  Matrix system(gram), doubled(gram);
  for (int e = 0; e < k * k; ++e) {
    system[e] += lambda * penalty[e];
    doubled[e] += 2 * lambda * penalty[e];
  }
  const Matrix identity = product(inverse, system, k);
  double worst = 0;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) worst = std::max(worst, std::fabs(identity[i * k + j] - (i == j)));
  EXPECT_LT(worst, 1e-7) << "M (G + lambda K) - I";
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) {
      EXPECT_EQ(inverse[i * k + j], inverse[j * k + i]) << "M not symmetric at " << i << ", " << j;
      EXPECT_EQ(reduction[i * k + j], reduction[j * k + i]) << "R not symmetric";
    }
  const Matrix expected = product(product(inverse, doubled, k), inverse, k);
  double difference = 0;
  for (int e = 0; e < k * k; ++e)
    difference = std::max(difference, std::fabs(reduction[e] - expected[e]));
  EXPECT_LT(difference, 1e-9 * largest_magnitude(expected)) << "R against M (G + 2 lambda K) M";
}

// The references' eight learners (k = 24, second differences, mboost's df =
// trace(2S - S^T S) = 4). Case 6, a clustered covariate, has rank(B) = 21:
// its rank needs G's spectrum, which the host has. Case 7 is singular but
// for the 1e-9 K ridge, with the small eigenvalues df hangs on beside one of
// 1e9.
template <class Space>
void check_references() {
  const kpl::hdf5::InputFile file(data_directory + "penalty_reference.h5");
  const auto grams = file.read<double, 3>("/gram");
  const auto penalty_array = file.read<double, 2>("/penalty");
  const auto lambdas = file.read<double, 1>("/lambda");
  const int k = static_cast<int>(penalty_array.extent(0));
  const std::int64_t learners = grams.extent(0);
  const std::vector<double> all(grams.data(), grams.data() + learners * k * k);
  const Matrix penalty(penalty_array.data(), penalty_array.data() + k * k);
  for (const auto& [team_size, vector_length] : team_shapes<Space>()) {
    SCOPED_TRACE("team size " + std::to_string(team_size) + ", vector length " +
                 std::to_string(vector_length));
    const auto results = team_penalties<Space>(all, k, 2, 4.0, kpl::DfDefinition::trace_2s_sts,
                                               team_size, vector_length);
    for (std::int64_t c = 0; c < learners; ++c) {
      SCOPED_TRACE("case " + std::to_string(c));
      if (c == 6) {
        EXPECT_EQ(results.status[c], kpl::impl::gam_penalty_for_the_host);
        continue;
      }
      ASSERT_EQ(results.status[c], kpl::impl::gam_penalty_done);
      EXPECT_NEAR(results.lambda[c], lambdas(c), 1e-11 * lambdas(c));
      EXPECT_NEAR(results.df[c], 4.0, 1e-12);
      expect_smoother_matrices(block(all, k, c), penalty, results.lambda[c],
                               block(results.inverse, k, c), block(results.reduction, k, c), k);
    }
  }
}

KPL_EXECUTION_SPACE_SUITE(GamPenalties);

KPL_EXECUTION_SPACE_TEST(GamPenalties, TeamsMatchHighPrecisionReferences) {
  check_references<TypeParam>();
}

// The teams' Cholesky factor (gam_team_cholesky) with every team shape,
// for k = 7 and 32: L L^T = A to rounding, and the bits of the textbook's
// left-looking order written out here (each product rounded, then each
// difference, in index order: the host's cholesky). A matrix that is not
// positive definite is refused by every thread.
template <class Space>
void check_team_cholesky() {
  using Memory = typename Space::memory_space;
  using Policy = Kokkos::TeamPolicy<Space>;
  using Scratch = Kokkos::View<double*, typename Space::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  std::mt19937_64 generator(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (const int k : {7, 32}) {
    // A = C C^T + k I, positive definite; the second matrix is not.
    Matrix a(k * k), c(k * k);
    for (double& value : c) value = uniform(generator);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) {
        double sum = i == j ? k : 0.0;
        for (int p = 0; p < k; ++p) sum += c[i * k + p] * c[j * k + p];
        a[i * k + j] = sum;
      }
    Matrix indefinite(a);
    indefinite[(k - 1) * k + k - 1] = -1;
    Matrix expected(k * k, 0.0);
    for (int j = 0; j < k; ++j) {
      double pivot = a[j * k + j];
      for (int p = 0; p < j; ++p) {
        const volatile double square = expected[j * k + p] * expected[j * k + p];
        pivot -= square;
      }
      expected[j * k + j] = std::sqrt(pivot);
      for (int i = j + 1; i < k; ++i) {
        double sum = a[i * k + j];
        for (int p = 0; p < j; ++p) {
          const volatile double term = expected[i * k + p] * expected[j * k + p];
          sum -= term;
        }
        expected[i * k + j] = sum / expected[j * k + j];
      }
    }
    for (const auto& [team_size, vector_length] : team_shapes<Space>()) {
      const bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible;
      const int lanes = vector_length != 0 ? vector_length : on_host ? 1 : 32;
      for (const bool definite : {true, false}) {
        Kokkos::View<double*, Kokkos::HostSpace> host_a("a", k * k);
        std::copy_n((definite ? a : indefinite).begin(), k * k, host_a.data());
        const auto device_a = Kokkos::create_mirror_view_and_copy(Memory(), host_a);
        Kokkos::View<double*, Memory> factor("factor", k * k);
        Kokkos::View<int*, Memory> accepted("accepted", 64 * lanes);
        Kokkos::deep_copy(accepted, -1);
        const auto kernel = KOKKOS_LAMBDA(const typename Policy::member_type& member) {
          const Scratch lower(member.team_scratch(0), k * k), diagonal(member.team_scratch(0), k);
          const bool ok = kpl::impl::gam_team_cholesky(
              member, k, [&](int i, int j) { return device_a(i * k + j); }, lower.data(),
              diagonal.data());
          member.team_barrier();
          // Each thread's and lane's own verdict.
          Kokkos::parallel_for(Kokkos::TeamThreadRange(member, member.team_size()), [&](int) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, lanes), [&](int lane) {
              accepted(member.team_rank() * lanes + lane) = ok ? 1 : 0;
            });
          });
          Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k * k),
                               [&](int e) { factor(e) = e % k <= e / k ? lower(e) : 0.0; });
        };
        const std::size_t bytes = Scratch::shmem_size(k * k) + Scratch::shmem_size(k);
        const int wanted = team_size != 0 ? team_size : on_host ? 1 : 16;
        const int threads = std::min(wanted, Policy(1, 1, lanes)
                                                 .set_scratch_size(0, Kokkos::PerTeam(bytes))
                                                 .team_size_max(kernel, Kokkos::ParallelForTag()));
        SCOPED_TRACE("k " + std::to_string(k) + ", team " + std::to_string(threads) + " x " +
                     std::to_string(lanes) + (definite ? "" : ", not positive definite"));
        Kokkos::parallel_for("test::gam::team_cholesky",
                             Policy(1, threads, lanes).set_scratch_size(0, Kokkos::PerTeam(bytes)),
                             kernel);
        const auto verdicts = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), accepted);
        for (int t = 0; t < 64 * lanes; ++t)
          EXPECT_EQ(verdicts(t), t < threads * lanes ? (definite ? 1 : 0) : -1) << "thread " << t;
        if (!definite) continue;
        const auto host_factor = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), factor);
        for (int e = 0; e < k * k; ++e)
          EXPECT_EQ(host_factor(e), expected[e]) << "L(" << e / k << ", " << e % k << ")";
        double worst = 0;
        for (int i = 0; i < k; ++i)
          for (int j = 0; j <= i; ++j) {
            double sum = 0;
            for (int p = 0; p <= j; ++p) sum += host_factor(i * k + p) * host_factor(j * k + p);
            worst = std::max(worst, std::fabs(sum - a[i * k + j]));
          }
        EXPECT_LT(worst, 1e-12 * largest_magnitude(a)) << "L L^T - A";
      }
    }
  }
}
KPL_EXECUTION_SPACE_TEST(GamPenalties, TeamCholeskyHasTheHostOrdersBits) {
  check_team_cholesky<TypeParam>();
}

// G = B^T B of a cubic learner of k functions at the given x.
Matrix gram_at(const std::vector<double>& x, int k) {
  Matrix gram(k * k, 0.0);
  kpl::BsplineMesh mesh;
  mesh.basis_size = k;
  double values[kpl::bspline_max_degree + 1];
  for (const double at : x) {
    const int first = kpl::bspline_row(mesh, at, values);
    for (int a = 0; a <= mesh.degree; ++a)
      for (int b = 0; b <= mesh.degree; ++b)
        gram[(first + a) * k + first + b] += values[a] * values[b];
  }
  return gram;
}

// Learners the teams must leave to the host, beside ordinary ones: G of
// three distinct values (rank(B) = 3 needs G's spectrum; then no lambda
// suits), G of six (rank 6 < k: the host's search succeeds), and a df just
// above the penalty's null space (no lambda below 1e15 reaches it). The
// host's penalise_learner decides each the way the teams' marks say.
template <class Space>
void check_learners_left_to_the_host() {
  const int k = 8;
  std::mt19937_64 engine(3);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<double> spread(400), three(400), six(400);
  for (std::size_t i = 0; i < spread.size(); ++i) {
    spread[i] = uniform(engine);
    three[i] = (i % 3) * 0.5;
    six[i] = (i % 6) * 0.2;
  }
  std::vector<double> grams;
  for (const auto& x : {spread, three, six, spread}) {
    const auto gram = gram_at(x, k);
    grams.insert(grams.end(), gram.begin(), gram.end());
  }
  const auto penalty = kpl::difference_penalty(k, 2);
  for (const auto& [team_size, vector_length] : team_shapes<Space>()) {
    SCOPED_TRACE("team size " + std::to_string(team_size));
    const auto results = team_penalties<Space>(grams, k, 2, 4.0, kpl::DfDefinition::trace_2s_sts,
                                               team_size, vector_length);
    EXPECT_EQ(results.status,
              (std::vector<int>{kpl::impl::gam_penalty_done, kpl::impl::gam_penalty_for_the_host,
                                kpl::impl::gam_penalty_for_the_host, kpl::impl::gam_penalty_done}));
    EXPECT_EQ(results.lambda[0], results.lambda[3]) << "the same G, another team";
    EXPECT_THROW(kpl::penalise_learner(block(grams, k, 1), penalty, k, 4.0,
                                       kpl::DfDefinition::trace_2s_sts, "three", 2),
                 std::invalid_argument);
    const auto six_values = kpl::penalise_learner(block(grams, k, 2), penalty, k, 4.0,
                                                  kpl::DfDefinition::trace_2s_sts, "six", 2);
    EXPECT_GT(six_values.lambda, 0);
    const auto near_null = team_penalties<Space>(
        block(grams, k, 0), k, 2, 2 + 1e-13, kpl::DfDefinition::trace, team_size, vector_length);
    EXPECT_EQ(near_null.status[0], kpl::impl::gam_penalty_for_the_host);
    EXPECT_THROW(kpl::penalise_learner(block(grams, k, 0), penalty, k, 2 + 1e-13,
                                       kpl::DfDefinition::trace, "near", 2),
                 std::invalid_argument);
  }
}

KPL_EXECUTION_SPACE_TEST(GamPenalties, UnusualLearnersAreLeftToTheHost) {
  check_learners_left_to_the_host<TypeParam>();
}

// ------------------------------------------------------------ whole fits

using HostMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;

// (G + lambda K)^-1 by Gauss-Jordan elimination with partial pivoting.
Matrix inverse_of(Matrix a, int k) {
  Matrix inverse(k * k, 0.0);
  for (int i = 0; i < k; ++i) inverse[i * k + i] = 1;
  for (int column = 0; column < k; ++column) {
    int pivot = column;
    for (int i = column + 1; i < k; ++i)
      if (std::fabs(a[i * k + column]) > std::fabs(a[pivot * k + column])) pivot = i;
    for (int j = 0; j < k; ++j) {
      std::swap(a[column * k + j], a[pivot * k + j]);
      std::swap(inverse[column * k + j], inverse[pivot * k + j]);
    }
    const double scale = 1 / a[column * k + column];
    for (int j = 0; j < k; ++j) {
      a[column * k + j] *= scale;
      inverse[column * k + j] *= scale;
    }
    for (int i = 0; i < k; ++i) {
      if (i == column) continue;
      const double factor = a[i * k + column];
      for (int j = 0; j < k; ++j) {
        a[i * k + j] -= factor * a[column * k + j];
        inverse[i * k + j] -= factor * inverse[column * k + j];
      }
    }
  }
  return inverse;
}

// mboost's df, trace(2S - S^T S) with S = B M B^T: 2 tr(M G) - tr(M G M G).
double trace_2s_sts(const Matrix& gram, const Matrix& penalty, double lambda, int k) {
  Matrix system(gram);
  for (int e = 0; e < k * k; ++e) system[e] += lambda * penalty[e];
  const Matrix smoother = product(inverse_of(system, k), gram, k);
  const Matrix squared = product(smoother, smoother, k);
  double trace = 0, trace_squared = 0;
  for (int i = 0; i < k; ++i) {
    trace += smoother[i * k + i];
    trace_squared += squared[i * k + i];
  }
  return 2 * trace - trace_squared;
}

// Covariates 0 and 2 spread over [0, 1], covariate 1 on `values` distinct
// values of it; y depends on covariates 0 and 1.
struct Data {
  HostMatrix X;
  HostVector y;
};
Data data_with_few_values(int values) {
  const std::int64_t n = 600;
  Data data{HostMatrix("X", n, 3), HostVector("y", n)};
  std::mt19937_64 engine(11);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::normal_distribution<double> noise(0, 0.1);
  for (std::int64_t i = 0; i < n; ++i) {
    data.X(i, 0) = i < 2 ? double(i) : uniform(engine);
    data.X(i, 1) = double(i % values) / (values - 1);
    data.X(i, 2) = i < 2 ? double(i) : uniform(engine);
    data.y(i) = std::sin(6 * data.X(i, 0)) + (data.X(i, 1) > 0.5 ? 1 : 0) + noise(engine);
  }
  return data;
}

template <class Space>
kpl::GamModel fit_on(const Data& data, const kpl::GamOptions& options) {
  using Memory = typename Space::memory_space;
  const auto X = Kokkos::create_mirror_view_and_copy(Memory(), data.X);
  const auto y = Kokkos::create_mirror_view_and_copy(Memory(), data.y);
  return kpl::fit_gam(Space(), X, y, options);
}

// Covariate 1 has six distinct values for eight basis functions: rank(B) =
// 6, which the teams leave to the host. Every learner's lambda must still
// give df = 4 by the definition, and the fit must be the host's.
template <class Space>
void check_fit_with_a_learner_left_to_the_host() {
  const Data data = data_with_few_values(6);
  kpl::GamOptions options;
  options.basis_size = 8;
  options.mstop = 30;
  const auto model = fit_on<Space>(data, options);
  const auto penalty = kpl::difference_penalty(options.basis_size, options.differences);
  const int k = options.basis_size;
  for (int j = 0; j < 3; ++j) {
    std::vector<double> x(data.X.extent(0));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = data.X(i, j);
    Matrix gram(k * k, 0.0);
    double values[kpl::bspline_max_degree + 1];
    for (const double at : x) {
      const int first = kpl::bspline_row(model.meshes[j], at, values);
      for (int a = 0; a <= 3; ++a)
        for (int b = 0; b <= 3; ++b) gram[(first + a) * k + first + b] += values[a] * values[b];
    }
    EXPECT_NEAR(trace_2s_sts(gram, penalty, model.lambda[j], k), 4.0, 1e-8) << "covariate " << j;
  }
  EXPECT_NE(std::find(model.selected.begin(), model.selected.end(), 1), model.selected.end());
  const auto on_host = fit_on<Kokkos::DefaultHostExecutionSpace>(data, options);
  EXPECT_EQ(model.selected, on_host.selected);
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(model.lambda[j], on_host.lambda[j], 1e-9 * on_host.lambda[j]);
  for (std::size_t e = 0; e < on_host.coefficients.size(); ++e)
    EXPECT_NEAR(model.coefficients[e], on_host.coefficients[e], 1e-8);
}

KPL_EXECUTION_SPACE_TEST(GamPenalties, FitWithALearnerLeftToTheHost) {
  check_fit_with_a_learner_left_to_the_host<TypeParam>();
}

// Three distinct values for eight functions: no lambda suits, and the fit
// says which covariate and why, wherever it runs.
template <class Space>
void check_fit_with_too_few_values() {
  kpl::GamOptions options;
  options.basis_size = 8;
  try {
    fit_on<Space>(data_with_few_values(3), options);
    ADD_FAILURE() << "no error";
  } catch (const kpl::input_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("covariate 1:"), std::string::npos) << message;
    EXPECT_NE(message.find("too few distinct values"), std::string::npos) << message;
  }
}

KPL_EXECUTION_SPACE_TEST(GamPenalties, CovariateWithTooFewValuesIsAClearError) {
  check_fit_with_too_few_values<TypeParam>();
}

}  // namespace
