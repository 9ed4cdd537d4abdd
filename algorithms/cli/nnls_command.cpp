// `kpl nnls`: a batch of NNLS problems from an HDF5 file.
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/nnls_file.hpp>

#include <Kokkos_Core.hpp>

#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct NnlsArguments {
  std::string input, output;
  SolverArguments solver;
};

// The exit status on every process; the summary (on stderr, and into
// `json`) from rank 0 alone.
int report(const NnlsArguments& arguments, const NnlsFileSummary& summary, JsonObject& json) {
  if (!prints_summary())
    return arguments.solver.strict && summary.status_counts[0] != summary.systems
               ? exit_not_converged
               : exit_success;
  json.set("input", arguments.input)
      .set("output", arguments.output)
      .set("precision", arguments.solver.precision)
      .set("systems", summary.systems)
      .set("rows", summary.rows)
      .set("columns", summary.columns)
      .set("systems_per_second", per_second(summary.systems, summary.seconds));
  json.object("seconds").set("solve", summary.seconds);
  report_balance(json, summary.balance, "systems");
  std::cerr << "kpl nnls: " << summary.systems << " systems of " << summary.rows << " x "
            << summary.columns << " solved in " << summary.seconds << " s on "
            << Kokkos::DefaultExecutionSpace::name() << "; wrote " << arguments.output << "\n";
  if (summary.balance.ranks > 1)
    std::cerr << "kpl nnls: " << describe(summary.balance, "systems") << "\n";
  return report_statuses("nnls", summary.systems, "systems", summary.status_counts,
                         arguments.solver.strict, json);
}

// The options the arguments give (std::invalid_argument for wrong ones).
NnlsFileOptions nnls_options(const NnlsArguments& arguments) {
  NnlsFileOptions options;
  options.nnls = solver_options(arguments.solver);
  options.single_precision = precisions(arguments.solver.precision) == Precision::single_precision;
  options.row_writes = row_writes(arguments.solver);
  return options;
}

int run_nnls(const NnlsArguments& arguments, JsonObject& json) {
  // Agreed: wrong options end every process alike, with one message.
  const auto options = agreed(processes(), [&] { return nnls_options(arguments); });
  // Rank 0 alone: a partial file of the run is named after its process.
  if (prints_summary()) clean_stale_partials(arguments.output);
  return report(arguments,
                solve_nnls_file(processes(), arguments.input, arguments.output, options), json);
}

}  // namespace

Command add_nnls_command(CLI::App& root) {
  auto arguments = std::make_shared<NnlsArguments>();
  auto* app = root.add_subcommand(
      "nnls",
      "Solve a batch of non-negative least-squares problems min ||A x - b|| s.t. x >= 0 "
      "(Lawson-Hanson, one team per system). Input: /A [m, n] shared or [B, m, n], /b [B, m] or "
      "[m]. Output: /x [B, n], /rnorm, /iterations, /status [B] (" +
          nnls_status_legend() +
          "), /kkt_residual [B]. Every tolerance is relative to the data: results do not depend "
          "on the units of A and b");
  app->add_option("--input", arguments->input, "HDF5 file with /A and /b")
      ->check(non_empty_path)
      ->required();
  app->add_option("--output", arguments->output, "HDF5 file to write")
      ->check(non_empty_path)
      ->required();
  add_solver_options(app, arguments->solver, "min(m, n)");
  gradients.add(app, "--gradient", arguments->solver.gradient,
                "Where the gradient A^T (b - A x) comes from after x changes: residual (A read "
                "every time) or cross-products (A^T A formed once; a shared /A only). automatic: "
                "cross-products for a shared /A (on CPUs for two or more systems) unless A^T A "
                "(n x n) would be larger than /A and 2^23 values");
  return {app, [arguments](JsonObject& json) { return run_nnls(*arguments, json); }};
}

}  // namespace kpl::cli
