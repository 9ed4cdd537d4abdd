// Gradient-boosted generalised additive models: component-wise boosting with
// penalised B-spline base-learners (Sieminski & Lee 2023, §2-3 and
// Appendix A; the model of R's mboost gamboost with bbs base-learners,
// Bühlmann & Hothorn 2007), the whole boosting loop on the device.
//
//   kpl::GamOptions options;                      // k = 24, P-spline d = 2, df 4, ...
//   auto model = kpl::fit_gam(space, X, y, options);          // X [n, p], y [n]
//   kpl::predict_gam(space, model, X_new, prediction, partial_effects);
//
// One base-learner per covariate j: B_j = the B-spline basis of covariate j
// (kpl/bspline.hpp, mboost's knots), penalty K = D^T D of the difference order
// (0: ridge, K = I), lambda_j from df (kpl/gam_penalty.hpp). Each iteration
// fits every learner to the negative gradient u, takes the one with the least
// residual sum of squares and adds nu times its fit (Algorithm 2).
//
// Modes (GamOptions::mode):
// - direct: c = B^T u from the basis every iteration, O(n p (d + 1)) with the
//   compact basis (GamBasis::compact, the default) or O(n p k) with the dense
//   one through kpl::gemv (GamBasis::dense: the seed's gemv strategies);
// - gram (Gaussian only): c is kept up to date by c_j -= nu B_j^T B_s gamma_s,
//   O(p k^2) an iteration; B_j^T B_s is formed when s is first selected, and
//   c, f and the risk are recomputed from the rows every gram_refresh
//   iterations and at the end so rounding cannot drift.
//
// Families: Gaussian (risk = sum of squared residuals), Binomial (y in {0, 1},
// f the log-odds, risk the negative log-likelihood) and Poisson (f =
// log(mean)). mboost's Binomial() codes y as -1/+1, models f = half the
// log-odds and takes as its negative gradient that of log2(1 + e^(-2yf)),
// (2 / ln 2)(y - p) in kpl's terms: an mboost fit with step nu therefore
// follows kpl's path with step 4 nu / ln 2 (about 5.77 nu), selecting the
// same learners, with coefficients and offset half of kpl's.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/compact_basis.hpp>
#include <kpl/impl/gam_kernels.hpp>
#include <kpl/error.hpp>
#include <kpl/gam_penalty.hpp>
#include <kpl/gemv.hpp>
#include <kpl/reduce.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace kpl {

enum class GamMode { direct, gram };
enum class GamBasis { compact, dense };

inline std::string to_string(GamMode mode) { return mode == GamMode::direct ? "direct" : "gram"; }
inline std::string to_string(GamBasis basis) {
  return basis == GamBasis::compact ? "compact" : "dense";
}

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
  GamBasis basis = GamBasis::compact;
  GemvOptions gemv;        // B^T u and B_s step with the dense basis
  int gram_refresh = 100;  // Gram mode: recompute c, f and the risk this often
  // Gram mode: device memory for cached B_j^T B_s blocks (p k^2 values per
  // selected learner); beyond it blocks are recomputed when selected.
  std::int64_t gram_cache_bytes = std::int64_t(1) << 30;
};

// Throws std::invalid_argument for options no data can satisfy.
inline void check_gam_options(const GamOptions& options) {
  const auto fail = [](const std::string& message) {
    throw std::invalid_argument("kpl::fit_gam: " + message);
  };
  if (options.degree < 1 || options.degree > bspline_max_degree)
    fail("degree " + std::to_string(options.degree) + " outside [1, " +
         std::to_string(bspline_max_degree) + "]");
  if (options.basis_size < options.degree + 2)
    fail("basis size " + std::to_string(options.basis_size) +
         " below degree + 2 = " + std::to_string(options.degree + 2) + " (no interior knot)");
  if (options.differences < 0 || options.differences > 3)
    fail("difference order " + std::to_string(options.differences) + " outside [0, 3]");
  if (!(options.df > 0) || options.df > options.basis_size)
    fail("df " + std::to_string(options.df) + " outside (0, basis size " +
         std::to_string(options.basis_size) + "]");
  if (!(options.nu > 0) || options.nu > 1)
    fail("nu " + std::to_string(options.nu) + " outside (0, 1]");
  if (options.mstop < 0) fail("mstop must not be negative");
  if (options.gram_refresh < 1) fail("gram_refresh must be positive");
  if (options.mode == GamMode::gram && options.family != GamFamily::gaussian)
    fail("the Gram mode needs the Gaussian family (its gradient is linear in f)");
}

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
};

