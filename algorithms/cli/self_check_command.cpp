// `kpl self-check`: kpl's kernels on every backend against stored references.
#include "command.hpp"
#include "options.hpp"

#include <kpl/hdf5_io.hpp>
#include <kpl/self_check.hpp>

#include <iomanip>
#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct SelfCheckArguments {
  std::string input, output;
};

int print_self_check(const std::vector<SelfCheckResult>& results, JsonObject& json) {
  int failures = 0;
  std::cout << "self-check (" << results.size() << " checks)\n";
  for (const auto& result : results) {
    json.append_object("checks")
        .set("backend", result.backend)
        .set("check", result.check)
        .set("value", result.value)
        .set("reference", result.reference)
        .set("relative_error", result.relative_error)
        .set("tolerance", result.tolerance)
        .set("passed", result.passed());
    std::cout << "  " << (result.passed() ? "ok    " : "FAILED") << " " << std::left << std::setw(8)
              << result.backend << std::setw(36) << result.check << std::right << " relative error "
              << std::scientific << std::setprecision(2) << result.relative_error << " (tolerance "
              << result.tolerance << ")\n";
    if (!result.passed()) ++failures;
  }
  std::cout << std::defaultfloat;
  json.set("passed", std::int64_t(results.size()) - failures).set("failed", failures);
  if (failures > 0) {
    const std::string error = "kpl: self-check: " + std::to_string(failures) + " of " +
                              std::to_string(results.size()) + " checks failed";
    std::cerr << error << "\n";
    json.set("error", error);
    return exit_failure;
  }
  std::cout << "self-check passed on every enabled backend\n";
  return exit_success;
}

}  // namespace

Command add_self_check_command(CLI::App& root) {
  auto arguments = std::make_shared<SelfCheckArguments>();
  auto* app = root.add_subcommand(
      "self-check",
      "Run kpl's checks on every enabled backend against the reference values in an HDF5 input "
      "(inputs/self_check.h5 in the source tree)");
  app->add_option("--input", arguments->input, "HDF5 input with the references")
      ->check(non_empty_path)
      ->required();
  app->add_option("--output", arguments->output, "Also write the results to this HDF5 file")
      ->check(non_empty_path);
  return {app, [arguments](JsonObject& json) {
            json.set("input", arguments->input);
            if (arguments->output.empty())
              json.set_null("output");
            else
              json.set("output", arguments->output);
            if (!arguments->output.empty()) {
              hdf5::require_distinct(arguments->output, {arguments->input});
              hdf5::require_writable_target(arguments->output);
              clean_stale_partials(arguments->output);
            }
            const auto results = run_self_check(arguments->input);
            if (!arguments->output.empty())
              write_self_check_report(results, arguments->input, arguments->output);
            return print_self_check(results, json);
          }};
}

}  // namespace kpl::cli
