// The deconvolution module on every backend: Toeplitz columns from the pulse
// against the same matrix stored densely, noise-free recovery of simulated
// returns, the adaptive passive cap against an uncapped solve, and the
// errors; then the file layer (`kpl deconv`, `kpl nnls`, `kpl simulate
// deconv`): chunking, streaming, and bad input that leaves no output behind.
#include "execution_space_test.hpp"
#include "kkt_reference.hpp"

#include <kpl/deconvolution.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/nnls_file.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using HostMatrix = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;

template <class Space>
using DeviceMatrix = Kokkos::View<double**, Kokkos::LayoutRight, typename Space::memory_space>;

struct Deconvolved {
  HostMatrix x, fit;
  std::vector<int> status, iterations;
  std::vector<double> residual_norm, kkt_residual;
};

// The dense Toeplitz matrix the module never builds: A[i, j] = s[i - j + c].
HostMatrix dense_toeplitz(const HostMatrix& pulses, std::int64_t w, std::int64_t m,
                          kpl::PulseOrigin origin) {
  const std::int64_t length = pulses.extent(1);
  const std::int64_t c = origin == kpl::PulseOrigin::start ? 0 : length / 2;
  HostMatrix a("A", m, m);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < m; ++j) {
      const std::int64_t tap = i - j + c;
      a(i, j) = tap >= 0 && tap < length ? pulses(pulses.extent(0) == 1 ? 0 : w, tap) : 0.0;
    }
  return a;
}

template <class T>
HostMatrix rounded_to(const HostMatrix& values) {
  HostMatrix rounded("rounded", values.extent(0), values.extent(1));
  for (std::size_t i = 0; i < values.span(); ++i) rounded.data()[i] = double(T(values.data()[i]));
  return rounded;
}

// Deconvolves in precision T on Space; every waveform reported converged
// must satisfy the KKT conditions, checked on the host from the data the
// solver saw (kkt_reference.hpp), as the device's own check says.
template <class Space, class T = double>
Deconvolved run_deconvolve(const HostMatrix& pulses, const HostMatrix& waveforms,
                           const kpl::DeconvolutionOptions& options) {
  using Memory = typename Space::memory_space;
  const HostMatrix pulses_seen = rounded_to<T>(pulses), waveforms_seen = rounded_to<T>(waveforms);
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> pulses_device("pulses", pulses.extent(0),
                                                               pulses.extent(1));
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> waveforms_device("waveforms", waveforms.extent(0),
                                                                  waveforms.extent(1));
  {
    auto p = Kokkos::create_mirror_view(pulses_device);
    auto y = Kokkos::create_mirror_view(waveforms_device);
    for (std::size_t i = 0; i < p.span(); ++i) p.data()[i] = T(pulses.data()[i]);
    for (std::size_t i = 0; i < y.span(); ++i) y.data()[i] = T(waveforms.data()[i]);
    Kokkos::deep_copy(pulses_device, p);
    Kokkos::deep_copy(waveforms_device, y);
  }
  const std::int64_t count = waveforms.extent(0), m = waveforms.extent(1);
  kpl::NnlsSolution<Space, T> solution(count, m);
  Kokkos::View<T**, Kokkos::LayoutRight, Memory> fit("fit", count, m);
  const Space space;
  kpl::deconvolve<Space, T>(space, pulses_device, waveforms_device, solution, fit, options);
  space.fence();
  Deconvolved result{HostMatrix("x", count, m), HostMatrix("fit", count, m), {}, {}, {}, {}};
  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.x);
  const auto fit_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, fit);
  for (std::size_t i = 0; i < x.span(); ++i) {
    result.x.data()[i] = x.data()[i];
    result.fit.data()[i] = fit_host.data()[i];
  }
  const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.status);
  const auto iterations =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.iterations);
  const auto residual =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.residual_norm);
  const auto kkt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.kkt_residual);
  const double tolerance = kpl::testing::kkt_tolerance<T>(m, m);
  for (std::int64_t w = 0; w < count; ++w) {
    result.status.push_back(status(w));
    result.iterations.push_back(iterations(w));
    result.residual_norm.push_back(residual(w));
    result.kkt_residual.push_back(kkt(w));
    if (status(w) != int(kpl::NnlsStatus::converged)) continue;
    const auto a = dense_toeplitz(pulses_seen, w, m, options.origin);
    const double host = kpl::testing::kkt_residual(
        m, m, [&](std::int64_t i, std::int64_t j) { return a(i, j); },
        [&](std::int64_t i) { return waveforms_seen(w, i); },
        [&](std::int64_t j) { return result.x(w, j); });
    EXPECT_LE(host, tolerance) << "waveform " << w << " reported converged";
    EXPECT_LE(kkt(w), tolerance) << "waveform " << w;
  }
  return result;
}

