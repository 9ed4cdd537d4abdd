// The processes one `kpl` command runs on: every rank of an MPI launch
// (mpirun / mpiexec / srun, in a build with KPL_ENABLE_MPI), or this process
// alone. MPI is initialised only when a launcher started kpl, so `kpl`
// without one behaves as a plain program; it is initialised before Kokkos,
// which then drives the GPU of this rank's place on its node.
#pragma once

#include <kpl/process_group.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kpl::cli {

class ProcessSession {
 public:
  ProcessSession(int& argc, char**& argv);
  ~ProcessSession();  // MPI_Finalize
  ProcessSession(const ProcessSession&) = delete;
  ProcessSession& operator=(const ProcessSession&) = delete;

  const ProcessGroup& group() const { return *group_; }
  bool is_root() const { return group_->rank() == 0; }

  // Kokkos' arguments for this rank under MPI: --kokkos-device-id=<node-local
  // rank % GPUs> when there are GPUs and the user named no device, and, when
  // neither OMP_NUM_THREADS nor a thread count was given, as many host
  // threads as CPUs the launcher bound the rank to, or the node's hardware
  // threads shared among its ranks (else every rank would start a thread per
  // core).
  std::vector<std::string> for_this_rank(std::vector<std::string> kokkos_arguments) const;

  // Ends every rank with `status` after an error of this rank alone (the
  // others may wait for it in a collective call): MPI_Abort.
  [[noreturn]] void abort(int status) const;

 private:
  int threads_for_rank() const;

  std::unique_ptr<ProcessGroup> owned_;
  const ProcessGroup* group_ = nullptr;
  int node_rank_ = 0, node_size_ = 1;
  bool mpi_ = false;
};

// The session of the running command (set by main()), for the commands: the
// group they run on, and whether this process prints the summaries (rank 0).
const ProcessGroup& processes();
bool prints_summary();
void set_current_session(const ProcessSession* session);

}  // namespace kpl::cli
