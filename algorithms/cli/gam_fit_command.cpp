// `kpl gam fit`: a boosted GAM (mboost's gamboost with bbs learners).
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/gam_file.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct GamFitArguments {
  std::string input, output, penalty = "pspline", df_definition = "trace2", family = "gaussian",
                             gemv, mode = "direct", basis = "automatic", precision = "double",
                             offset, cv_weights;
  GamFitFileOptions options;
};

GamFitFileOptions fit_options(const GamFitArguments& arguments) {
  GamFitFileOptions options = arguments.options;
  auto& gam = options.gam;
  if (arguments.penalty == "ridge") gam.differences = 0;
  gam.df_definition = df_definitions(arguments.df_definition);
  gam.family = gam_families(arguments.family);
  gam.mode = gam_modes(arguments.mode);
  gam.basis = arguments.gemv.empty() ? gam_bases(arguments.basis) : GamBasis::dense;
  if (!arguments.gemv.empty()) gam.gemv.strategy = gemv_strategies(arguments.gemv);
  options.single_precision = precisions(arguments.precision) == Precision::single_precision;
  // --offset: a dataset of the input (/NAME) or one number.
  if (!arguments.offset.empty()) {
    if (arguments.offset.front() == '/')
      options.offset = arguments.offset;
    else
      options.gam.offset = std::stod(arguments.offset);
  }
  if (!arguments.cv_weights.empty()) {
    const auto colon = arguments.cv_weights.rfind(':');
    options.cv_weights_path = arguments.cv_weights.substr(0, colon);
    options.cv_weights_dataset = arguments.cv_weights.substr(colon + 1);
  }
  return options;
}

void print_summary(const GamFitSummary& summary, const GamFitFileOptions& options,
                   const std::string& output) {
  std::cerr << "kpl gam fit: " << summary.observations << " observations, " << summary.covariates
            << " covariates, mstop " << summary.mstop;
  if (options.cv_folds > 0)
    std::cerr << " (chosen by " << options.cv_folds << "-fold cross-validation in "
              << summary.cv_seconds << " s)";
  if (options.cv_bootstrap > 0)
    std::cerr << " (chosen by " << options.cv_bootstrap << " bootstrap resamples in "
              << summary.cv_seconds << " s)";
  if (!options.cv_weights_path.empty())
    std::cerr << " (chosen by the resamples of " << options.cv_weights_path << ":"
              << options.cv_weights_dataset << " in " << summary.cv_seconds << " s)";
  std::cerr << " on " << Kokkos::DefaultExecutionSpace::name();
  const int processes = kpl::cli::processes().size();
  if (processes > 1) std::cerr << " x " << processes << " processes";
  std::cerr << ": basis " << summary.timings.basis_seconds << " s, lambda search "
            << summary.timings.penalty_seconds << " s, boosting "
            << summary.timings.boosting_seconds << " s";
  if (processes > 1)
    std::cerr << " (" << summary.timings.reduction_seconds << " s of it summing across processes)";
  std::cerr << "; final risk " << summary.final_risk << "; wrote " << output << "\n";
}

// What print_summary() says, as fields.
void summary_json(const GamFitSummary& summary, const GamFitArguments& arguments,
                  const GamFitFileOptions& options, JsonObject& json) {
  json.set("input", arguments.input)
      .set("output", arguments.output)
      .set("family", arguments.family)
      .set("observations", summary.observations)
      .set("covariates", summary.covariates)
      .set("mstop", summary.mstop)
      .set("final_risk", summary.final_risk)
      .set("device_bytes", summary.timings.device_bytes);
  // How mstop was chosen: null when it is --mstop itself.
  if (options.cv_folds > 0)
    json.object("mstop_chosen_by").set("method", "cross-validation").set("folds", options.cv_folds);
  else if (options.cv_bootstrap > 0)
    json.object("mstop_chosen_by").set("method", "bootstrap").set("resamples", options.cv_bootstrap);
  else if (!options.cv_weights_path.empty())
    json.object("mstop_chosen_by")
        .set("method", "cv-weights")
        .set("file", options.cv_weights_path)
        .set("dataset", options.cv_weights_dataset);
  else
    json.set_null("mstop_chosen_by");
  json.object("seconds")
      .set("basis", summary.timings.basis_seconds)
      .set("lambda_search", summary.timings.penalty_seconds)
      .set("boosting", summary.timings.boosting_seconds)
      .set("reduction", summary.timings.reduction_seconds)
      .set("mstop_choice", summary.cv_seconds);
}

