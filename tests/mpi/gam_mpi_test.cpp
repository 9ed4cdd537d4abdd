// The GAM fit across ranks (mpiexec -n 1, 2, 3): every rank simulates the
// same data, fits all of it alone (kpl::single_process()) and its own rows
// with the others; the two models must agree: the same selections and
// knots, B^T W B and so lambda to the last bit, and the offset, coefficients
// and risks within 1e-12 relative. Rows that do not divide evenly, a rank with no
// rows, data that is constant or of one class on one rank's rows only, and
// errors of one rank.
#include <kpl/error.hpp>
#include <kpl/gam.hpp>
#include <kpl/gam_file.hpp>
#include <kpl/mpi.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

// The agreement the issue asks for. B^T W B is summed in exact parts
// (kpl::cross_product_parts), so lambda has the same bits; the rest is
// summed in another order (B^T u each iteration, the risks) and differs in
// the last bits. A missing or doubled sum over processes is off by far more.
constexpr double tolerance_across_ranks = 1e-12;

using Space = Kokkos::DefaultExecutionSpace;
using Memory = Space::memory_space;

struct World {
  kpl::mpi::ProcessGroup group{MPI_COMM_WORLD};
  int rank = group.rank(), size = group.size();
};

// n = 1001 divides by neither 2 nor 3.
kpl::GamSimulatedData simulated(std::int64_t n = 1001, std::int64_t p = 8) {
  kpl::GamSimulation simulation;
  simulation.observations = n;
  simulation.covariates = p;
  simulation.informative = 3;
  simulation.seed = 11;
  simulation.noise_variance = 0.5;
  return kpl::simulate_gam(simulation);
}

// Rows [first, first + count) of the data on the device, in precision T.
template <class T>
std::pair<Kokkos::View<T**, Kokkos::LayoutRight, Memory>, Kokkos::View<T*, Memory>> rows_of(
    const kpl::GamSimulatedData& data, std::int64_t first, std::int64_t count) {
  const std::int64_t p = data.X.extent(1);
  Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> X("X", count, p);
  Kokkos::View<T*, Kokkos::HostSpace> y("y", count);
  for (std::int64_t i = 0; i < count; ++i) {
    for (std::int64_t j = 0; j < p; ++j) X(i, j) = T(data.X(first + i, j));
    y(i) = T(data.y(first + i));
  }
  return {Kokkos::create_mirror_view_and_copy(Memory(), X),
          Kokkos::create_mirror_view_and_copy(Memory(), y)};
}

// The largest |a - b| over the largest |a|.
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double error = 0, scale = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    error = std::max(error, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(a[i]));
  }
  return scale > 0 ? error / scale : error;
}

double elementwise_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(std::fabs(a[i]), 1e-300));
  return worst;
}

void expect_same_model(const kpl::GamModel& alone, const kpl::GamModel& split, double tolerance) {
  EXPECT_EQ(alone.selected, split.selected);
  EXPECT_EQ(alone.observations, split.observations);
  ASSERT_EQ(alone.meshes.size(), split.meshes.size());
  for (std::size_t j = 0; j < alone.meshes.size(); ++j) {
    EXPECT_EQ(alone.meshes[j].lower, split.meshes[j].lower) << "covariate " << j;
    EXPECT_EQ(alone.meshes[j].upper, split.meshes[j].upper) << "covariate " << j;
  }
  EXPECT_LE(relative_difference(alone.coefficients, split.coefficients), tolerance);
  EXPECT_LE(elementwise_relative_difference(alone.risk, split.risk), tolerance);
  EXPECT_LE(elementwise_relative_difference({alone.offset}, {split.offset}), 1e-12);
  EXPECT_EQ(alone.lambda, split.lambda);  // B^T W B has the same bits
  EXPECT_EQ(alone.df, split.df);
}

