// The kpl command line: registers the subcommands (one file each,
// <name>_command.cpp), parses, and runs the one given. Exit statuses:
// command.hpp. With --json, every outcome also ends in one JSON document on
// stdout (json_report.hpp), and nothing else is written there.
#include "command.hpp"
#include "interrupts.hpp"
#include "kokkos_session.hpp"
#include "process_session.hpp"

#include <kpl/config.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <new>
#include <string>
#include <vector>

namespace {

using namespace kpl::cli;

// The message of an error, printed by rank 0 when every rank failed alike,
// else by the rank that failed alone (which then ends all: abort()).
void report(const ProcessSession& session, const std::string& message) {
  if (session.is_root() || !kpl::impl::last_failure_agreed()) std::cerr << message << "\n";
}

// Runs `work`, turning kpl's exceptions into a message (also left in
// `message`) and an exit status.
template <class Work>
int statused(const ProcessSession& session, std::string& message, Work&& work) {
  try {
    return work();
  } catch (const std::invalid_argument& error) {  // usage_error and impossible options
    message = std::string("kpl: ") + error.what();
    report(session, message);
    return exit_usage;
  } catch (const kpl::input_error& error) {
    message = std::string("kpl: bad input: ") + error.what();
    report(session, message);
    return exit_bad_input;
  } catch (const kpl::resource_error& error) {
    message = std::string("kpl: ") + error.what();
    report(session, message);
    return exit_failure;
  } catch (const std::bad_alloc&) {
    message = "kpl: out of memory";
    report(session, message);
    return exit_failure;
  } catch (const std::exception& error) {
    message = std::string("kpl: error: ") + error.what();
    report(session, message);
    return exit_failure;
  }
}

// --json: `summary` completed with the exit status and the error line (one
// that the command set itself stays), on stdout from rank 0 alone.
void print_json(const ProcessSession& session, JsonObject& summary, int status,
                const std::string& error) {
  if (!session.is_root()) return;
  summary.set("exit_status", status);
  if (!error.empty()) summary.set("error", error);
  std::cout << summary.str() << std::endl;
}

// statused(), and on several processes an error of one rank alone ends
// every rank (the others may be waiting for it in a collective call). With
// --json (`json` not null) what `work` writes on stdout goes to stderr, and
// the summary follows on stdout, with the seconds `work` took.
template <class Work>
int guarded(const ProcessSession& session, JsonObject* json, Work&& work) {
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  int status = exit_success;
  {
    const StdoutToStderr quiet(json != nullptr);
    status = statused(session, error, std::forward<Work>(work));
  }
  if (json != nullptr) {
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    json->object("seconds").set("total", seconds.count());
    print_json(session, *json, status, error);
  }
  if (status != exit_success && !session.group().is_single() &&
      !kpl::impl::last_failure_agreed())
    session.abort(status);
  return status;
}

void describe_root(CLI::App& app) {
  app.set_version_flag("--version", std::string("kpl ") + KPL_VERSION_STRING + " (Kokkos " +
                                        KPL_KOKKOS_VERSION_STRING + ", Kokkos Kernels " +
                                        KPL_KOKKOS_KERNELS_VERSION_STRING + ")");
  app.require_subcommand(0, 1);
  app.footer("Arguments that start with --kokkos- go to Kokkos, e.g. " +
             kpl::compat::host_threads_argument(4) +
             " or --kokkos-device-id=1; kpl --kokkos-help lists Kokkos' own. Unless "
             "OMP_PROC_BIND is set, OpenMP threads are left unbound (OMP_PROC_BIND=false); "
             "for one kpl per machine OMP_PROC_BIND=spread OMP_PLACES=threads is faster.\n" +
             exit_status_legend());
}

// "gam frob": CLI11 says only that a subcommand is required; name the word
// it did not know and the ones it would have. Empty if there is none.
const CLI::App* find_child(const CLI::App& parent, const std::string& name) {
  for (const auto* child : parent.get_subcommands([](const CLI::App*) { return true; }))
    if (child->check_name(name)) return child;
  return nullptr;
}

std::string unknown_subcommand(const CLI::App& app, const std::vector<std::string>& arguments) {
  for (std::size_t a = 0; a + 1 < arguments.size(); ++a) {
    const auto* parent = find_child(app, arguments[a]);
    if (parent == nullptr) continue;
    const auto children = parent->get_subcommands([](const CLI::App*) { return true; });
    const std::string& word = arguments[a + 1];
    if (children.empty() || word.rfind("-", 0) == 0 || find_child(*parent, word) != nullptr)
      continue;
    std::string known;
    for (const auto* child : children) known += (known.empty() ? "" : ", ") + child->get_name();
    return "unknown " + arguments[a] + " command '" + word + "' (" + known + ")";
  }
  return {};
}

// "gam fit": the words of a command's name below the root.
std::string command_name(const CLI::App& command) {
  std::string name;
  for (const CLI::App* app = &command; app->get_parent() != nullptr; app = app->get_parent())
    name = app->get_name() + (name.empty() ? "" : " ") + name;
  return name;
}

// The command the arguments name, as far as they name one: "gam fit" for
// "gam fit --bogus", "gam" for "gam frob", empty for "frobnicate".
std::string named_command(const CLI::App& app, const std::vector<std::string>& arguments) {
  const CLI::App* named = &app;
  for (const auto& argument : arguments)
    if (const auto* child = find_child(*named, argument)) named = child;
  return command_name(*named);
}

// Whether the arguments ask for --json (or --json=true), before (or without)
// a parse.
bool asks_for_json(const std::vector<std::string>& arguments) {
  return std::any_of(arguments.begin(), arguments.end(), [](const std::string& argument) {
    if (argument == "--json") return true;
    if (argument.rfind("--json=", 0) != 0) return false;
    const std::string value = argument.substr(7);
    return value != "false" && value != "0" && value != "off" && value != "no";
  });
}

// The summary's first members: the command (null when the arguments name
// none) and, until the run ends, a null exit status.
void start_summary(JsonObject& summary, const std::string& command) {
  if (command.empty())
    summary.set_null("command");
  else
    summary.set("command", command);
  summary.set_null("exit_status");
}

// Parses; a usage error or --help/--version ends the run here (returns >= 0,
// with the error line in `error`). Help and the version go to `out`.
int parse(CLI::App& app, const std::vector<std::string>& arguments, std::ostream& out,
          std::string& error) {
  try {
    app.parse(std::vector<std::string>(arguments.rbegin(), arguments.rend()));
  } catch (const CLI::CallForHelp& request) {
    return app.exit(request, out);
  } catch (const CLI::CallForAllHelp& request) {
    return app.exit(request, out);
  } catch (const CLI::CallForVersion& request) {
    return app.exit(request, out);
  } catch (const CLI::ParseError& parse_error) {
    const std::string unknown = unknown_subcommand(app, arguments);
    error = "kpl: " + (unknown.empty() ? std::string(parse_error.what()) : unknown) +
            " (see kpl --help)";
    std::cerr << error << "\n";
    return exit_usage;
  }
  if (app.get_subcommands().empty()) {
    error = "kpl: a command is required (info, self-check, nnls, deconv, gam, simulate); "
            "see kpl --help";
    std::cerr << error << "\n";
    return exit_usage;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  kpl::hdf5::leave_files_to_the_system_at_exit();
  const ProcessSession session(argc, argv);  // MPI (under a launcher) before Kokkos
  set_current_session(&session);
  install_interrupt_handlers();
  set_environment_defaults();
  const auto arguments = split_arguments(argc, argv);

  CLI::App app{"kpl: portable performance kernels and solvers on Kokkos", "kpl"};
  describe_root(app);
  std::vector<Command> commands{add_info_command(app), add_self_check_command(app),
                                add_nnls_command(app), add_deconv_command(app)};
  auto* gam = app.add_subcommand(
      "gam", "Boosted generalised additive models (mboost's gamboost with bbs learners)");
  gam->require_subcommand(1);
  commands.push_back(add_gam_fit_command(*gam));
  commands.push_back(add_gam_predict_command(*gam));
  auto* simulate = app.add_subcommand("simulate", "Write simulated inputs for the other commands");
  simulate->require_subcommand(1);
  commands.push_back(add_simulate_deconv_command(*simulate));
  commands.push_back(add_simulate_gam_command(*simulate));
  bool json = false;
  for (const auto& command : commands)
    command.app->add_flag("--json", json,
                          "Also print a summary of the run on stdout as one JSON object (one "
                          "line: the command, its exit status, \"error\" when it failed, and "
                          "what the summary on stderr says); nothing else goes to stdout");

  JsonObject summary;
  // --json among the arguments: the outcome of a run that ends before they
  // are parsed (or cannot be) is printed as JSON too.
  const bool json_asked = asks_for_json(arguments.kpl);
  // Kokkos' own help, on stdout (stderr with --json), with or without a command.
  if (arguments.kokkos_help) {
    start_summary(summary, named_command(app, arguments.kpl));
    return guarded(session, json_asked ? &summary : nullptr, [&] {
      KokkosSession kokkos(checked_kokkos_arguments(arguments.kokkos), /*quiet_stdout=*/false);
      return int(exit_success);
    });
  }
  {
    // Every rank parses alike; rank 0 alone says what is wrong.
    std::streambuf* const saved = std::cerr.rdbuf();
    if (!session.is_root()) std::cerr.rdbuf(nullptr);
    std::string error;
    const int status = parse(app, arguments.kpl, json_asked ? std::cerr : std::cout, error);
    std::cerr.rdbuf(saved);
    std::cerr.clear();
    if (status >= 0) {
      if (json_asked) {
        start_summary(summary, named_command(app, arguments.kpl));
        print_json(session, summary, status, error);
      }
      return status;
    }
  }
  const Command* const chosen = [&]() -> const Command* {
    for (const auto& command : commands)
      if (command.app->parsed()) return &command;
    return nullptr;
  }();
  start_summary(summary, chosen != nullptr ? command_name(*chosen->app) : std::string());
  return guarded(session, json ? &summary : nullptr, [&] {
    const auto kokkos_arguments =
        session.for_this_rank(checked_kokkos_arguments(arguments.kokkos));
    KokkosSession kokkos(kokkos_arguments);
    summary.set("execution_space", Kokkos::DefaultExecutionSpace::name())
        .set("processes", session.group().size());
    if (chosen != nullptr) return chosen->run(summary);
    return int(exit_usage);
  });
}
