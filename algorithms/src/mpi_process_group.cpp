// kpl::mpi::ProcessGroup (kpl/mpi.hpp): reductions and broadcasts on a
// duplicate of the caller's communicator, a work queue on a one-sided
// counter, and output files through parallel HDF5 (MPI-IO).
#include <kpl/error.hpp>
#include <kpl/mpi.hpp>

#include <hdf5.h>
#include <unistd.h>

#include <limits>
#include <string>
#include <utility>

namespace kpl::mpi {
namespace {

void check(int status, const char* call) {
  if (status != MPI_SUCCESS) throw runtime_error(std::string("MPI: ") + call + " failed");
}

// MPI counts are int: large arrays go in pieces.
template <class T>
void allreduce(MPI_Comm communicator, T* values, std::int64_t count, MPI_Datatype type,
               MPI_Op op) {
  constexpr std::int64_t piece = std::numeric_limits<int>::max() / 2;
  for (std::int64_t first = 0; first < count; first += piece) {
    const int n = static_cast<int>(std::min(piece, count - first));
    check(MPI_Allreduce(MPI_IN_PLACE, values + first, n, type, op, communicator),
          "MPI_Allreduce");
  }
}

// Items handed out by an atomic fetch-and-add on a counter in rank 0's
// window: passive-target, so no rank waits for another to hand out work.
class CounterQueue final : public WorkQueue {
 public:
  CounterQueue(MPI_Comm communicator, std::int64_t total) : total_(total) {
    const MPI_Aint bytes = 0;
    int rank = 0;
    MPI_Comm_rank(communicator, &rank);
    check(MPI_Win_allocate(rank == 0 ? sizeof(std::int64_t) : bytes, sizeof(std::int64_t),
                           MPI_INFO_NULL, communicator, &counter_, &window_),
          "MPI_Win_allocate");
    if (rank == 0) {
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, window_);
      *counter_ = 0;
      MPI_Win_unlock(0, window_);
    }
    check(MPI_Barrier(communicator), "MPI_Barrier");  // the counter is 0 before anyone takes
  }
  ~CounterQueue() override { MPI_Win_free(&window_); }  // collective
  CounterQueue(const CounterQueue&) = delete;
  CounterQueue& operator=(const CounterQueue&) = delete;

  std::int64_t next() override { return add(1); }
  void drain() override { add(total_); }

 private:
  std::int64_t add(std::int64_t increment) {
    std::int64_t previous = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, window_);
    MPI_Fetch_and_op(&increment, &previous, MPI_INT64_T, 0, 0, MPI_SUM, window_);
    MPI_Win_unlock(0, window_);
    return previous < total_ ? previous : total_;
  }

  std::int64_t total_;
  std::int64_t* counter_ = nullptr;
  MPI_Win window_ = MPI_WIN_NULL;
};

// An HDF5 property list, closed with its owner; get() is -1 for none
// (HDF5's default list).
class PropertyList {
 public:
  PropertyList() = default;
  // A new list of class `kind` that configure(list) sets up (a negative
  // return: it could not); throws runtime_error naming `what` otherwise.
  template <class Configure>
  PropertyList(hid_t kind, Configure&& configure, const char* what) : list_(H5Pcreate(kind)) {
    if (list_ >= 0 && configure(list_) >= 0) return;
    if (list_ >= 0) H5Pclose(list_);
    throw runtime_error(std::string("parallel HDF5: cannot set up ") + what);
  }
  PropertyList(PropertyList&& other) noexcept : list_(std::exchange(other.list_, -1)) {}
  PropertyList(const PropertyList&) = delete;
  PropertyList& operator=(const PropertyList&) = delete;
  PropertyList& operator=(PropertyList&&) = delete;
  ~PropertyList() {
    if (list_ >= 0) H5Pclose(list_);
  }
  hid_t get() const { return list_; }

 private:
  hid_t list_ = -1;
};

}  // namespace

ProcessGroup::ProcessGroup(MPI_Comm communicator) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised)
    throw std::invalid_argument("kpl::mpi::ProcessGroup: MPI is not initialised (MPI_Init first)");
  check(MPI_Comm_dup(communicator, &communicator_), "MPI_Comm_dup");
  MPI_Comm_rank(communicator_, &rank_);
  MPI_Comm_size(communicator_, &size_);
}

ProcessGroup::~ProcessGroup() {
  if (communicator_ != MPI_COMM_NULL) MPI_Comm_free(&communicator_);
}

void ProcessGroup::sum(double* values, std::int64_t count) const {
  allreduce(communicator_, values, count, MPI_DOUBLE, MPI_SUM);
}
void ProcessGroup::sum(std::int64_t* values, std::int64_t count) const {
  allreduce(communicator_, values, count, MPI_INT64_T, MPI_SUM);
}
void ProcessGroup::min(double* values, std::int64_t count) const {
  allreduce(communicator_, values, count, MPI_DOUBLE, MPI_MIN);
}
void ProcessGroup::max(double* values, std::int64_t count) const {
  allreduce(communicator_, values, count, MPI_DOUBLE, MPI_MAX);
}

void ProcessGroup::broadcast(std::string& text, int root) const {
  std::int64_t length = static_cast<std::int64_t>(text.size());
  check(MPI_Bcast(&length, 1, MPI_INT64_T, root, communicator_), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(length));
  if (length > 0)
    check(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, communicator_),
          "MPI_Bcast");
}

std::unique_ptr<WorkQueue> ProcessGroup::work_queue(std::int64_t total) const {
  return std::make_unique<CounterQueue>(communicator_, total);
}

std::unique_ptr<hdf5::OutputFile> ProcessGroup::create_output(const std::string& path,
                                                              RowWrites rows) const {
  // Rank 0 names the partial file after its own process, as one process
  // would (kpl::hdf5::remove_stale_partials finds it after a crash).
  std::string partial = path + ".partial-" + std::to_string(::getpid());
  broadcast(partial);
  agreed(*this, [&] { hdf5::require_writable_target(path); });
  const PropertyList access(
      H5P_FILE_ACCESS,
      [&](hid_t list) { return H5Pset_fapl_mpio(list, communicator_, MPI_INFO_NULL); },
      "MPI-IO file access");
  const PropertyList transfer =
      rows == RowWrites::collective
          ? PropertyList(
                H5P_DATASET_XFER,
                [](hid_t list) { return H5Pset_dxpl_mpio(list, H5FD_MPIO_COLLECTIVE); },
                "collective transfers")
          : PropertyList();
  return agreed(*this, [&] {
    return std::make_unique<hdf5::OutputFile>(
        path, hdf5::SharedOutput{access.get(), partial, rank_ == 0, transfer.get()});
  });
}

NodePlace node_local_rank(MPI_Comm communicator) {
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0;
  MPI_Comm_rank(communicator, &rank);
  check(MPI_Comm_split_type(communicator, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  NodePlace place;
  MPI_Comm_rank(node, &place.rank);
  MPI_Comm_size(node, &place.size);
  MPI_Comm_free(&node);
  return place;
}

}  // namespace kpl::mpi
