// Three stages over a sequence of items, overlapped: read(buffer, item) on a
// reader thread, solve(buffer) on the calling thread (the one that drives the
// device), write(buffer) on a writer thread. Buffers are recycled: a buffer
// goes from the reader to the solver to the writer and back, so that reading
// item i + 1 and writing item i - 1 happen while item i is solved, and no
// buffer is allocated per item. Items are read, solved and written in order.
// The first stage to throw stops the others; the error is rethrown here.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kpl::impl {

// A blocking queue of buffers. close(): no more pushes, pop() drains what is
// left and then returns nullptr; abort(): pop() returns nullptr at once.
template <class Buffer>
class BufferQueue {
 public:
  void push(Buffer* buffer) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_) return;
      buffers_.push_back(buffer);
    }
    ready_.notify_one();
  }
  Buffer* pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return aborted_ || closed_ || !buffers_.empty(); });
    if (aborted_ || buffers_.empty()) return nullptr;
    Buffer* buffer = buffers_.front();
    buffers_.pop_front();
    return buffer;
  }
  void close() { finish(false); }
  void abort() { finish(true); }

 private:
  void finish(bool abort) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
      aborted_ = aborted_ || abort;
    }
    ready_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Buffer*> buffers_;
  bool closed_ = false, aborted_ = false;
};

template <class Buffer, class Read, class Solve, class Write>
void run_overlapped(std::vector<Buffer>& buffers, std::int64_t items, Read&& read, Solve&& solve,
                    Write&& write) {
  BufferQueue<Buffer> free, read_done, solved;
  for (auto& buffer : buffers) free.push(&buffer);
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto fail = [&] {
    {
      const std::lock_guard<std::mutex> lock(failure_lock);
      if (!failure) failure = std::current_exception();
    }
    free.abort();
    read_done.abort();
    solved.abort();
  };
  std::thread reader([&] {
    try {
      for (std::int64_t item = 0; item < items; ++item) {
        Buffer* buffer = free.pop();
        if (buffer == nullptr) return;
        read(*buffer, item);
        read_done.push(buffer);
      }
      read_done.close();
    } catch (...) {
      fail();
    }
  });
  std::thread writer([&] {
    try {
      for (Buffer* buffer = solved.pop(); buffer != nullptr; buffer = solved.pop()) {
        write(*buffer);
        free.push(buffer);
      }
    } catch (...) {
      fail();
    }
  });
  try {
    for (Buffer* buffer = read_done.pop(); buffer != nullptr; buffer = read_done.pop()) {
      solve(*buffer);
      solved.push(buffer);
    }
    solved.close();
  } catch (...) {
    fail();
  }
  reader.join();
  writer.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kpl::impl