struct GamTimings {
  double basis_seconds = 0;     // knots, compact (and dense) basis, B_j^T B_j
  double penalty_seconds = 0;   // lambda search, M_j, R_j, their upload
  double boosting_seconds = 0;  // the iterations
  // Device memory the fit allocated at its peak, X and y (the caller's) aside.
  std::int64_t device_bytes = 0;
};

// Called from fit_gam at most every interval_seconds with (iterations done,
// training risk); the only time the risk is copied to the host mid-fit.
struct GamProgress {
  std::function<void(int, double)> report;
  double interval_seconds = 0.5;
};

struct GamCrossValidation {
  int folds = 0;
  std::vector<double> risk;  // [folds * (mstop + 1)]: mean out-of-fold loss per iteration
  int best_mstop = 0;        // argmin over m of the mean over folds
};

// Device memory a fit of n rows and p covariates takes at its peak, the
// caller's X and y aside, with `folds` cross-validation boosters beside it
// (0: none); the basis stored in element_size bytes. -1 if the count
// overflows. For checking a run against the free memory before it starts.
inline std::int64_t gam_device_bytes(std::int64_t n, std::int64_t p, const GamOptions& options,
                                     std::int64_t element_size, int folds = 0) {
  const std::uint64_t rows = std::uint64_t(n), learners = std::uint64_t(p),
                      k = std::uint64_t(options.basis_size),
                      width = std::uint64_t(options.degree + 1);
  const std::int64_t basis =
      checked_sum({checked_bytes({learners, rows, width}, std::uint64_t(element_size)),
                   checked_bytes({learners, rows}, sizeof(int)),
                   options.basis == GamBasis::dense
                       ? checked_bytes({rows, learners, k}, std::uint64_t(element_size))
                       : 0});
  // y, f, u, fold weights and the float copies; c, steps, scores,
  // coefficients; the learners' k x k matrices (Gram, inverse, reduction).
  const std::int64_t booster = checked_sum(
      {checked_bytes({rows, 4}, sizeof(double)), checked_bytes({learners, k, 4}, sizeof(double)),
       checked_bytes({learners, k, k, 3}, sizeof(double)),
       checked_bytes({std::uint64_t(options.mstop) + 1, 2}, sizeof(double))});
  std::int64_t cache = 0;  // Gram mode: the cached B_j^T B_s blocks, one slot more
  if (options.mode == GamMode::gram && options.mstop > 0) {
    const std::int64_t slot = checked_bytes({learners, k, k}, sizeof(double));
    const std::int64_t slots =
        slot <= 0
            ? 1
            : std::max<std::int64_t>(
                  1, std::min<std::int64_t>({p, options.mstop, options.gram_cache_bytes / slot}));
    cache = slot < 0 ? -1 : checked_bytes({std::uint64_t(slots + 1)}, std::uint64_t(slot));
  }
  const std::int64_t fold_boosters =
      booster < 0 ? -1 : checked_bytes({std::uint64_t(folds)}, std::uint64_t(booster));
  return checked_sum({basis, booster, fold_boosters, cache});
}

namespace impl {

// Two sums reduced into a host value (Kokkos 3.4 reduces one value per call).
inline RiskReducer<Kokkos::HostSpace> host_sums(RiskSums& target) {
  return RiskReducer<Kokkos::HostSpace>(
      Kokkos::View<RiskSums, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&target));
}

template <class ExecutionSpace, class T>
class GamBooster {
 public:
  // T is the precision of the basis, the data streamed every iteration; the
  // O(n) vectors and the O(p k^2) matrices stay in double, so a float basis
  // halves the traffic without rounding the sums that pick the learner.
  using Memory = typename ExecutionSpace::memory_space;
  using Vector = Kokkos::View<double*, Memory>;
  using ConstVector = Kokkos::View<const double*, Memory>;
  using LowVector = Kokkos::View<T*, Memory>;

