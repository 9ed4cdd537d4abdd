// `kpl deconv`: non-negative deconvolution of waveforms, streamed in chunks.
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/deconvolution.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>

namespace kpl::cli {
namespace {

struct DeconvArguments {
  std::string input, output, pulse_origin = "start", datasets, compression = "deflate";
  std::int64_t memory_budget = std::int64_t(1) << 30;
  double return_threshold = ReturnsOptions{}.threshold;
  bool resume = false;
  bool compression_given = false;
  SolverArguments solver;
};

// "kpl deconv: 120000 of 1000000 shots (12.0%), 98500 shots/s, 9 s left",
// rewritten in place on a terminal.
class ProgressLine {
 public:
  void operator()(std::int64_t done, std::int64_t total) {
    const double seconds = timer_.seconds();
    const double rate = done / std::max(seconds, 1e-9);
    char line[160];
    std::snprintf(line, sizeof line,
                  "\rkpl deconv: %lld of %lld shots (%.1f%%), %.0f shots/s, %.0f s left\033[K",
                  static_cast<long long>(done), static_cast<long long>(total),
                  100.0 * double(done) / double(std::max<std::int64_t>(total, 1)), rate,
                  double(total - done) / std::max(rate, 1e-9));
    std::cerr << line << std::flush;
    shown_ = true;
  }
  void clear() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  Kokkos::Timer timer_;
  bool shown_ = false;
};

// The exit status on every process; the summary from rank 0 alone.
int report(const DeconvArguments& arguments, const DeconvolutionSummary& summary,
           JsonObject& json) {
  if (!prints_summary())
    return arguments.solver.strict && summary.status_counts[0] != summary.waveforms
               ? exit_not_converged
               : exit_success;
  // This run's own waveforms (a resumed run took the others over).
  const std::int64_t solved = summary.waveforms - summary.resumed_waveforms;
  // --json: one line per field of DeconvolutionSummary.
  json.set("input", arguments.input)
      .set("output", arguments.output)
      .set("layout", summary.layout)
      .set("precision", arguments.solver.precision)
      .set("waveforms", summary.waveforms)
      .set("resumed_waveforms", summary.resumed_waveforms)
      .set("returns", summary.returns)
      .set("chunks", summary.chunks)
      .set("waveforms_per_chunk", summary.waveforms_per_chunk)
      .set("waveforms_per_second", per_second(solved, summary.seconds))
      .set("solver_waveforms_per_second", per_second(solved, summary.phases.solver));
  // The chunks' phases overlap on one process: they add up to more than
  // "deconvolution", the wall time of the chunks.
  json.object("seconds")
      .set("deconvolution", summary.seconds)
      .set("setup", summary.phases.setup)
      .set("read", summary.phases.read)
      .set("solve", summary.phases.solve)
      .set("solver", summary.phases.solver)
      .set("write", summary.phases.write)
      .set("finish", summary.phases.finish);
  report_balance(json, summary.balance, "waveforms");
  std::cerr << "kpl deconv: " << solved << " waveforms in " << summary.chunks
            << " chunk(s) of up to " << summary.waveforms_per_chunk << " in " << summary.seconds
            << " s on " << Kokkos::DefaultExecutionSpace::name() << " ("
            << solved / std::max(summary.seconds, 1e-9)
            << " waveforms/s, file I/O included; the solver alone "
            << solved / std::max(summary.phases.solver, 1e-9) << " waveforms/s); "
            << summary.returns << " returns; wrote " << arguments.output << "\n";
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
  if (!arguments.datasets.empty())
    options.datasets = parse_waveform_dataset_names(arguments.datasets);
  options.returns.threshold = arguments.return_threshold;
  // Under mpiexec the default is no compression (parallel HDF5 1.10 writes
  // compressed data only collectively); asked for, it is refused there.
  options.deflate_level = arguments.compression == "none" ? 0
                          : arguments.compression_given ? default_deflate_level
                                                        : -1;
  options.resume = arguments.resume;
  return options;
}

int run_deconv(const DeconvArguments& arguments, JsonObject& json) {
  // Agreed: wrong options end every process alike, with one message.
  auto options = agreed(processes(), [&] { return deconv_options(arguments); });
  // Rank 0 alone: a partial file of the run is named after its process.
  // With --resume the run itself chooses the partial file it goes on from.
  if (prints_summary() && !arguments.resume) clean_stale_partials(arguments.output);
  ProgressLine progress;
  if (processes().is_single() && ::isatty(STDERR_FILENO)) options.progress = std::ref(progress);
  options.note = [&progress](const std::string& note) {
    progress.clear();
    std::cerr << "kpl deconv: " << note << "\n";
  };
  try {
    const auto summary = deconvolve_file(processes(), arguments.input, arguments.output, options);
    progress.clear();
    if (prints_summary() && summary.resumed_waveforms > 0)
      std::cerr << "kpl deconv: resumed an interrupted run: " << summary.resumed_waveforms
                << " waveforms were already written\n";
    return report(arguments, summary, json);
  } catch (...) {
    progress.clear();
    throw;
  }
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
  app->add_option("--input", arguments->input,
                  "HDF5 file: kpl's layout (/pulse, /waveforms), LVIS Level-1B (/RXWAVE, "
                  "/TXWAVE, /SIGMEAN; Z0 and Z<last> for elevations), or any other with --dataset")
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
  app->add_option("--dataset", arguments->datasets,
                  "Datasets of another layout, or other names in these: "
                  "waveforms=NAME,pulse=NAME,noise=NAME (noise: [W] or [1], subtracted from the "
                  "waveforms; pulses of other layouts are used as given)");
  app->add_option("--return-threshold", arguments->return_threshold,
                  "A run of x > 0 is a return when its energy exceeds this many times the "
                  "energy noise alone gives one return, (rnorm / sqrt(m)) / ||pulse||")
      ->check(finite_number)
      ->check(CLI::Range(0.0, 1e300))
      ->capture_default_str();
  app->add_option("--compression", arguments->compression,
                  "Outputs are stored in chunks along the shot axis, deflated (with HDF5's "
                  "shuffle; level " +
                      std::to_string(default_deflate_level) +
                      ") or not; under mpiexec the default is none")
      ->check(CLI::IsMember({"none", "deflate"}))
      ->capture_default_str()
      ->each([arguments](const std::string&) { arguments->compression_given = true; });
  app->add_flag("--resume", arguments->resume,
                "Go on from the last complete chunk of an interrupted run of the same input "
                "and options: kpl deconv (and only it) keeps its partial output, "
                "'OUTPUT.partial-PID' (never under OUTPUT's name), when a signal or a crash "
                "interrupts it, and says so on stderr; a run without --resume removes it. One "
                "process only");
  add_solver_options(app, arguments->solver,
                     "adaptive: 64, doubled up to m for the waveforms that reach it");
  return {app, [arguments](JsonObject& json) { return run_deconv(*arguments, json); }};
}

}  // namespace kpl::cli
