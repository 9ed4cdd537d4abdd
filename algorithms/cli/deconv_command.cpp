// `kpl deconv`: non-negative deconvolution of waveforms, streamed in chunks.
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/deconvolution.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct DeconvArguments {
  std::string input, output, pulse_origin = "start";
  std::int64_t memory_budget = std::int64_t(1) << 30;
  SolverArguments solver;
};

// The exit status on every process; the summary from rank 0 alone.
int report(const DeconvArguments& arguments, const DeconvolutionSummary& summary,
           JsonObject& json) {
  if (!prints_summary())
    return arguments.solver.strict && summary.status_counts[0] != summary.waveforms
               ? exit_not_converged
               : exit_success;
  // --json: one line per field of DeconvolutionSummary.
  json.set("input", arguments.input)
      .set("output", arguments.output)
      .set("precision", arguments.solver.precision)
      .set("waveforms", summary.waveforms)
      .set("chunks", summary.chunks)
      .set("waveforms_per_chunk", summary.waveforms_per_chunk)
      .set("waveforms_per_second", per_second(summary.waveforms, summary.seconds));
  json.object("seconds").set("deconvolution", summary.seconds);
  report_balance(json, summary.balance, "waveforms");
  std::cerr << "kpl deconv: " << summary.waveforms << " waveforms in " << summary.chunks
            << " chunk(s) of up to " << summary.waveforms_per_chunk << " in " << summary.seconds
            << " s on " << Kokkos::DefaultExecutionSpace::name() << " ("
            << summary.waveforms / std::max(summary.seconds, 1e-9)
            << " waveforms/s, file I/O included); wrote " << arguments.output << "\n";
  if (summary.balance.ranks > 1)
    std::cerr << "kpl deconv: " << describe(summary.balance, "waveforms") << "\n";
  return report_statuses("deconv", summary.waveforms, "waveforms", summary.status_counts,
                         arguments.solver.strict, json);
}

// The options the arguments give (std::invalid_argument for wrong ones).
DeconvolutionFileOptions deconv_options(const DeconvArguments& arguments) {
  DeconvolutionFileOptions options;
  options.deconvolution.nnls = solver_options(arguments.solver);
  options.deconvolution.origin = pulse_origins(arguments.pulse_origin);
  options.single_precision = precisions(arguments.solver.precision) == Precision::single_precision;
  options.memory_budget_bytes = arguments.memory_budget;
  options.row_writes = row_writes(arguments.solver);
  return options;
}

int run_deconv(const DeconvArguments& arguments, JsonObject& json) {
  // Agreed: wrong options end every process alike, with one message.
  const auto options = agreed(processes(), [&] { return deconv_options(arguments); });
  // Rank 0 alone: a partial file of the run is named after its process.
  if (prints_summary()) clean_stale_partials(arguments.output);
  return report(arguments,
                deconvolve_file(processes(), arguments.input, arguments.output, options), json);
}

}  // namespace

Command add_deconv_command(CLI::App& root) {
  auto arguments = std::make_shared<DeconvArguments>();
  auto* app = root.add_subcommand(
      "deconv",
      "Non-negative deconvolution of waveforms by their transmit pulse (Toeplitz NNLS per "
      "waveform). Input: /pulse [L] or [W, L], /waveforms [W, m]. Output: /x, /fit (= A x) "
      "[W, m], /rnorm, /iterations, /status (" +
          nnls_status_legend() +
          "), /kkt_residual [W]. Tolerances are relative: results do not depend on the units of "
          "the pulse and the waveforms");
  app->add_option("--input", arguments->input, "HDF5 file with /pulse and /waveforms")
      ->check(non_empty_path)
      ->required();
  app->add_option("--output", arguments->output, "HDF5 file to write")
      ->check(non_empty_path)
      ->required();
  pulse_origins.add(app, "--pulse-origin", arguments->pulse_origin,
                    "Sample of the pulse aligned with a return: start (causal, A[i, j] = "
                    "s[i - j]) or center (A[i, j] = s[i - j + L/2])");
  app->add_option("--memory-budget", arguments->memory_budget,
                  "Device memory for one chunk of waveforms, in bytes (suffixes such as 512MB or "
                  "2GiB accepted; at most the device's free memory); waveforms are solved and "
                  "written chunk by chunk")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 50))
      ->capture_default_str();
  add_solver_options(app, arguments->solver,
                     "adaptive: 64, doubled up to m for the waveforms that reach it");
  return {app, [arguments](JsonObject& json) { return run_deconv(*arguments, json); }};
}

}  // namespace kpl::cli
