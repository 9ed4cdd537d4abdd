// Copies a GAM learner's small blocks (M_s, c_s, R_j: k x k or k values)
// from device memory to a team's scratch before the team sums over them
// (impl/gam_take_step.hpp, impl/gam_gram_iteration.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// One block to stage: to(0 .. count) := from(offset ..), its rows of
// `columns` values stored `stride` apart in `to` (padded_stride's, for a
// k x k block; a vector is one row).
template <class From, class To>
struct GamStagedBlock {
  From from;
  std::int64_t offset;
  To to;
  int count, columns = 1, stride = 1;
};

// Stages the blocks with all the team's threads, each issuing its loads of
// every block (up to `batch` elements of each) before it stores any: one
// memory latency a round for all the blocks, not one a block, nor one an
// element. A team that instead reads a block where it sums over it, one
// thread a row in a fixed order, waits on a load for every term.
template <class Member, class... Blocks>
KOKKOS_INLINE_FUNCTION void gam_stage(const Member& member, const Blocks&... blocks) {
  constexpr int count = sizeof...(Blocks), batch = count > 2 ? 4 : 8;
  const int threads = member.team_size();
  int largest = 0;
  ((largest = blocks.count > largest ? blocks.count : largest), ...);
  for (int first = member.team_rank(); first < largest; first += batch * threads) {
    double loaded[count][batch];
    int b = 0;
    const auto load = [&](const auto& block) {
      for (int r = 0; r < batch; ++r) {
        const int e = first + r * threads;
        loaded[b][r] = e < block.count ? double(block.from(block.offset + e)) : 0.0;
      }
      ++b;
    };
    (load(blocks), ...);
    b = 0;
    const auto store = [&](const auto& block) {
      for (int r = 0; r < batch; ++r) {
        const int e = first + r * threads;
        if (e < block.count)
          block.to(e / block.columns * block.stride + e % block.columns) = loaded[b][r];
      }
      ++b;
    };
    (store(blocks), ...);
  }
}

// The distance between a staged k x k block's rows: odd, so that the k
// threads that each sum one row, reading column b at once, find their
// doubles in different banks of shared memory. Rows k doubles apart put a
// warp's 32 reads in one bank where k is a multiple of 16, read one at a
// time.
KOKKOS_INLINE_FUNCTION int padded_stride(int k) { return k | 1; }

}  // namespace impl
}  // namespace kpl
