#include "kokkos_session.hpp"

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace kpl::cli {
namespace {

// The value of "--kokkos-name=value" as an integer in [low, high].
long long integer_value(const std::string& argument, const std::string& value, long long low,
                        long long high, const std::string& meaning) {
  std::size_t used = 0;
  long long number = 0;
  try {
    number = std::stoll(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != value.size() || number < low || number > high)
    throw usage_error(argument + ": " + meaning + " must be an integer from " +
                      std::to_string(low) + " to " + std::to_string(high));
  return number;
}

}  // namespace

StdoutToStderr::StdoutToStderr(bool active) {
  if (!active) return;
  std::cout.flush();
  std::fflush(stdout);
  saved_ = ::dup(STDOUT_FILENO);
  if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

StdoutToStderr::~StdoutToStderr() {
  if (saved_ < 0) return;
  std::cout.flush();
  std::fflush(stdout);
  ::dup2(saved_, STDOUT_FILENO);
  ::close(saved_);
}

SplitArguments split_arguments(int argc, char** argv) {
  SplitArguments split;
  split.kokkos.emplace_back(argc > 0 ? argv[0] : "kpl");
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const bool for_kokkos = argument.rfind("--kokkos-", 0) == 0;
    (for_kokkos ? split.kokkos : split.kpl).push_back(argument);
    if (argument == "--kokkos-help") split.kokkos_help = true;
  }
  return split;
}

std::vector<std::string> checked_kokkos_arguments(const std::vector<std::string>& arguments) {
  const long long hardware = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> checked{arguments.front()};
  for (std::size_t i = 1; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    const auto equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : argument.substr(equals + 1);
    const bool has_value = equals != std::string::npos;
    if (name == "--kokkos-threads" || name == "--kokkos-num-threads") {
      if (!has_value) throw usage_error(name + " needs a value: " + name + "=N");
      const auto threads = integer_value(name, value, 1, 4 * hardware, "the thread count");
      checked.push_back(compat::host_threads_argument(int(threads)));
    } else if (name == "--kokkos-device-id") {
      if (!has_value) throw usage_error(name + " needs a value: " + name + "=N");
      const int devices = std::max(gpu_count(), 1);
      integer_value(name, value, 0, devices - 1,
                    "the device (this machine has " + std::to_string(gpu_count()) + " GPU(s))");
      checked.push_back(argument);
    } else if (name == "--kokkos-numa" || name == "--kokkos-num-devices" ||
               name == "--kokkos-ndevices" || name == "--kokkos-skip-device") {
      if (!has_value) throw usage_error(name + " needs a value: " + name + "=N");
      integer_value(name, value, 0, 1 << 16, "the value");
      checked.push_back(argument);
    } else if (name == "--kokkos-map-device-id-by" || name == "--kokkos-tools-libs" ||
               name == "--kokkos-tools-library" || name == "--kokkos-tools-args") {
      if (!has_value || value.empty()) throw usage_error(name + " needs a value: " + name + "=...");
      checked.push_back(argument);
    } else if ((name == "--kokkos-help" || name == "--kokkos-disable-warnings" ||
                name == "--kokkos-print-configuration" || name == "--kokkos-tune-internals" ||
                name == "--kokkos-tools-help") &&
               !has_value) {
      checked.push_back(argument);
    } else {
      throw usage_error("unknown Kokkos option '" + argument +
                        "'; kpl passes on --kokkos-num-threads=N (or --kokkos-threads=N), "
                        "--kokkos-device-id=N, --kokkos-numa=N, --kokkos-map-device-id-by=..., "
                        "--kokkos-disable-warnings, --kokkos-print-configuration, "
                        "--kokkos-tools-libs=..., --kokkos-tools-args=..., --kokkos-help");
    }
  }
  return checked;
}

void set_environment_defaults() { ::setenv("OMP_PROC_BIND", "false", /*overwrite=*/0); }

KokkosSession::KokkosSession(std::vector<std::string> arguments, bool quiet_stdout)
    : arguments_(std::move(arguments)), quiet_stdout_(quiet_stdout) {
  for (auto& argument : arguments_) pointers_.push_back(argument.data());
  int argc = static_cast<int>(pointers_.size());
  const StdoutToStderr redirect(quiet_stdout_);
  Kokkos::initialize(argc, pointers_.data());
}

KokkosSession::~KokkosSession() {
  const StdoutToStderr redirect(quiet_stdout_);
  Kokkos::finalize();
}

}  // namespace kpl::cli
