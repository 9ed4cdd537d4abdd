// The kpl command line: registers the subcommands (one file each,
// <name>_command.cpp), parses, and runs the one given. Exit statuses:
// command.hpp.
#include "command.hpp"
#include "interrupts.hpp"
#include "kokkos_session.hpp"

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

// Runs `work`, turning kpl's exceptions into a message and an exit status.
template <class Work>
int guarded(Work&& work) {
  try {
    return work();
  } catch (const std::invalid_argument& error) {  // usage_error and impossible options
    std::cerr << "kpl: " << error.what() << "\n";
    return exit_usage;
  } catch (const kpl::input_error& error) {
    std::cerr << "kpl: bad input: " << error.what() << "\n";
    return exit_bad_input;
  } catch (const kpl::resource_error& error) {
    std::cerr << "kpl: " << error.what() << "\n";
    return exit_failure;
  } catch (const std::bad_alloc&) {
    std::cerr << "kpl: out of memory\n";
    return exit_failure;
  } catch (const std::exception& error) {
    std::cerr << "kpl: error: " << error.what() << "\n";
    return exit_failure;
  }
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
  install_interrupt_handlers();
  set_environment_defaults();
  const auto arguments = split_arguments(argc, argv);
  if (arguments.kokkos_help)  // Kokkos' own help, on stdout, with or without a command
    return guarded([&] {
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

  if (const int status = parse(app, arguments.kpl); status >= 0) return status;
  return guarded([&] {
    const auto kokkos_arguments = checked_kokkos_arguments(arguments.kokkos);
    KokkosSession kokkos(kokkos_arguments);
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
    return int(exit_usage);
  });
}