  template <class XView, class YView>
  GamBooster(const ExecutionSpace& space, const XView& X, const YView& y, const GamOptions& options)
      : space_(space), options_(options) {
    static_assert(XView::rank == 2 && YView::rank == 1, "kpl::fit_gam: X [n, p] and y [n]");
    check_gam_options(options);
    Kokkos::Timer timer;
    rows_ = X.extent(0);
    learners_ = X.extent(1);
    k_ = options.basis_size;
    if (static_cast<std::int64_t>(y.extent(0)) != rows_)
      throw input_error("kpl::fit_gam: X has " + std::to_string(rows_) + " rows, y " +
                        std::to_string(y.extent(0)) + " values");
    if (learners_ == 0) throw input_error("kpl::fit_gam: X has no covariates (p = 0)");
    if (rows_ < k_)
      throw input_error("kpl::fit_gam: " + std::to_string(rows_) +
                        " observations are fewer than the basis size " + std::to_string(k_));
    check_data(X, y);
    y_ = Vector(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gam::y"), rows_);
    convert(y_, y);
    // Boundary knots: each covariate's range.
    Kokkos::View<MinMaxValue<T>*, Memory> ranges(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gam::ranges"), learners_);
    reduce_columns(space, X, MinMax<T>{}, ranges);
    auto host_ranges = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ranges);
    meshes_.resize(learners_);
    for (std::int64_t j = 0; j < learners_; ++j) {
      const double lower = host_ranges(j).min, upper = host_ranges(j).max;
      if (!(upper > lower))
        throw input_error("kpl::fit_gam: covariate " + std::to_string(j) +
                          " (0-based column of X) is constant (" + std::to_string(lower) +
                          "): no range to place knots in");
      meshes_[j] = BsplineMesh{lower, upper, k_, options.degree};
      // The knot spacing must be a normal number: a range of +-1e308 overflows
      // it, one of a few denormals underflows it.
      const double spacing = meshes_[j].spacing();
      if (!(spacing <= std::numeric_limits<double>::max()) ||
          !(spacing >= std::numeric_limits<double>::min()))
        throw input_error("kpl::fit_gam: covariate " + std::to_string(j) +
                          " (0-based column of X) spans [" + format_number(lower) + ", " +
                          format_number(upper) + "]: its knot spacing " +
                          (spacing > 1 ? "overflows" : "underflows") +
                          " double precision; rescale the covariate");
    }
    Kokkos::View<BsplineMesh*, Memory> device_meshes(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gam::meshes"), learners_);
    Kokkos::View<const BsplineMesh*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host_meshes(
        meshes_.data(), meshes_.size());
    Kokkos::deep_copy(space, device_meshes, host_meshes);
    basis_ = CompactBasis<T, Memory>("kpl::gam::basis", learners_, rows_, options.degree + 1, k_);
    build_bspline_basis(space, X, device_meshes, basis_);
    if (options.basis == GamBasis::dense) build_dense();
    allocate_state();
    space.fence();
    basis_seconds_ = timer.seconds();
  }

  // A booster on another execution-space instance that shares `other`'s
  // basis and response (read-only) and has its own fit state: the folds of a
  // cross-validation, run side by side.
  GamBooster(const GamBooster& other, const ExecutionSpace& instance)
      : space_(instance),
        options_(other.options_),
        rows_(other.rows_),
        learners_(other.learners_),
        k_(other.k_),
        basis_seconds_(other.basis_seconds_),
        meshes_(other.meshes_),
        basis_(other.basis_),
        dense_(other.dense_),
        y_(other.y_) {
    allocate_state();
  }

  // One fit's state between its steps (start, iterate, finish), so that the
  // folds of a cross-validation can interleave on separate instances.
  struct Run {
    ConstVector weights;
    int mstop = 0;
    GamMode mode = GamMode::direct;
    GamModel model;
    Vector gram;  // B_j^T W B_j, [p k k]
    Kokkos::View<RiskSums*, Memory> risk_sums;
    Kokkos::View<int*, Memory> selected;
    Kokkos::View<double*, Memory> coefficients;
    Vector cache;  // Gram mode: cached blocks B_j^T W B_s ([p k k] each) per selected s
    std::vector<int> slot_of;
    std::int64_t slots = 0, used = 0;
  };

  // Fits with weights (empty: all ones; cross-validation passes 0/1) for
  // `mstop` iterations in `mode`. held_out, if given, receives the summed
  // loss of the weight-0 rows at every iteration 0..mstop (direct mode).
  GamModel fit(const ConstVector& weights, int mstop, GamMode mode, GamTimings* timings,
               const GamProgress& progress, std::vector<double>* held_out = nullptr) {
    if (held_out != nullptr && mode != GamMode::direct)
      throw std::invalid_argument("kpl::fit_gam: out-of-fold risks need the direct mode");
    Run run = start(weights, mstop, mode, timings);
    Kokkos::Timer boosting_timer, since_report;
    for (int m = 0; m < mstop; ++m) {
      iterate(run, m);
      if (progress.report &&
          (since_report.seconds() >= progress.interval_seconds || m + 1 == mstop)) {
        RiskSums latest;
        Kokkos::deep_copy(
            space_, Kokkos::View<RiskSums, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&latest),
            Kokkos::subview(run.risk_sums, m + 1));
        space_.fence();
        progress.report(m + 1, latest.training);
        since_report.reset();
      }
    }
    GamModel model = finish(run, held_out);
    if (timings) {
      timings->boosting_seconds = boosting_timer.seconds();
      timings->device_bytes = device_bytes(mstop, mode);
    }
    return model;
  }

  // The fit's set-up: B_j^T W B_j, lambda_j, M_j, R_j, the offset, f, u and
  // the risk at the offset.
  Run start(const ConstVector& weights, int mstop, GamMode mode, GamTimings* timings) {
    Kokkos::Timer timer;
    Run run;
    run.weights = weights;
    run.mstop = mstop;
    run.mode = mode;
    GamModel& model = run.model;
    model.options = options_;
    model.options.mstop = mstop;
    model.options.mode = mode;
    model.covariates = learners_;
    model.observations = rows_;
    model.meshes = meshes_;
    const std::int64_t block = static_cast<std::int64_t>(k_) * k_;

    // B_j^T W B_j for every learner, then lambda_j, M_j and R_j on the host.
    run.gram = Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::gram"),
                      learners_ * block);
    cross_products(space_, basis_, weights, -1, run.gram, &product_workspace_);
    auto host_gram = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), run.gram);
    const double cross_product_seconds = timer.seconds();
    penalise(host_gram, model);
    // The weighted offset: the mean response on the family's link scale.
    RiskSums totals{0, 0};  // (sum of w y, sum of w)
    {
      const auto y = y_;
      const bool weighted = weights.extent(0) != 0;
      Kokkos::parallel_reduce(
          "kpl::gam::offset", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, rows_),
          KOKKOS_LAMBDA(const std::int64_t i, RiskSums& sums) {
            const double weight = weighted ? double(weights(i)) : 1.0;
            sums.training += weight * double(y(i));
            sums.held_out += weight;
          },
          host_sums(totals));
    }
    const double weighted_sum = totals.training, weight_total = totals.held_out;
    const double mean = weighted_sum / weight_total;
    if (options_.family == GamFamily::binomial && !(mean > 0 && mean < 1))
      throw input_error("kpl::fit_gam: y holds a single class (mean " + std::to_string(mean) +
                        "); the Binomial family needs both 0 and 1");
    if (options_.family == GamFamily::poisson && !(mean > 0))
      throw input_error(
          "kpl::fit_gam: every count in y is 0; the Poisson family needs a positive mean");
    model.offset = options_.family == GamFamily::binomial  ? std::log(mean / (1 - mean))
                   : options_.family == GamFamily::poisson ? std::log(mean)
                                                           : mean;
    if (timings) {
      timings->basis_seconds = basis_seconds_ + cross_product_seconds;
      timings->penalty_seconds = timer.seconds() - cross_product_seconds;
    }
    begin_boosting(run);
    return run;
  }

  // What the fit holds on the device: the basis, O(n) and O(p k^2) arrays,
  // and in Gram mode the cached cross-product blocks.
  std::int64_t device_bytes(int mstop, GamMode mode) const {
    const std::int64_t block = static_cast<std::int64_t>(k_) * k_;
    std::int64_t bytes = basis_.bytes() + dense_.size() * sizeof(T);
    bytes += (y_.size() + f_.size() + u_.size() + c_.size() + 2 * learners_ * block +
              learners_ * block /* gram */ + scores_.size() + learners_ * k_ /* coefficients */) *
             sizeof(double);
    bytes += (u_low_.size() + c_low_.size()) * sizeof(T) + (mstop + 1) * sizeof(RiskSums);
    if (mode == GamMode::gram && mstop > 0)
      bytes += (gram_cache_slots(mstop) + 1) * learners_ * block * sizeof(double);
    return bytes;
  }

  // Gram mode: B_j^T W B_s blocks ([p k k] doubles each) kept at once, within
  // the options' memory budget (one more slot holds an uncached block).
  std::int64_t gram_cache_slots(int mstop) const {
    const std::int64_t bytes_per_slot =
        learners_ * static_cast<std::int64_t>(k_) * k_ * sizeof(double);
    return std::max<std::int64_t>(
        1, std::min<std::int64_t>({learners_, mstop, options_.gram_cache_bytes / bytes_per_slot}));
  }

  // The steps of a fit. Public only because CUDA forbids device lambdas in
  // private member functions; impl:: is not API.
  template <class XView, class YView>
  void check_data(const XView& X, const YView& y) {
    const std::int64_t n = rows_, p = learners_;
    const GamFamily family = options_.family;
    RiskSums counts{0, 0};  // (values not finite, responses outside the family's support)
    Kokkos::parallel_reduce(
        "kpl::gam::check_input", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, n),
        KOKKOS_LAMBDA(const std::int64_t i, RiskSums& bad) {
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
        },
        host_sums(counts));
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

  void build_dense() {
    const int k = k_, width = basis_.width();
    dense_ = Kokkos::View<T**, Kokkos::LayoutLeft, Memory>(
        Kokkos::view_alloc(space_, "kpl::gam::dense_basis"), rows_, learners_ * k_);
    const auto dense = dense_;
    const auto first = basis_.first;
    const auto values = basis_.values;
    Kokkos::parallel_for(
        "kpl::gam::expand_basis",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(space_, {0, 0}, {learners_, rows_}),
        KOKKOS_LAMBDA(const std::int64_t j, const std::int64_t i) {
          const int column = first(j, i);
          for (int q = 0; q < width; ++q) dense(i, j * k + column + q) = values(j, q, i);
        });
  }

  template <class HostGram>
  void penalise(const HostGram& host_gram, GamModel& model) {
    const int k = k_;
    const std::int64_t block = static_cast<std::int64_t>(k) * k;
    const auto penalty = difference_penalty(k, options_.differences);
    std::vector<LearnerPenalty> penalties(learners_);
    std::vector<std::string> errors(learners_);
    // One k x k problem per learner, on the host's threads.
    Kokkos::parallel_for(
        "kpl::gam::penalties", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, learners_),
        [&](const std::int64_t j) {
          try {
            std::vector<double> gram(block);
            for (std::int64_t e = 0; e < block; ++e) gram[e] = host_gram(j * block + e);
            penalties[j] = penalise_learner(gram, penalty, k, options_.df, options_.df_definition,
                                            "covariate " + std::to_string(j), options_.differences);
          } catch (const std::exception& error) {
            errors[j] = error.what();
          }
        });
    for (const auto& error : errors)
      if (!error.empty()) throw input_error("kpl::fit_gam: " + error);
    if (inverse_.extent(0) != static_cast<std::size_t>(learners_ * block)) {
      inverse_ =
          Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::inverse"),
                 learners_ * block);
      reduction_ =
          Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::reduction"),
                 learners_ * block);
    }
    auto inverse_host = Kokkos::create_mirror_view(inverse_);
    auto reduction_host = Kokkos::create_mirror_view(reduction_);
    model.lambda.resize(learners_);
    model.df.resize(learners_);
    for (std::int64_t j = 0; j < learners_; ++j) {
      model.lambda[j] = penalties[j].lambda;
      model.df[j] = penalties[j].df;
      for (std::int64_t e = 0; e < block; ++e) {
        inverse_host(j * block + e) = penalties[j].inverse[e];
        reduction_host(j * block + e) = penalties[j].reduction[e];
      }
    }
    Kokkos::deep_copy(space_, inverse_, inverse_host);
    Kokkos::deep_copy(space_, reduction_, reduction_host);
    space_.fence();
  }

  // The per-fit device state (the basis and y are shared between boosters).
  void allocate_state() {
    const auto uninitialised = [&](const std::string& label) {
      return Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, label);
    };
    f_ = Vector(uninitialised("kpl::gam::f"), rows_);
    u_ = Vector(uninitialised("kpl::gam::u"), rows_);
    c_ = Vector(uninitialised("kpl::gam::c"), learners_ * k_);
    step_ = Vector(Kokkos::view_alloc(space_, "kpl::gam::step"), k_);
    scores_ = Kokkos::View<double*, Memory>(uninitialised("kpl::gam::scores"), learners_);
    current_ = Kokkos::View<int, Memory>(Kokkos::view_alloc(space_, "kpl::gam::current"));
    if constexpr (!std::is_same_v<T, double>) {
      if (options_.basis == GamBasis::dense) {
        u_low_ = LowVector("kpl::gam::u_low", rows_);
        c_low_ = LowVector("kpl::gam::c_low", learners_ * k_);
        step_low_ = LowVector("kpl::gam::step_low", k_);
      }
    }
  }

  // Copies between the double vectors and the basis' precision (dense mode
  // in float: kpl::gemv takes one precision).
  template <class To, class From>
  void convert(const To& to, const From& from) {
    Kokkos::parallel_for(
        "kpl::gam::convert", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, from.extent(0)),
        KOKKOS_LAMBDA(const std::int64_t i) {
          to(i) = typename To::non_const_value_type(from(i));
        });
  }

  void compute_gradient_products() {
    if (options_.basis == GamBasis::dense) {
      if constexpr (std::is_same_v<T, double>) {
        gemv(space_, Transpose::yes, 1.0, dense_, u_, 0.0, c_, gemv_workspace_, options_.gemv);
      } else {
        convert(u_low_, u_);
        gemv(space_, Transpose::yes, T(1), dense_, u_low_, T(0), c_low_, gemv_workspace_,
             options_.gemv);
        convert(c_, c_low_);
      }
    } else {
      transpose_product(space_, basis_, u_, c_, &product_workspace_);
    }
  }

  // f = offset + sum_j B_j coefficients_j, then u and the exact risk.
  template <class CoefficientView, class RiskView>
  void refresh(const ConstVector& weights, double offset, const CoefficientView& coefficients,
               const RiskView& risk_sums, std::int64_t slot) {
    apply(space_, basis_, coefficients, f_);
    const auto f = f_;
    const double shift = offset;
    Kokkos::parallel_for(
        "kpl::gam::add_offset", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, rows_),
        KOKKOS_LAMBDA(const std::int64_t i) { f(i) += shift; });
    gam_update_rows(space_, basis_, false, current_, step_, GamFamilyFunctions{options_.family},
                    ConstVector(y_), weights, f_, u_, risk_sums, slot);
  }

  void begin_boosting(Run& run) {
    const std::int64_t block = static_cast<std::int64_t>(k_) * k_;
    const int mstop = run.mstop;
    run.risk_sums =
        Kokkos::View<RiskSums*, Memory>(Kokkos::view_alloc(space_, "kpl::gam::risk"), mstop + 1);
    run.selected = Kokkos::View<int*, Memory>(Kokkos::view_alloc(space_, "kpl::gam::selected"),
                                              std::max(mstop, 1));
    run.coefficients = Kokkos::View<double*, Memory>(
        Kokkos::view_alloc(space_, "kpl::gam::coefficients"), learners_ * k_);
    Kokkos::deep_copy(space_, f_, run.model.offset);
    gam_update_rows(space_, basis_, false, current_, step_, GamFamilyFunctions{options_.family},
                    ConstVector(y_), run.weights, f_, u_, run.risk_sums, 0);
    run.slot_of.assign(learners_, -1);
    if (run.mode == GamMode::gram && mstop > 0) {
      run.slots = gram_cache_slots(mstop);
      run.cache = Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::cross"),
                         (run.slots + 1) * learners_ * block);  // + 1: the block of an uncached s
      compute_gradient_products();
    }
  }

  // Iteration m: asynchronous on the booster's instance, except that the
  // Gram and dense modes read the selected index back.
  void iterate(Run& run, int m) {
    const int k = k_;
    const std::int64_t block = static_cast<std::int64_t>(k) * k;
    const GamFamilyFunctions family{options_.family};
    const auto& weights = run.weights;
    if (run.mode != GamMode::gram) compute_gradient_products();
    gam_scores(space_, learners_, k, c_, reduction_, scores_);
    gam_select(space_, learners_, scores_, run.selected, m, current_);
    if (run.mode == GamMode::gram) {
      const int s = selected_on_host();
      std::int64_t slot;
      if (run.slot_of[s] >= 0) {
        slot = run.slot_of[s];
      } else {
        slot = run.used < run.slots ? run.used++ : run.slots;
        if (slot < run.slots) run.slot_of[s] = static_cast<int>(slot);
        cross_products(space_, basis_, weights, s,
                       Kokkos::subview(run.cache, std::make_pair(slot * learners_ * block,
                                                                 (slot + 1) * learners_ * block)),
                       &product_workspace_);
      }
      gam_take_step(space_, k, options_.nu, current_, inverse_, c_, step_, run.coefficients,
                    run.gram, run.risk_sums, m);
      gam_update_cross_products(
          space_, learners_, k,
          Kokkos::subview(run.cache,
                          std::make_pair(slot * learners_ * block, (slot + 1) * learners_ * block)),
          step_, c_);
      if ((m + 1) % options_.gram_refresh == 0 || m + 1 == run.mstop) {
        refresh(weights, run.model.offset, run.coefficients, run.risk_sums, m + 1);
        if (m + 1 < run.mstop) compute_gradient_products();
      }
    } else if (options_.basis == GamBasis::dense) {
      gam_take_step(space_, k, options_.nu, current_, inverse_, c_, step_, run.coefficients,
                    Vector(), run.risk_sums, m);
      const std::int64_t s = selected_on_host();
      const auto block_columns =
          Kokkos::subview(dense_, Kokkos::ALL, std::make_pair(s * k, (s + 1) * k));
      if constexpr (std::is_same_v<T, double>) {
        gemv(space_, Transpose::no, 1.0, block_columns, step_, 1.0, f_, gemv_workspace_,
             options_.gemv);
      } else {
        convert(step_low_, step_);
        gemv(space_, Transpose::no, T(1), block_columns, step_low_, T(0), u_low_, gemv_workspace_,
             options_.gemv);
        const auto f = f_;
        const auto fit = u_low_;
        Kokkos::parallel_for(
            "kpl::gam::add_fit", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, rows_),
            KOKKOS_LAMBDA(const std::int64_t i) { f(i) += double(fit(i)); });
      }
      gam_update_rows(space_, basis_, false, current_, step_, family, ConstVector(y_), weights, f_,
                      u_, run.risk_sums, m + 1);
    } else {
      gam_take_step(space_, k, options_.nu, current_, inverse_, c_, step_, run.coefficients,
                    Vector(), run.risk_sums, m);
      gam_update_rows(space_, basis_, true, current_, step_, family, ConstVector(y_), weights, f_,
                      u_, run.risk_sums, m + 1);
    }
  }

  int selected_on_host() {
    int s;
    Kokkos::deep_copy(space_, Kokkos::View<int, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&s),
                      current_);
    space_.fence();
    return s;
  }

  GamModel finish(Run& run, std::vector<double>* held_out) {
    space_.fence();
    const int mstop = run.mstop;
    GamModel& model = run.model;
    auto host_risk = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), run.risk_sums);
    auto host_selected = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), run.selected);
    auto host_coefficients =
        Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), run.coefficients);
    model.risk.resize(mstop + 1);
    if (held_out) held_out->resize(mstop + 1);
    for (int m = 0; m <= mstop; ++m) {
      model.risk[m] = host_risk(m).training;
      if (held_out) (*held_out)[m] = host_risk(m).held_out;
    }
    model.selected.assign(host_selected.data(), host_selected.data() + mstop);
    model.coefficients.assign(host_coefficients.data(),
                              host_coefficients.data() + host_coefficients.size());
    return std::move(model);
  }

 private:
  ExecutionSpace space_;
  GamOptions options_;
  std::int64_t rows_ = 0, learners_ = 0;
  int k_ = 0;
  double basis_seconds_ = 0;
  std::vector<BsplineMesh> meshes_;
  CompactBasis<T, Memory> basis_;
  Kokkos::View<T**, Kokkos::LayoutLeft, Memory> dense_;
  Vector y_, f_, u_, c_, step_, inverse_, reduction_;
  LowVector u_low_, c_low_, step_low_;  // dense basis in float only
  Kokkos::View<double*, Memory> scores_;
  Kokkos::View<int, Memory> current_;
  GemvWorkspace<ExecutionSpace, T> gemv_workspace_;
  CompactProductWorkspace<Memory> product_workspace_;  // per booster: folds run side by side
};

