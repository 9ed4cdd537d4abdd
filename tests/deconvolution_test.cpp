// The deconvolution module on every backend against references written
// afresh here: the Toeplitz matrix built densely on the host and solved by a
// plain active-set NNLS (Lawson & Hanson 1974, ch. 23) in long double, with
// tolerances from least-squares perturbation bounds computed from the data;
// noise-free recovery of simulated returns; the adaptive passive cap; the
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
#include <limits>
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

// ------------------------------------------------------- host references
using Real = long double;
using RealMatrix = std::vector<std::vector<Real>>;  // [column][row]

// The columns of `a` listed in `set`, as RealMatrix.
RealMatrix columns_of(const HostMatrix& a, const std::vector<std::int64_t>& set) {
  RealMatrix q;
  for (const auto j : set) {
    q.emplace_back(a.extent(0));
    for (std::size_t i = 0; i < a.extent(0); ++i) q.back()[i] = a(i, j);
  }
  return q;
}

// Least squares min ||A_P z - b|| by modified Gram-Schmidt, orthogonalized
// twice (Björck 1996, §2.4), then R z = Q^T b by back substitution.
std::vector<Real> host_least_squares(const HostMatrix& a, const std::vector<std::int64_t>& set,
                                     const std::vector<Real>& b) {
  RealMatrix q = columns_of(a, set);
  const std::size_t k = q.size(), m = b.size();
  RealMatrix r(k, std::vector<Real>(k, 0));
  for (std::size_t j = 0; j < k; ++j) {
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t p = 0; p < j; ++p) {
        Real dot = 0;
        for (std::size_t i = 0; i < m; ++i) dot += q[p][i] * q[j][i];
        for (std::size_t i = 0; i < m; ++i) q[j][i] -= dot * q[p][i];
        r[j][p] += dot;
      }
    Real norm = 0;
    for (std::size_t i = 0; i < m; ++i) norm += q[j][i] * q[j][i];
    norm = std::sqrt(norm);
    r[j][j] = norm;
    for (std::size_t i = 0; i < m; ++i) q[j][i] /= norm;
  }
  std::vector<Real> z(k, 0);
  for (std::size_t j = k; j-- > 0;) {
    Real value = 0;
    for (std::size_t i = 0; i < m; ++i) value += q[j][i] * b[i];
    for (std::size_t p = j + 1; p < k; ++p) value -= r[p][j] * z[p];
    z[j] = value / r[j][j];
  }
  return z;
}

// Lawson & Hanson's active-set NNLS (1974, ch. 23, algorithm NNLS). A column
// enters while w_j > tolerance ||a_j|| ||b||, w = A^T (b - A x): the
// documented stopping rule of kpl::nnls (kpl/nnls.hpp, default tolerance
// 10 eps max(m, n) for the precision solved in), so that the reference stops
// where a correct solver in that precision may.
template <class T = double>
std::vector<double> host_nnls(const HostMatrix& a, const std::vector<double>& b_values) {
  const std::int64_t m = a.extent(0), n = a.extent(1);
  const std::vector<Real> b(b_values.begin(), b_values.end());
  std::vector<Real> x(n, 0);
  std::vector<std::int64_t> passive;
  Real b_norm = 0;
  for (const Real v : b) b_norm += v * v;
  b_norm = std::sqrt(b_norm);
  for (int outer = 0; outer < 3 * n + 3; ++outer) {
    std::vector<Real> residual(b);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) residual[i] -= Real(a(i, j)) * x[j];
    std::int64_t entering = -1;
    Real best = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      if (std::find(passive.begin(), passive.end(), j) != passive.end()) continue;
      Real w = 0, column = 0;
      for (std::int64_t i = 0; i < m; ++i) w += Real(a(i, j)) * residual[i], column += Real(a(i, j)) * a(i, j);
      const Real tolerance = 10 * Real(std::numeric_limits<T>::epsilon()) * Real(std::max(m, n));
      const Real threshold = tolerance * std::sqrt(column) * b_norm;
      if (w > threshold && w > best) best = w, entering = j;
    }
    if (entering < 0) break;
    passive.push_back(entering);
    while (true) {
      const auto z = host_least_squares(a, passive, b);
      Real alpha = 1;
      for (std::size_t p = 0; p < passive.size(); ++p)
        if (z[p] <= 0) alpha = std::min(alpha, x[passive[p]] / (x[passive[p]] - z[p]));
      for (std::size_t p = 0; p < passive.size(); ++p)
        x[passive[p]] += alpha * (z[p] - x[passive[p]]);
      if (alpha == 1) break;
      std::vector<std::int64_t> kept;
      for (const auto j : passive)
        if (x[j] > 0) kept.push_back(j); else x[j] = 0;
      passive = kept;
    }
  }
  return std::vector<double>(x.begin(), x.end());
}

