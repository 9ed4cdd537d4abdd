// Returns in deconvolved waveforms (kpl/waveform_returns.hpp) and the pieces
// of reading LVIS files (kpl/waveform_file.hpp), on solutions and pulses made
// by hand here, with the expected values worked out in the comments.
#include <kpl/waveform_file.hpp>
#include <kpl/waveform_returns.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace {

// x of 12 samples: runs [1, 2] (energy 1 + 3 = 4, centroid (1 + 6) / 4 =
// 1.75), [5] (0.5) and [9, 11] (2 + 2 + 4 = 8, centroid (18 + 20 + 44) / 8 =
// 10.25); a pulse peaking at 2 with origin 0 moves each by 2 samples.
const std::vector<double> three_runs = {0, 1, 3, 0, 0, 0.5, 0, 0, 0, 2, 2, 4};

TEST(WaveformReturns, RunsCentroidsEnergiesAndElevations) {
  const kpl::PulseShape pulse{2, 0.5};  // noise energy (rnorm / sqrt(12)) / 0.5
  kpl::WaveformReturns returns;
  const kpl::ElevationSpan span{100, 100 - 11 * 0.15, 11};  // 0.15 m per sample, downwards
  kpl::ReturnsOptions options;
  options.threshold = 0;  // every run inside the window
  EXPECT_EQ(kpl::find_returns(three_runs.data(), 12, 0.0, pulse, &span, options, returns), 2);
  // The third run's echo would peak at 12.25, past sample 11: not a return.
  ASSERT_EQ(returns.sample.size(), 2u);
  EXPECT_DOUBLE_EQ(returns.sample[0], 3.75);
  EXPECT_DOUBLE_EQ(returns.energy[0], 4);
  EXPECT_DOUBLE_EQ(returns.sample[1], 7);
  EXPECT_DOUBLE_EQ(returns.energy[1], 0.5);
  EXPECT_NEAR(returns.elevation[0], 100 - 3.75 * 0.15, 1e-12);
  EXPECT_NEAR(returns.elevation[1], 100 - 7 * 0.15, 1e-12);
  EXPECT_EQ(returns.counts, (std::vector<std::int64_t>{2}));
  // The threshold: rnorm = sqrt(12) gives sigma = 1 and noise energy 2; at
  // 1.5 runs need energy > 3: the 0.5 run goes.
  options.threshold = 1.5;
  kpl::WaveformReturns strict;
  EXPECT_EQ(kpl::find_returns(three_runs.data(), 12, std::sqrt(12.0), pulse, nullptr, options,
                              strict),
            1);
  EXPECT_DOUBLE_EQ(strict.sample[0], 3.75);
  EXPECT_TRUE(std::isnan(strict.elevation[0]));  // no elevations given
  // A run whose echo would peak before sample 0 (origin past its peak).
  kpl::WaveformReturns early;
  EXPECT_EQ(kpl::find_returns(three_runs.data(), 12, 0.0, kpl::PulseShape{-2, 1}, nullptr, {},
                              early),
            2);
  EXPECT_DOUBLE_EQ(early.sample[0], 5 - 2);  // the first run, at 1.75 - 2, is not
  EXPECT_DOUBLE_EQ(early.sample[1], 10.25 - 2);
}

// Scaling the waveform by a (x, rnorm by a) and the pulse by b (x by 1/b,
// ||s|| by b) leaves the returns' samples and the decisions unchanged.
TEST(WaveformReturns, DoNotDependOnUnits) {
  for (const double a : {1e-6, 1.0, 3e5}) {
    for (const double b : {1e-3, 1.0, 40.0}) {
      std::vector<double> x(three_runs);
      for (auto& value : x) value *= a / b;
      kpl::WaveformReturns returns;
      kpl::ReturnsOptions options;
      options.threshold = 1.5;
      kpl::find_returns(x.data(), 12, a * std::sqrt(12.0), kpl::PulseShape{2, 0.5 * b}, nullptr,
                        options, returns);
      ASSERT_EQ(returns.sample.size(), 1u) << a << " " << b;
      EXPECT_NEAR(returns.sample[0], 3.75, 1e-12);
      EXPECT_NEAR(returns.energy[0], 4 * a / b, 4e-12 * a / b);
    }
  }
}

TEST(WaveformReturns, PulseShapeIsTheFirstPeakAndTheNorm) {
  const std::vector<float> pulse = {0, 1, 3, 3, 2};
  const auto start = kpl::pulse_shape(pulse.data(), 5, 0);
  EXPECT_EQ(start.peak_shift, 2);  // the first of two equal maxima
  EXPECT_NEAR(start.norm, std::sqrt(23.0), 1e-6);
  EXPECT_EQ(kpl::pulse_shape(pulse.data(), 5, 2).peak_shift, 0);
}

// TXWAVE less the mean of its first 8 samples (10 here), clipped at zero,
// over its area: the two 11s of the baseline leave 1 each, 30, 50, 20 leave
// 20, 40, 10: area 72.
TEST(LvisPulse, BaselineRemovedClippedAndUnitArea) {
  std::vector<double> pulse = {10, 9, 11, 10, 10, 10, 9, 11, 30, 50, 20, 8, 10};
  ASSERT_TRUE(kpl::impl::normalise_lvis_pulse(pulse.data(), 13));
  const std::vector<double> expected = {0,       0,         1.0 / 72,  0,         0, 0, 0,
                                        1.0 / 72, 20.0 / 72, 40.0 / 72, 10.0 / 72, 0, 0};
  for (std::size_t t = 0; t < pulse.size(); ++t) EXPECT_NEAR(pulse[t], expected[t], 1e-15) << t;
  std::vector<float> flat(20, 7.0f);
  EXPECT_FALSE(kpl::impl::normalise_lvis_pulse(flat.data(), 20));
}

TEST(WaveformDatasets, NamesByRole) {
  const auto names = kpl::parse_waveform_dataset_names("pulse=/tx,waveforms=group/rx");
  EXPECT_EQ(names.waveforms, "group/rx");
  EXPECT_EQ(names.pulse, "/tx");
  EXPECT_TRUE(names.noise.empty());
  for (const char* bad : {"", "waveforms", "waves=/a", "noise=", "pulse=/a,pulse=/b", "pulse=/",
                          "waveforms=/a,"})
    EXPECT_THROW(kpl::parse_waveform_dataset_names(bad), std::invalid_argument) << bad;
}

}  // namespace
