// Equidistant B-spline bases, as R's mboost builds them for its bbs()
// base-learner (Schmid & Hothorn 2008; Eilers & Marx 1996 for P-splines):
//
// - basis_size k functions of degree d on [lower, upper]: k - d - 1 interior
//   knots equidistant over the interval, and the knot mesh continued with the
//   same spacing h = (upper - lower) / (k - d) for d knots beyond each end;
// - outside [lower, upper] each function is extended linearly from the
//   boundary (value plus slope times distance), as mboost predicts.
//
// A row of a degree-d basis has at most d + 1 non-zeros, consecutive, so kpl
// stores a basis compactly (kpl/compact_basis.hpp): per row the index of the
// first non-zero function and the d + 1 values. bspline_row() evaluates one
// row on host or device by de Boor's recursion on the uniform mesh (Piegl &
// Tiller, The NURBS Book, A2.2): with unit knot spacing every denominator of
// the recursion is the degree, so no knot array is needed. Cubic rows, the
// common case, come from the closed-form pieces instead (fewer operations).
#pragma once

#include <kpl/error.hpp>

#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace kpl {

// The largest degree bspline_row supports (its work arrays live on the stack).
inline constexpr int bspline_max_degree = 7;

struct BsplineMesh {
  double lower = 0;  // boundary knots: the covariate's training range
  double upper = 1;
  int basis_size = 24;  // k
  int degree = 3;       // d

  KOKKOS_INLINE_FUNCTION int intervals() const { return basis_size - degree; }
  KOKKOS_INLINE_FUNCTION double spacing() const { return (upper - lower) / intervals(); }
};

// Throws std::invalid_argument unless the mesh is usable: 0 <= d <=
// bspline_max_degree, k >= d + 1 (at least one interval), a finite
// non-empty range.
inline void check_bspline_mesh(const BsplineMesh& mesh) {
  if (mesh.degree < 0 || mesh.degree > bspline_max_degree)
    throw std::invalid_argument("kpl::bspline: degree " + std::to_string(mesh.degree) +
                                " outside [0, " + std::to_string(bspline_max_degree) + "]");
  if (mesh.basis_size < mesh.degree + 1)
    throw std::invalid_argument("kpl::bspline: basis size " + std::to_string(mesh.basis_size) +
                                " below degree + 1 = " + std::to_string(mesh.degree + 1));
  if (!(mesh.upper > mesh.lower) || !(mesh.upper - mesh.lower < 1e300))
    throw std::invalid_argument("kpl::bspline: the range [" + std::to_string(mesh.lower) + ", " +
                                std::to_string(mesh.upper) + "] is empty or not finite");
}

