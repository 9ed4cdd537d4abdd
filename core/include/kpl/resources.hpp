// What a run may use of the machine, asked before the work rather than
// discovered by a failed allocation: byte counts that cannot overflow, the
// memory free on the host and on the device of the default execution space,
// the disk free under a path. kpl's file layer and command line check their
// estimates against these before reading, allocating or computing.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace kpl {

// The machine cannot do what was asked: too little memory or disk. The
// message says how many bytes were needed and how many are available.
class resource_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// count x element_size (or the product of extents x element_size) in bytes,
// or -1 when it does not fit in 63 bits.
std::int64_t checked_bytes(std::initializer_list<std::uint64_t> extents,
                           std::uint64_t element_size);
std::int64_t checked_sum(
    std::initializer_list<std::int64_t> bytes);  // -1 if any is -1 or it overflows

// Host memory a new allocation can take: MemAvailable, capped by the
// process's cgroup limit where one is set.
std::int64_t host_memory_available();

// Free memory of the default execution space's device: the GPU's free memory
// on CUDA, host_memory_available() for host backends. Requires Kokkos to be
// initialised.
std::int64_t device_memory_available();
bool device_memory_is_host_memory();

// GPUs this build can use (0 without CUDA); callable before Kokkos starts.
int gpu_count();

// Bytes a new file in `directory` may take (statvfs f_bavail).
std::int64_t disk_available(const std::string& directory);

// "1.50 GiB (1610612736 bytes)".
std::string describe_bytes(std::int64_t bytes);

// What one run needs: checked against what is available, with a message that
// names `what` ("kpl nnls", "reading /A") and both numbers. -1 in a field
// means the count overflowed, which is reported as such.
struct ResourceNeeds {
  std::int64_t host_bytes = 0;
  std::int64_t device_bytes = 0;  // counted as host memory on host backends
  std::int64_t disk_bytes = 0;
  std::string disk_directory;  // where the output goes (empty: no disk use)
};
void require_resources(const std::string& what, const ResourceNeeds& needs);

}  // namespace kpl
