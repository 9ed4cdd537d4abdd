#include "process_session.hpp"

#include <kpl/config.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/resources.hpp>

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#if KPL_HAS_MPI
#include <kpl/mpi.hpp>

#include <mpi.h>
#endif

namespace kpl::cli {
namespace {

const ProcessSession* current_session = nullptr;

#if KPL_HAS_MPI
// Whether an MPI launcher started this process: OpenMPI's mpirun, a PMI
// launcher (MPICH's hydra, Slurm) or a PMIx one.
bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(variable) != nullptr) return true;
  return false;
}
#endif

}  // namespace

// The host threads of one rank: the CPUs the launcher bound it to (OpenMPI
// binds small jobs to one core per rank: more threads would share it), else
// the node's hardware threads shared among its ranks.
int ProcessSession::threads_for_rank() const {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    const int bound = CPU_COUNT(&allowed);
    if (bound > 0 && bound < hardware) return bound;
  }
  return std::max(1, hardware / node_size_);
}

ProcessSession::ProcessSession(int& argc, char**& argv) {
  group_ = &single_process();
#if KPL_HAS_MPI
  if (!launched_by_mpi()) return;
  int provided = 0;
  // Only the thread that called MPI_Init calls MPI (Kokkos' threads never do).
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "kpl: MPI_Init failed\n");
    std::exit(4);
  }
  mpi_ = true;
  owned_ = std::make_unique<mpi::ProcessGroup>(MPI_COMM_WORLD);
  group_ = owned_.get();
  const auto place = mpi::node_local_rank(MPI_COMM_WORLD);
  node_rank_ = place.rank;
  node_size_ = place.size;
  // Ranks other than 0 keep stderr for their own failures; stdout (help,
  // info) is rank 0's alone.
  if (group_->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
    std::fprintf(stderr, "kpl: cannot silence stdout on rank %d\n", group_->rank());
  }
#else
  (void)argc;
  (void)argv;
#endif
}

ProcessSession::~ProcessSession() {
#if KPL_HAS_MPI
  if (!mpi_) return;
  owned_.reset();  // frees its communicator before MPI_Finalize
  MPI_Finalize();
#endif
}

std::vector<std::string> ProcessSession::for_this_rank(std::vector<std::string> arguments) const {
  if (!mpi_) return arguments;
  bool device_named = false, threads_named = std::getenv("OMP_NUM_THREADS") != nullptr;
  for (const auto& argument : arguments) {
    device_named = device_named || argument.rfind("--kokkos-device-id", 0) == 0 ||
                   argument.rfind("--kokkos-map-device-id-by", 0) == 0;
    threads_named = threads_named || argument.rfind("--kokkos-threads", 0) == 0 ||
                    argument.rfind("--kokkos-num-threads", 0) == 0;
  }
  const int gpus = gpu_count();
  if (gpus > 0 && !device_named)
    arguments.push_back("--kokkos-device-id=" + std::to_string(node_rank_ % gpus));
  if (!threads_named) arguments.push_back(compat::host_threads_argument(threads_for_rank()));
  return arguments;
}

void ProcessSession::abort(int status) const {
  hdf5::remove_uncommitted_outputs();
#if KPL_HAS_MPI
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  std::_Exit(status);
}

const ProcessGroup& processes() {
  return current_session != nullptr ? current_session->group() : single_process();
}

bool prints_summary() { return current_session == nullptr || current_session->is_root(); }

void set_current_session(const ProcessSession* session) { current_session = session; }

}  // namespace kpl::cli
