// Gradient-boosted generalised additive models: component-wise boosting with
// penalised B-spline base-learners (Sieminski & Lee 2023, §2-3, Appendix A;
// R mboost's gamboost with bbs, Bühlmann & Hothorn 2007), on the device.
//
//   auto model = kpl::fit_gam(space, X, y, kpl::GamOptions{});  // X [n, p], y [n]
//   kpl::predict_gam(space, model, X_new, prediction, partial_effects);
//
// Learner j: the B-spline basis B_j of covariate j (kpl/bspline.hpp, mboost's
// knots), penalty D^T D of the difference order (0: ridge), lambda_j from df
// (kpl/gam_penalty.hpp). Each iteration fits every learner to the negative
// gradient, takes the one of least residual sum of squares and adds nu times
// its fit (Algorithm 2). Modes: direct (c = B^T u from the compact or dense
// basis every iteration) or gram (Gaussian only: c updated from cached
// B_j^T B_s); impl/gam_boosting_iteration.hpp has the loop. Families:
// Gaussian, Binomial (y in {0, 1}, f the log-odds) and Poisson (f =
// log(mean)); an mboost Binomial() fit with step nu is kpl's with step
// 4 nu / ln 2 and half the coefficients (impl/gam_family.hpp says why).
// Across processes (kpl/process_group.hpp) each passes its own rows, in rank
// order; sums over rows are summed over the group (impl/gam_processes.hpp).
// check_gam_options, gam_device_bytes and to_string: impl/gam_options.hpp.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/gam_penalty.hpp>
#include <kpl/gemv.hpp>
#include <kpl/impl/gam_family.hpp>
#include <kpl/process_group.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kpl {

enum class GamMode { direct, gram };
// compact: per row and covariate the first non-zero column and the d + 1
// values (kpl/compact_basis.hpp); dense: n x p k, through kpl::gemv;
// evaluated: the compact basis, and B^T u computed from x every iteration
// (kpl/evaluated_basis.hpp: a quarter of the bytes, faster on GPUs, slower
// on CPUs; 8 bytes more per row and covariate of memory); automatic:
// evaluated where the execution space is a GPU's, compact on CPUs
// (gam_basis_for; a fitted model records the one it used).
enum class GamBasis { compact, dense, evaluated, automatic };

struct GamOptions {
  int basis_size = 24;  // k: basis functions per covariate (mboost: knots = k - degree - 1)
  int degree = 3;       // of the B-splines
  int differences = 2;  // penalty difference order; 0 = ridge (K = I)
  double df = 4;        // degrees of freedom of every base-learner
  DfDefinition df_definition = DfDefinition::trace_2s_sts;
  double nu = 0.1;  // step length
  int mstop = 100;  // boosting iterations
  GamFamily family = GamFamily::gaussian;
  GamMode mode = GamMode::direct;
  GamBasis basis = GamBasis::automatic;
  GemvOptions gemv;        // B^T u and B_s step with the dense basis
  int gram_refresh = 100;  // Gram mode: recompute c, f and the risk this often
  // Gram mode: device memory for cached B_j^T B_s blocks (p k^2 values per
  // selected learner); beyond it blocks are recomputed when selected.
  std::int64_t gram_cache_bytes = std::int64_t(1) << 30;
  // A fixed offset (mboost's `offset` argument, a scalar): f before the first
  // iteration, not the family's weighted mean response on the link scale.
  std::optional<double> offset;
};

// Per-row data of a fit beside X and y (this process's rows); an empty View
// is none. weights: observation weights (mboost's `weights`), finite and not
// negative, rescaled as mboost does (integers kept, others to average 1 over
// the positive ones); they enter the offset, every B_j^T W B_j and so lambda,
// the fits, the selection and the risk sum w loss. offset: each row's start
// f (mboost's vector offset, e.g. log exposure for Poisson), added to
// options.offset (0 when unset; the family's default is not used).
template <class MemorySpace>
struct GamObservations {
  Kokkos::View<const double*, MemorySpace> weights;
  Kokkos::View<const double*, MemorySpace> offset;
};

