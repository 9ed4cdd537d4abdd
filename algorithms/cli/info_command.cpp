// `kpl info`: versions, backends, concurrency, the GPU.
#include "command.hpp"
#include "options.hpp"
#include "process_session.hpp"

#include <kpl/info.hpp>

#include <iostream>

namespace kpl::cli {
namespace {

// What format_info() says, as fields.
void info_json(const Info& info, JsonObject& json) {
  json.set("kpl_version", info.kpl_version)
      .set("kokkos_version", info.kokkos_version)
      .set("kokkos_kernels_version", info.kokkos_kernels_version)
      .set("enabled_backends", info.enabled_backends)
      .set("default_execution_space", info.default_execution_space)
      .set("default_concurrency", info.default_concurrency)
      .set("host_concurrency", info.host_concurrency)
      .set("mpi_layer", info.mpi_layer);
  if (!info.device) {
    json.set_null("device");
    return;
  }
  json.object("device")
      .set("name", info.device->name)
      .set("memory_bytes", info.device->memory_bytes)
      .set("compute_capability", std::to_string(info.device->compute_capability_major) + "." +
                                     std::to_string(info.device->compute_capability_minor))
      .set("multiprocessors", info.device->multiprocessors);
}

}  // namespace

Command add_info_command(CLI::App& root) {
  auto* app = root.add_subcommand(
      "info",
      "Print kpl's, Kokkos' and Kokkos Kernels' versions, the enabled backends, the default "
      "execution space and its concurrency, and the GPU if there is one");
  return {app, [](JsonObject& json) {
            const Info info = collect_info();
            info_json(info, json);
            std::cout << format_info(info);
            if (!processes().is_single())
              std::cout << "  this run                 " << processes().size()
                        << " MPI ranks (this is rank 0)\n";
            return int(exit_success);
          }};
}

}  // namespace kpl::cli
