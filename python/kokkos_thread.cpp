#include "kokkos_thread.hpp"

#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace kpl::python {
namespace {

class KokkosThread {
 public:
  explicit KokkosThread(std::optional<int> threads) : owner_(::getpid()) {
    std::promise<void> initialised;
    auto ready = initialised.get_future();
    thread_ = std::thread([this, threads](std::promise<void> promise) { loop(threads, promise); },
                          std::move(initialised));
    try {
      ready.get();  // rethrows a failed Kokkos::initialize
    } catch (...) {
      thread_.join();  // it has ended; a joinable std::thread's destructor would terminate
      throw;
    }
  }

  void run(std::function<void()> work) {
    if (::getpid() != owner_)
      throw std::runtime_error(
          "kpl: Kokkos was started in the parent of this forked process and cannot be used "
          "here; use multiprocessing's 'spawn' or 'forkserver' start method");
    std::packaged_task<void()> task(std::move(work));
    auto done = task.get_future();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      // A daemon thread calling during exit: the loop may have ended already.
      if (stopping_) throw std::runtime_error("kpl: Kokkos is being finalised (interpreter exit)");
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    done.get();
  }

  void stop() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop(std::optional<int> threads, std::promise<void>& initialised) {
    try {
      // As the command line: threads left unbound unless the user binds them
      // (Kokkos warns when OMP_PROC_BIND is unset).
      ::setenv("OMP_PROC_BIND", "false", /*overwrite=*/0);
      std::vector<std::string> arguments{"kpl"};
      if (threads) arguments.push_back(compat::host_threads_argument(*threads));
      std::vector<char*> pointers;
      for (auto& argument : arguments) pointers.push_back(argument.data());
      int argc = static_cast<int>(pointers.size());
      Kokkos::initialize(argc, pointers.data());
    } catch (...) {
      initialised.set_exception(std::current_exception());
      return;
    }
    initialised.set_value();
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and the work handed over is done
      auto task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();  // its Views are gone when it returns
    }
    Kokkos::finalize();
  }

  pid_t owner_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// Never destroyed: a std::thread still running when static objects are
// destroyed (no atexit, os._exit) would end the process with terminate().
KokkosThread* kokkos_thread = nullptr;
bool kokkos_stopped = false;

}  // namespace

void start_kokkos_thread(std::optional<int> threads) {
  if (kokkos_stopped)
    throw std::runtime_error("kpl: Kokkos has been finalised (the interpreter is exiting)");
  // (With the GIL held: two Python threads cannot both start one.)
  if (!kokkos_thread) kokkos_thread = new KokkosThread(threads);
}

bool kokkos_thread_started() { return kokkos_thread != nullptr && !kokkos_stopped; }

void run_on_kokkos_thread_erased(std::function<void()> work) {
  kokkos_thread->run(std::move(work));
}

void stop_kokkos_thread() {
  if (!kokkos_thread || kokkos_stopped) return;
  kokkos_stopped = true;
  pybind11::gil_scoped_release release;
  kokkos_thread->stop();
}

}  // namespace kpl::python