int run_gam_fit(const GamFitArguments& arguments, JsonObject& json) {
  GamFitFileOptions options = fit_options(arguments);
  // A progress line on a terminal only (stderr, rewritten in place), from
  // the process that prints the summary.
  const bool terminal = prints_summary() && isatty(fileno(stderr)) != 0;
  if (terminal) {
    const int total = options.gam.mstop;
    options.progress.report = [total](int iteration, double risk) {
      std::cerr << "\rkpl gam fit: iteration " << iteration << "/" << total << ", risk " << risk
                << "   " << std::flush;
    };
  }
  clean_stale_partials(arguments.output);
  const auto summary = fit_gam_file(processes(), arguments.input, arguments.output, options);
  if (terminal) std::cerr << "\n";
  if (prints_summary()) {
    print_summary(summary, options, arguments.output);
    summary_json(summary, arguments, options, json);
  }
  return exit_success;
}

// The model: mboost's bbs learner (basis, penalty, df) and the boosting.
void add_model_options(CLI::App* app, GamFitArguments& arguments) {
  auto& options = arguments.options;
  app->add_option("--basis-size", options.gam.basis_size,
                  "B-spline functions per covariate (k - degree - 1 interior knots)")
      ->check(CLI::Range(3, 256))
      ->capture_default_str();
  app->add_option("--degree", options.gam.degree, "B-spline degree")
      ->check(CLI::Range(1, bspline_max_degree))
      ->capture_default_str();
  app->add_option("--penalty", arguments.penalty,
                  "pspline: difference penalty of order --differences; ridge: K = I")
      ->check(CLI::IsMember({"pspline", "ridge"}))
      ->capture_default_str();
  app->add_option("--differences", options.gam.differences,
                  "Difference order of the P-spline penalty")
      ->check(CLI::Range(1, 3))
      ->capture_default_str();
  app->add_option("--df", options.gam.df, "Degrees of freedom of every learner, in (0, k]")
      ->check(finite_number)
      ->check(CLI::Range(1e-6, 256.0))
      ->capture_default_str();
  df_definitions.add(app, "--df-definition", arguments.df_definition,
                     "trace: tr(S) (Sieminski & Lee); trace2: tr(2S - S^T S) (mboost's default)");
  app->add_option("--nu", options.gam.nu, "Step length, in (0, 1]")
      ->check(finite_number)
      ->check(CLI::Range(1e-12, 1.0))
      ->capture_default_str();
  app->add_option("--mstop", options.gam.mstop, "Boosting iterations")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  gam_families.add(app, "--family", arguments.family,
                   "gaussian (squared error), binomial (y in {0, 1}, log-odds) or poisson (log "
                   "link)");
  app->add_option("--weights", options.weights,
                  "Observation weights: dataset [n] of the input (e.g. /weights), finite, not "
                  "negative, not all 0. As mboost: integer weights are kept, others rescaled "
                  "to w sum(w > 0) / sum(w); they enter the offset, lambda (from B^T W B), "
                  "the fits and the risk sum w loss; zero-weight rows still set the knots")
      ->check(dataset_name);
  app->add_option("--offset", arguments.offset,
                  "Fixed offset instead of the family's weighted mean on the link scale: a "
                  "number (added to every prediction), or a dataset /NAME [n] of the input, "
                  "each row's start f (e.g. log exposure for poisson); a model fitted with "
                  "/NAME needs the new rows' offsets in gam predict --offset")
      ->check(offset_value);
}

