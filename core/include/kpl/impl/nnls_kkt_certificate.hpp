// kpl::kkt_certificate (kpl/nnls.hpp) on the host: the KKT conditions of
// min ||A x - b|| s.t. x >= 0 from w = A^T (b - A x), in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace kpl {
namespace impl {

template <class Certificate, class AView, class BVector, class XVector>
Certificate kkt_certificate(const AView& A, const BVector& b, const XVector& x) {
  const std::size_t m = A.extent(0), n = A.extent(1);
  if (b.extent(0) != m || x.extent(0) != n)
    throw std::invalid_argument("kpl::kkt_certificate: A, b and x do not match");
  std::vector<double> residual(m);
  double squared = 0;
  for (std::size_t i = 0; i < m; ++i) {
    double value = b(i);
    for (std::size_t j = 0; j < n; ++j) value -= double(A(i, j)) * double(x(j));
    residual[i] = value;
    squared += value * value;
  }
  Certificate certificate;
  certificate.residual_norm = std::sqrt(squared);
  for (std::size_t j = 0; j < n; ++j) {
    double gradient = 0;
    for (std::size_t i = 0; i < m; ++i) gradient += double(A(i, j)) * residual[i];
    const double value = x(j);
    certificate.negativity = std::max(certificate.negativity, -value);
    if (value > 0) {
      certificate.positive_gradient = std::max(certificate.positive_gradient, std::abs(gradient));
    } else {
      certificate.zero_set_gradient = std::max(certificate.zero_set_gradient, gradient);
    }
  }
  return certificate;
}

}  // namespace impl
}  // namespace kpl