KPL_EXECUTION_SPACE_SUITE(Deconvolution);

template <class Space>
void check_against_dense_matrix() {
  std::mt19937_64 generator(432);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  // Pulse lengths odd and even, 1 and the whole waveform; shared and per waveform.
  struct Case {
    std::int64_t samples, pulse_length, waveforms;
    bool shared;
  };
  for (const Case c : {Case{60, 7, 5, true}, Case{61, 8, 4, false}, Case{33, 1, 3, false},
                       Case{20, 20, 3, true}, Case{1, 1, 2, true}}) {
    for (const auto origin : {kpl::PulseOrigin::start, kpl::PulseOrigin::center}) {
      SCOPED_TRACE("m = " + std::to_string(c.samples) + ", L = " + std::to_string(c.pulse_length) +
                   ", origin " + kpl::to_string(origin) +
                   (c.shared ? ", shared" : ", per waveform"));
      HostMatrix pulses("pulses", c.shared ? 1 : c.waveforms, c.pulse_length);
      HostMatrix waveforms("waveforms", c.waveforms, c.samples);
      for (std::size_t i = 0; i < pulses.span(); ++i) pulses.data()[i] = uniform(generator);
      for (std::size_t i = 0; i < waveforms.span(); ++i)
        waveforms.data()[i] = uniform(generator) - 0.3;
      kpl::DeconvolutionOptions options;
      options.origin = origin;
      const auto result = run_deconvolve<Space>(pulses, waveforms, options);
      for (std::int64_t w = 0; w < c.waveforms; ++w) {
        const auto a = dense_toeplitz(pulses, w, c.samples, origin);
        // The same system through the dense solver path.
        const auto a_device =
            Kokkos::create_mirror_view_and_copy(typename Space::memory_space{}, a);
        DeviceMatrix<Space> b("b", 1, c.samples);
        auto b_host = Kokkos::create_mirror_view(b);
        for (std::int64_t i = 0; i < c.samples; ++i) b_host(0, i) = waveforms(w, i);
        Kokkos::deep_copy(b, b_host);
        kpl::NnlsSolution<Space, double> dense(1, c.samples);
        kpl::nnls(Space{}, a_device, b, dense);
        const auto x_dense = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, dense.x);
        EXPECT_EQ(result.status[w], int(kpl::NnlsStatus::converged));
        for (std::int64_t j = 0; j < c.samples; ++j)
          EXPECT_NEAR(result.x(w, j), x_dense(0, j), 1e-10) << "x at " << j;
        for (std::int64_t i = 0; i < c.samples; ++i) {
          double expected = 0;
          for (std::int64_t j = 0; j < c.samples; ++j) expected += a(i, j) * result.x(w, j);
          EXPECT_NEAR(result.fit(w, i), expected, 1e-12) << "fit at " << i;
        }
      }
    }
  }
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, ToeplitzColumnsMatchDenseMatrix) {
  check_against_dense_matrix<TypeParam>();
}

template <class Space>
void check_noise_free_recovery() {
  const kpl::DeconvolutionSimulation simulation{/*waveforms*/ 40, /*samples*/ 200, /*seed*/ 99,
                                                /*noise*/ 0.0};
  const auto simulated = kpl::WaveformSimulator(simulation).next(simulation.waveforms);
  const auto result = run_deconvolve<Space>(simulated.pulses, simulated.waveforms, {});
  for (std::int64_t w = 0; w < simulation.waveforms; ++w) {
    EXPECT_EQ(result.status[w], int(kpl::NnlsStatus::converged));
    for (std::int64_t j = 0; j < simulation.samples; ++j)
      EXPECT_NEAR(result.x(w, j), simulated.truth(w, j), 1e-8)
          << "waveform " << w << ", sample " << j;
    for (std::int64_t i = 0; i < simulation.samples; ++i)
      EXPECT_NEAR(result.fit(w, i), simulated.waveforms(w, i), 1e-8);
  }
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, NoiseFreeReturnsAreRecovered) {
  check_noise_free_recovery<TypeParam>();
}