// Fits all rows alone and this rank's block (kpl::row_block, or `block`)
// across the world; checks they agree and returns the distributed model.
template <class T = double>
kpl::GamModel fit_both(const World& world, const kpl::GamSimulatedData& data,
                       const kpl::GamOptions& options, kpl::RowBlock block,
                       double tolerance = tolerance_across_ranks) {
  const std::int64_t n = data.y.extent(0);
  const auto [X, y] = rows_of<T>(data, 0, n);
  const auto alone = kpl::fit_gam(Space(), X, y, options);
  const auto [X_rows, y_rows] = rows_of<T>(data, block.first, block.count);
  kpl::GamTimings timings;
  const auto split = kpl::fit_gam(Space(), X_rows, y_rows, options, world.group, &timings);
  expect_same_model(alone, split, tolerance);
  EXPECT_EQ(timings.reduction_seconds > 0, world.size > 1 && options.mstop > 0);
  return split;
}

template <class T = double>
kpl::GamModel fit_both(const World& world, const kpl::GamSimulatedData& data,
                       const kpl::GamOptions& options, double tolerance = tolerance_across_ranks) {
  return fit_both<T>(world, data, options, kpl::row_block(world.group, data.y.extent(0)),
                     tolerance);
}

kpl::GamOptions short_fit(int mstop = 60) {
  kpl::GamOptions options;
  options.mstop = mstop;
  return options;
}

TEST(GamAcrossRanks, GaussianDirect) {
  World world;
  fit_both(world, simulated(), short_fit());
}

TEST(GamAcrossRanks, GramMode) {
  World world;
  auto options = short_fit(70);
  options.mode = kpl::GamMode::gram;
  options.gram_refresh = 25;                       // refreshes at 25, 50 and the end
  options.gram_cache_bytes = 2 * 8 * 24 * 24 * 8;  // two cached blocks: others formed again
  fit_both(world, simulated(), options);
}

TEST(GamAcrossRanks, DenseBasisThroughGemv) {
  World world;
  auto options = short_fit(40);
  options.basis = kpl::GamBasis::dense;
  fit_both(world, simulated(), options);
}

TEST(GamAcrossRanks, Binomial) {
  World world;
  auto data = simulated();
  for (std::size_t i = 0; i < data.y.extent(0); ++i) data.y(i) = data.y(i) > 7 ? 1 : 0;
  auto options = short_fit();
  options.family = kpl::GamFamily::binomial;
  fit_both(world, data, options);
}

TEST(GamAcrossRanks, Poisson) {
  World world;
  auto data = simulated();
  for (std::size_t i = 0; i < data.y.extent(0); ++i)
    data.y(i) = std::floor(std::exp(0.1 * data.y(i)));
  auto options = short_fit();
  options.family = kpl::GamFamily::poisson;
  fit_both(world, data, options);
}

// Sums in double of a float basis: only their order differs.
TEST(GamAcrossRanks, FloatBasisSelectsAlike) {
  World world;
  fit_both<float>(world, simulated(), short_fit());
}

// Rank 0 holds no rows; the others split them unevenly.
TEST(GamAcrossRanks, ARankWithoutRows) {
  World world;
  const std::int64_t n = 1001;
  kpl::RowBlock block{0, n};
  if (world.size > 1) {
    const std::int64_t others = world.size - 1, share = n / others;
    block = world.rank == 0
                ? kpl::RowBlock{0, 0}
                : kpl::RowBlock{(world.rank - 1) * share,
                                world.rank == world.size - 1 ? n - (others - 1) * share : share};
  }
  auto options = short_fit();
  fit_both(world, simulated(n), options, block);
  options.mode = kpl::GamMode::gram;
  fit_both(world, simulated(n), options, block);
  options.mode = kpl::GamMode::direct;
  options.basis = kpl::GamBasis::dense;
  fit_both(world, simulated(n), options, block);
  options.basis = kpl::GamBasis::evaluated;
  fit_both(world, simulated(n), options, block);
}

// The evaluated basis' direct mode, whose B^T W B and updates of f read rows
// evaluated from x (it keeps no compact basis): lambda and df with one
// process's bits.
TEST(GamAcrossRanks, EvaluatedBasis) {
  World world;
  auto options = short_fit();
  options.basis = kpl::GamBasis::evaluated;
  fit_both(world, simulated(), options);
}

