// SIGINT, SIGTERM and SIGHUP end `kpl` at once: every output not yet
// committed is removed (kpl::hdf5::remove_uncommitted_outputs) and the exit
// status is 128 + the signal's number. Nothing half-written stays behind.
#pragma once

namespace kpl::cli {

void install_interrupt_handlers();

}  // namespace kpl::cli