// A fitted model, on the host.
struct GamModel {
  GamOptions options;
  std::int64_t covariates = 0;         // p
  std::int64_t observations = 0;       // n it was fitted on
  double offset = 0;                   // f before the first iteration
  std::vector<BsplineMesh> meshes;     // [p]: boundary knots per covariate
  std::vector<double> coefficients;    // [p * k], row-major [p, k]
  std::vector<double> lambda;          // [p]
  std::vector<double> df;              // [p]: df(lambda) achieved
  std::vector<std::int64_t> selected;  // [mstop]: covariate chosen per iteration
  std::vector<double> risk;            // [mstop + 1]: training risk, first at the offset
  std::vector<double> varimp;          // [p]: mboost's varimp, risk reduction per learner / n
  bool row_offset = false;             // fitted with per-row offsets, which new rows need too
};

struct GamTimings {
  double basis_seconds = 0;      // knots, compact (and dense) basis, B_j^T B_j
  // lambda search, M_j, R_j: on the host's threads and uploaded, or on a
  // GPU by its teams; either way also the wait for f, u (and Gram mode's
  // first c), launched before it
  double penalty_seconds = 0;
  double boosting_seconds = 0;   // the iterations
  double reduction_seconds = 0;  // of the boosting: in sums over processes, waits included
  // Device memory the fit allocated at its peak, X and y (the caller's) aside.
  std::int64_t device_bytes = 0;
};

// Called from fit_gam at most every interval_seconds with (iterations done,
// training risk); the only time the risk is copied to the host mid-fit.
// Gram mode calls it between its batches of iterations (up to
// gram_refresh of them), not after every one.
struct GamProgress {
  std::function<void(int, double)> report;
  double interval_seconds = 0.5;
};

// mstop's choice by resampling: K folds, or B resamples' weights (mboost's
// cvrisk; its default, 25 bootstrap samples).
struct GamCrossValidation {
  int folds = 0;             // K or B
  std::vector<double> risk;  // [folds * (mstop + 1)]: weighted mean held-out loss per iteration
  int best_mstop = 0;        // argmin over m of the mean over folds
};

// mboost's family@response: the mean of y given the link f (Gaussian f,
// Binomial the probability 1 / (1 + e^-f), Poisson e^f).
inline double gam_response(GamFamily family, double link) {
  switch (family) {
    case GamFamily::binomial:
      return 1 / (1 + std::exp(-link));
    case GamFamily::poisson:
      return std::exp(link);
    default:
      return link;
  }
}

}  // namespace kpl

#include <kpl/impl/gam_booster.hpp>
#include <kpl/impl/gam_boosting_iteration.hpp>
#include <kpl/impl/gam_cross_validation.hpp>
#include <kpl/impl/gam_options.hpp>
#include <kpl/impl/gam_predict.hpp>

namespace kpl {

// Fits the model to X [n, p] and y [n] (Views accessible from `space`, any
// layout, float or double: the precision of the fit). Bad data (n < k, p = 0,
// a constant covariate, NaN/Inf, y outside the family's support, a df no
// lambda reaches) throws kpl::input_error; impossible options
// std::invalid_argument. Nothing is left on the device afterwards. With a
// group, X and y are this process's rows (any number, none included); every
// process returns the same model or throws the same error.
template <class ExecutionSpace, class XView, class YView>
GamModel fit_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                 const GamOptions& options, const ProcessGroup& group,
                 GamTimings* timings = nullptr, const GamProgress& progress = {}) {
  static_assert(XView::rank == 2 && YView::rank == 1, "kpl::fit_gam: X [n, p] and y [n]");
  impl::GamBooster<ExecutionSpace, impl::gam_scalar_t<XView>> booster(space, X, y, options, group);
  return booster.fit({}, options.mstop, options.mode, timings, progress);
}
template <class ExecutionSpace, class XView, class YView>
GamModel fit_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                 const GamOptions& options, GamTimings* timings = nullptr,
                 const GamProgress& progress = {}) {
  return fit_gam(space, X, y, options, single_process(), timings, progress);
}
// The same with observation weights and per-row offsets (either View may be
// empty); a weight negative or not finite, or all of them 0, throws
// kpl::input_error (naming the first bad row, 0-based over the group's).
template <class ExecutionSpace, class XView, class YView>
GamModel fit_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                 const GamObservations<typename ExecutionSpace::memory_space>& observations,
                 const GamOptions& options, const ProcessGroup& group = single_process(),
                 GamTimings* timings = nullptr, const GamProgress& progress = {}) {
  static_assert(XView::rank == 2 && YView::rank == 1, "kpl::fit_gam: X [n, p] and y [n]");
  impl::GamBooster<ExecutionSpace, impl::gam_scalar_t<XView>> booster(space, X, y, options, group);
  return booster.fit(
      impl::gam_prepare_observations(space, booster, observations, X.extent(0), group),
      options.mstop, options.mode, timings, progress);
}

