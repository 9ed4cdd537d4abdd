// The GAM across the processes of a kpl::ProcessGroup (kpl/gam.hpp): each
// process holds its own rows, and every sum over rows (B^T u each iteration,
// B_j^T W B_j, the offset, the risks, the data checks' counts) is summed over
// the group on the host, so that every process selects the same learner and
// ends with the same model. With one process nothing is copied or waited for.
#pragma once

#include <kpl/impl/gam_risk.hpp>
#include <kpl/process_group.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <cstdint>
#include <vector>

namespace kpl {
namespace impl {

// `values` (a contiguous View of doubles, or of structs of doubles such as
// RiskSums) summed over the group in place, through a host copy where it
// lives on a device. Returns the seconds it took.
template <class ExecutionSpace, class View>
double gam_sum_over(const ProcessGroup& group, const ExecutionSpace& space, const View& values) {
  using Value = typename View::non_const_value_type;
  static_assert(sizeof(Value) % sizeof(double) == 0, "gam_sum_over sums doubles");
  if (group.is_single()) return 0;
  space.fence();  // the timer measures the exchange, not the kernels before it
  Kokkos::Timer timer;
  const auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), values);
  Kokkos::deep_copy(host, values);
  group.sum(reinterpret_cast<double*>(host.data()),
            static_cast<std::int64_t>(host.size() * (sizeof(Value) / sizeof(double))));
  Kokkos::deep_copy(values, host);
  return timer.seconds();
}

inline void gam_sum_over(const ProcessGroup& group, RiskSums& sums) {
  double both[2] = {sums.training, sums.held_out};
  group.sum(both, 2);
  sums = {both[0], both[1]};
}

// Where this process's rows lie among all of the group's, taken in rank
// order: the first one's global index, and the total.
struct GamRows {
  std::int64_t first = 0;
  std::int64_t total = 0;
};

inline GamRows gam_rows(const ProcessGroup& group, std::int64_t rows) {
  if (group.is_single()) return {0, rows};
  std::vector<std::int64_t> counts(group.size(), 0);
  counts[group.rank()] = rows;
  group.sum(counts.data(), group.size());
  GamRows place;
  for (int rank = 0; rank < group.size(); ++rank) {
    if (rank < group.rank()) place.first += counts[rank];
    place.total += counts[rank];
  }
  return place;
}

// Whether `mine` holds on any process (progress reports: if one process
// reports, all take part in the sums its reports need).
inline bool gam_on_any(const ProcessGroup& group, bool mine) {
  if (group.is_single()) return mine;
  double any = mine ? 1 : 0;
  group.max(&any, 1);
  return any > 0;
}

// Whether a progress report is due, on every process alike: rank 0's clock
// decides (a time-based choice made by each process alone would leave them
// at different collective calls).
inline bool gam_report_due(const ProcessGroup& group, bool due_here, bool last) {
  if (group.is_single()) return due_here || last;
  double due = last || (group.rank() == 0 && due_here) ? 1 : 0;
  group.max(&due, 1);
  return due > 0;
}

}  // namespace impl
}  // namespace kpl
