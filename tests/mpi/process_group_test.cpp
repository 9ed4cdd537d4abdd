// kpl::mpi::ProcessGroup under mpiexec -n 1, 2, 3: reductions, row blocks,
// the work queue, agreement on errors and shared output files. Expected
// values are computed here from the ranks' own numbers.
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/mpi.hpp>
#include <kpl/resources.hpp>

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct World {
  kpl::mpi::ProcessGroup group{MPI_COMM_WORLD};
  int rank = group.rank(), size = group.size();
};

// A directory all ranks share, fresh for one test.
std::string shared_directory(const kpl::ProcessGroup& group, const std::string& test) {
  std::string directory = std::filesystem::temp_directory_path() /
                          ("kpl-mpi-" + test + "-" + std::to_string(::getpid()));
  group.broadcast(directory);
  if (group.rank() == 0) std::filesystem::create_directories(directory);
  double nothing = 0;
  group.sum(&nothing, 1);  // a barrier: the directory exists before anyone writes
  return directory;
}

TEST(ProcessGroup, ReductionsGiveEveryRankTheSameValues) {
  World world;
  std::vector<double> values{double(world.rank + 1), -double(world.rank), 0.5};
  world.group.sum(values.data(), values.size());
  const double n = world.size;
  EXPECT_EQ(values[0], n * (n + 1) / 2);
  EXPECT_EQ(values[1], -n * (n - 1) / 2);
  EXPECT_EQ(values[2], 0.5 * n);
  std::int64_t count = std::int64_t(1) << (40 + world.rank % 2);
  world.group.sum(&count, 1);
  EXPECT_EQ(count, (std::int64_t(1) << 40) * ((world.size + 1) / 2) +
                       (std::int64_t(1) << 41) * (world.size / 2));
  double low = 10.0 - world.rank, high = low;
  world.group.min(&low, 1);
  world.group.max(&high, 1);
  EXPECT_EQ(low, 10.0 - (world.size - 1));
  EXPECT_EQ(high, 10.0);
}

TEST(ProcessGroup, BroadcastFromAnyRoot) {
  World world;
  for (int root = 0; root < world.size; ++root) {
    std::string text = world.rank == root ? "from " + std::to_string(root) : "";
    world.group.broadcast(text, root);
    EXPECT_EQ(text, "from " + std::to_string(root));
  }
}

TEST(ProcessGroup, RowBlocksCoverEveryRowOnce) {
  World world;
  for (const std::int64_t total : {0, 1, 2, 7, 1000}) {
    const auto block = kpl::row_block(world.group, total);
    std::vector<double> owner(total, 0.0);
    for (std::int64_t i = block.first; i < block.first + block.count; ++i) owner[i] += 1;
    world.group.sum(owner.data(), total);
    for (std::int64_t i = 0; i < total; ++i) EXPECT_EQ(owner[i], 1.0) << "row " << i;
    double largest = block.count, smallest = block.count;
    world.group.max(&largest, 1);
    world.group.min(&smallest, 1);
    EXPECT_LE(largest - smallest, 1.0) << total << " rows";
  }
}

// Collective row writes' schedule: round r gives item r R + p to process p;
// every process takes part in every round (a collective call in work and in
// idle would hang otherwise), a failed one through idle() to the end, and
// its error is then every process's.
TEST(ProcessGroup, WorkInRoundsDealsRoundRobinAndKeepsEveryProcessInEveryRound) {
  World world;
  for (const std::int64_t total : {0, 1, 2, 7}) {
    const std::int64_t rounds = (total + world.size - 1) / world.size;
    std::vector<std::int64_t> mine;
    std::int64_t idle = 0;
    const auto take_part = [&] {
      double present = 1;
      world.group.sum(&present, 1);
      EXPECT_EQ(present, world.size);
    };
    kpl::share_work_in_rounds(
        world.group, total,
        [&](std::int64_t item) {
          mine.push_back(item);
          take_part();
        },
        [&] {
          ++idle;
          take_part();
        });
    std::vector<std::int64_t> expected;
    for (std::int64_t item = world.rank; item < total; item += world.size) expected.push_back(item);
    EXPECT_EQ(mine, expected) << total << " items";
    EXPECT_EQ(idle, rounds - std::int64_t(expected.size())) << total << " items";
  }
  const int failing = world.size - 1;
  std::int64_t rounds_taken = 0;
  try {
    kpl::share_work_in_rounds(
        world.group, 3 * world.size,
        [&](std::int64_t) {
          if (world.rank == failing) throw kpl::input_error("bad chunk");
          ++rounds_taken;
          double present = 1;
          world.group.sum(&present, 1);
        },
        [&] {
          ++rounds_taken;
          double present = 1;
          world.group.sum(&present, 1);
        });
    FAIL() << "no error";
  } catch (const kpl::input_error& error) {
    EXPECT_NE(std::string(error.what()).find("bad chunk"), std::string::npos) << error.what();
  }
  EXPECT_EQ(rounds_taken, 3);
}

TEST(ProcessGroup, WorkQueueHandsOutEveryItemOnce) {
  World world;
  const std::int64_t total = 57;
  std::vector<double> taken(total, 0.0);
  kpl::share_work(world.group, total, [&](std::int64_t item) {
    ASSERT_GE(item, 0);
    ASSERT_LT(item, total);
    taken[item] += 1;
  });
  world.group.sum(taken.data(), total);
  for (std::int64_t i = 0; i < total; ++i) EXPECT_EQ(taken[i], 1.0) << "item " << i;
}

