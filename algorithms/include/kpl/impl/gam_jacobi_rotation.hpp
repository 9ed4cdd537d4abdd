// The rotation of one-sided Jacobi (kpl/gam_penalty.hpp's eigenproblem), for
// the host's search (src/gam_penalty.cpp) and the device's teams
// (gam_penalise_on_device.hpp) alike.
#pragma once

#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

namespace kpl {
namespace impl {

// cos and sin of the rotation that zeroes the inner product gamma of two
// columns of squared norms alpha and beta (Golub & Van Loan §8.5.2; the
// smaller angle), and t = sin / cos. sqrt(1 + zeta^2) in place of hypot:
// the same to an ulp, several times faster, and zeta^2 cannot overflow
// below 1e150 (beyond, t = 1 / (2 zeta) to full precision).
struct JacobiRotation {
  double c, s, t;
};
KOKKOS_INLINE_FUNCTION JacobiRotation jacobi_rotation(double alpha, double beta, double gamma) {
  const double zeta = (beta - alpha) / (2 * gamma);
  const double magnitude = compat::math::fabs(zeta);
  const double t = magnitude < 1e150 ? (zeta >= 0 ? 1.0 : -1.0) /
                                           (magnitude + compat::math::sqrt(1 + zeta * zeta))
                                     : 0.5 / zeta;
  const double c = 1 / compat::math::sqrt(1 + t * t);
  return {c, c * t, t};
}

}  // namespace impl
}  // namespace kpl
