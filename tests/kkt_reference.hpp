// The KKT conditions of min ||A x - b||_2 subject to x >= 0, checked on the
// host, written afresh for the tests (independent of kpl's solver): with
// w = A^T (b - A x), every x_j >= 0, w_j <= 0 where x_j = 0 and w_j = 0 where
// x_j > 0. kkt_residual is the largest violation of column j over
// ||a_j|| ||b|| (the largest |w_j| can be), in long double; the documented
// tolerance of a converged system is 10 eps max(m, n) (eps of the precision
// solved in).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace kpl::testing {

// a(i, j), b(i), x(j): callables returning the values the solver was given.
template <class A, class B, class X>
double kkt_residual(std::int64_t m, std::int64_t n, const A& a, const B& b, const X& x) {
  std::vector<long double> residual(static_cast<std::size_t>(m));
  long double b_squared = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    long double value = b(i);
    for (std::int64_t j = 0; j < n; ++j) value -= (long double)a(i, j) * (long double)x(j);
    residual[i] = value;
    b_squared += (long double)b(i) * (long double)b(i);
  }
  const long double b_norm = std::sqrt(b_squared);
  long double worst = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    long double gradient = 0, column_squared = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      gradient += (long double)a(i, j) * residual[i];
      column_squared += (long double)a(i, j) * (long double)a(i, j);
    }
    if (x(j) < 0) return std::numeric_limits<double>::infinity();
    const long double violation = x(j) > 0 ? std::fabs(gradient) : std::max(gradient, 0.0L);
    if (violation == 0) continue;
    const long double scale = std::sqrt(column_squared) * b_norm;
    worst = std::max(worst,
                     scale > 0 ? violation / scale : std::numeric_limits<long double>::infinity());
  }
  return double(worst);
}

template <class T>
double kkt_tolerance(std::int64_t m, std::int64_t n) {
  return 10 * double(std::numeric_limits<T>::epsilon()) * double(std::max<std::int64_t>({m, n, 1}));
}

}  // namespace kpl::testing