// Extreme singular values of A_P by one-sided Jacobi (Hestenes 1958;
// Demmel & Veselić 1992): rotate column pairs until all are orthogonal; the
// column norms are then the singular values.
std::pair<Real, Real> extreme_singular_values(RealMatrix q) {
  const std::size_t k = q.size();
  if (k == 0) return {0, 0};
  for (int sweep = 0; sweep < 60; ++sweep) {
    bool rotated = false;
    for (std::size_t p = 0; p + 1 < k; ++p)
      for (std::size_t r = p + 1; r < k; ++r) {
        Real alpha = 0, beta = 0, gamma = 0;
        for (std::size_t i = 0; i < q[p].size(); ++i)
          alpha += q[p][i] * q[p][i], beta += q[r][i] * q[r][i], gamma += q[p][i] * q[r][i];
        if (std::fabs(gamma) <= 1e-18L * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const Real zeta = (beta - alpha) / (2 * gamma);
        const Real t = (zeta >= 0 ? 1 : -1) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        const Real c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (std::size_t i = 0; i < q[p].size(); ++i) {
          const Real u = q[p][i], v = q[r][i];
          q[p][i] = c * u - s * v, q[r][i] = s * u + c * v;
        }
      }
    if (!rotated) break;
  }
  Real largest = 0, smallest = std::numeric_limits<Real>::infinity();
  for (const auto& column : q) {
    Real norm = 0;
    for (const Real v : column) norm += v * v;
    largest = std::max(largest, std::sqrt(norm)), smallest = std::min(smallest, std::sqrt(norm));
  }
  return {largest, smallest};
}

// How far a solver of unit roundoff u may put x from the exact NNLS
// solution x_ref, relative to ||x_ref||. On the reference's passive set P
// the NNLS solution is the least-squares solution of A_P z = b; a solver that
// finds the same P solves that problem backward stably (Householder or
// Gram-Schmidt QR with reorthogonalization: relative backward error
// eps <= m k u, k = |P|, Higham 2002, Thm 19.4 and 20.3, the constant taken
// as 1 for the rounding of the data and accumulated sums), and Wedin's
// least-squares perturbation theorem (Higham 2002, Thm 20.1) gives
//   ||x - x_ref|| / ||x_ref|| <= kappa eps / (1 - kappa eps)
//                                  (2 + (kappa + 1) ||r|| / (||A_P|| ||x_ref||)),
// kappa = sigma_max(A_P) / sigma_min(A_P), r = b - A x_ref. The bound is
// returned as infinity when kappa eps >= 1/2 (it says nothing there): the
// tests choose data where it does not.
double forward_error_bound(const HostMatrix& a, const std::vector<double>& b,
                           const std::vector<double>& x_ref,
                           const std::vector<std::int64_t>& passive, double u) {
  Real x_norm = 0;
  for (const Real v : x_ref) x_norm += v * v;
  if (passive.empty()) return 0;
  x_norm = std::sqrt(x_norm);
  const auto [largest, smallest] = extreme_singular_values(columns_of(a, passive));
  const Real kappa = largest / smallest;
  const Real eps = Real(a.extent(0)) * Real(passive.size()) * u;
  if (kappa * eps >= 0.5L) return std::numeric_limits<double>::infinity();
  Real r_norm = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    Real value = b[i];
    for (std::size_t j = 0; j < x_ref.size(); ++j) value -= Real(a(i, j)) * x_ref[j];
    r_norm += value * value;
  }
  r_norm = std::sqrt(r_norm);
  return double(kappa * eps / (1 - kappa * eps) * (2 + (kappa + 1) * r_norm / (largest * x_norm)));
}

std::vector<std::int64_t> positive_entries(const std::vector<double>& x) {
  std::vector<std::int64_t> set;
  for (std::size_t j = 0; j < x.size(); ++j)
    if (x[j] > 0) set.push_back(std::int64_t(j));
  return set;
}

