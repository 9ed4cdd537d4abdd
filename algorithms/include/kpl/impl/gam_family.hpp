// The GAM's response families (kpl/gam.hpp): loss and negative gradient per
// observation, f the linear predictor. Gaussian (y - f)^2; Binomial the
// negative log-likelihood of y in {0, 1} with f the log-odds; Poisson that
// of a count with f = log(mean), lgamma(y + 1) included (mboost's risks).
//
// mboost's Binomial() codes y as -1/+1, models f = half the log-odds and
// takes as its negative gradient that of log2(1 + e^(-2yf)), (2 / ln 2)(y - p)
// in kpl's terms: an mboost fit with step nu therefore follows kpl's path
// with step 4 nu / ln 2 (about 5.77 nu), selecting the same learners, with
// coefficients and offset half of kpl's.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <string>

namespace kpl {

enum class GamFamily { gaussian, binomial, poisson };

inline std::string to_string(GamFamily family) {
  switch (family) {
    case GamFamily::gaussian:
      return "gaussian";
    case GamFamily::binomial:
      return "binomial";
    case GamFamily::poisson:
      return "poisson";
  }
  return "unknown";
}

namespace impl {

struct GamFamilyFunctions {
  GamFamily family;

  KOKKOS_INLINE_FUNCTION double negative_gradient(double y, double f) const {
    using namespace compat::math;
    switch (family) {
      case GamFamily::binomial:
        return y - 1 / (1 + exp(-f));
      case GamFamily::poisson:
        return y - exp(f);
      default:
        return y - f;
    }
  }
  KOKKOS_INLINE_FUNCTION double loss(double y, double f) const {
    using namespace compat::math;
    switch (family) {
      case GamFamily::binomial:  // log(1 + e^f) - y f, without overflow
        return (f > 0 ? f + log1p(exp(-f)) : log1p(exp(f))) - y * f;
      case GamFamily::poisson:
        return exp(f) - y * f + lgamma(y + 1);
      default:
        return (y - f) * (y - f);
    }
  }
};

}  // namespace impl
}  // namespace kpl
