// The one thread on which the module runs everything Kokkos: initialise,
// every View and kernel, finalise. Kokkos 3.4's OpenMP backend dispatches
// only from the thread that initialised it (its instance is thread-local;
// from any other thread a kernel runs serially, without its team data), and
// no Kokkos version lets two host threads share one instance at once. So a
// Python thread hands its work over and waits with the GIL released: other
// Python threads run meanwhile, and calls from several of them are done one
// after another. Work must not touch Python objects (it runs without the GIL).
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <utility>

namespace kpl::python {

// Starts the thread and initialises Kokkos on it, if not done yet; threads:
// host threads (nullopt: Kokkos' default, OMP_NUM_THREADS for OpenMP). Throws
// std::runtime_error if Kokkos was finalised, or in a child process forked
// after it started (the thread does not exist there).
void start_kokkos_thread(std::optional<int> threads);
bool kokkos_thread_started();
// Runs `work` on the thread and waits for it; its exception, if any, is
// rethrown here.
void run_on_kokkos_thread_erased(std::function<void()> work);
// Finalises Kokkos after the work already handed over and joins the thread
// (atexit); nothing if it never started.
void stop_kokkos_thread();

// Runs `work` (which returns a value) on the Kokkos thread with the GIL
// released; called with the GIL held.
template <class Work>
auto on_kokkos_thread(Work&& work) -> decltype(work()) {
  start_kokkos_thread(std::nullopt);
  using Result = decltype(work());
  std::optional<Result> result;
  pybind11::gil_scoped_release release;
  run_on_kokkos_thread_erased([&] { result.emplace(work()); });
  return std::move(*result);
}

}  // namespace kpl::python
