// The kpl command line: registers the subcommands (one file each,
// <name>_command.cpp), parses, and runs the one given. Exit statuses:
// command.hpp.
#include "command.hpp"
#include "interrupts.hpp"
#include "kokkos_session.hpp"
#include "process_session.hpp"

#include <kpl/config.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/resources.hpp>

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

// Runs `work`, turning kpl's exceptions into a message and an exit status.
template <class Work>
int statused(const ProcessSession& session, Work&& work) {
  try {
    return work();
  } catch (const std::invalid_argument& error) {  // usage_error and impossible options
    report(session, std::string("kpl: ") + error.what());
    return exit_usage;
  } catch (const kpl::input_error& error) {
    report(session, std::string("kpl: bad input: ") + error.what());
    return exit_bad_input;
  } catch (const kpl::resource_error& error) {
    report(session, std::string("kpl: ") + error.what());
    return exit_failure;
  } catch (const std::bad_alloc&) {
    report(session, "kpl: out of memory");
    return exit_failure;
  } catch (const std::exception& error) {
    report(session, std::string("kpl: error: ") + error.what());
    return exit_failure;
  }
}

// statused(), and on several processes an error of one rank alone ends
// every rank (the others may be waiting for it in a collective call).
template <class Work>
int guarded(const ProcessSession& session, Work&& work) {
  const int status = statused(session, std::forward<Work>(work));
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

// Parses; a usage error or --help/--version ends the run here (returns >= 0).
int parse(CLI::App& app, const std::vector<std::string>& arguments) {
  try {
    app.parse(std::vector<std::string>(arguments.rbegin(), arguments.rend()));
  } catch (const CLI::CallForHelp& request) {
    return app.exit(request);
  } catch (const CLI::CallForAllHelp& request) {
    return app.exit(request);
  } catch (const CLI::CallForVersion& request) {
    return app.exit(request);
  } catch (const CLI::ParseError& error) {
    const std::string unknown = unknown_subcommand(app, arguments);
    std::cerr << "kpl: " << (unknown.empty() ? error.what() : unknown) << " (see kpl --help)\n";
    return exit_usage;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "kpl: a command is required (info, self-check, nnls, deconv, gam, simulate); "
                 "see kpl --help\n";
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
  if (arguments.kokkos_help)  // Kokkos' own help, on stdout, with or without a command
    return guarded(session, [&] {
      KokkosSession kokkos(checked_kokkos_arguments(arguments.kokkos), /*quiet_stdout=*/false);
      return int(exit_success);
    });

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

  {
    // Every rank parses alike; rank 0 alone says what is wrong.
    std::streambuf* const saved = std::cerr.rdbuf();
    if (!session.is_root()) std::cerr.rdbuf(nullptr);
    const int status = parse(app, arguments.kpl);
    std::cerr.rdbuf(saved);
    std::cerr.clear();
    if (status >= 0) return status;
  }
  return guarded(session, [&] {
    const auto kokkos_arguments =
        session.for_this_rank(checked_kokkos_arguments(arguments.kokkos));
    KokkosSession kokkos(kokkos_arguments);
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
    return int(exit_usage);
  });
}
