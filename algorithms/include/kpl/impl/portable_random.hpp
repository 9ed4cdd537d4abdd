// Random numbers with the same bits on every standard library and compiler.
// std::mt19937_64's output sequence is fixed by the C++ standard, but
// std::uniform_real_distribution, std::normal_distribution,
// std::uniform_int_distribution and std::shuffle are not: libstdc++, libc++
// and MSVC's library turn the same engine output into different numbers. So
// `kpl simulate` and the cross-validation folds map the engine's output
// themselves, with IEEE operations only (+, -, *, /, sqrt and explicit fma,
// each correctly rounded, so a compiler's contraction of a * b + c cannot
// change a bit), and a logarithm of their own instead of the C library's.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>

namespace kpl {
namespace impl {

// log(x) for finite x > 0 with IEEE operations only, within about one ulp,
// arranged as fdlibm's e_log.c: x = (1 + f) 2^e with 1 + f in
// [sqrt(1/2), sqrt(2)) (f exact), s = f / (2 + f) and
// log(1 + f) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R)), where
// R = 2 s^2/3 + 2 s^4/5 + ... (|s| <= 0.1716: 11 terms reach 2^-60). Every
// product that meets a sum is an explicit fma, so no contraction moves a bit.
inline double portable_log(double x) {
  int exponent = 0;
  double mantissa = std::frexp(x, &exponent);  // exact, in [0.5, 1)
  if (mantissa < 0.70710678118654752440) {
    mantissa *= 2;  // exact
    --exponent;
  }
  const double f = mantissa - 1;  // exact (Sterbenz)
  const double s = f / (2 + f), z = s * s;
  double series = 2.0 / 23;
  for (int odd = 21; odd >= 3; odd -= 2) series = std::fma(series, z, 2.0 / odd);
  const double R = z * series, half_f = 0.5 * f;  // half_f exact
  // ln 2 split so that exponent * ln2_high is exact for |exponent| < 2^11.
  constexpr double ln2_high = 0x1.62e42fefa3800p-1, ln2_low = 0x1.ef35793c76730p-45;
  const double correction = std::fma(exponent, ln2_low, s * std::fma(half_f, f, R));
  const double log_mantissa_less_high = std::fma(half_f, f, -correction) - f;
  return std::fma(exponent, ln2_high, -log_mantissa_less_high);
}

class PortableRandom {
 public:
  explicit PortableRandom(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t bits() { return engine_(); }

  // Uniform in [0, 1) on the grid of 2^-53: the top 53 bits of one output.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in [low, high).
  double uniform(double low, double high) { return std::fma(high - low, uniform(), low); }

  // Uniform integer in [0, count), count >= 1, without modulo bias: outputs
  // below 2^64 mod count are drawn again.
  std::uint64_t below(std::uint64_t count) {
    const std::uint64_t threshold = (0 - count) % count;
    for (;;) {
      const std::uint64_t value = engine_();
      if (value >= threshold) return value % count;
    }
  }
  // Uniform integer in [low, high], low <= high.
  std::int64_t between(std::int64_t low, std::int64_t high) {
    return low + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(high - low) + 1));
  }

  // Standard normal: Marsaglia's polar method (Marsaglia & Bray 1964), which
  // needs a logarithm and a square root but no sine or cosine; the second
  // value of each accepted pair is kept for the next call.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0, v = 0, s = 0;
    do {
      u = uniform(-1, 1);
      v = uniform(-1, 1);
      s = std::fma(u, u, v * v);
    } while (s >= 1 || s == 0);
    const double factor = std::sqrt(-2 * portable_log(s) / s);
    spare_ = v * factor;
    has_spare_ = true;
    return u * factor;
  }
  double normal(double mean, double standard_deviation) {
    return std::fma(standard_deviation, normal(), mean);
  }

  // Fisher-Yates (Knuth's Algorithm P): every permutation equally likely.
  template <class RandomIterator>
  void shuffle(RandomIterator first, RandomIterator last) {
    const auto count = last - first;
    for (auto i = count - 1; i > 0; --i) {
      const auto j = static_cast<decltype(i)>(below(static_cast<std::uint64_t>(i) + 1));
      std::swap(first[i], first[j]);
    }
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace impl
}  // namespace kpl
