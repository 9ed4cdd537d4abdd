#include "command.hpp"

namespace kpl::cli {

std::string exit_status_legend() {
  return "Exit status: 0 done; 1 usage error; 2 bad input (a file or its data cannot be used); "
         "3 with --strict, a system did not converge; 4 the machine could not do it (memory, "
         "disk, I/O, device); 128 + n after signal n (the partial output is removed).";
}

}  // namespace kpl::cli
