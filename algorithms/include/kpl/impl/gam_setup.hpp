// The GAM's set-up before boosting (kpl/gam.hpp): the input checks, the knot
// meshes, the dense copy of the basis and the offset, each decided over all
// of the group's rows. Part of kpl/gam.hpp, included after its types.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/error.hpp>
#include <kpl/impl/gam_processes.hpp>
#include <kpl/impl/gam_risk.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace kpl {
namespace impl {

// Per row: (values of X and y not finite, responses outside the family's
// support).
template <class XView, class YView>
struct GamBadValues {
  XView X;
  YView y;
  std::int64_t p;
  GamFamily family;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, RiskSums& bad) const {
    using compat::math::isfinite;
    for (std::int64_t j = 0; j < p; ++j)
      if (!isfinite(double(X(i, j)))) bad.training += 1;
    const double response = y(i);
    if (!isfinite(response)) {
      bad.training += 1;
    } else if (family == GamFamily::binomial && response != 0 && response != 1) {
      bad.held_out += 1;
    } else if (family == GamFamily::poisson && response < 0) {
      bad.held_out += 1;
    }
  }
};

// Throws kpl::input_error for NaN/Inf in X or y and y outside the family's
// support (counted over the group's rows: every process throws alike).
template <class ExecutionSpace, class XView, class YView>
void gam_check_data(const ExecutionSpace& space, const XView& X, const YView& y, GamFamily family,
                    const ProcessGroup& group) {
  RiskSums counts{0, 0};
  Kokkos::parallel_reduce(
      "kpl::gam::check_input", Kokkos::RangePolicy<ExecutionSpace>(space, 0, X.extent(0)),
      GamBadValues<XView, YView>{X, y, std::int64_t(X.extent(1)), family}, host_sums(counts));
  if (!group.is_single()) gam_sum_over(group, counts);
  const auto not_finite = static_cast<std::int64_t>(counts.training);
  const auto not_allowed = static_cast<std::int64_t>(counts.held_out);
  if (not_finite > 0)
    throw input_error("kpl::fit_gam: X and y hold " + std::to_string(not_finite) +
                      " NaN or infinite values");
  if (not_allowed > 0)
    throw input_error("kpl::fit_gam: " + std::to_string(not_allowed) + " values of y are " +
                      (family == GamFamily::binomial ? "not 0 or 1 (Binomial family)"
                                                     : "negative (Poisson family)"));
}

// Covariate j's mesh on [lower, upper]; throws kpl::input_error when the
// range is empty or its knot spacing is not a normal number (a range of
// +-1e308 overflows it, one of a few denormals underflows it).
inline BsplineMesh gam_mesh(std::int64_t j, double lower, double upper, int k, int degree) {
  if (!(upper > lower))
    throw input_error("kpl::fit_gam: covariate " + std::to_string(j) +
                      " (0-based column of X) is constant (" + std::to_string(lower) +
                      "): no range to place knots in");
  const BsplineMesh mesh{lower, upper, k, degree};
  const double spacing = mesh.spacing();
  if (!(spacing <= std::numeric_limits<double>::max()) ||
      !(spacing >= std::numeric_limits<double>::min()))
    throw input_error(
        "kpl::fit_gam: covariate " + std::to_string(j) + " (0-based column of X) spans [" +
        format_number(lower) + ", " + format_number(upper) + "]: its knot spacing " +
        (spacing > 1 ? "overflows" : "underflows") + " double precision; rescale the covariate");
  return mesh;
}

// Boundary knots: each covariate's range over the group's rows (a process
// with none contributes the reduction's identity).
template <class ExecutionSpace, class XView>
std::vector<BsplineMesh> gam_meshes(const ExecutionSpace& space, const XView& X, int k, int degree,
                                    const ProcessGroup& group) {
  using T = typename XView::non_const_value_type;
  const std::int64_t p = X.extent(1);
  Kokkos::View<MinMaxValue<T>*, typename ExecutionSpace::memory_space> ranges(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gam::ranges"), p);
  reduce_columns(space, X, MinMax<T>{}, ranges);
  auto host_ranges = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ranges);
  std::vector<double> lower(p), upper(p);
  for (std::int64_t j = 0; j < p; ++j) {
    lower[j] = host_ranges(j).min;
    upper[j] = host_ranges(j).max;
  }
  group.min(lower.data(), p);
  group.max(upper.data(), p);
  std::vector<BsplineMesh> meshes(p);
  for (std::int64_t j = 0; j < p; ++j) meshes[j] = gam_mesh(j, lower[j], upper[j], k, degree);
  return meshes;
}

// dense(i, j k + a) = B_j(i, a); dense must be zero beforehand.
template <class DenseView, class FirstView, class ValuesView>
struct ExpandCompactBasis {
  DenseView dense;
  FirstView first;
  ValuesView values;
  int k, width;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j, const std::int64_t i) const {
    const int column = first(j, i);
    for (int q = 0; q < width; ++q) dense(i, j * k + column + q) = values(j, q, i);
  }
};