template <class View>
using gam_scalar_t = typename View::non_const_value_type;

}  // namespace impl

// Fits the model to X [n, p] and y [n] (Views accessible from `space`, any
// layout, float or double: the precision of the fit). Bad data (n < k, p = 0,
// a constant covariate, NaN/Inf, y outside the family's support, a df no
// lambda reaches) throws kpl::input_error; impossible options
// std::invalid_argument. Nothing is left on the device afterwards.
template <class ExecutionSpace, class XView, class YView>
GamModel fit_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                 const GamOptions& options, GamTimings* timings = nullptr,
                 const GamProgress& progress = {}) {
  using T = impl::gam_scalar_t<XView>;
  impl::GamBooster<ExecutionSpace, T> booster(space, X, y, options);
  return booster.fit({}, options.mstop, options.mode, timings, progress);
}

// K-fold cross-validation over iterations 0..options.mstop: fold f holds the
// rows whose place in a permutation drawn from `seed` is f modulo K; each
// fold's model is fitted (direct mode) on the other rows with the basis,
// knots included, of all of them (as mboost's cvrisk reweights one model).
// The folds share the basis and run side by side, each on its own instance
// (its own stream on GPUs with Kokkos 4; in order on CPUs), iteration by
// iteration: no fold waits for another's host round trip.
template <class ExecutionSpace, class XView, class YView>
GamCrossValidation cross_validate_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                                      const GamOptions& options, int folds,
                                      std::uint64_t seed = 1) {
  using T = impl::gam_scalar_t<XView>;
  using Booster = impl::GamBooster<ExecutionSpace, T>;
  const std::int64_t n = X.extent(0);
  if (folds < 2 || folds > n)
    throw std::invalid_argument("kpl::cross_validate_gam: " + std::to_string(folds) +
                                " folds for " + std::to_string(n) + " observations");
  Booster shared(space, X, y, options);
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 generator(seed);
  std::shuffle(order.begin(), order.end(), generator);
  std::vector<int> fold_of(n);
  for (std::int64_t position = 0; position < n; ++position)
    fold_of[order[position]] = static_cast<int>(position % folds);
  const int mstop = options.mstop;
  using Memory = typename ExecutionSpace::memory_space;
  const auto instances = compat::concurrent_instances(space, folds);
  std::vector<Booster> boosters;
  std::vector<typename Booster::Run> runs;
  std::vector<std::int64_t> held_out_rows(folds, 0);
  boosters.reserve(folds);
  for (int fold = 0; fold < folds; ++fold) {
    Kokkos::View<double*, Memory> weights(Kokkos::view_alloc(space, "kpl::gam::fold_weights"), n);
    auto host_weights = Kokkos::create_mirror_view(weights);
    for (std::int64_t i = 0; i < n; ++i) {
      host_weights(i) = fold_of[i] == fold ? 0.0 : 1.0;
      held_out_rows[fold] += fold_of[i] == fold;
    }
    Kokkos::deep_copy(weights, host_weights);
    boosters.emplace_back(shared, instances[fold]);
    runs.push_back(boosters.back().start(weights, mstop, GamMode::direct, nullptr));
  }
  for (int m = 0; m < mstop; ++m)
    for (int fold = 0; fold < folds; ++fold) boosters[fold].iterate(runs[fold], m);
  GamCrossValidation result;
  result.folds = folds;
  result.risk.assign(static_cast<std::size_t>(folds) * (mstop + 1), 0.0);
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<double> held_out;
    boosters[fold].finish(runs[fold], &held_out);
    for (int m = 0; m <= mstop; ++m)
      result.risk[static_cast<std::size_t>(fold) * (mstop + 1) + m] =
          held_out[m] / held_out_rows[fold];
  }
  double best = 0;
  for (int m = 0; m <= mstop; ++m) {
    double mean = 0;
    for (int fold = 0; fold < folds; ++fold)
      mean += result.risk[static_cast<std::size_t>(fold) * (mstop + 1) + m];
    mean /= folds;
    if (m == 0 || mean < best) {
      best = mean;
      result.best_mstop = m;
    }
  }
  return result;
}

