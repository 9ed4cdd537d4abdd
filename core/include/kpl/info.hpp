// What this build of kpl runs on: versions, backends, the default execution
// space and, for CUDA, the device. Used by `kpl info` and by callers that log
// their configuration.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kpl {

struct DeviceInfo {
  std::string name;
  std::size_t memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
};

struct Info {
  std::string kpl_version;
  std::string kokkos_version;
  std::string kokkos_kernels_version;
  std::vector<std::string> enabled_backends;  // execution spaces, e.g. Serial, OpenMP, Cuda
  std::string default_execution_space;
  bool mpi_layer = false;  // built with KPL_ENABLE_MPI (kpl/mpi.hpp, parallel HDF5)
  int default_concurrency = 0;       // of the default execution space
  int host_concurrency = 0;          // of the default host execution space
  std::optional<DeviceInfo> device;  // the GPU Kokkos uses, when it has one
};

// Requires Kokkos to be initialised.
Info collect_info();

// The human-readable report `kpl info` prints.
std::string format_info(const Info& info);

}  // namespace kpl