// K-fold cross-validation over iterations 0..options.mstop: fold f holds the
// rows whose place in a permutation drawn from `seed` (Fisher-Yates over
// std::mt19937_64, the same on every library: impl/portable_random.hpp) is f
// modulo K; each
// fold's model is fitted (direct mode) on the other rows with the basis,
// knots included, of all of them (as mboost's cvrisk reweights one model);
// impl/gam_cross_validation.hpp runs them side by side. With a group, the
// permutation is of all processes' rows.
template <class ExecutionSpace, class XView, class YView>
GamCrossValidation cross_validate_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                                      const GamOptions& options, int folds, std::uint64_t seed = 1,
                                      const ProcessGroup& group = single_process()) {
  return impl::cross_validate_gam(space, X, y, {}, options, folds, seed, group);
}
// The same with observation weights and offsets (as fit_gam's): fold f's
// model is fitted with weights w on the other rows, 0 on its own, and its
// risk is sum w loss / sum w over its rows (mboost's cvrisk with
// cv(weights, "kfold")).
template <class ExecutionSpace, class XView, class YView>
GamCrossValidation cross_validate_gam(
    const ExecutionSpace& space, const XView& X, const YView& y,
    const GamObservations<typename ExecutionSpace::memory_space>& observations,
    const GamOptions& options, int folds, std::uint64_t seed = 1,
    const ProcessGroup& group = single_process()) {
  return impl::cross_validate_gam(space, X, y, observations, options, folds, seed, group);
}

// mboost's cvrisk with its default resampling, cv(w, "bootstrap", B): resample
// b draws n rows with replacement, row i with probability w_i / sum w (w the
// rescaled weights, ones without), from `seed` (impl/portable_random.hpp,
// over the group's rows: the same draws on any number of processes); its
// model is fitted anew with the draw counts as weights (lambda and the
// family's offset recomputed, the basis of all rows), its risk is
// sum w loss / sum w over the rows not drawn. risk [B, mstop + 1].
template <class ExecutionSpace, class XView, class YView>
GamCrossValidation bootstrap_gam(
    const ExecutionSpace& space, const XView& X, const YView& y,
    const GamObservations<typename ExecutionSpace::memory_space>& observations,
    const GamOptions& options, int resamples = 25, std::uint64_t seed = 1,
    const ProcessGroup& group = single_process()) {
  return impl::bootstrap_gam(space, X, y, observations, options, resamples, seed, group);
}

// The same with given resamples: counts [rows, B] on the host (this
// process's rows), column b the weights of resample b's fit (e.g. mboost's
// cv() folds); its risk is over the rows of count 0, weighted as above.
template <class ExecutionSpace, class XView, class YView, class CountView>
GamCrossValidation resample_gam(
    const ExecutionSpace& space, const XView& X, const YView& y,
    const GamObservations<typename ExecutionSpace::memory_space>& observations,
    const GamOptions& options, const CountView& counts,
    const ProcessGroup& group = single_process()) {
  return impl::resample_gam(space, X, y, observations, options, counts, group);
}

// prediction(i) = offset + sum_j f_j(X(i, j)) on the link scale (the
// log-odds for Binomial, log(mean) for Poisson, as mboost's type = "link"),
// and, when partial_effects has extents [n, p], each f_j(X(i, j)). Outside a
// covariate's training range f_j continues linearly (mboost's extrapolation).
template <class ExecutionSpace, class XView, class PredictionView, class PartialView>
void predict_gam(const ExecutionSpace& space, const GamModel& model, const XView& X,
                 const PredictionView& prediction, const PartialView& partial_effects) {
  impl::predict_gam(space, model, X, prediction, partial_effects);
}

}  // namespace kpl
