// The general broadcast kernel (Çoban, Yuret & Unat, §III-B/C): any shape,
// threads over chunks of rows. Include kpl/broadcast.hpp, not this file.
#pragma once

#include <kpl/impl/broadcast_plan.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>

namespace kpl::impl {

// The general kernel (§III-B/C), organised by rows: each (thread, work item)
// takes one chunk of one row, finds the three operands' row offsets from the
// row's coordinate, and its vector lanes sweep the chunk, consecutive lanes
// on consecutive elements. A persistent grid: each thread walks work items
// strided by the number of threads, so short rows do not cost a block each.
template <class Op, class T, class ExecutionSpace>
struct BroadcastGeneral {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Op op;
  BroadcastPlan plan;
  const T* a;
  const T* b;
  T* out;
  std::int64_t chunk_length;  // elements of a row one work item handles
  std::int64_t chunks_per_row;
  std::int64_t work_items;  // rows * chunks_per_row

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t threads = std::int64_t(member.league_size()) * member.team_size();
    for (std::int64_t work =
             std::int64_t(member.league_rank()) * member.team_size() + member.team_rank();
         work < work_items; work += threads) {
      process(member, work);
    }
  }

  KOKKOS_INLINE_FUNCTION void process(const member_type& member, const std::int64_t work) const {
    const std::int64_t row = work / chunks_per_row;
    const std::int64_t begin = (work % chunks_per_row) * chunk_length;
    const std::int64_t columns = plan.columns;
    const std::int64_t end = begin + chunk_length < columns ? begin + chunk_length : columns;
    const RowCursor<> cursor(plan, row);
    const std::int64_t sa = plan.a_column_stride, sb = plan.b_column_stride,
                       so = plan.out_column_stride;
    Kokkos::parallel_for(
        Kokkos::ThreadVectorRange(member, static_cast<int>(end - begin)), [&](const int k) {
          const std::int64_t j = begin + k;
          out[cursor.out + j * so] = op(a[cursor.a + j * sa], b[cursor.b + j * sb]);
        });
  }
};

template <class ExecutionSpace, class Op, class T>
void launch_general(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                    const T* a, const T* b, T* out, int requested_team_size = 0) {
  constexpr bool host = is_host_space<ExecutionSpace>();
  const std::int64_t columns = plan.columns;
  // Chunks of up to 2048 (GPU: 64 per lane) so long rows still spread over
  // the whole device; CPUs take whole rows.
  const std::int64_t chunk_length = host ? columns : std::min<std::int64_t>(columns, 2048);
  const std::int64_t chunks_per_row = (columns + chunk_length - 1) / chunk_length;
  const std::int64_t work_items = plan.rows * chunks_per_row;
  int vector_length = 1;
  if constexpr (!host) {
    while (vector_length < 32 && vector_length < columns) vector_length *= 2;
  }
  const int team_size =
      requested_team_size > 0 ? requested_team_size : (host ? 1 : 256 / vector_length);
  // GPUs: enough teams to fill the device a few times over, never more than
  // the work. CPUs: one team per work item.
  const std::int64_t needed = (work_items + team_size - 1) / team_size;
  const std::int64_t fill =
      host ? needed
           : 4 * std::max<std::int64_t>(
                     1, space.concurrency() / (std::int64_t(team_size) * vector_length));
  const auto teams = static_cast<int>(std::min(needed, fill));
  Kokkos::parallel_for("kpl::broadcast::general",
                       Kokkos::TeamPolicy<ExecutionSpace>(space, teams, team_size, vector_length),
                       BroadcastGeneral<Op, T, ExecutionSpace>{op, plan, a, b, out, chunk_length,
                                                               chunks_per_row, work_items});
}

}  // namespace kpl::impl