// A covariate constant on rank 0's rows, and y of one class there: neither
// is so over all rows.
TEST(GamAcrossRanks, DataChecksAreGlobal) {
  World world;
  if (world.size == 1) GTEST_SKIP() << "needs two ranks";
  auto data = simulated();
  const std::int64_t n = data.y.extent(0);
  const std::int64_t rank0_rows = (n + world.size - 1) / world.size;  // kpl::row_block's
  for (std::int64_t i = 0; i < rank0_rows; ++i) data.X(i, 2) = 0.25;
  for (std::int64_t i = 0; i < n; ++i) data.y(i) = i < rank0_rows ? 0 : (data.y(i) > 7 ? 1 : 0);
  auto options = short_fit();
  options.family = kpl::GamFamily::binomial;
  if (world.rank == 0) {  // alone, rank 0's rows are refused
    const auto [X0, y0] = rows_of<double>(data, 0, rank0_rows);
    EXPECT_THROW(kpl::fit_gam(Space(), X0, y0, options), kpl::input_error);
  }
  fit_both(world, data, options);
}

TEST(GamAcrossRanks, CrossValidationMatchesOneProcess) {
  World world;
  const auto data = simulated();
  const std::int64_t n = data.y.extent(0);
  const auto options = short_fit(40);
  const auto [X, y] = rows_of<double>(data, 0, n);
  const auto alone = kpl::cross_validate_gam(Space(), X, y, options, 3, 5);
  const auto block = kpl::row_block(world.group, n);
  const auto [X_rows, y_rows] = rows_of<double>(data, block.first, block.count);
  const auto split = kpl::cross_validate_gam(Space(), X_rows, y_rows, options, 3, 5, world.group);
  EXPECT_EQ(alone.folds, split.folds);
  EXPECT_EQ(alone.best_mstop, split.best_mstop);
  EXPECT_LE(elementwise_relative_difference(alone.risk, split.risk), tolerance_across_ranks);
}

// Progress reports on rank 0 only: the others take part in their sums, and
// the risks reported are the group's.
TEST(GamAcrossRanks, ProgressOnOneRank) {
  World world;
  const auto data = simulated();
  const auto block = kpl::row_block(world.group, data.y.extent(0));
  const auto [X_rows, y_rows] = rows_of<double>(data, block.first, block.count);
  std::vector<std::pair<int, double>> reports;
  kpl::GamProgress progress;
  if (world.rank == 0) progress.report = [&](int m, double risk) { reports.push_back({m, risk}); };
  progress.interval_seconds = 0;
  const auto model =
      kpl::fit_gam(Space(), X_rows, y_rows, short_fit(20), world.group, nullptr, progress);
  if (world.rank != 0) return;
  ASSERT_EQ(reports.size(), 20u);
  for (const auto& [m, risk] : reports)
    EXPECT_LE(std::fabs(risk - model.risk[m]), 1e-13 * model.risk[m]) << "iteration " << m;
}

TEST(GamAcrossRanks, AnErrorOfOneRankIsEveryRanks) {
  World world;
  auto data = simulated();
  const std::int64_t n = data.y.extent(0);
  const auto block = kpl::row_block(world.group, n);
  const int failing = world.size - 1;
  if (world.rank == failing) data.X(block.first + block.count - 1, 1) = std::nan("");
  const auto [X_rows, y_rows] = rows_of<double>(data, block.first, block.count);
  EXPECT_THROW(kpl::fit_gam(Space(), X_rows, y_rows, short_fit(), world.group), kpl::input_error);
  // y of another length than X on one rank only.
  const auto short_y = Kokkos::subview(
      y_rows, std::make_pair(std::int64_t(0), block.count - (world.rank == failing ? 1 : 0)));
  EXPECT_THROW(kpl::fit_gam(Space(), X_rows, short_y, short_fit(), world.group), kpl::input_error);
  // Fewer rows than the basis size over all ranks.
  const auto few = kpl::row_block(world.group, 20);
  const auto [X_few, y_few] = rows_of<double>(data, few.first, few.count);
  try {
    kpl::fit_gam(Space(), X_few, y_few, short_fit(), world.group);
    FAIL() << "no error";
  } catch (const kpl::input_error& error) {
    EXPECT_NE(std::string(error.what()).find("20 observations"), std::string::npos) << error.what();
  }
}

}  // namespace
