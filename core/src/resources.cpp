#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

namespace kpl {

namespace {
constexpr std::int64_t limit = std::numeric_limits<std::int64_t>::max();

// A number read from a cgroup file, or -1 ("max" or absent).
std::int64_t read_limit_file(const char* path) {
  std::ifstream file(path);
  std::string text;
  if (!(file >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (...) {
    return -1;
  }
}
// A "VmSize:"-style line of /proc/self/status, in bytes (0 if absent).
std::int64_t process_status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream fields(line.substr(key.size()));
    std::int64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}
}  // namespace

std::int64_t checked_bytes(std::initializer_list<std::uint64_t> extents,
                           std::uint64_t element_size) {
  std::uint64_t total = element_size;
  for (const std::uint64_t extent : extents) {
    if (extent != 0 && total > std::uint64_t(limit) / extent) return -1;
    total *= extent;
  }
  return total > std::uint64_t(limit) ? -1 : std::int64_t(total);
}

std::int64_t checked_sum(std::initializer_list<std::int64_t> bytes) {
  std::int64_t total = 0;
  for (const std::int64_t part : bytes) {
    if (part < 0 || total > limit - part) return -1;
    total += part;
  }
  return total;
}

std::int64_t host_memory_available() {
  std::int64_t available = -1;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  // cgroup v2, then v1: what the process's group may still take.
  std::int64_t cgroup_limit = read_limit_file("/sys/fs/cgroup/memory.max");
  std::int64_t cgroup_used = read_limit_file("/sys/fs/cgroup/memory.current");
  if (cgroup_limit < 0) {
    cgroup_limit = read_limit_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    cgroup_used = read_limit_file("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  }
  if (cgroup_limit > 0 && cgroup_limit < (limit >> 1)) {
    const std::int64_t room = cgroup_limit - (cgroup_used > 0 ? cgroup_used : 0);
    if (available < 0 || room < available) available = room > 0 ? room : 0;
  }
  // The process's own limits (ulimit -v, -d): what is left of them.
  for (const auto& [resource, status_key] :
       {std::pair{RLIMIT_AS, "VmSize:"}, std::pair{RLIMIT_DATA, "VmData:"}}) {
    struct rlimit process_limit {};
    if (::getrlimit(resource, &process_limit) != 0 || process_limit.rlim_cur == RLIM_INFINITY)
      continue;
    const std::int64_t room =
        std::int64_t(process_limit.rlim_cur) - process_status_bytes(status_key);
    if (available < 0 || room < available) available = room > 0 ? room : 0;
  }
  return available >= 0 ? available : limit;
}

bool device_memory_is_host_memory() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                    Kokkos::DefaultExecutionSpace::memory_space>::accessible;
}

std::int64_t device_memory_available() {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Cuda>) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) return std::int64_t(free_bytes);
    return 0;
  }
#endif
  return host_memory_available();
}

int gpu_count() {
#ifdef KOKKOS_ENABLE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear it: no device is not an error here
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

std::int64_t disk_available(const std::string& directory) {
  struct statvfs file_system {};
  if (::statvfs(directory.empty() ? "." : directory.c_str(), &file_system) != 0) return limit;
  const std::uint64_t bytes = std::uint64_t(file_system.f_bavail) * file_system.f_frsize;
  return bytes > std::uint64_t(limit) ? limit : std::int64_t(bytes);
}

std::string describe_bytes(std::int64_t bytes) {
  if (bytes < 0) return "more than 2^63 bytes";
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char text[64];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%lld bytes", static_cast<long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.2f %s (%lld bytes)", value, units[unit],
                  static_cast<long long>(bytes));
  }
  return text;
}

void require_resources(const std::string& what, const ResourceNeeds& needs) {
  const bool shared = device_memory_is_host_memory();
  const std::int64_t host =
      shared ? checked_sum({needs.host_bytes, needs.device_bytes}) : needs.host_bytes;
  const std::int64_t host_free = host_memory_available();
  if (host < 0 || host > host_free)
    throw resource_error(what + " needs " + describe_bytes(host) + " of memory; " +
                         describe_bytes(host_free) + " are available");
  if (!shared) {
    const std::int64_t device_free = device_memory_available();
    if (needs.device_bytes < 0 || needs.device_bytes > device_free)
      throw resource_error(what + " needs " + describe_bytes(needs.device_bytes) +
                           " of device memory; " + describe_bytes(device_free) +
                           " are free on the device");
  }
  if (!needs.disk_directory.empty()) {
    const std::int64_t disk_free = disk_available(needs.disk_directory);
    if (needs.disk_bytes < 0 || needs.disk_bytes > disk_free)
      throw resource_error(what + " writes about " + describe_bytes(needs.disk_bytes) + " to '" +
                           needs.disk_directory + "'; " + describe_bytes(disk_free) +
                           " are free there");
  }
}

}  // namespace kpl