// Pulses x 10^i and waveforms x 10^j over the range each precision holds
// (10^+-15 in float, 10^+-150 in double): x scales by 10^(j - i) to the
// rounding of the scaled inputs, fit and ||r|| by 10^j, statuses stay.
HostMatrix scaled(const HostMatrix& values, int exponent) {
  HostMatrix result("scaled", values.extent(0), values.extent(1));
  for (std::size_t i = 0; i < values.span(); ++i)
    result.data()[i] = double((long double)values.data()[i] * std::pow(10.0L, exponent));
  return result;
}

template <class Space, class T>
void check_units_drop_out() {
  // Narrow Gaussian pulses (sigma 1.2-2 samples; the simulator's 15-25
  // sample pulses make problems whose float solutions move by more than
  // 1e-4 under the rounding of the scaled pulse alone), 1-3 returns, noise.
  struct {
    std::int64_t waveforms = 12, samples = 96;
  } simulation;
  std::mt19937_64 generator(21);
  std::uniform_real_distribution<double> width(1.2, 2.0), amplitude(0.2, 1.0);
  std::uniform_int_distribution<std::int64_t> position(0, simulation.samples - 9);
  std::normal_distribution<double> noise(0.0, 0.01);
  struct {
    HostMatrix pulses, waveforms;
  } simulated{HostMatrix("pulses", simulation.waveforms, 9),
              HostMatrix("waveforms", simulation.waveforms, simulation.samples)};
  for (std::int64_t w = 0; w < simulation.waveforms; ++w) {
    const double sigma = width(generator);
    for (int t = 0; t < 9; ++t)
      simulated.pulses(w, t) = std::exp(-0.5 * (t - 4) * (t - 4) / (sigma * sigma));
    std::vector<double> x(std::size_t(simulation.samples), 0.0);
    for (int r = 0; r < 3; ++r) x[position(generator)] += amplitude(generator);
    for (std::int64_t i = 0; i < simulation.samples; ++i) {
      double value = noise(generator);
      for (int t = 0; t < 9 && t <= i; ++t) value += simulated.pulses(w, t) * x[i - t];
      simulated.waveforms(w, i) = value;
    }
  }
  const auto reference = run_deconvolve<Space, T>(simulated.pulses, simulated.waveforms, {});
  const int range = std::is_same_v<T, float> ? 15 : 150;
  const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-9;
  for (const int i : {-range, -range / 2, 0, 4, range / 2, range}) {
    for (const int j : {-range, -range / 2, -3, 0, range / 2, range}) {
      SCOPED_TRACE("pulses x 1e" + std::to_string(i) + ", waveforms x 1e" + std::to_string(j));
      const auto result =
          run_deconvolve<Space, T>(scaled(simulated.pulses, i), scaled(simulated.waveforms, j), {});
      for (std::int64_t w = 0; w < simulation.waveforms; ++w) {
        EXPECT_EQ(result.status[w], reference.status[w]) << "waveform " << w;
        double difference = 0, size = 0;
        for (std::int64_t k = 0; k < simulation.samples; ++k) {
          difference = std::max(
              difference,
              std::abs(result.x(w, k) * std::pow(10.0, double(i - j)) - reference.x(w, k)));
          size = std::max(size, std::abs(reference.x(w, k)));
        }
        EXPECT_LE(difference, tolerance * size) << "waveform " << w;
        EXPECT_NEAR(result.residual_norm[w] * std::pow(10.0, double(-j)),
                    reference.residual_norm[w], tolerance * reference.residual_norm[w])
            << "waveform " << w;
      }
    }
  }
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, UnitsDoNotMatterDouble) {
  check_units_drop_out<TypeParam, double>();
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, UnitsDoNotMatterFloat) {
  check_units_drop_out<TypeParam, float>();
}

