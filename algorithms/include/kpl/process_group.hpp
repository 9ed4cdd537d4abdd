// The processes one computation is spread over. kpl's file commands and the
// GAM fit take a ProcessGroup: kpl::single_process() (no MPI: what every
// entry point uses by default), or kpl::mpi::ProcessGroup (kpl/mpi.hpp) over
// an MPI communicator the caller owns. This header knows no MPI, so code
// built without it (core/, the serial build) uses the same algorithms.
//
// Every member is collective (each process of the group calls it, in the
// same order) except rank(), size() and WorkQueue::next()/drain().
#pragma once

#include <kpl/hdf5_io.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>

namespace kpl {

// Items 0 .. total-1 handed out first come, first served across the group:
// dynamic load balancing for work of uneven cost (NNLS systems differ widely
// in iteration count). next() returns an item, or a value >= total when all
// are taken; drain() hands nothing more to anyone (a process that failed).
class WorkQueue {
 public:
  virtual ~WorkQueue() = default;
  virtual std::int64_t next() = 0;
  virtual void drain() = 0;
};

// How the processes of a group write their rows of a shared output file.
enum class RowWrites { independent, collective };

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Element-wise reductions in place; every process receives the same values.
  virtual void sum(double* values, std::int64_t count) const = 0;
  virtual void sum(std::int64_t* values, std::int64_t count) const = 0;
  virtual void min(double* values, std::int64_t count) const = 0;
  virtual void max(double* values, std::int64_t count) const = 0;
  // `text` of process `root` on every process.
  virtual void broadcast(std::string& text, int root = 0) const = 0;

  // A queue over 0 .. total-1 (see WorkQueue).
  virtual std::unique_ptr<WorkQueue> work_queue(std::int64_t total) const = 0;

  // An output file written by the whole group: one partial file, created,
  // closed and committed together; each process writes its own rows with
  // write_rows(), and write() / attributes take rank 0's values. commit()
  // is collective and renames once. After a failure agreed by agree(), the
  // files are abandoned together (their destructors). RowWrites::collective:
  // write_rows() is a collective transfer (MPI-IO's two-phase I/O), so every
  // process calls it for every dataset of a round, with an empty View when it
  // has no rows (share_work_in_rounds).
  virtual std::unique_ptr<hdf5::OutputFile> create_output(
      const std::string& path, RowWrites rows = RowWrites::independent) const = 0;

  bool is_single() const { return size() == 1; }
};

// One process, no communication: reductions return their input (and its
// outputs ignore RowWrites).
const ProcessGroup& single_process();

// Rows [first, first + count) of `total` that process `rank` of the group
// holds when rows are split into contiguous blocks, the first total % size
// processes one row more (a process may hold none).
struct RowBlock {
  std::int64_t first = 0;
  std::int64_t count = 0;
};
RowBlock row_block(const ProcessGroup& group, std::int64_t total);

// Runs `step` on every process of the group and agrees on its outcome: if
// it threw anywhere, every process throws the error of the lowest failing
// rank (the same type: kpl::input_error, kpl::resource_error,
// kpl::runtime_error, std::invalid_argument, std::bad_alloc, else
// kpl::runtime_error), the message naming that rank when there are several
// processes. So all processes leave a collective phase together, with the
// same exit status, and no one waits for a process that has given up.
void agree(const ProcessGroup& group, const std::exception_ptr& outcome);

template <class Step>
auto agreed(const ProcessGroup& group, Step&& step) {
  using Result = decltype(step());
  std::exception_ptr outcome;
  if constexpr (std::is_void_v<Result>) {
    try {
      step();
    } catch (...) {
      outcome = std::current_exception();
    }
    agree(group, outcome);
  } else {
    Result result{};
    try {
      result = step();
    } catch (...) {
      outcome = std::current_exception();
    }
    agree(group, outcome);
    return result;
  }
}

// Calls work(item) for the items of 0 .. total-1 that this process takes
// from the group's WorkQueue, until all are taken. A failure drains the queue
// (the others stop at their next item) and is agreed: every process throws it.
template <class Work>
void share_work(const ProcessGroup& group, std::int64_t total, Work&& work) {
  const auto queue = group.work_queue(total);
  agreed(group, [&] {
    try {
      for (std::int64_t item = queue->next(); item < total; item = queue->next()) work(item);
    } catch (...) {
      queue->drain();
      throw;
    }
  });
}

// The schedule for collective row writes (RowWrites::collective): in round
// r process p takes item r R + p, and where none is left it calls idle(),
// which takes part in the round's collective writes with no rows. A process
// whose work fails before writing goes on with idle() to the last round, so
// that the others' collective calls complete; the failure is then agreed.
// (A failure inside a collective write itself is not survived.)
template <class Work, class Idle>
void share_work_in_rounds(const ProcessGroup& group, std::int64_t total, Work&& work, Idle&& idle) {
  const std::int64_t processes = group.size();
  const std::int64_t rounds = (total + processes - 1) / processes;
  agreed(group, [&] {
    std::exception_ptr failure;
    for (std::int64_t round = 0; round < rounds; ++round) {
      const std::int64_t item = round * processes + group.rank();
      if (!failure && item < total) {
        try {
          work(item);
          continue;
        } catch (...) {
          failure = std::current_exception();
        }
      }
      idle();
    }
    if (failure) std::rethrow_exception(failure);
  });
}

namespace impl {
// Whether the last error agree() threw in this process was thrown on every
// process of its group (they all leave together), as opposed to an error of
// this process alone, after which a program must abort the whole group
// (MPI_Abort): the others may be waiting for it in a collective call.
bool last_failure_agreed();
}  // namespace impl

}  // namespace kpl
