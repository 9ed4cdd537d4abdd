// The kpl command line. Exit status: 0 on success, 2 on a usage error (CLI11
// parse errors), 1 on bad input or a runtime failure; messages go to stderr.
#include <kpl/config.hpp>
#include <kpl/detail/kokkos_compat.hpp>
#include <kpl/error.hpp>
#include <kpl/info.hpp>
#include <kpl/self_check.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <cstdio>
#include <exception>
#include <iomanip>
#include <iostream>
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

  try {
    // CLI11 wants the arguments without the program name, in reverse order.
    std::vector<std::string> reversed(arguments.kpl.rbegin(), arguments.kpl.rend());
    app.parse(reversed);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);  // prints help, version or the error
    return status == 0 ? exit_success : exit_usage;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "kpl: a command is required (info, self-check); see kpl --help\n";
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
  } catch (const kpl::input_error& error) {
    std::cerr << "kpl: bad input: " << error.what() << "\n";
    return exit_failure;
  } catch (const std::exception& error) {
    std::cerr << "kpl: error: " << error.what() << "\n";
    return exit_failure;
  }
  return exit_usage;
}
