// The random numbers behind `kpl simulate` and the cross-validation folds
// (impl/portable_random.hpp): the same bits on every standard library, and
// of the laws they claim. References are written afresh here: the standard's
// own fixed mt19937_64 output, long-double logarithms, the normal CDF from
// erfc, and counting.
#include <kpl/gam_file.hpp>
#include <kpl/impl/portable_random.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <vector>

namespace {

TEST(PortableRandom, UniformIsTheTop53BitsOfTheStandardEngine) {
  // [rand.predef]: the 10000th output of a default-constructed mt19937_64.
  std::mt19937_64 engine;
  engine.discard(9999);
  EXPECT_EQ(engine(), 9981545732273789042ull);
  std::mt19937_64 reference(42);
  kpl::impl::PortableRandom random(42);
  for (int i = 0; i < 1000; ++i)
    EXPECT_EQ(random.uniform(), double(reference() >> 11) / 9007199254740992.0);
}

TEST(PortableRandom, LogIsWithinTwoUlpsOfALongDoubleLog) {
  if (std::numeric_limits<long double>::digits <= 53) GTEST_SKIP() << "no wider long double";
  EXPECT_EQ(kpl::impl::portable_log(1.0), 0.0);
  std::vector<double> values;
  for (double x = 1e-300; x < 1e300; x *= 1.37) values.push_back(x);
  for (int i = -2000; i <= 2000; ++i) values.push_back(1 + i * 1e-7);
  for (double x : {0.70710678118654746, 0.70710678118654757, 1.4142135623730949,
                   std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(),
                   std::numeric_limits<double>::max(), 0.5, 2.0, 3.0})
    values.push_back(x);
  std::mt19937_64 engine(7);
  for (int i = 0; i < 100000; ++i) values.push_back(double((engine() >> 11) + 1) * 0x1.0p-53);
  for (double x : values) {
    const long double exact = std::log(static_cast<long double>(x));
    const double got = kpl::impl::portable_log(x);
    const double ulp =
        std::nextafter(std::fabs(double(exact)), INFINITY) - std::fabs(double(exact));
    EXPECT_LE(std::fabs(static_cast<long double>(got) - exact), 2 * (long double)ulp)
        << "log(" << x << ")";
  }
}

// Kolmogorov-Smirnov against the standard normal CDF, 0.5 erfc(-z / sqrt 2),
// plus the first two moments.
TEST(PortableRandom, NormalFollowsTheStandardNormalLaw) {
  kpl::impl::PortableRandom random(2024);
  const int n = 200000;
  std::vector<double> samples(n);
  for (auto& z : samples) z = random.normal();
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  double variance = 0;
  for (double z : samples) variance += (z - mean) * (z - mean);
  variance /= n - 1;
  EXPECT_LT(std::fabs(mean), 4 / std::sqrt(double(n)));
  EXPECT_LT(std::fabs(variance - 1), 4 * std::sqrt(2.0 / n));
  std::sort(samples.begin(), samples.end());
  double distance = 0;
  for (int i = 0; i < n; ++i) {
    const double cdf = 0.5 * std::erfc(-samples[i] / std::sqrt(2.0));
    distance =
        std::max({distance, std::fabs(cdf - double(i) / n), std::fabs(cdf - double(i + 1) / n)});
  }
  EXPECT_LT(distance, 1.63 / std::sqrt(double(n)));  // 1 % critical value
  kpl::impl::PortableRandom shifted(2024);
  EXPECT_EQ(shifted.normal(5, 3), 5 + 3 * kpl::impl::PortableRandom(2024).normal());
}

double chi_square(const std::vector<long>& counts, double expected) {
  double sum = 0;
  for (long count : counts) sum += (count - expected) * (count - expected) / expected;
  return sum;
}

TEST(PortableRandom, IntegersAreUniformOverTheirWholeRange) {
  kpl::impl::PortableRandom random(3);
  std::vector<long> counts(7);
  const int draws = 70000;
  for (int i = 0; i < draws; ++i) {
    const auto value = random.between(-3, 3);
    ASSERT_GE(value, -3);
    ASSERT_LE(value, 3);
    ++counts[value + 3];
  }
  EXPECT_LT(chi_square(counts, draws / 7.0), 22.46);  // 6 degrees of freedom, p = 0.001
  EXPECT_EQ(random.between(5, 5), 5);
  EXPECT_LT(random.below(std::numeric_limits<std::uint64_t>::max()),
            std::numeric_limits<std::uint64_t>::max());
}

TEST(PortableRandom, ShuffleDrawsEveryPermutationAlike) {
  kpl::impl::PortableRandom random(5);
  std::map<std::array<int, 3>, long> seen;
  const int draws = 60000;
  for (int i = 0; i < draws; ++i) {
    std::array<int, 3> order{0, 1, 2};
    random.shuffle(order.begin(), order.end());
    ++seen[order];
  }
  ASSERT_EQ(seen.size(), 6u);
  std::vector<long> counts;
  for (const auto& entry : seen) counts.push_back(entry.second);
  EXPECT_LT(chi_square(counts, draws / 6.0), 20.52);  // 5 degrees of freedom, p = 0.001
  std::vector<int> one{9};
  random.shuffle(one.begin(), one.end());
  EXPECT_EQ(one, std::vector<int>{9});
}

// The bits a simulated case must have on any platform: a change of these
// values changes every `kpl simulate gam` file, which must be deliberate.
TEST(PortableRandom, SimulatedGamCaseHasFixedBits) {
  kpl::GamSimulation simulation;
  simulation.observations = 3;
  simulation.covariates = 4;
  simulation.informative = 2;
  simulation.seed = 11;
  const auto data = kpl::simulate_gam(simulation);
  EXPECT_EQ(data.informative, (std::vector<std::int64_t>{0, 2}));
  const double X[] = {0x1.65b2949f22d3bp-1, 0x1.e0f173c8e95f0p-5, 0x1.22ccf231c2d3ap-2,
                      0x1.c9c99d6c6ea51p-1, 0x1.be6d3c435e8d9p-1, 0x1.162b099a26a36p-2,
                      0x1.93e30f0fcce90p-4, 0x1.c510f5337d4a1p-1, 0x1.93d014abe5018p-2,
                      0x1.079e43ec2ba14p-2, 0x1.438475bcc55aep-2, 0x1.7fa8333f851f2p-2};
  const double y[] = {0x1.d69f2f40c6700p+2, 0x1.6727990b12f32p+2, 0x1.6534bc569d143p+4};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(data.y(i), y[i]) << "y(" << i << ")";
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(data.X(i, j), X[i * 4 + j]) << "X(" << i << ", " << j << ")";
  }
}

}  // namespace