namespace impl {

// The int a degree argument stands for: a run-time int, or a compile-time
// std::integral_constant (so that a kernel's loops over a row unroll and its
// arrays stay in registers, as a GPU kernel needs; a cubic row's closed form
// is then chosen at compile time).
KOKKOS_INLINE_FUNCTION constexpr int bspline_degree_value(int degree) { return degree; }
template <int Degree>
KOKKOS_INLINE_FUNCTION constexpr int bspline_degree_value(std::integral_constant<int, Degree>) {
  return Degree;
}

// Calls launch(degree) with the degree as a compile-time constant for cubic
// splines (the common case: the closed form, the row in registers), else as
// an int; for kernels templated on bspline_row_of_degree's Degree.
template <class Launch>
void with_bspline_degree(int degree, const Launch& launch) {
  if (degree == 3)
    launch(std::integral_constant<int, 3>());
  else
    launch(degree);
}

// distance / mesh.spacing(), as distance times the reciprocal spacing where
// that is finite.
KOKKOS_INLINE_FUNCTION double bspline_in_spacings(double distance, double reciprocal_spacing,
                                                  const BsplineMesh& mesh) {
  return reciprocal_spacing <= 1.7e308 ? distance * reciprocal_spacing : distance / mesh.spacing();
}

// The four values of a cubic row at position t in [0, 1] of its interval,
// in closed form: the pieces of the uniform cubic B-spline (e.g. de Boor, A
// Practical Guide to Splines), with s = 1 - t,
//   N_0 = s^3 / 6,  N_1 = 2/3 - t^2 (2 - t) / 2,  N_2 = 2/3 - s^2 (2 - s) / 2,  N_3 = t^3 / 6,
// each a sum of positive terms or 2/3 less one at most 1/2, so that no value
// loses more than a few ulps. Thirteen double operations against de Boor's
// thirty: GPU kernels that evaluate every row they read
// (kpl/evaluated_basis.hpp) are bound by them. Beyond the range the values
// continue linearly (bspline_row_of_degree); the slopes come from the
// quadratic pieces Q_0 = s^2 / 2, Q_1 = 1/2 + t s, Q_2 = t^2 / 2.
KOKKOS_INLINE_FUNCTION void cubic_bspline_values(double t, double beyond, double* values) {
  const double s = 1 - t, t2 = t * t, s2 = s * s;
  values[0] = s2 * s * (1.0 / 6);
  values[1] = 2.0 / 3 - t2 * (2 - t) * 0.5;
  values[2] = 2.0 / 3 - s2 * (2 - s) * 0.5;
  values[3] = t2 * t * (1.0 / 6);
  if (beyond != 0) {
    const double q0 = s2 * 0.5, q1 = 0.5 + t * s, q2 = t2 * 0.5;
    values[0] -= q0 * beyond;
    values[1] += (q0 - q1) * beyond;
    values[2] += (q1 - q2) * beyond;
    values[3] += q2 * beyond;
  }
}

// bspline_row with the degree given as an int or a compile-time constant
// (the same operations in the same order either way: the same bits).
template <class Degree>
KOKKOS_INLINE_FUNCTION int bspline_row_of_degree(const BsplineMesh& mesh, double x, double* values,
                                                 Degree degree_argument) {
  const int degree = bspline_degree_value(degree_argument);
  const int intervals = mesh.intervals();
  // Distances in units of the spacing: multiplied by the mesh's reciprocal
  // spacing (the same for every row, so a kernel computes it once) instead of
  // a division per row; divided where a range below ~1e-307 would overflow
  // the reciprocal.
  const double reciprocal_spacing = intervals / (mesh.upper - mesh.lower);
  // The interval holding x and x's position inside it, in [0, 1]; outside the
  // range, the boundary (the linear extension below starts there).
  int interval;
  double local;
  double beyond = 0;  // distance past the boundary, in units of the spacing
  if (x < mesh.lower) {
    interval = 0;
    local = 0;
    beyond = bspline_in_spacings(x - mesh.lower, reciprocal_spacing, mesh);
  } else if (x > mesh.upper) {
    interval = intervals - 1;
    local = 1;
    beyond = bspline_in_spacings(x - mesh.upper, reciprocal_spacing, mesh);
  } else {
    double position = bspline_in_spacings(x - mesh.lower, reciprocal_spacing, mesh);
    // Clamped before the conversion: a range or spacing that over- or
    // underflowed makes position NaN or infinite, and converting that to
    // int would be undefined (an index far outside the basis).
    if (!(position >= 0)) position = 0;
    if (position > intervals) position = intervals;
    interval = static_cast<int>(position);  // position >= 0: truncation is floor
    if (interval > intervals - 1) interval = intervals - 1;
    local = position - interval;
    // In range, the common case, a cubic row has no extension: its values
    // formed here without the extension's terms, which a GPU would otherwise
    // issue for every row (predicated off) in kernels bound by issuing.
    if (degree == 3) {
      cubic_bspline_values(local, 0.0, values);
      return interval;
    }
  }
  if (degree == 3) {
    cubic_bspline_values(local, beyond, values);
    return interval;
  }
  // de Boor's recursion on knots ..., -1, 0, 1, 2, ... (span [0, 1]):
  // left[j] = local + j - 1, right[j] = j - local, and every denominator
  // right[r + 1] + left[j - r] equals j. Multiplied by 1 / j rather than
  // divided by j: a GPU's double division is a dozen instructions, the
  // larger part of a row's evaluation where a kernel evaluates every row it
  // reads (kpl/evaluated_basis.hpp).
  double lower_degree[bspline_max_degree + 1];  // degree d - 1 values, for slopes
  values[0] = 1;
  lower_degree[0] = 1;
  for (int j = 1; j <= degree; ++j) {
    if (j == degree)
      for (int r = 0; r < degree; ++r) lower_degree[r] = values[r];
    const double reciprocal = 1.0 / j;
    double saved = 0;
    for (int r = 0; r < j; ++r) {
      const double right = r + 1 - local;
      const double left = local + (j - r) - 1;
      const double term = values[r] * reciprocal;
      values[r] = saved + right * term;
      saved = left * term;
    }
    values[j] = saved;
  }
  if (beyond != 0 && degree > 0) {
    // Linear extension: the derivative of a degree-d function a is
    // N_{a,d-1} - N_{a+1,d-1} (unit spacing); in this span function q's two
    // lower-degree neighbours are lower_degree[q - 1] and lower_degree[q].
    for (int q = 0; q <= degree; ++q) {
      const double slope =
          (q >= 1 ? lower_degree[q - 1] : 0.0) - (q <= degree - 1 ? lower_degree[q] : 0.0);
      values[q] += slope * beyond;
    }
  }
  return interval;
}

// Rows of one mesh at many x, for kernels that evaluate every row they read:
// bspline_row_of_degree's values with its bits, the in-range cubic row (all
// but a few rows of a fit) on a path of its own. The general path's tests
// (beyond either end, a reciprocal spacing that overflowed, a position that
// is NaN) cost a GPU a branch and its bookkeeping each, for every row. In
// range, x - lower >= 0 exactly, so the position needs no clamp below.
struct BsplineRows {
  BsplineMesh mesh;
  double reciprocal_spacing;
  bool finite;  // reciprocal_spacing is usable (bspline_in_spacings' test)