template <class Space>
void check_adaptive_cap() {
  // Noisy waveforms whose passive sets grow past small caps: starting at a
  // cap of 2 forces several rounds of re-solving; the answer must equal the
  // solve with no cap at all.
  const kpl::DeconvolutionSimulation simulation{/*waveforms*/ 24, /*samples*/ 120, /*seed*/ 5,
                                                /*noise*/ 0.05};
  const auto simulated = kpl::WaveformSimulator(simulation).next(simulation.waveforms);
  kpl::DeconvolutionOptions adaptive;
  adaptive.first_passive_cap = 2;
  kpl::DeconvolutionOptions uncapped;
  uncapped.nnls.max_passive = simulation.samples;
  const auto a = run_deconvolve<Space>(simulated.pulses, simulated.waveforms, adaptive);
  const auto b = run_deconvolve<Space>(simulated.pulses, simulated.waveforms, uncapped);
  int retried = 0;
  for (std::int64_t w = 0; w < simulation.waveforms; ++w) {
    EXPECT_EQ(a.status[w], int(kpl::NnlsStatus::converged));
    EXPECT_EQ(b.status[w], int(kpl::NnlsStatus::converged));
    int positives = 0;
    for (std::int64_t j = 0; j < simulation.samples; ++j) {
      EXPECT_NEAR(a.x(w, j), b.x(w, j), 1e-10);
      positives += b.x(w, j) > 0;
    }
    retried += positives > 2;
    EXPECT_GE(a.iterations[w], b.iterations[w]);  // attempts add up
  }
  EXPECT_GT(retried, simulation.waveforms / 2);  // the retry path ran
  // A fixed cap is a hard limit.
  kpl::DeconvolutionOptions fixed;
  fixed.nnls.max_passive = 2;
  const auto capped = run_deconvolve<Space>(simulated.pulses, simulated.waveforms, fixed);
  int full = 0;
  for (auto status : capped.status) full += status == int(kpl::NnlsStatus::passive_set_full);
  EXPECT_EQ(full, retried);
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, AdaptivePassiveCapMatchesUncappedSolve) {
  check_adaptive_cap<TypeParam>();
}

template <class Space>
void check_errors() {
  const Space space;
  DeviceMatrix<Space> waveforms("waveforms", 3, 10), long_pulse("pulse", 1, 11),
      wrong_count("pulses", 2, 4), fit("fit", 3, 10), wrong_fit("fit", 3, 9);
  kpl::NnlsSolution<Space, double> solution(3, 10);
  EXPECT_THROW((kpl::deconvolve<Space, double>)(space, long_pulse, waveforms, solution, fit),
               std::invalid_argument);
  EXPECT_THROW((kpl::deconvolve<Space, double>)(space, wrong_count, waveforms, solution, fit),
               std::invalid_argument);
  DeviceMatrix<Space> pulse("pulse", 1, 4);
  EXPECT_THROW((kpl::deconvolve<Space, double>)(space, pulse, waveforms, solution, wrong_fit),
               std::invalid_argument);
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, Errors) { check_errors<TypeParam>(); }

// ------------------------------------------------------------ file layer
// These run on the default execution space, as the command line does.
class DeconvolutionFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("kpl_deconvolution_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::string path(const std::string& name) const { return (directory_ / name).string(); }
  std::filesystem::path directory_;
};

