// The kpl command line. Exit status: 0 on success, 2 on a usage error (CLI11
// parse errors), 1 on bad input or a runtime failure; messages go to stderr.
#include <kpl/config.hpp>
#include <kpl/deconvolution.hpp>
#include <kpl/detail/kokkos_compat.hpp>
#include <kpl/error.hpp>
#include <kpl/info.hpp>
#include <kpl/nnls_file.hpp>
#include <kpl/self_check.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

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

  try {
    // CLI11 wants the arguments without the program name, in reverse order.
    std::vector<std::string> reversed(arguments.kpl.rbegin(), arguments.kpl.rend());
    app.parse(reversed);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);  // prints help, version or the error
    return status == 0 ? exit_success : exit_usage;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "kpl: a command is required (info, self-check, nnls, deconv, simulate); see kpl "
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