// ||x - x_ref|| against forward_error_bound for waveform w of `result`, on
// passive set `passive` (x_ref's positive entries unless given).
void expect_within_bound(const HostMatrix& a, const std::vector<double>& b,
                         const std::vector<double>& x_ref, const HostMatrix& x, std::int64_t w,
                         double u, std::vector<std::int64_t> passive = {}) {
  if (passive.empty()) passive = positive_entries(x_ref);
  const double bound = forward_error_bound(a, b, x_ref, passive, u);
  ASSERT_TRUE(std::isfinite(bound)) << "waveform " << w << ": the data is too ill-conditioned";
  double difference = 0, size = 0;
  for (std::size_t j = 0; j < x_ref.size(); ++j) {
    difference += (x(w, j) - x_ref[j]) * (x(w, j) - x_ref[j]);
    size += x_ref[j] * x_ref[j];
  }
  EXPECT_LE(std::sqrt(difference), bound * std::sqrt(size)) << "waveform " << w;
}

std::vector<double> row_of(const HostMatrix& values, std::int64_t w) {
  std::vector<double> row(values.extent(1));
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = values(w, i);
  return row;
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
  }
  return result;
}

KPL_EXECUTION_SPACE_SUITE(Deconvolution);

template <class Space>
void check_against_dense_matrix() {
  std::mt19937_64 generator(432);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  // Pulse lengths odd and even, 1 and the whole waveform; shared and per
  // waveform; bands up to kpl::impl::short_band_rows (one GPU lane per
  // column in the gradient) and longer (groups of columns).
  struct Case {
    std::int64_t samples, pulse_length, waveforms;
    bool shared;
  };
  static_assert(kpl::impl::short_band_rows == 64, "the cases below straddle it");
  for (const Case c : {Case{60, 7, 5, true}, Case{61, 8, 4, false}, Case{33, 1, 3, false},
                       Case{20, 20, 3, true}, Case{1, 1, 2, true}, Case{150, 64, 3, false},
                       Case{151, 65, 3, true}, Case{160, 90, 2, false}}) {
    // Both QR updates on every backend: classical Gram-Schmidt's first pass
    // reads only the entering column's band.
    for (const auto [origin, orthogonalization] :
         {std::pair{kpl::PulseOrigin::start, kpl::NnlsOrthogonalization::modified_gram_schmidt},
          std::pair{kpl::PulseOrigin::center, kpl::NnlsOrthogonalization::modified_gram_schmidt},
          std::pair{kpl::PulseOrigin::start, kpl::NnlsOrthogonalization::classical_twice},
          std::pair{kpl::PulseOrigin::center, kpl::NnlsOrthogonalization::classical_twice}}) {
      SCOPED_TRACE("m = " + std::to_string(c.samples) + ", L = " + std::to_string(c.pulse_length) +
                   ", origin " + kpl::to_string(origin) +
                   (c.shared ? ", shared, " : ", per waveform, ") +
                   kpl::to_string(orthogonalization));
      HostMatrix pulses("pulses", c.shared ? 1 : c.waveforms, c.pulse_length);
      HostMatrix waveforms("waveforms", c.waveforms, c.samples);
      for (std::size_t i = 0; i < pulses.span(); ++i) pulses.data()[i] = uniform(generator);
      for (std::size_t i = 0; i < waveforms.span(); ++i)
        waveforms.data()[i] = uniform(generator) - 0.3;
      kpl::DeconvolutionOptions options;
      options.origin = origin;
      options.nnls.orthogonalization = orthogonalization;
      const auto result = run_deconvolve<Space>(pulses, waveforms, options);
      for (std::int64_t w = 0; w < c.waveforms; ++w) {
        const auto a = dense_toeplitz(pulses, w, c.samples, origin);
        // The same system, built densely and solved on the host.
        const auto b = row_of(waveforms, w);
        const auto x_ref = host_nnls(a, b);
        EXPECT_EQ(result.status[w], int(kpl::NnlsStatus::converged));
        expect_within_bound(a, b, x_ref, result.x, w, std::numeric_limits<double>::epsilon() / 2);
        // fit = A x summed over at most L taps: error <= gamma_L sum |a_ij x_j|,
        // gamma_L = L u / (1 - L u) (Higham 2002, §3.1), u of double.
        const double u = std::numeric_limits<double>::epsilon() / 2;
        const double gamma = c.pulse_length * u / (1 - c.pulse_length * u);
        for (std::int64_t i = 0; i < c.samples; ++i) {
          long double expected = 0, magnitude = 0;
          for (std::int64_t j = 0; j < c.samples; ++j) {
            expected += (long double)a(i, j) * result.x(w, j);
            magnitude += std::fabs((long double)a(i, j) * result.x(w, j));
          }
          EXPECT_LE(std::fabs(result.fit(w, i) - expected), gamma * magnitude) << "fit at " << i;
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

// Narrow Gaussian pulses (9 taps, sigma 1.2-2 samples), 1-3 returns and
// noise: a Toeplitz matrix whose passive columns are well enough conditioned
// for forward_error_bound to say something in float.
struct NarrowPulses {
  HostMatrix pulses, waveforms;
};
NarrowPulses narrow_pulses(std::int64_t count, std::int64_t samples, std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> width(1.2, 2.0), amplitude(0.2, 1.0);
  std::uniform_int_distribution<std::int64_t> position(0, samples - 9);
  std::normal_distribution<double> noise(0.0, 0.01);
  NarrowPulses data{HostMatrix("pulses", count, 9), HostMatrix("waveforms", count, samples)};
  for (std::int64_t w = 0; w < count; ++w) {
    const double sigma = width(generator);
    for (int t = 0; t < 9; ++t)
      data.pulses(w, t) = std::exp(-0.5 * (t - 4) * (t - 4) / (sigma * sigma));
    std::vector<double> x(std::size_t(samples), 0.0);
    for (int r = 0; r < 3; ++r) x[position(generator)] += amplitude(generator);
    for (std::int64_t i = 0; i < samples; ++i) {
      double value = noise(generator);
      for (int t = 0; t < 9 && t <= i; ++t) value += data.pulses(w, t) * x[i - t];
      data.waveforms(w, i) = value;
    }
  }
  return data;
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
  // Narrow pulses: with the simulator's 15-25 sample pulses the float
  // solutions move by more than the tolerance under the rounding of the
  // scaled pulse alone.
  struct {
    std::int64_t waveforms = 12, samples = 96;
  } simulation;
  const auto simulated = narrow_pulses(simulation.waveforms, simulation.samples, 21);
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

// x in precision T on the data rounded to T, within forward_error_bound for
// T's unit roundoff of: the least-squares solution on the solver's own
// passive set (how accurately it solved; whether that set is the right one
// is the host KKT check of run_deconvolve), and in double, where no column
// sits within rounding of the entering threshold, the host NNLS solution.
template <class Space, class T>
void check_host_reference() {
  const auto data = narrow_pulses(12, 96, 21);
  for (const auto origin : {kpl::PulseOrigin::start, kpl::PulseOrigin::center}) {
    SCOPED_TRACE("origin " + kpl::to_string(origin));
    kpl::DeconvolutionOptions options;
    options.origin = origin;
    const auto result = run_deconvolve<Space, T>(data.pulses, data.waveforms, options);
    const HostMatrix pulses = rounded_to<T>(data.pulses), waveforms = rounded_to<T>(data.waveforms);
    for (std::int64_t w = 0; w < std::int64_t(waveforms.extent(0)); ++w) {
      EXPECT_EQ(result.status[w], int(kpl::NnlsStatus::converged));
      const auto a = dense_toeplitz(pulses, w, waveforms.extent(1), origin);
      const auto b = row_of(waveforms, w);
      const double u = double(std::numeric_limits<T>::epsilon()) / 2;
      if constexpr (std::is_same_v<T, double>) expect_within_bound(a, b, host_nnls<T>(a, b), result.x, w, u);
      const auto passive = positive_entries(row_of(result.x, w));
      const auto z = passive.empty() ? std::vector<Real>{}
                                     : host_least_squares(a, passive, std::vector<Real>(b.begin(), b.end()));
      std::vector<double> x_ls(b.size(), 0.0);
      for (std::size_t p = 0; p < passive.size(); ++p) x_ls[passive[p]] = double(z[p]);
      expect_within_bound(a, b, x_ls, result.x, w, u, passive);
    }
  }
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, DoubleWithinErrorBoundOfHostReference) {
  check_host_reference<TypeParam, double>();
}
KPL_EXECUTION_SPACE_TEST(Deconvolution, FloatWithinErrorBoundOfHostReference) {
  check_host_reference<TypeParam, float>();
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
  // Float: the simulator's wide pulses make A_P too ill-conditioned for a
  // bound on x in float, but not on the residual. If the float solve returns
  // x_f, the exact NNLS solution of data within relative eps of (A, b)
  // (backward stability with the data rounded to float, eps = m n u_float as
  // in forward_error_bound), then with x* the exact solution for (A, b):
  //   ||A x_f - b|| <= ||A~ x_f - b~|| + eps (||A|| ||x_f|| + ||b||)
  //                 <= ||A~ x* - b~|| + eps (||A|| ||x_f|| + ||b||)
  //                 <= ||A x* - b|| + 2 eps (||A|| max(||x_f||, ||x*||) + ||b||),
  // and ||A x_f - b|| >= ||A x* - b|| since x_f >= 0 is feasible. The solver
  // stops once every w_j <= tau ||a_j|| ||b|| (tau = 10 eps max(m, n),
  // kpl/nnls.hpp), not at w <= 0; by convexity of f = ||A x - b||^2 / 2,
  // f(x_f) - f(x*) <= w . x* <= tau ||b|| sum_j ||a_j|| x*_j, which adds
  // sqrt(2 tau ||b|| sum_j ||a_j|| x*_j) to the bound.
  // (The lower side, rho >= rho_ref, holds to the reference's own rounding,
  // which the same bound covers.)
  kpl::DeconvolutionFileOptions single = one;
  single.single_precision = true;
  kpl::deconvolve_file(path("in.h5"), path("float.h5"), single);
  const auto x_float = kpl::hdf5::InputFile(path("float.h5")).read<float, 2>("/x");
  const auto x_double = b.read<double, 2>("/x");
  const auto pulses = truth.read<double, 2>("/pulse");
  // ||A x - b|| and ||x||, in long double.
  const auto residual_and_norm = [](const HostMatrix& a, const std::vector<double>& y,
                                    const auto& x_of) {
    long double rho = 0, x_norm = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      long double r = y[i];
      for (std::size_t j = 0; j < y.size(); ++j) r -= (long double)a(i, j) * x_of(j);
      rho += r * r, x_norm += (long double)x_of(i) * x_of(i);
    }
    return std::make_pair(std::sqrt(rho), std::sqrt(x_norm));
  };
  for (std::size_t w = 0; w < 50; ++w) {
    const auto a = dense_toeplitz(pulses, w, 100, kpl::PulseOrigin::start);
    const auto y = row_of(waveforms, w);
    const auto x_ref = host_nnls(a, y);
    long double a_norm = 0, y_norm = 0;
    for (std::size_t i = 0; i < 100; ++i) {
      y_norm += (long double)y[i] * y[i];
      for (std::size_t j = 0; j < 100; ++j) a_norm += (long double)a(i, j) * a(i, j);
    }
    a_norm = std::sqrt(a_norm), y_norm = std::sqrt(y_norm);
    const auto [rho_ref, xr_norm] = residual_and_norm(a, y, [&](std::size_t j) { return x_ref[j]; });
    long double band = 0;  // sum_j ||a_j|| x*_j
    for (std::size_t j = 0; j < 100; ++j) {
      long double column = 0;
      for (std::size_t i = 0; i < 100; ++i) column += (long double)a(i, j) * a(i, j);
      band += std::sqrt(column) * x_ref[j];
    }
    const auto expect_near_optimal = [&](const auto& x_of, double u, const char* precision) {
      const auto [rho, x_norm] = residual_and_norm(a, y, x_of);
      const long double eps = 100.0L * 100.0L * u;
      const long double tolerance = 10 * 2 * u * 100;  // kpl::nnls's default, 10 eps max(m, n)
      const long double bound = 2 * eps * (a_norm * std::max(x_norm, xr_norm) + y_norm) +
                                std::sqrt(2 * tolerance * y_norm * band);
      EXPECT_LE(rho - rho_ref, bound) << precision << ", waveform " << w;
      EXPECT_GE(rho - rho_ref, -bound) << precision << ", waveform " << w;
      for (std::size_t j = 0; j < 100; ++j) EXPECT_GE(x_of(j), 0.0) << precision;
    };
    expect_near_optimal([&](std::size_t j) { return double(x_float(w, j)); },
                        double(std::numeric_limits<float>::epsilon()) / 2, "float");
    expect_near_optimal([&](std::size_t j) { return x_double(w, j); },
                        std::numeric_limits<double>::epsilon() / 2, "double");
  }
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