TEST_F(DeconvolutionFiles, ChunksGiveTheSameAnswerAsOneBatch) {
  kpl::DeconvolutionSimulation simulation;
  simulation.waveforms = 50;
  simulation.samples = 100;
  simulation.seed = 17;
  kpl::simulate_deconvolution_file(simulation, path("in.h5"));
  kpl::DeconvolutionFileOptions one;
  const auto whole = kpl::deconvolve_file(path("in.h5"), path("one.h5"), one);
  EXPECT_EQ(whole.chunks, 1);
  kpl::DeconvolutionFileOptions small = one;
  small.memory_budget_bytes =
      7 * kpl::deconvolution_bytes_per_waveform<double>(100, 25, true, small.deconvolution);
  const auto chunked = kpl::deconvolve_file(path("in.h5"), path("chunked.h5"), small);
  EXPECT_EQ(chunked.waveforms_per_chunk, 7);
  EXPECT_EQ(chunked.chunks, 8);
  EXPECT_EQ(chunked.status_counts[0], 50);
  const kpl::hdf5::InputFile a(path("one.h5")), b(path("chunked.h5")), truth(path("in.h5"));
  for (const char* name : {"/x", "/fit"}) {
    const auto x_a = a.read<double, 2>(name), x_b = b.read<double, 2>(name);
    ASSERT_EQ(x_a.extent(0), 50u);
    for (std::size_t i = 0; i < x_a.span(); ++i) EXPECT_EQ(x_a.data()[i], x_b.data()[i]) << name;
  }
  const auto status = b.read<std::int32_t, 1>("/status");
  const auto rnorm = b.read<double, 1>("/rnorm");
  const auto fit = b.read<double, 2>("/fit");
  const auto waveforms = truth.read<double, 2>("/waveforms");
  for (std::size_t w = 0; w < 50; ++w) {
    EXPECT_EQ(status(w), 0);
    double squared = 0;
    for (std::size_t i = 0; i < 100; ++i)
      squared += (fit(w, i) - waveforms(w, i)) * (fit(w, i) - waveforms(w, i));
    EXPECT_NEAR(rnorm(w), std::sqrt(squared), 1e-10);
  }
  EXPECT_EQ(b.read_string_attribute("/", "pulse_origin"), "start");
  EXPECT_EQ(b.read_integer_attribute("/", "waveforms_per_chunk"), 7);
  // Float runs and gives nearly the same returns.
  kpl::DeconvolutionFileOptions single = one;
  single.single_precision = true;
  kpl::deconvolve_file(path("in.h5"), path("float.h5"), single);
  const auto x_float = kpl::hdf5::InputFile(path("float.h5")).read<float, 2>("/x");
  const auto x_true = truth.read<double, 2>("/x_true");
  double largest_error = 0;
  for (std::size_t w = 0; w < 50; ++w) {
    // Total returned energy is what noise cannot move much, over the columns
    // whose pulse lies wholly inside the waveform (where the simulation puts
    // its returns): a column near the end holds only the pulse's first
    // samples, ~1e-5 of its peak, and the exact NNLS solution may use it to
    // fit the last samples' noise with a large x_j.
    double sum_float = 0, sum_true = 0;
    const std::size_t covered = 100 - kpl::WaveformSimulator::pulse_window + 1;
    for (std::size_t j = 0; j < covered; ++j) sum_float += x_float(w, j), sum_true += x_true(w, j);
    largest_error = std::max(largest_error, std::abs(sum_float - sum_true) / sum_true);
  }
  EXPECT_LT(largest_error, 0.2);
}

TEST_F(DeconvolutionFiles, BadInputIsAnErrorAndWritesNothing) {
  const auto write = [&](const std::string& name, std::vector<std::size_t> pulse_shape,
                         std::vector<std::size_t> waveform_shape, bool with_nan = false) {
    kpl::hdf5::OutputFile output(path(name));
    if (!pulse_shape.empty()) {
      if (pulse_shape.size() == 1) {
        HostMatrix pulse("pulse", 1, pulse_shape[0]);
        Kokkos::deep_copy(pulse, 1.0);
        output.write("/pulse", Kokkos::subview(pulse, 0, Kokkos::ALL));
      } else {
        HostMatrix pulse("pulse", pulse_shape[0], pulse_shape[1]);
        Kokkos::deep_copy(pulse, 1.0);
        output.write("/pulse", pulse);
      }
    }
    HostMatrix waveforms("waveforms", waveform_shape[0], waveform_shape[1]);
    Kokkos::deep_copy(waveforms, 0.5);
    if (with_nan) waveforms(waveform_shape[0] - 1, 0) = std::nan("");
    output.write("/waveforms", waveforms);
    output.commit();
  };
  write("no_pulse.h5", {}, {4, 30});
  write("long_pulse.h5", {31}, {4, 30});
  write("pulse_count.h5", {3, 5}, {4, 30});
  write("nan.h5", {5}, {4, 30}, true);
  write("empty.h5", {5}, {0, 30});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"no_pulse.h5", "/pulse is missing"},
      {"long_pulse.h5", "longer than the waveforms"},
      {"pulse_count.h5", "dimension mismatch"},
      {"nan.h5", "/waveforms holds NaN or Inf at \\[3, 0\\]"},
      {"empty.h5", "empty"},
      {"absent.h5", "no such file"}};
  for (const auto& [name, message] : cases) {
    SCOPED_TRACE(name);
    try {
      kpl::deconvolve_file(path(name), path("out.h5"), {});
      ADD_FAILURE() << "no error";
    } catch (const kpl::input_error& error) {
      EXPECT_TRUE(std::regex_search(std::string(error.what()), std::regex(message)))
          << error.what();
    }
    EXPECT_FALSE(std::filesystem::exists(path("out.h5")));
  }
  kpl::DeconvolutionFileOptions tiny;
  tiny.memory_budget_bytes = 1000;
  write("fine.h5", {5}, {4, 30});
  EXPECT_THROW(kpl::deconvolve_file(path("fine.h5"), path("out.h5"), tiny), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(path("out.h5")));
}

