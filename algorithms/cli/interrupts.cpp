#include "interrupts.hpp"

#include <kpl/hdf5_io.hpp>

#include <signal.h>
#include <unistd.h>

namespace kpl::cli {
namespace {

extern "C" void on_interrupt(int signal_number) {
  // Only async-signal-safe calls: unlink(), write() and _exit(). A partial
  // output kept for --resume (kpl deconv) is named on stderr.
  kpl::hdf5::remove_uncommitted_outputs(STDERR_FILENO);
  ::_exit(128 + signal_number);
}

}  // namespace

// Every signal whose default action ends the process and that a user, a
// shell, a batch system or a limit may send (not the crash signals: those
// are bugs, and a sanitizer's report must not be replaced).
constexpr int ending_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE,
                                  SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGXFSZ};

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  for (const int signal_number : ending_signals) sigaddset(&action.sa_mask, signal_number);
  for (const int signal_number : ending_signals) {
    struct sigaction previous {};
    // A signal the shell ignores (nohup, background jobs) stays ignored.
    if (::sigaction(signal_number, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN)
      continue;
    ::sigaction(signal_number, &action, nullptr);
  }
}

}  // namespace kpl::cli