template <class ExecutionSpace, class DenseView, class Basis>
void gam_expand_basis(const ExecutionSpace& space, const Basis& basis, const DenseView& dense) {
  using Functor = ExpandCompactBasis<DenseView, decltype(basis.first), decltype(basis.values)>;
  Kokkos::parallel_for("kpl::gam::expand_basis",
                       Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(
                           space, {0, 0}, {basis.blocks(), basis.rows()}),
                       Functor{dense, basis.first, basis.values, basis.basis_size, basis.width()});
}

// (sum of w y, sum of w); an empty w means weights of one.
template <class Vector, class Weights>
struct WeightedSum {
  Vector y;
  Weights weights;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, RiskSums& sums) const {
    const double weight = weights.extent(0) != 0 ? double(weights(i)) : 1.0;
    sums.training += weight * double(y(i));
    sums.held_out += weight;
  }
};

// The fit's weights as mboost's rescale_weights leaves them (Hofner et al.,
// mboost R/helpers.R): integer weights (counts, 0/1) as they are, others
// scaled to average 1 over the positive ones, w sum(w > 0) / sum(w). Only
// the risk's scale depends on it (offset, lambda's smoother and the path
// do not), but the risks, lambda and varimp then read as mboost's. Throws
// kpl::input_error naming the first (0-based, over the group's rows)
// negative or non-finite weight, and for weights all zero.
template <class ExecutionSpace, class Weights>
Kokkos::View<double*, typename ExecutionSpace::memory_space> gam_model_weights(
    const ExecutionSpace& space, const Weights& weights, std::int64_t first_row,
    const ProcessGroup& group) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), weights);
  const std::int64_t n = host.extent(0);
  double first_bad = std::numeric_limits<double>::max();
  double totals[2] = {0, 0};  // sum of w, count of w > 0
  double largest_fraction = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double w = host(i);
    if (!(w >= 0) || !std::isfinite(w)) {
      first_bad = std::min(first_bad, double(first_row + i));
      continue;
    }
    totals[0] += w;
    totals[1] += w > 0;
    largest_fraction = std::max(largest_fraction, w - std::floor(w));
  }
  group.min(&first_bad, 1);
  if (first_bad < std::numeric_limits<double>::max()) {
    const std::int64_t bad = static_cast<std::int64_t>(first_bad);
    double value = bad >= first_row && bad < first_row + n ? double(host(bad - first_row)) : 0;
    group.sum(&value, 1);  // only the owner adds a non-zero term
    throw input_error("kpl::fit_gam: weight " + std::to_string(bad) + " (0-based row) is " +
                      format_number(value) + "; weights must be finite and not negative");
  }
  group.sum(totals, 2);
  group.max(&largest_fraction, 1);
  if (!(totals[1] > 0)) throw input_error("kpl::fit_gam: every weight is 0: nothing to fit");
  Kokkos::View<double*, typename ExecutionSpace::memory_space> model_weights(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gam::weights"), n);
  auto host_model = Kokkos::create_mirror_view(model_weights);
  // mboost's test: max |w - floor(w)| < sqrt(machine epsilon).
  const bool integer = largest_fraction < std::sqrt(std::numeric_limits<double>::epsilon());
  for (std::int64_t i = 0; i < n; ++i)
    host_model(i) = integer ? double(host(i)) : host(i) / totals[0] * totals[1];
  Kokkos::deep_copy(space, model_weights, host_model);
  space.fence();
  return model_weights;
}

// The offset: the weighted mean response (over the group's rows) on the
// family's link scale; throws kpl::input_error where the family has none.
template <class ExecutionSpace, class Vector, class Weights>
double gam_offset(const ExecutionSpace& space, const Vector& y, const Weights& weights,
                  GamFamily family, const ProcessGroup& group) {
  RiskSums totals{0, 0};
  Kokkos::parallel_reduce("kpl::gam::offset",
                          Kokkos::RangePolicy<ExecutionSpace>(space, 0, y.extent(0)),
                          WeightedSum<Vector, Weights>{y, weights}, host_sums(totals));
  if (!group.is_single()) gam_sum_over(group, totals);
  const double mean = totals.training / totals.held_out;
  if (family == GamFamily::binomial && !(mean > 0 && mean < 1))
    throw input_error("kpl::fit_gam: y holds a single class (mean " + std::to_string(mean) +
                      "); the Binomial family needs both 0 and 1");
  if (family == GamFamily::poisson && !(mean > 0))
    throw input_error(
        "kpl::fit_gam: every count in y is 0; the Poisson family needs a positive mean");
  return family == GamFamily::binomial  ? std::log(mean / (1 - mean))
         : family == GamFamily::poisson ? std::log(mean)
                                        : mean;
}

}  // namespace impl
}  // namespace kpl