// How the fit is computed and mstop chosen: the answer does not depend on
// them beyond rounding (cross-validation aside).
void add_computation_options(CLI::App* app, GamFitArguments& arguments) {
  auto& options = arguments.options;
  app->add_option("--cv", options.cv_folds,
                  "Choose mstop in [0, --mstop] by K-fold cross-validation, then refit on all "
                  "rows")
      ->check(CLI::Range(2, 1 << 20));
  auto* bootstrap = app->add_option(
      "--bootstrap", options.cv_bootstrap,
      "Choose mstop in [0, --mstop] by B bootstrap resamples (mboost's cvrisk default: 25): "
      "each draws n rows with replacement (probability w / sum w) from --cv-seed and is "
      "refitted with its counts as weights; risk over the rows not drawn");
  bootstrap->check(CLI::Range(1, 1 << 16));
  auto* cv_weights = app->add_option(
      "--cv-weights", arguments.cv_weights,
      "Choose mstop with given resamples: FILE:DATASET [n, B], column b the weights of "
      "resample b's fit (e.g. mboost's cv() folds); risk over its rows of weight 0");
  cv_weights->check(file_and_dataset);
  bootstrap->excludes(cv_weights);
  app->get_option("--cv")->excludes(bootstrap)->excludes(cv_weights);
  app->add_option("--cv-seed", options.cv_seed, "Seed of the folds or bootstrap draws")
      ->check(non_negative_integer)
      ->capture_default_str();
  gam_modes.add(app, "--mode", arguments.mode,
                "direct: B^T u from the basis every iteration; gram (gaussian): kept up to date "
                "from cross-products, O(p k^2) an iteration");
  gam_bases.add(app, "--basis", arguments.basis,
                "compact: (first index, degree + 1 values) per row; dense: n x p k, through "
                "kpl::gemv; evaluated: compact, and B^T u from x every iteration (faster on "
                "GPUs, slower on CPUs; 8 bytes more per value of X); automatic: evaluated on "
                "GPUs, compact on CPUs");
  app->add_option("--gemv", arguments.gemv,
                  "gemv strategy for the dense basis (implies --basis dense)")
      ->check(CLI::IsMember(gemv_strategies.names()));
  app->add_option("--gram-refresh", options.gam.gram_refresh,
                  "Gram mode: recompute B^T u, f and the risk from the rows this often")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  precisions.add(app, "--precision", arguments.precision,
                 "Precision of the basis (sums, f and the learners' matrices stay double)");
}

}  // namespace

Command add_gam_fit_command(CLI::App& gam) {
  auto arguments = std::make_shared<GamFitArguments>();
  auto* app = gam.add_subcommand(
      "fit",
      "Fit by component-wise L2 boosting with one penalised B-spline learner per covariate. "
      "Input: /X [n, p], /y [n]. Output: /selected [mstop] (0-based covariate per iteration), "
      "/risk [mstop + 1], /offset, /coefficients [p, k], /lambda, /df [p], /boundary [p, 2], "
      "/varimp [p] (mboost's varimp: training risk reduction per learner / n), settings as "
      "attributes; with --cv, --bootstrap or --cv-weights also /cv_risk [K or B, mstop + 1]. "
      "A fit whose risk or "
      "coefficients stop being finite is an error and writes no model");
  app->add_option("--input", arguments->input, "HDF5 file with /X and /y")
      ->check(non_empty_path)
      ->required();
  app->add_option("--output", arguments->output, "Model file to write")
      ->check(non_empty_path)
      ->required();
  add_model_options(app, *arguments);
  add_computation_options(app, *arguments);
  return {app, [arguments](JsonObject& json) { return run_gam_fit(*arguments, json); }};
}

}  // namespace kpl::cli
