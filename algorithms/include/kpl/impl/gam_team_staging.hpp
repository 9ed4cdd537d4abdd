// Copies a GAM learner's small blocks (M_s, c_s, R_j: k x k or k values)
// from device memory to a team's scratch before the team sums over them
// (impl/gam_take_step.hpp, impl/gam_gram_iteration.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// to(0 .. count) := from(offset ..), by all the team's threads, each issuing
// a batch of loads before it stores any: one memory latency a batch, not one
// an element. A team that instead reads a block where it sums over it, one
// thread a row in a fixed order, waits on a load for every term.
// Rows of `columns` values are stored `stride` apart (padded_stride's, for
// a k x k block; columns for a vector).
template <class Member, class From, class To>
KOKKOS_INLINE_FUNCTION void gam_stage(const Member& member, const From& from, std::int64_t offset,
                                      const To& to, int count, int columns = 1, int stride = 1) {
  constexpr int batch = 8;
  const int threads = member.team_size();
  for (int first = member.team_rank(); first < count; first += batch * threads) {
    double loaded[batch];
    for (int r = 0; r < batch; ++r) {
      const int e = first + r * threads;
      loaded[r] = e < count ? double(from(offset + e)) : 0.0;
    }
    for (int r = 0; r < batch; ++r) {
      const int e = first + r * threads;
      if (e < count) to(e / columns * stride + e % columns) = loaded[r];
    }
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