  KOKKOS_INLINE_FUNCTION explicit BsplineRows(const BsplineMesh& mesh_)
      : mesh(mesh_),
        reciprocal_spacing(mesh_.intervals() / (mesh_.upper - mesh_.lower)),
        finite(reciprocal_spacing <= 1.7e308) {}

  template <class Degree>
  KOKKOS_INLINE_FUNCTION int row(double x, double* values, Degree degree) const {
    if (bspline_degree_value(degree) == 3 && finite && x >= mesh.lower && x <= mesh.upper) {
      const int intervals = mesh.intervals();
      double position = (x - mesh.lower) * reciprocal_spacing;
      if (position > intervals) position = intervals;
      int interval = static_cast<int>(position);
      if (interval > intervals - 1) interval = intervals - 1;
      cubic_bspline_values(position - interval, 0.0, values);
      return interval;
    }
    return bspline_row_of_degree(mesh, x, values, degree);
  }
};

}  // namespace impl

// The d + 1 (possibly) non-zero basis values at x, written to values[0..d];
// returns the index of the function values[0] belongs to. Values at the upper
// boundary come from the last interval, so the basis is continuous there.
KOKKOS_INLINE_FUNCTION int bspline_row(const BsplineMesh& mesh, double x, double* values) {
  return impl::bspline_row_of_degree(mesh, x, values, mesh.degree);
}

// The k x k penalty K = D^T D of a P-spline with difference order
// `differences` (D: the (k - differences) x k difference matrix, mboost's
// diff(diag(k), differences)); order 0 is the ridge penalty K = I. Row-major.
inline std::vector<double> difference_penalty(int basis_size, int differences) {
  if (differences < 0 || differences >= basis_size)
    throw std::invalid_argument("kpl::difference_penalty: difference order " +
                                std::to_string(differences) + " must be in [0, basis size)");
  const int k = basis_size;
  // Rows of D: binomial coefficients with alternating signs.
  std::vector<double> stencil(differences + 1, 0.0);
  stencil[0] = 1;
  for (int order = 1; order <= differences; ++order)
    for (int i = order; i >= 0; --i)
      stencil[i] = (i < order ? stencil[i] : 0.0) * -1.0 + (i > 0 ? stencil[i - 1] : 0.0);
  // stencil now holds (-1)^(d - i) C(d, i); the sign convention does not
  // matter for D^T D.
  std::vector<double> penalty(static_cast<std::size_t>(k) * k, 0.0);
  for (int row = 0; row + differences < k; ++row)
    for (int a = 0; a <= differences; ++a)
      for (int b = 0; b <= differences; ++b)
        penalty[(row + a) * k + row + b] += stencil[a] * stencil[b];
  return penalty;
}

}  // namespace kpl