// prediction(i) = offset + sum_j f_j(X(i, j)) on the link scale (the
// log-odds for Binomial, log(mean) for Poisson, as mboost's type = "link"),
// and, when partial_effects has extents [n, p], each f_j(X(i, j)). Outside a
// covariate's training range f_j continues linearly (mboost's extrapolation).
template <class ExecutionSpace, class XView, class PredictionView, class PartialView>
void predict_gam(const ExecutionSpace& space, const GamModel& model, const XView& X,
                 const PredictionView& prediction, const PartialView& partial_effects) {
  const std::int64_t n = X.extent(0), p = X.extent(1);
  if (p != model.covariates)
    throw input_error("kpl::predict_gam: X has " + std::to_string(p) + " covariates, the model " +
                      std::to_string(model.covariates));
  if (static_cast<std::int64_t>(prediction.extent(0)) != n)
    throw std::invalid_argument("kpl::predict_gam: prediction must hold one value per row of X");
  const bool partial = partial_effects.size() != 0;
  if (partial && (static_cast<std::int64_t>(partial_effects.extent(0)) != n ||
                  static_cast<std::int64_t>(partial_effects.extent(1)) != p))
    throw std::invalid_argument("kpl::predict_gam: partial effects must be [n, p] or empty");
  using Memory = typename ExecutionSpace::memory_space;
  const int k = model.options.basis_size;
  Kokkos::View<BsplineMesh*, Memory> meshes("kpl::gam::meshes", p);
  Kokkos::View<double*, Memory> coefficients("kpl::gam::coefficients", p * k);
  Kokkos::deep_copy(space, meshes,
                    Kokkos::View<const BsplineMesh*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        model.meshes.data(), model.meshes.size()));
  Kokkos::deep_copy(space, coefficients,
                    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        model.coefficients.data(), model.coefficients.size()));
  const double offset = model.offset;
  Kokkos::parallel_for(
      "kpl::gam::predict", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(const std::int64_t i) {
        double sum = offset;
        double row[bspline_max_degree + 1];
        for (std::int64_t j = 0; j < p; ++j) {
          const BsplineMesh mesh = meshes(j);
          const int first = bspline_row(mesh, double(X(i, j)), row);
          double effect = 0;
          for (int q = 0; q <= mesh.degree; ++q) effect += row[q] * coefficients(j * k + first + q);
          if (partial) partial_effects(i, j) = effect;
          sum += effect;
        }
        prediction(i) = sum;
      });
  space.fence();
}

}  // namespace kpl
