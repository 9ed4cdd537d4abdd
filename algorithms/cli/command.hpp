// The pieces of the `kpl` command line. main.cpp parses and dispatches; each
// subcommand lives in its own <name>_command.cpp and registers itself through
// one of the functions below.
#pragma once

#include "json_report.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kpl::cli {

// Exit statuses, as --help and the README document them.
enum ExitStatus : int {
  exit_success = 0,        // done
  exit_usage = 1,          // the command line is wrong (unknown option, value out of range)
  exit_bad_input = 2,      // an input file cannot be used (missing, malformed, non-finite, ...)
  exit_not_converged = 3,  // with --strict: a system did not converge
  exit_failure = 4,        // the machine could not do it: memory, disk, I/O, device
};

// "Exit status: 0 ... 4 ...; 128 + n after signal n." for --help.
std::string exit_status_legend();

// A subcommand, registered before parsing and run if it was parsed. `run`
// returns an ExitStatus (kpl's exceptions propagate) and puts what its
// summary says into `summary`, which main() prints on stdout with --json
// (from the process that prints the summaries). A failure it reports itself
// (not by an exception) sets "error" to the line it wrote on stderr.
struct Command {
  CLI::App* app = nullptr;
  std::function<int(JsonObject& summary)> run;
};

Command add_info_command(CLI::App& root);
Command add_self_check_command(CLI::App& root);
Command add_nnls_command(CLI::App& root);
Command add_deconv_command(CLI::App& root);
Command add_gam_fit_command(CLI::App& gam);
Command add_gam_predict_command(CLI::App& gam);
Command add_simulate_deconv_command(CLI::App& simulate);
Command add_simulate_gam_command(CLI::App& simulate);

}  // namespace kpl::cli
