#include <kpl/config.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/info.hpp>

#include <Kokkos_Core.hpp>

#include <sstream>

namespace kpl {

Info collect_info() {
  Info info;
  info.kpl_version = KPL_VERSION_STRING;
  info.kokkos_version = KPL_KOKKOS_VERSION_STRING;
  info.kokkos_kernels_version = KPL_KOKKOS_KERNELS_VERSION_STRING;
  for_each_execution_space(
      [&](auto tag) { info.enabled_backends.emplace_back(decltype(tag)::type::name()); });
  info.default_execution_space = Kokkos::DefaultExecutionSpace::name();
  info.mpi_layer = KPL_HAS_MPI != 0;
  info.default_concurrency = Kokkos::DefaultExecutionSpace().concurrency();
  info.host_concurrency = Kokkos::DefaultHostExecutionSpace().concurrency();
#ifdef KOKKOS_ENABLE_CUDA
  const cudaDeviceProp& properties = Kokkos::Cuda().cuda_device_prop();
  DeviceInfo device;
  device.name = properties.name;
  device.memory_bytes = properties.totalGlobalMem;
  device.compute_capability_major = properties.major;
  device.compute_capability_minor = properties.minor;
  device.multiprocessors = properties.multiProcessorCount;
  info.device = device;
#endif
  return info;
}

std::string format_info(const Info& info) {
  std::ostringstream out;
  out << "kpl " << info.kpl_version << "\n";
  out << "  Kokkos                   " << info.kokkos_version << "\n";
  out << "  Kokkos Kernels           " << info.kokkos_kernels_version << "\n";
  out << "  enabled backends         ";
  for (std::size_t i = 0; i < info.enabled_backends.size(); ++i) {
    out << (i > 0 ? ", " : "") << info.enabled_backends[i];
  }
  out << "\n";
  out << "  default execution space  " << info.default_execution_space << " (concurrency "
      << info.default_concurrency << ")\n";
  out << "  host execution space     concurrency " << info.host_concurrency << "\n";
  out << "  MPI layer                "
      << (info.mpi_layer ? "yes (mpiexec -n R kpl ...; parallel HDF5)" : "no (KPL_ENABLE_MPI=OFF)")
      << "\n";
  if (info.device) {
    const auto& device = *info.device;
    out << "  device                   " << device.name << ", compute capability "
        << device.compute_capability_major << "." << device.compute_capability_minor << ", "
        << device.multiprocessors << " multiprocessors, "
        << static_cast<double>(device.memory_bytes) / (1024.0 * 1024.0 * 1024.0) << " GiB\n";
  }
  return out.str();
}

}  // namespace kpl
