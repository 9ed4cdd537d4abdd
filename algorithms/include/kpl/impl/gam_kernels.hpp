// Device kernels of the boosted GAM (kpl/gam.hpp). One boosting iteration
// (Sieminski & Lee 2023, Algorithm 2) is, in launch order:
//   c = B^T (w u)            compact_basis transpose_product, or kpl::gemv
//   score_j = -c_j^T R_j c_j  scores: RSS_j - u^T W u, no fit formed
//   s = argmin_j score_j      select (ties: the lowest j, as R's which.min)
//   step = nu M_s c_s         take_step: coefficients_s += step
//   f += B_s step, u, risk    update_rows (direct mode), or
//   c_j -= (B_j^T B_s) step   update_cross_products (Gram mode)
// and only s (Gram and dense modes) or nothing (direct, compact) reaches the
// host.
#pragma once

#include <kpl/compact_basis.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
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

// Loss and negative gradient per observation, f the linear predictor:
// Gaussian (y - f)^2; Binomial the negative log-likelihood of y in {0, 1}
// with f the log-odds; Poisson that of a count with f = log(mean),
// lgamma(y + 1) included (mboost's risks).
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

// Risk over the rows in the fit (weight 1) and over those held out (weight
// 0, cross-validation), summed in one pass.
struct RiskSums {
  double training;
  double held_out;
};

template <class MemorySpace>
struct RiskReducer {
  using reducer = RiskReducer;
  using value_type = RiskSums;
  using result_view_type = Kokkos::View<value_type, MemorySpace, Kokkos::MemoryUnmanaged>;
  result_view_type result;

  KOKKOS_INLINE_FUNCTION explicit RiskReducer(const result_view_type& target) : result(target) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& into, const value_type& other) const {
    into.training += other.training;
    into.held_out += other.held_out;
  }
  KPL_COMPAT_VOLATILE_JOIN(value_type)
  KOKKOS_INLINE_FUNCTION void init(value_type& value) const { value = {0.0, 0.0}; }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *result.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result; }
  // As Kokkos' own reducers built from a View: the result is the View's.
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return false; }
};

template <class ExecutionSpace>
inline constexpr bool gam_on_host =
    std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;

// score(j) = -c_j^T R_j c_j: learner j's residual sum of squares minus
// u^T W u (kpl/gam_penalty.hpp), accumulated in double; +infinity when not
// finite. One team per learner.
template <class ExecutionSpace, class CView, class RView, class ScoreView>
void gam_scores(const ExecutionSpace& space, std::int64_t learners, int k, const CView& c,
                const RView& reduction, const ScoreView& scores) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 32;
  const int vector_length = gam_on_host<ExecutionSpace> ? 1 : 8;
  Kokkos::parallel_for(
      "kpl::gam::scores", Policy(space, static_cast<int>(learners), team_size, vector_length),
      KOKKOS_LAMBDA(const Member& member) {
        const std::int64_t j = member.league_rank();
        const std::int64_t base = j * k;
        double quadratic = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, k),
            [&](const int a, double& sum) {
              double row = 0;
              Kokkos::parallel_reduce(
                  Kokkos::ThreadVectorRange(member, k),
                  [&](const int b, double& partial) {
                    partial += double(reduction((base + a) * k + b)) * double(c(base + b));
                  },
                  row);
              sum += double(c(base + a)) * row;
            },
            quadratic);
        // A score that is not finite (NaN from a diverging fit) never wins
        // the selection: it counts as +infinity.
        Kokkos::single(Kokkos::PerTeam(member), [&] {
          scores(j) = compat::math::isfinite(quadratic) ? -quadratic : largest<double>();
        });
      });
}

// The best learner: selected(iteration) and current() = argmin_j score(j).
template <class ExecutionSpace, class ScoreView, class SelectedView, class CurrentView>
void gam_select(const ExecutionSpace& space, std::int64_t learners, const ScoreView& scores,
                const SelectedView& selected, std::int64_t iteration, const CurrentView& current) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 256;
  Kokkos::parallel_for(
      "kpl::gam::select", Policy(space, 1, team_size), KOKKOS_LAMBDA(const Member& member) {
        const ArgMin<double> op;
        auto best = op.identity();
        // (A NaN score counts as +infinity: it never wins.)
        for (std::int64_t j = member.team_rank(); j < learners; j += member.team_size())
          op.combine(best,
                     op.lift(compat::math::isnan(scores(j)) ? largest<double>() : scores(j), j));
        best = team_reduce(member, op, best);
        Kokkos::single(Kokkos::PerTeam(member), [&] {
          selected(iteration) = static_cast<int>(best.index);
          current() = static_cast<int>(best.index);
        });
      });
}

