// Test driver for the tests run under mpiexec: MPI, then Kokkos (one thread
// per rank unless told otherwise), GoogleTest on every rank with rank 0's
// report printed, and an exit status that fails when any rank failed.
#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>

namespace {
// On ranks other than 0: only the failed assertions, with the rank.
class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {  // the other ranks report only their failures
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly(rank));
  }
  Kokkos::initialize(argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  Kokkos::finalize();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed) std::fprintf(stderr, "rank %d: a test failed\n", rank);
  MPI_Finalize();
  return any_failed;
}