TEST(ProcessGroup, AnErrorOnOneRankIsThrownOnEvery) {
  World world;
  const int failing = world.size - 1;
  try {
    kpl::agreed(world.group, [&] {
      if (world.rank == failing) throw kpl::input_error("'x.h5': dataset /y is missing");
    });
    FAIL() << "no error";
  } catch (const kpl::input_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'x.h5': dataset /y is missing"), std::string::npos) << message;
    if (world.size > 1 && world.rank != failing)
      EXPECT_NE(message.find("on process " + std::to_string(failing)), std::string::npos);
  }
  EXPECT_TRUE(kpl::impl::last_failure_agreed());
  // The lowest failing rank's error wins, with its type.
  try {
    kpl::agreed(world.group, [&] {
      if (world.rank == 0) throw kpl::resource_error("not enough memory");
      throw std::invalid_argument("--bad");
    });
    FAIL() << "no error";
  } catch (const kpl::resource_error& error) {
    EXPECT_NE(std::string(error.what()).find("not enough memory"), std::string::npos);
  } catch (const std::invalid_argument&) {
    EXPECT_EQ(world.size, 1) << "rank 0's resource_error should win";
  }
  kpl::agreed(world.group, [] {});
  EXPECT_FALSE(kpl::impl::last_failure_agreed());
}

TEST(ProcessGroup, AFailedItemStopsTheOthers) {
  World world;
  const std::int64_t total = 1000;
  std::int64_t done = 0;
  EXPECT_THROW(kpl::share_work(world.group, total,
                               [&](std::int64_t item) {
                                 if (item == 3) throw kpl::runtime_error("item 3 failed");
                                 ++done;
                               }),
               kpl::runtime_error);
  world.group.sum(&done, 1);
  EXPECT_LT(done, total - 1) << "the queue was not drained";
}

// Independent and collective row writes; with one row, the ranks past the
// first take part in the collective write with none, and HDF5 says the
// transfer was collective.
class SharedOutput : public ::testing::TestWithParam<std::tuple<kpl::RowWrites, std::int64_t>> {};

TEST_P(SharedOutput, HoldsEveryRanksRows) {
  World world;
  const auto [writes, rows] = GetParam();
  const std::string directory = shared_directory(world.group, "shared");
  const std::string path = directory + "/out.h5";
  const std::int64_t columns = 3;
  {
    auto output = world.group.create_output(path, writes);
    output->create_dataset<double>("/values", {std::size_t(rows), std::size_t(columns)});
    const auto block = kpl::row_block(world.group, rows);
    kpl::hdf5::HostArray<double, 2> mine("mine", block.count, columns);
    for (std::int64_t i = 0; i < block.count; ++i)
      for (std::int64_t j = 0; j < columns; ++j) mine(i, j) = 10.0 * (block.first + i) + j;
    output->write_rows("/values", block.first, mine);
    if (writes == kpl::RowWrites::independent || world.size == 1) {
      EXPECT_EQ(output->row_transfer() >= 0, writes == kpl::RowWrites::collective);
    } else {
      H5D_mpio_actual_io_mode_t mode = H5D_MPIO_NO_COLLECTIVE;
      ASSERT_GE(H5Pget_mpio_actual_io_mode(output->row_transfer(), &mode), 0);
      EXPECT_NE(mode, H5D_MPIO_NO_COLLECTIVE) << "rank " << world.rank;
    }
    kpl::hdf5::HostArray<std::int64_t, 1> leaders("leader", 1);
    leaders(0) = world.rank;  // rank 0's value is the one stored
    output->write("/leader", leaders);
    output->write_attribute("/", "ranks", std::int64_t(world.size));
    kpl::agreed(world.group, [&] { output->commit(); });
  }
  const kpl::hdf5::InputFile input(path);
  const auto values = input.read<double, 2>("/values");
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < columns; ++j) EXPECT_EQ(values(i, j), 10.0 * i + j);
  EXPECT_EQ((input.read<std::int64_t, 1>("/leader")(0)), 0);
  EXPECT_EQ(input.read_integer_attribute("/", "ranks"), world.size);
  std::int64_t partials = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    partials += entry.path().filename().string().find(".partial-") != std::string::npos;
  EXPECT_EQ(partials, 0);
  double nothing = 0;
  world.group.sum(&nothing, 1);  // everyone has read before rank 0 cleans up
  if (world.rank == 0) std::filesystem::remove_all(directory);
}

INSTANTIATE_TEST_SUITE_P(
    ProcessGroup, SharedOutput,
    ::testing::Values(std::make_tuple(kpl::RowWrites::independent, std::int64_t{11}),
                      std::make_tuple(kpl::RowWrites::collective, std::int64_t{11}),
                      std::make_tuple(kpl::RowWrites::collective, std::int64_t{1})));

TEST(ProcessGroup, AFailureBeforeCommitLeavesNothing) {
  World world;
  const std::string directory = shared_directory(world.group, "abandoned");
  const std::string path = directory + "/out.h5";
  EXPECT_THROW(
      {
        auto output = world.group.create_output(path);
        output->create_dataset<double>("/values", {4});
        kpl::agreed(world.group, [&] {
          if (world.rank == world.size - 1) throw kpl::input_error("bad rows");
        });
        output->commit();
      },
      kpl::input_error);
  double nothing = 0;
  world.group.sum(&nothing, 1);
  EXPECT_TRUE(std::filesystem::is_empty(directory)) << "output or partial file left behind";
  world.group.sum(&nothing, 1);
  if (world.rank == 0) std::filesystem::remove_all(directory);
}

}  // namespace