// step = nu M_s c_s; coefficients_s += step. With `gram` non-empty (Gram
// mode, Gaussian, unit weights) also the new training risk without a pass
// over the rows: |u - B_s step|^2 = |u|^2 - 2 step^T c_s + step^T G_s step.
template <class ExecutionSpace, class CurrentView, class InverseView, class CView, class StepView,
          class CoefficientView, class GramView, class RiskView>
void gam_take_step(const ExecutionSpace& space, int k, double nu, const CurrentView& current,
                   const InverseView& inverse, const CView& c, const StepView& step,
                   const CoefficientView& coefficients, const GramView& gram,
                   const RiskView& risk_sums, std::int64_t iteration) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  using T = typename StepView::non_const_value_type;
  const int team_size = gam_on_host<ExecutionSpace> ? 1 : 64;
  const bool update_risk = gram.extent(0) != 0;
  Kokkos::parallel_for(
      "kpl::gam::take_step", Policy(space, 1, team_size), KOKKOS_LAMBDA(const Member& member) {
        const std::int64_t s = current();
        const std::int64_t base = s * k;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](const int a) {
          double sum = 0;
          for (int b = 0; b < k; ++b)
            sum += double(inverse((base + a) * k + b)) * double(c(base + b));
          step(a) = T(nu * sum);
          coefficients(base + a) += nu * sum;
        });
        if (!update_risk) return;
        member.team_barrier();
        double change = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, k),
            [&](const int a, double& partial) {
              double curvature = 0;
              for (int b = 0; b < k; ++b)
                curvature += double(gram((base + a) * k + b)) * double(step(b));
              partial += double(step(a)) * (curvature - 2 * double(c(base + a)));
            },
            change);
        Kokkos::single(Kokkos::PerTeam(member), [&] {
          risk_sums(iteration + 1).training = risk_sums(iteration).training + change;
          risk_sums(iteration + 1).held_out = 0;
        });
      });
}

// Per row: (optionally) f += B_s step from the compact basis; then the
// weighted negative gradient u = w g(y, f) and the risk into
// risk_sums(slot). With `add_step` false f is taken as it is (after a dense
// gemv, or at the start).
template <class ExecutionSpace, class T, class MemorySpace, class Vector, class ConstVector,
          class CurrentView, class StepView, class RiskView>
void gam_update_rows(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
                     bool add_step, const CurrentView& current, const StepView& step,
                     const GamFamilyFunctions& family, const ConstVector& y,
                     const ConstVector& weights, const Vector& f, const Vector& u,
                     const RiskView& risk_sums, std::int64_t slot) {
  const int width = basis.width();
  const auto first = basis.first;
  const auto values = basis.values;
  const bool weighted = weights.extent(0) != 0;
  Kokkos::parallel_reduce(
      "kpl::gam::update_rows", Kokkos::RangePolicy<ExecutionSpace>(space, 0, y.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, RiskSums& sums) {
        using Value = typename Vector::non_const_value_type;
        Value fitted = f(i);
        if (add_step) {
          const std::int64_t s = current();
          const int column = first(s, i);
          Value change = 0;
          for (int q = 0; q < width; ++q) change += Value(values(s, q, i)) * step(column + q);
          fitted += change;
          f(i) = fitted;
        }
        const double observed = y(i);
        const double weight = weighted ? double(weights(i)) : 1.0;
        u(i) = Value(weight * family.negative_gradient(observed, fitted));
        const double loss = family.loss(observed, fitted);
        sums.training += weight * loss;
        sums.held_out += (1 - weight) * loss;
      },
      RiskReducer<typename ExecutionSpace::memory_space>(
          Kokkos::View<RiskSums, typename ExecutionSpace::memory_space, Kokkos::MemoryUnmanaged>(
              risk_sums.data() + slot)));
}

// Gram mode: c_j -= (B_j^T B_s) step for every learner j, the cross products
// of block s at cross_products[j k k ...].
template <class ExecutionSpace, class CrossView, class StepView, class CView>
void gam_update_cross_products(const ExecutionSpace& space, std::int64_t learners, int k,
                               const CrossView& cross_products, const StepView& step,
                               const CView& c) {
  Kokkos::parallel_for(
      "kpl::gam::update_cross_products",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, learners * k),
      KOKKOS_LAMBDA(const std::int64_t row) {
        double sum = 0;
        for (int b = 0; b < k; ++b) sum += double(cross_products(row * k + b)) * double(step(b));
        c(row) -= sum;
      });
}

}  // namespace impl
}  // namespace kpl
