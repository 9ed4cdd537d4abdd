// What the GPU strategies of the compact-basis cross products share
// (impl/compact_basis_cross_products.hpp, impl/compact_basis_exact_parts.hpp):
// the width as a compile-time constant, a thread's read of a row, the
// launch shape, and a team's integer sums in scratch, added by native
// 32-bit atomics.
//
// Why integers: shared memory adds doubles, and 64-bit integers, only by
// compare-and-swap loops, which retry wherever a warp's rows collide; it
// adds 32-bit integers natively, so a 64-bit sum taken as two words costs
// two atomics, and a collision a replay, not a retry.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kpl {
namespace impl {

// launch(Width) with Width = 4 (cubic splines, the common case: the row's
// loops unroll) as a compile-time constant, else 0 (read at run time).
template <class Launch>
void with_compile_time_width(int width, const Launch& launch) {
  if (width == 4)
    launch(std::integral_constant<int, 4>());
  else
    launch(std::integral_constant<int, 0>());
}

// Width where it is a compile-time constant (> 0), else the basis' width
// read at run time.
template <int Width>
KOKKOS_INLINE_FUNCTION int width_or(int run_time_width) {
  if constexpr (Width > 0)
    return Width;
  else
    return run_time_width;
}

// Row i of blocks j and `other` as a thread of either strategy takes it
// whole: B_other's values (right), B_j's times the row's weight as
// left_of(weight, value) forms them (each strategy scales them its own
// way, and keeps its order of multiplication), and the entry
// (first_j(i), first_other(i)) of its first term. read() is false for a
// row of weight 0, which adds nothing.
template <int MaxWidth>
struct RowOfTwoBlocks {
  double left[MaxWidth], right[MaxWidth];
  int corner;

  // rows: impl/basis_rows.hpp's.
  template <class Rows, class WView, class LeftOf>
  KOKKOS_INLINE_FUNCTION bool read(const Rows& rows, const WView& w, std::int64_t j,
                                   std::int64_t other, std::int64_t i, int k, int width,
                                   const LeftOf& left_of) {
    const double weight = w.extent(0) != 0 ? double(w(i)) : 1.0;
    if (weight == 0) return false;
    const int first_j = rows(j, i, left, width);
    const int first_other = rows(other, i, right, width);
    for (int q = 0; q < width; ++q) left[q] = left_of(weight, left[q]);
    corner = first_j * k + first_other;
    return true;
  }
};

// The launch shape of the kernels: `teams` teams of team_size threads,
// with scratch_bytes of team scratch in shared memory (level 0) while they
// fit, else in the slower level-1 scratch; the level goes to the kernel,
// which asks for its scratch there. Traits: the policy's others (such as
// Kokkos::LaunchBounds).
template <class ExecutionSpace, class... Traits>
struct ScratchTeamLaunch {
  Kokkos::TeamPolicy<ExecutionSpace, Traits...> policy;
  int level;
};

template <class ExecutionSpace, class... Traits>
ScratchTeamLaunch<ExecutionSpace, Traits...> scratch_team_launch(const ExecutionSpace& space,
                                                                 std::int64_t teams, int team_size,
                                                                 std::size_t scratch_bytes) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Traits...>;
  const int level = scratch_bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;
  return {Policy(space, static_cast<int>(teams), team_size)
              .set_scratch_size(level, Kokkos::PerTeam(scratch_bytes)),
          level};
}

// A team's integer sums in scratch, their low and high 32-bit words in
// separate arrays (so that the low words' atomics spread over all
// banks), with the words' shared-memory addresses where they are there.
struct SplitScratchSums {
  unsigned* low;
  unsigned* high;
  int level;
  unsigned low_address = 0, high_address = 0;

  KOKKOS_INLINE_FUNCTION SplitScratchSums(unsigned* low_, unsigned* high_, int level_)
      : low(low_), high(high_), level(level_) {
#if defined(__CUDA_ARCH__)
    low_address = static_cast<unsigned>(__cvta_generic_to_shared(low));
    high_address = static_cast<unsigned>(__cvta_generic_to_shared(high));
#endif
  }

  // Entry a += value, mod 2^64: the low word by a native 32-bit atomic that
  // returns what it held, its carry added with the high word. Any
  // interleaving of such adds leaves the same sum mod 2^64.
  KOKKOS_INLINE_FUNCTION void add(int a, unsigned long long value) const {
    const int entries[] = {a};
    const unsigned long long values[] = {value};
    add_several(entries, values);
  }

  // Entries a[e] += values[e] for e < N, each as add() does it, with the N
  // low-word atomics issued before the first carry is needed. One add()
  // after another, each carry waits for its atomic's return before the
  // next atomic may issue (the asm statements keep their order), so a
  // thread pays one round trip to shared memory for every term; here N of
  // them overlap.
  template <int N>
  KOKKOS_INLINE_FUNCTION void add_several(const int (&a)[N],
                                          const unsigned long long (&values)[N]) const {
    unsigned before[N];
#if defined(__CUDA_ARCH__)
    if (level == 0) {
      for (int e = 0; e < N; ++e)
        asm volatile("atom.shared.add.u32 %0, [%1], %2;"
                     : "=r"(before[e])
                     : "r"(low_address + 4u * unsigned(a[e])), "r"(static_cast<unsigned>(values[e]))
                     : "memory");
      for (int e = 0; e < N; ++e)
        asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(high_address + 4u * unsigned(a[e])),
                     "r"(high_word(values[e], before[e]))
                     : "memory");
      return;
    }
#endif
    for (int e = 0; e < N; ++e) {
      before[e] = Kokkos::atomic_fetch_add(low + a[e], static_cast<unsigned>(values[e]));
      const unsigned high_part = high_word(values[e], before[e]);
      if (high_part != 0) Kokkos::atomic_add(high + a[e], high_part);
    }
  }

  // What value adds to the high word where the low word held `before`:
  // value's own high word and the carry out of the low one.
  KOKKOS_INLINE_FUNCTION static unsigned high_word(unsigned long long value, unsigned before) {
    const unsigned low_part = static_cast<unsigned>(value);
    return static_cast<unsigned>(value >> 32) + static_cast<unsigned>(before + low_part < before);
  }

  KOKKOS_INLINE_FUNCTION unsigned long long operator[](int a) const {
    return (static_cast<unsigned long long>(high[a]) << 32) |
           static_cast<unsigned long long>(low[a]);
  }
};

}  // namespace impl
}  // namespace kpl