TEST_F(DeconvolutionFiles, NnlsFileMatchesScipyAndChecksShapes) {
  const char* moved = std::getenv("KPL_SOURCE_DIR");
  const std::string data = std::string(moved ? moved : KPL_SOURCE_DIR) + "/tests/data/nnls/";
  const auto summary = kpl::solve_nnls_file(data + "nnls_exact80x25.h5", path("x.h5"), {});
  EXPECT_EQ(summary.systems, 8);
  EXPECT_EQ(summary.status_counts[0], 8);
  const auto x = kpl::hdf5::InputFile(path("x.h5")).read<double, 2>("/x");
  const auto reference =
      kpl::hdf5::InputFile(data + "nnls_exact80x25_ref.h5").read<double, 2>("/x_ref");
  for (std::size_t i = 0; i < x.span(); ++i) EXPECT_NEAR(x.data()[i], reference.data()[i], 1e-8);
  EXPECT_EQ(kpl::hdf5::InputFile(path("x.h5")).read_string_attribute("/", "gradient"), "automatic");
  // The gradient from A^T A (the shared /A) gives the same solutions.
  kpl::NnlsFileOptions cross_products;
  cross_products.nnls.gradient = kpl::NnlsGradient::from_cross_products;
  kpl::solve_nnls_file(data + "nnls_exact80x25.h5", path("x_cross.h5"), cross_products);
  const auto x_cross = kpl::hdf5::InputFile(path("x_cross.h5")).read<double, 2>("/x");
  for (std::size_t i = 0; i < x.span(); ++i)
    EXPECT_NEAR(x_cross.data()[i], reference.data()[i], 1e-8);
  // One system as /b [m], and A per system [B, m, n].
  {
    kpl::hdf5::OutputFile output(path("single.h5"));
    Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace> a("A", 2, 3, 2);
    HostMatrix b("b", 2, 3);
    a(0, 0, 0) = 1, a(0, 1, 1) = 1, a(0, 2, 0) = 1;  // system 0: x = (1, 2) fits exactly
    a(1, 0, 0) = 2, a(1, 1, 1) = 1, a(1, 2, 1) = 1;
    b(0, 0) = 1, b(0, 1) = 2, b(0, 2) = 1;
    b(1, 0) = -4, b(1, 1) = 3, b(1, 2) = 3;  // system 1: x = (0, 3)
    output.write("/A", a);
    output.write("/b", b);
    output.commit();
  }
  kpl::solve_nnls_file(path("single.h5"), path("single_x.h5"), {});
  const auto x_single = kpl::hdf5::InputFile(path("single_x.h5")).read<double, 2>("/x");
  EXPECT_NEAR(x_single(0, 0), 1.0, 1e-14);
  EXPECT_NEAR(x_single(0, 1), 2.0, 1e-14);
  EXPECT_NEAR(x_single(1, 0), 0.0, 1e-14);
  EXPECT_NEAR(x_single(1, 1), 3.0, 1e-14);
  try {  // cross products need one shared A
    kpl::solve_nnls_file(path("single.h5"), path("never.h5"), cross_products);
    ADD_FAILURE() << "no error";
  } catch (const kpl::input_error& error) {
    EXPECT_TRUE(std::regex_search(std::string(error.what()), std::regex("shared.*\\[B, m, n\\]")))
        << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path("never.h5")));
  {
    kpl::hdf5::OutputFile output(path("mismatch.h5"));
    HostMatrix a("A", 4, 3), b("b", 2, 5);
    output.write("/A", a);
    output.write("/b", b);
    output.commit();
  }
  try {
    kpl::solve_nnls_file(path("mismatch.h5"), path("never.h5"), {});
    ADD_FAILURE() << "no error";
  } catch (const kpl::input_error& error) {
    EXPECT_TRUE(
        std::regex_search(std::string(error.what()), std::regex("dimension mismatch.*/A.*/b")))
        << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path("never.h5")));
}

}  // namespace
