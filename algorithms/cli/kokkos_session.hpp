// Kokkos for the lifetime of one command: its arguments checked before
// Kokkos sees them (Kokkos aborts on some bad values), environment defaults
// where the user set none, and nothing Kokkos prints reaching stdout.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kpl::cli {

// A command line that cannot be run; main() prints it and exits 1.
class usage_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Arguments that start with --kokkos- belong to Kokkos; the rest to CLI11.
struct SplitArguments {
  std::vector<std::string> kokkos;  // with the program name first
  std::vector<std::string> kpl;
  bool kokkos_help = false;
};
SplitArguments split_arguments(int argc, char** argv);

// Throws usage_error for a --kokkos- option kpl does not know or a value out
// of range (thread counts 1 to 4 x the hardware threads, a device that does
// not exist). --kokkos-threads and --kokkos-num-threads are accepted with any
// Kokkos and passed on in the spelling it knows.
std::vector<std::string> checked_kokkos_arguments(const std::vector<std::string>& arguments);

// OMP_PROC_BIND=false where unset: Kokkos asks for a binding, and a binding
// set by default would pin concurrent kpl processes onto the same cores.
void set_environment_defaults();

// Sends whatever is written to stdout (file descriptor 1: printf and
// std::cout alike) to stderr for one scope (when `active`).
class StdoutToStderr {
 public:
  explicit StdoutToStderr(bool active);
  ~StdoutToStderr();
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_ = -1;
};

// Kokkos::initialize / finalize around one command, with stdout routed to
// stderr meanwhile (Kokkos 3.4 prints its warnings on stdout).
class KokkosSession {
 public:
  explicit KokkosSession(std::vector<std::string> arguments, bool quiet_stdout = true);
  ~KokkosSession();
  KokkosSession(const KokkosSession&) = delete;
  KokkosSession& operator=(const KokkosSession&) = delete;

 private:
  std::vector<std::string> arguments_;
  std::vector<char*> pointers_;
  bool quiet_stdout_;
};

}  // namespace kpl::cli
