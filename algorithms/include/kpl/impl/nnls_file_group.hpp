// What `kpl nnls` and `kpl deconv` share when they run on a process group
// (kpl/process_group.hpp): the summary of how the work was spread, and the
// collective steps both take before and after their chunks are handed out.
#pragma once

#include <kpl/hdf5_io.hpp>
#include <kpl/nnls_options.hpp>
#include <kpl/process_group.hpp>
#include <kpl/resources.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kpl {

// How a file run's systems (waveforms) were spread over the processes of
// its group; the same values on every process (reduced over the group).
// Busy time is the time a process spent solving: chunks are handed out
// first come, first served, so imbalance shows what that could not even out.
struct WorkBalance {
  int ranks = 1;
  double busy_seconds_max = 0;
  double busy_seconds_mean = 0;
  std::int64_t items_max = 0;  // systems (waveforms) solved by one process
  std::int64_t items_min = 0;
  // max / mean - 1: 0 when every process was busy equally long.
  double imbalance() const {
    return busy_seconds_mean > 0 ? busy_seconds_max / busy_seconds_mean - 1 : 0;
  }
};

// "3 processes: solving 1.2 s max, 1.1 s mean per process (imbalance 9.1%);
// 330-334 waveforms each" (`items` names them).
std::string describe(const WorkBalance& balance, const std::string& items);

namespace impl {

// One process's part of a file run, before the group reduces it.
struct ProcessTally {
  double busy_seconds = 0;
  std::int64_t items = 0;
  std::int64_t chunks = 0;
  std::int64_t status_counts[nnls_status_count] = {};
};

// The tallies of every process: status counts and chunks summed (into
// `tally`), the balance of busy time and items. Collective.
WorkBalance reduce_tallies(const ProcessGroup& group, ProcessTally& tally);

// Systems per chunk when `total` systems are handed out in chunks of at
// most `chunk` over the group (see the definition for why).
std::int64_t group_chunk(const ProcessGroup& group, std::int64_t total, std::int64_t chunk);

// Throws input_error (on every process) unless every process sees an input
// of the same `shape` (text): ranks given different files (an MPMD launch,
// nodes that see different copies) would write one output inconsistently.
// Collective; call it inside kpl::agreed.
void require_same_input(const ProcessGroup& group, const std::string& path,
                        const std::string& shape);

// require_resources for one process's part: memory on every process, the
// disk of the one output once (rank 0).
void require_process_resources(const ProcessGroup& group, const std::string& what,
                               ResourceNeeds needs);

// Throws input_error at a NaN or Inf in `rows` (a host View of rows of
// `dataset`, row `first` on). On several processes the rows a chunk reads
// were checked in advance by another process, which may have read another
// copy of the input (a node's own disk): they are checked again as they are
// solved, so that no process solves data nobody checked.
template <class Rows>
void require_finite_rows(const hdf5::InputFile& input, const std::string& dataset, const Rows& rows,
                         std::int64_t first) {
  std::vector<std::size_t> extents;
  for (unsigned d = 0; d < Rows::rank; ++d) extents.push_back(rows.extent(d));
  hdf5::impl::check_finite(input.path(), dataset, rows.data(), extents, std::size_t(first));
}

// The chunks over the group: handed out dynamically with independent row
// writes, or dealt in rounds with collective ones (RowWrites), where
// `write_nothing()` is a process's empty part of a round's writes.
template <class Solve, class WriteNothing>
void share_chunks(const ProcessGroup& group, RowWrites writes, std::int64_t chunks, Solve&& solve,
                  WriteNothing&& write_nothing) {
  if (writes == RowWrites::collective && !group.is_single())
    share_work_in_rounds(group, chunks, solve, write_nothing);
  else
    share_work(group, chunks, solve);
}

}  // namespace impl
}  // namespace kpl
