// The entry points called with an MPI communicator (kpl/mpi_entry_points.hpp)
// under mpiexec -n 1, 2, 3: their outputs are those of one process (files
// read back here and compared bit for bit; the GAM's selections equal).
#include <kpl/hdf5_io.hpp>
#include <kpl/mpi_entry_points.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace {

// A directory all ranks share, with rank 0's process id in its name.
std::string shared_directory(const std::string& test) {
  int pid = ::getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string directory = std::filesystem::temp_directory_path() /
                                ("kpl-mpi-entry-" + test + "-" + std::to_string(pid));
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::filesystem::create_directories(directory);
  MPI_Barrier(MPI_COMM_WORLD);
  return directory;
}

template <class T>
void expect_same_dataset(const std::string& a, const std::string& b, const std::string& name) {
  const auto x = kpl::hdf5::InputFile(a).read<T, 2>(name);
  const auto y = kpl::hdf5::InputFile(b).read<T, 2>(name);
  ASSERT_EQ(x.extent(0), y.extent(0));
  ASSERT_EQ(x.extent(1), y.extent(1));
  for (std::size_t i = 0; i < x.extent(0); ++i)
    for (std::size_t j = 0; j < x.extent(1); ++j)
      ASSERT_EQ(x(i, j), y(i, j)) << name << "(" << i << ", " << j << ")";
}

TEST(MpiEntryPoints, DeconvolveFileWithACommunicator) {
  const std::string directory = shared_directory("deconv");
  const std::string input = directory + "/in.h5";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    kpl::DeconvolutionSimulation simulation;
    simulation.waveforms = 37;
    simulation.samples = 120;
    kpl::simulate_deconvolution_file(simulation, input);
    kpl::deconvolve_file(input, directory + "/alone.h5", {});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const auto summary =
      kpl::deconvolve_file(MPI_COMM_WORLD, input, directory + "/together.h5", {});
  EXPECT_EQ(summary.waveforms, 37);
  expect_same_dataset<double>(directory + "/alone.h5", directory + "/together.h5", "/x");
  expect_same_dataset<double>(directory + "/alone.h5", directory + "/together.h5", "/fit");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(directory);
}

TEST(MpiEntryPoints, FitGamWithACommunicator) {
  kpl::GamSimulation simulation;
  simulation.observations = 301;
  simulation.covariates = 6;
  simulation.informative = 2;
  const auto data = kpl::simulate_gam(simulation);
  kpl::GamOptions options;
  options.basis_size = 12;
  options.mstop = 30;
  const auto alone = kpl::fit_gam(Kokkos::DefaultHostExecutionSpace(), data.X, data.y, options);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::int64_t n = simulation.observations;
  const std::int64_t first = n * rank / size, last = n * (rank + 1) / size;
  const auto X = Kokkos::subview(data.X, std::make_pair(first, last), Kokkos::ALL);
  const auto y = Kokkos::subview(data.y, std::make_pair(first, last));
  const auto together =
      kpl::fit_gam(Kokkos::DefaultHostExecutionSpace(), X, y, options, MPI_COMM_WORLD);
  EXPECT_EQ(together.observations, n);
  EXPECT_EQ(together.selected, alone.selected);
}

}  // namespace
