// kpl::single_process(), row blocks, and the agreement on a collective
// phase's outcome (kpl/process_group.hpp).
#include <kpl/error.hpp>
#include <kpl/process_group.hpp>
#include <kpl/resources.hpp>

#include <algorithm>
#include <atomic>
#include <new>
#include <stdexcept>
#include <string>

namespace kpl {
namespace {

std::atomic<bool> failure_agreed{false};

class SequentialQueue final : public WorkQueue {
 public:
  explicit SequentialQueue(std::int64_t total) : total_(total) {}
  std::int64_t next() override { return next_ < total_ ? next_++ : total_; }
  void drain() override { next_ = total_; }

 private:
  std::int64_t total_, next_ = 0;
};

class SingleProcess final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum(double*, std::int64_t) const override {}
  void sum(std::int64_t*, std::int64_t) const override {}
  void min(double*, std::int64_t) const override {}
  void max(double*, std::int64_t) const override {}
  void broadcast(std::string&, int) const override {}
  std::unique_ptr<WorkQueue> work_queue(std::int64_t total) const override {
    return std::make_unique<SequentialQueue>(total);
  }
  std::unique_ptr<hdf5::OutputFile> create_output(const std::string& path,
                                                  RowWrites) const override {
    return std::make_unique<hdf5::OutputFile>(path);
  }
};

// The kinds of error agree() carries from one process to the others.
enum class ErrorKind : std::int64_t {
  input,
  resource,
  runtime,
  invalid_argument,
  out_of_memory,
};

ErrorKind kind_of(const std::exception_ptr& outcome, std::string& message) {
  try {
    std::rethrow_exception(outcome);
  } catch (const input_error& error) {
    message = error.what();
    return ErrorKind::input;
  } catch (const resource_error& error) {
    message = error.what();
    return ErrorKind::resource;
  } catch (const std::invalid_argument& error) {
    message = error.what();
    return ErrorKind::invalid_argument;
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    return ErrorKind::out_of_memory;
  } catch (const std::exception& error) {
    message = error.what();
    return ErrorKind::runtime;
  } catch (...) {
    message = "an unknown error";
    return ErrorKind::runtime;
  }
}

[[noreturn]] void throw_as(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::input:
      throw input_error(message);
    case ErrorKind::resource:
      throw resource_error(message);
    case ErrorKind::invalid_argument:
      throw std::invalid_argument(message);
    case ErrorKind::out_of_memory:
      throw resource_error("process " + message);
    case ErrorKind::runtime:
      break;
  }
  throw runtime_error(message);
}

}  // namespace

const ProcessGroup& single_process() {
  static const SingleProcess group;
  return group;
}

RowBlock row_block(const ProcessGroup& group, std::int64_t total) {
  const std::int64_t size = group.size(), rank = group.rank();
  const std::int64_t base = total / size, extra = total % size;
  return {rank * base + std::min(rank, extra), base + (rank < extra ? 1 : 0)};
}

namespace impl {
bool last_failure_agreed() { return failure_agreed; }
}  // namespace impl

void agree(const ProcessGroup& group, const std::exception_ptr& outcome) {
  failure_agreed = false;
  if (group.is_single()) {
    failure_agreed = bool(outcome);
    if (outcome) std::rethrow_exception(outcome);
    return;
  }
  // The lowest failing rank, or size() when none failed.
  double first_failed = outcome ? group.rank() : group.size();
  group.min(&first_failed, 1);
  const int failed = static_cast<int>(first_failed);
  if (failed == group.size()) return;
  failure_agreed = true;
  std::string message;
  std::int64_t kind = 0;
  if (group.rank() == failed) kind = static_cast<std::int64_t>(kind_of(outcome, message));
  group.broadcast(message, failed);
  std::string kind_text = std::to_string(kind);
  group.broadcast(kind_text, failed);
  if (group.rank() == failed) std::rethrow_exception(outcome);
  const auto error_kind = static_cast<ErrorKind>(std::stoll(kind_text));
  // "out of memory" reads "process 2: out of memory" on the others.
  throw_as(error_kind, error_kind == ErrorKind::out_of_memory
                           ? std::to_string(failed) + ": " + message
                           : message + " (on process " + std::to_string(failed) + ")");
}

}  // namespace kpl
