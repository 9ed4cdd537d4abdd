// The kpl command line. Exit status: 0 on success, 2 on a usage error (CLI11
// parse errors), 1 on bad input or a runtime failure; messages go to stderr.
#include <kpl/config.hpp>
#include <kpl/deconvolution.hpp>
#include <kpl/detail/kokkos_compat.hpp>
#include <kpl/error.hpp>
#include <kpl/gam_file.hpp>
#include <kpl/info.hpp>
#include <kpl/nnls_file.hpp>
#include <kpl/self_check.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr int exit_success = 0;
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

// Arguments that start with --kokkos- belong to Kokkos; the rest to CLI11.
struct SplitArguments {
  std::vector<std::string> kokkos;
  std::vector<std::string> kpl;
};

SplitArguments split_arguments(int argc, char** argv) {
  SplitArguments split;
  split.kokkos.emplace_back(argc > 0 ? argv[0] : "kpl");
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    (argument.rfind("--kokkos-", 0) == 0 ? split.kokkos : split.kpl).push_back(argument);
  }
  return split;
}

// Kokkos for the lifetime of one command; initialised only once a command
// that needs it has been parsed, so --help and usage errors stay instant.
class KokkosSession {
 public:
  explicit KokkosSession(std::vector<std::string> arguments) : arguments_(std::move(arguments)) {
    for (auto& argument : arguments_) pointers_.push_back(argument.data());
    int argc = static_cast<int>(pointers_.size());
    Kokkos::initialize(argc, pointers_.data());
  }
  ~KokkosSession() { Kokkos::finalize(); }
  KokkosSession(const KokkosSession&) = delete;
  KokkosSession& operator=(const KokkosSession&) = delete;

 private:
  std::vector<std::string> arguments_;
  std::vector<char*> pointers_;
};

int print_self_check(const std::vector<kpl::SelfCheckResult>& results) {
  int failures = 0;
  std::cout << "self-check (" << results.size() << " checks)\n";
  for (const auto& result : results) {
    std::cout << "  " << (result.passed() ? "ok    " : "FAILED") << " " << std::left << std::setw(8)
              << result.backend << std::setw(36) << result.check << std::right << " relative error "
              << std::scientific << std::setprecision(2) << result.relative_error << " (tolerance "
              << result.tolerance << ")\n";
    if (!result.passed()) ++failures;
  }
  std::cout << std::defaultfloat;
  if (failures > 0) {
    std::cerr << "kpl: self-check: " << failures << " of " << results.size() << " checks failed\n";
    return exit_failure;
  }
  std::cout << "self-check passed on every enabled backend\n";
  return exit_success;
}

// Options every NNLS-solving command shares.
struct SolverArguments {
  std::string precision = "double";
  kpl::NnlsOptions nnls;
  std::string orthogonalization = "automatic";
  std::string gradient = "automatic";
};

void add_solver_options(CLI::App* command, SolverArguments& arguments,
                        const std::string& max_passive_default) {
  command->add_option("--precision", arguments.precision, "Arithmetic precision")
      ->check(CLI::IsMember({"double", "float"}))
      ->capture_default_str();
  command
      ->add_option("--max-iterations", arguments.nnls.max_iterations,
                   "Cap on passive least-squares solves per system (default 3n)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--tolerance", arguments.nnls.tolerance,
                   "Stop when no zero-set gradient exceeds this (default 10 eps ||A||_1 max(m, n))")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--max-passive", arguments.nnls.max_passive,
                   "Cap on the passive set per system; Q takes m x this memory (default " +
                       max_passive_default + ")")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--orthogonalization", arguments.orthogonalization,
                   "How an entering column is orthogonalised against the passive set's Q "
                   "(automatic: modified Gram-Schmidt on CPUs, classical twice on GPUs)")
      ->check(CLI::IsMember({"automatic", "classical-twice", "modified-gram-schmidt"}))
      ->capture_default_str();
}

