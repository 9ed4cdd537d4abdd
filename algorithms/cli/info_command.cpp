// `kpl info`: versions, backends, concurrency, the GPU.
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/info.hpp>

#include <iostream>

namespace kpl::cli {

Command add_info_command(CLI::App& root) {
  auto* app = root.add_subcommand(
      "info",
      "Print kpl's, Kokkos' and Kokkos Kernels' versions, the enabled backends, the default "
      "execution space and its concurrency, and the GPU if there is one");
  return {app, [] {
            std::cout << format_info(collect_info());
            if (!processes().is_single())
              std::cout << "  this run                 " << processes().size()
                        << " MPI ranks (this is rank 0)\n";
            return int(exit_success);
          }};
}

}  // namespace kpl::cli
