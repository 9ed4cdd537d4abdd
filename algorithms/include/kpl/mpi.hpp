// kpl across MPI ranks (built with KPL_ENABLE_MPI): a kpl::ProcessGroup
// over a communicator the caller owns. kpl never calls MPI_Init or
// MPI_Finalize inside the library; initialise MPI first, then Kokkos (one GPU
// per rank: kpl::mpi::node_local_rank() picks it), and pass the group to the
// entry points that take one:
//
//   kpl::mpi::ProcessGroup ranks(MPI_COMM_WORLD);
//   kpl::deconvolve_file(ranks, "in.h5", "out.h5", options);   // kpl/deconvolution.hpp
//   kpl::fit_gam(space, X_rows, y_rows, options, ranks);        // kpl/gam.hpp
//
// Every rank calls the same entry points in the same order; each returns the
// same result on every rank, or throws the same error on every rank
// (kpl::agree). Reductions run on the host (p k numbers per GAM iteration):
// kpl needs no GPU-aware MPI.
#pragma once

#include <kpl/process_group.hpp>

#include <mpi.h>

#include <memory>
#include <string>

namespace kpl::mpi {

class ProcessGroup final : public kpl::ProcessGroup {
 public:
  // Duplicates `communicator` (kpl's messages never mix with the caller's);
  // the duplicate is freed with the group. Collective over it.
  explicit ProcessGroup(MPI_Comm communicator);
  ~ProcessGroup() override;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm communicator() const { return communicator_; }

  void sum(double* values, std::int64_t count) const override;
  void sum(std::int64_t* values, std::int64_t count) const override;
  void min(double* values, std::int64_t count) const override;
  void max(double* values, std::int64_t count) const override;
  void broadcast(std::string& text, int root = 0) const override;
  std::unique_ptr<WorkQueue> work_queue(std::int64_t total) const override;
  std::unique_ptr<hdf5::OutputFile> create_output(
      const std::string& path, RowWrites rows = RowWrites::independent) const override;

 private:
  MPI_Comm communicator_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

// This rank's place among the ranks of its node (MPI_COMM_TYPE_SHARED), and
// how many share the node: rank r drives GPU r % (GPUs on the node).
struct NodePlace {
  int rank = 0;
  int size = 1;
};
NodePlace node_local_rank(MPI_Comm communicator);

}  // namespace kpl::mpi