kpl::NnlsOptions solver_options(const SolverArguments& arguments) {
  kpl::NnlsOptions options = arguments.nnls;
  options.orthogonalization = arguments.orthogonalization == "modified-gram-schmidt"
                                  ? kpl::NnlsOrthogonalization::modified_gram_schmidt
                              : arguments.orthogonalization == "classical-twice"
                                  ? kpl::NnlsOrthogonalization::classical_twice
                                  : kpl::NnlsOrthogonalization::automatic;
  options.gradient = arguments.gradient == "residual" ? kpl::NnlsGradient::from_residual
                     : arguments.gradient == "cross-products"
                         ? kpl::NnlsGradient::from_cross_products
                         : kpl::NnlsGradient::automatic;
  return options;
}

void print_status_counts(const std::int64_t (&counts)[4]) {
  std::cout << "status: " << counts[0] << " converged, " << counts[1] << " max_iterations, "
            << counts[2] << " numerical_issue, " << counts[3] << " passive_set_full\n";
}

}  // namespace

int main(int argc, char** argv) {
  const auto arguments = split_arguments(argc, argv);

  CLI::App app{"kpl: portable performance kernels and solvers on Kokkos", "kpl"};
  app.set_version_flag("--version", std::string("kpl ") + KPL_VERSION_STRING + " (Kokkos " +
                                        KPL_KOKKOS_VERSION_STRING + ", Kokkos Kernels " +
                                        KPL_KOKKOS_KERNELS_VERSION_STRING + ")");
  app.require_subcommand(0, 1);
  app.footer("Arguments that start with --kokkos- are passed to Kokkos, e.g. " +
             kpl::compat::host_threads_argument(4) +
             " or --kokkos-device-id=1 (Kokkos' own --kokkos-help lists them).\n"
             "Exit status: 0 success, 1 bad input or runtime failure, 2 usage error.");

  auto* info_command = app.add_subcommand(
      "info",
      "Print kpl's, Kokkos' and Kokkos Kernels' versions, the enabled backends, "
      "the default execution space and its concurrency, and the GPU if there is one");

  std::string self_check_input;
  std::string self_check_output;
  auto* self_check_command = app.add_subcommand(
      "self-check",
      "Run kpl's checks on every enabled backend against the reference values in an "
      "HDF5 input (inputs/self_check.h5 in the source tree)");
  self_check_command->add_option("--input", self_check_input, "HDF5 input with the references")
      ->required();
  self_check_command->add_option("--output", self_check_output,
                                 "Also write the results to this HDF5 file");

  std::string nnls_input, nnls_output;
  SolverArguments nnls_arguments;
  auto* nnls_command = app.add_subcommand(
      "nnls",
      "Solve a batch of non-negative least-squares problems min ||A x - b|| s.t. x >= 0 "
      "(Lawson-Hanson, one team per system). Input: /A [m, n] shared or [B, m, n], /b [B, m] "
      "or [m]. Output: /x [B, n], /rnorm, /iterations, /status [B] (0 converged, "
      "1 max_iterations, 2 numerical_issue, 3 passive_set_full)");
  nnls_command->add_option("--input", nnls_input, "HDF5 file with /A and /b")
      ->required()
      ->check(CLI::ExistingFile);
  nnls_command->add_option("--output", nnls_output, "HDF5 file to write")->required();
  add_solver_options(nnls_command, nnls_arguments, "min(m, n)");
  nnls_command
      ->add_option(
          "--gradient", nnls_arguments.gradient,
          "Where the gradient A^T (b - A x) comes from after x changes: residual (A "
          "read every time) or cross-products (A^T A formed once; a shared /A only). "
          "automatic: cross-products for a shared /A (on CPUs for two or more systems) unless "
          "A^T A (n x n) would be larger than /A and 2^23 values")
      ->check(CLI::IsMember({"automatic", "residual", "cross-products"}))
      ->capture_default_str();

  std::string deconv_input, deconv_output, pulse_origin = "start";
  SolverArguments deconv_arguments;
  std::int64_t memory_budget = std::int64_t(1) << 30;
  auto* deconv_command = app.add_subcommand(
      "deconv",
      "Non-negative deconvolution of waveforms by their transmit pulse (Toeplitz NNLS per "
      "waveform). Input: /pulse [L] or [W, L], /waveforms [W, m]. Output: /x, /fit (= A x) "
      "[W, m], /rnorm, /iterations, /status [W]");
  deconv_command->add_option("--input", deconv_input, "HDF5 file with /pulse and /waveforms")
      ->required()
      ->check(CLI::ExistingFile);
  deconv_command->add_option("--output", deconv_output, "HDF5 file to write")->required();
  deconv_command
      ->add_option("--pulse-origin", pulse_origin,
                   "Sample of the pulse aligned with a return: start (causal, A[i, j] = "
                   "s[i - j]) or center (A[i, j] = s[i - j + L/2])")
      ->check(CLI::IsMember({"start", "center"}))
      ->capture_default_str();
  deconv_command
      ->add_option("--memory-budget", memory_budget,
                   "Device memory for one chunk of waveforms, in bytes (suffixes such as 512MB "
                   "or 2GiB accepted); waveforms are solved and written chunk by chunk")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  add_solver_options(deconv_command, deconv_arguments,
                     "adaptive: 64, doubled up to m for the waveforms that reach it");

  auto* gam_command = app.add_subcommand(
      "gam", "Boosted generalised additive models (mboost's gamboost with bbs learners)");
  gam_command->require_subcommand(1);
  std::string gam_input, gam_output, gam_penalty = "pspline", gam_df_definition = "trace2",
                                     gam_family = "gaussian", gam_gemv = "", gam_mode = "direct",
                                     gam_basis = "compact", gam_precision = "double";
  kpl::GamFitFileOptions gam_options;
  auto* gam_fit_command = gam_command->add_subcommand(
      "fit",
      "Fit by component-wise L2 boosting with one penalised B-spline learner per covariate. "
      "Input: /X [n, p], /y [n]. Output: /selected [mstop] (0-based covariate per iteration), "
      "/risk [mstop + 1], /offset, /coefficients [p, k], /lambda, /df [p], /boundary [p, 2], "
      "settings as attributes; with --cv also /cv_risk [K, mstop + 1]");
  gam_fit_command->add_option("--input", gam_input, "HDF5 file with /X and /y")
      ->required()
      ->check(CLI::ExistingFile);
  gam_fit_command->add_option("--output", gam_output, "Model file to write")->required();
  gam_fit_command
      ->add_option("--basis-size", gam_options.gam.basis_size,
                   "B-spline functions per covariate (k - degree - 1 interior knots)")
      ->check(CLI::Range(3, 256))
      ->capture_default_str();
  gam_fit_command->add_option("--degree", gam_options.gam.degree, "B-spline degree")
      ->check(CLI::Range(1, kpl::bspline_max_degree))
      ->capture_default_str();
  gam_fit_command
      ->add_option("--penalty", gam_penalty,
                   "pspline: difference penalty of order --differences; ridge: K = I")
      ->check(CLI::IsMember({"pspline", "ridge"}))
      ->capture_default_str();
  gam_fit_command
      ->add_option("--differences", gam_options.gam.differences,
                   "Difference order of the P-spline penalty")
      ->check(CLI::Range(1, 3))
      ->capture_default_str();
  gam_fit_command->add_option("--df", gam_options.gam.df, "Degrees of freedom of every learner")
      ->capture_default_str();
  gam_fit_command
      ->add_option("--df-definition", gam_df_definition,
                   "trace: tr(S) (Sieminski & Lee); trace2: tr(2S - S^T S) (mboost's default)")
      ->check(CLI::IsMember({"trace", "trace2"}))
      ->capture_default_str();
  gam_fit_command->add_option("--nu", gam_options.gam.nu, "Step length")->capture_default_str();
  gam_fit_command->add_option("--mstop", gam_options.gam.mstop, "Boosting iterations")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  gam_fit_command
      ->add_option("--family", gam_family,
                   "gaussian (squared error), binomial (y in {0, 1}, log-odds) or poisson (log "
                   "link)")
      ->check(CLI::IsMember({"gaussian", "binomial", "poisson"}))
      ->capture_default_str();
  gam_fit_command
      ->add_option("--cv", gam_options.cv_folds,
                   "Choose mstop in [0, --mstop] by K-fold cross-validation, then refit on all "
                   "rows")
      ->check(CLI::Range(2, 1 << 20));
  gam_fit_command->add_option("--cv-seed", gam_options.cv_seed, "Seed of the fold assignment")
      ->capture_default_str();
  gam_fit_command
      ->add_option("--mode", gam_mode,
                   "direct: B^T u from the basis every iteration; gram (gaussian): kept up to "
                   "date from cross-products, O(p k^2) an iteration")
      ->check(CLI::IsMember({"direct", "gram"}))
      ->capture_default_str();
  gam_fit_command
      ->add_option("--basis", gam_basis,
                   "compact: (first index, degree + 1 values) per row; dense: n x p k, through "
                   "kpl::gemv")
      ->check(CLI::IsMember({"compact", "dense"}))
      ->capture_default_str();
  gam_fit_command
      ->add_option("--gemv", gam_gemv,
                   "gemv strategy for the dense basis (implies --basis dense): automatic, "
                   "thread-per-row, team-per-dot, partial-rows, kokkos-kernels")
      ->check(CLI::IsMember(
          {"automatic", "thread-per-row", "team-per-dot", "partial-rows", "kokkos-kernels"}));
  gam_fit_command
      ->add_option("--gram-refresh", gam_options.gam.gram_refresh,
                   "Gram mode: recompute B^T u, f and the risk from the rows this often")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  gam_fit_command
      ->add_option("--precision", gam_precision,
                   "Precision of the basis (sums, f and the learners' matrices stay double)")
      ->check(CLI::IsMember({"double", "float"}))
      ->capture_default_str();

  std::string predict_model, predict_input, predict_output;
  bool predict_partial = false;
  auto* gam_predict_command = gam_command->add_subcommand(
      "predict",
      "Predict with a fitted model: /prediction [n] (link scale: log-odds for binomial, log "
      "mean for poisson) and, with --partial-effects, /partial_effects [n, p]; covariates "
      "outside the training range continue linearly");
  gam_predict_command->add_option("--model", predict_model, "Model file from kpl gam fit")
      ->required()
      ->check(CLI::ExistingFile);
  gam_predict_command->add_option("--input", predict_input, "HDF5 file with /X [n, p]")
      ->required()
      ->check(CLI::ExistingFile);
  gam_predict_command->add_option("--output", predict_output, "HDF5 file to write")->required();
  gam_predict_command->add_flag("--partial-effects", predict_partial,
                                "Also write each covariate's f_j(x_j)");

  auto* simulate_command =
      app.add_subcommand("simulate", "Write simulated inputs for the other commands");
  simulate_command->require_subcommand(1);
  kpl::DeconvolutionSimulation simulation;
  std::string simulate_deconv_output;
  auto* simulate_deconv_command = simulate_command->add_subcommand(
      "deconv",
      "LVIS-like waveforms for kpl deconv: per waveform a Gaussian transmit pulse 15-25 samples "
      "wide, 1-4 returns, Gaussian noise; writes /waveforms, /pulse, /x_true");
  simulate_deconv_command->add_option("--waveforms", simulation.waveforms, "Number of waveforms")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  simulate_deconv_command->add_option("--samples", simulation.samples, "Samples per waveform")
      ->check(CLI::Range(std::int64_t(50), std::int64_t(1) << 30))
      ->capture_default_str();
  simulate_deconv_command->add_option("--seed", simulation.seed, "Random seed")
      ->capture_default_str();
  simulate_deconv_command
      ->add_option("--noise", simulation.noise, "Standard deviation of the added noise")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  simulate_deconv_command->add_option("--output", simulate_deconv_output, "HDF5 file to write")
      ->required();

  kpl::GamSimulation gam_simulation;
  std::string simulate_gam_output;
  auto* simulate_gam_command = simulate_command->add_subcommand(
      "gam",
      "Sieminski & Lee's simulation for kpl gam fit: x_j ~ U(0, 1), a random set of informative "
      "covariates adds 10 sin(2 pi x_j) each, intercept 7, Gaussian noise; writes /X, /y, "
      "/informative");
  simulate_gam_command->add_option("--n", gam_simulation.observations, "Observations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  simulate_gam_command->add_option("--p", gam_simulation.covariates, "Covariates")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  simulate_gam_command
      ->add_option("--informative", gam_simulation.informative,
                   "Covariates with an effect (at most --p)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  simulate_gam_command->add_option("--seed", gam_simulation.seed, "Random seed")
      ->capture_default_str();
  simulate_gam_command
      ->add_option("--noise-variance", gam_simulation.noise_variance, "Variance of the noise")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  simulate_gam_command->add_option("--output", simulate_gam_output, "HDF5 file to write")
      ->required();

  try {
    // CLI11 wants the arguments without the program name, in reverse order.
    std::vector<std::string> reversed(arguments.kpl.rbegin(), arguments.kpl.rend());
    app.parse(reversed);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);  // prints help, version or the error
    return status == 0 ? exit_success : exit_usage;
  }
  if (app.get_subcommands().empty()) {
    std::cerr
        << "kpl: a command is required (info, self-check, nnls, deconv, gam, simulate); see kpl "
           "--help\n";
    return exit_usage;
  }

  try {
    KokkosSession kokkos(arguments.kokkos);
    if (info_command->parsed()) {
      std::cout << kpl::format_info(kpl::collect_info());
      return exit_success;
    }
    if (self_check_command->parsed()) {
      const auto results = kpl::run_self_check(self_check_input);
      if (!self_check_output.empty()) {
        kpl::write_self_check_report(results, self_check_input, self_check_output);
      }
      return print_self_check(results);
    }
    if (nnls_command->parsed()) {
      kpl::NnlsFileOptions options;
      options.nnls = solver_options(nnls_arguments);
      options.single_precision = nnls_arguments.precision == "float";
      const auto summary = kpl::solve_nnls_file(nnls_input, nnls_output, options);
      std::cout << "kpl nnls: " << summary.systems << " systems of " << summary.rows << " x "
                << summary.columns << " solved in " << summary.seconds << " s on "
                << Kokkos::DefaultExecutionSpace::name() << "; wrote " << nnls_output << "\n";
      print_status_counts(summary.status_counts);
      return exit_success;
    }
    if (deconv_command->parsed()) {
      kpl::DeconvolutionFileOptions options;
      options.deconvolution.nnls = solver_options(deconv_arguments);
      options.deconvolution.origin =
          pulse_origin == "center" ? kpl::PulseOrigin::center : kpl::PulseOrigin::start;
      options.single_precision = deconv_arguments.precision == "float";
      options.memory_budget_bytes = memory_budget;
      const auto summary = kpl::deconvolve_file(deconv_input, deconv_output, options);
      std::cout << "kpl deconv: " << summary.waveforms << " waveforms in " << summary.chunks
                << " chunk(s) of up to " << summary.waveforms_per_chunk << " in " << summary.seconds
                << " s on " << Kokkos::DefaultExecutionSpace::name() << " ("
                << summary.waveforms / std::max(summary.seconds, 1e-9)
                << " waveforms/s, file I/O included); wrote " << deconv_output << "\n";
      print_status_counts(summary.status_counts);
      return exit_success;
    }
    if (gam_fit_command->parsed()) {
      auto& gam = gam_options.gam;
      if (gam_penalty == "ridge") gam.differences = 0;
      gam.df_definition =
          gam_df_definition == "trace" ? kpl::DfDefinition::trace : kpl::DfDefinition::trace_2s_sts;
      gam.family = gam_family == "binomial"  ? kpl::GamFamily::binomial
                   : gam_family == "poisson" ? kpl::GamFamily::poisson
                                             : kpl::GamFamily::gaussian;
      gam.mode = gam_mode == "gram" ? kpl::GamMode::gram : kpl::GamMode::direct;
      gam.basis =
          gam_basis == "dense" || !gam_gemv.empty() ? kpl::GamBasis::dense : kpl::GamBasis::compact;
      if (!gam_gemv.empty()) gam.gemv.strategy = kpl::gemv_strategy_from_string(gam_gemv);
      gam_options.single_precision = gam_precision == "float";
      // A progress line on a terminal only (stderr, rewritten in place).
      const bool terminal = isatty(fileno(stderr)) != 0;
      if (terminal) {
        const int total = gam.mstop;
        gam_options.progress.report = [total](int iteration, double risk) {
          std::cerr << "\rkpl gam fit: iteration " << iteration << "/" << total << ", risk " << risk
                    << "   " << std::flush;
        };
      }
      const auto summary = kpl::fit_gam_file(gam_input, gam_output, gam_options);
      if (terminal) std::cerr << "\n";
      std::cout << "kpl gam fit: " << summary.observations << " observations, "
                << summary.covariates << " covariates, mstop " << summary.mstop;
      if (gam_options.cv_folds > 0)
        std::cout << " (chosen by " << gam_options.cv_folds << "-fold cross-validation in "
                  << summary.cv_seconds << " s)";
      std::cout << " on " << Kokkos::DefaultExecutionSpace::name() << ": basis "
                << summary.timings.basis_seconds << " s, lambda search "
                << summary.timings.penalty_seconds << " s, boosting "
                << summary.timings.boosting_seconds << " s; final risk " << summary.final_risk
                << "; wrote " << gam_output << "\n";
      return exit_success;
    }
    if (gam_predict_command->parsed()) {
      const auto rows =
          kpl::predict_gam_file(predict_model, predict_input, predict_output, predict_partial);
      std::cout << "kpl gam predict: " << rows << " predictions; wrote " << predict_output << "\n";
      return exit_success;
    }
    if (simulate_gam_command->parsed()) {
      if (gam_simulation.informative > gam_simulation.covariates)
        throw kpl::input_error("--informative " + std::to_string(gam_simulation.informative) +
                               " exceeds --p " + std::to_string(gam_simulation.covariates));
      kpl::simulate_gam_file(gam_simulation, simulate_gam_output);
      std::cout << "kpl simulate gam: wrote " << gam_simulation.observations << " x "
                << gam_simulation.covariates << " covariates to " << simulate_gam_output << "\n";
      return exit_success;
    }
    if (simulate_deconv_command->parsed()) {
      kpl::simulate_deconvolution_file(simulation, simulate_deconv_output);
      std::cout << "kpl simulate deconv: wrote " << simulation.waveforms << " waveforms of "
                << simulation.samples << " samples to " << simulate_deconv_output << "\n";
      return exit_success;
    }
  } catch (const kpl::input_error& error) {
    std::cerr << "kpl: bad input: " << error.what() << "\n";
    return exit_failure;
  } catch (const std::exception& error) {
    std::cerr << "kpl: error: " << error.what() << "\n";
    return exit_failure;
  }
  return exit_usage;
}
