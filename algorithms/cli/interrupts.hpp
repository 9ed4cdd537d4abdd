// SIGINT, SIGTERM, SIGHUP and the other signals that end a process (SIGQUIT,
// SIGPIPE, SIGUSR1/2, SIGALRM, SIGXCPU, SIGXFSZ) end `kpl` at once: every
// output not yet committed is removed (kpl::hdf5::remove_uncommitted_outputs)
// and the exit status is 128 + the signal's number. Nothing half-written
// stays behind. A signal the caller ignores stays ignored.
#pragma once

namespace kpl::cli {

void install_interrupt_handlers();

}  // namespace kpl::cli
