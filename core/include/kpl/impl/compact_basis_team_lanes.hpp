// What the GPU strategies of the compact-basis cross products share: a
// thread's vector lanes each own one (q, r) of a row's width x width outer
// product, the team's k x k sums sit in scratch with padded rows, and their
// atomics name shared memory where the sums are in it.
//
// Why lanes per term: with a thread per row, adding all width^2 terms of
// its row, a warp's 32 atomics collide wherever its rows share a knot
// interval (several ways for k <= 32); lanes of one row hit distinct
// entries, so a warp's two rows collide only when both share an interval.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kpl {
namespace impl {

// Rows of a team's k x k sums (8-byte words) are `stride` apart: the
// smallest stride >= k that is 4 modulo 16, so that the rows q = 0..3 of a
// 4 x 4 block start 8 banks apart and its 16 entries take distinct banks.
KOKKOS_INLINE_FUNCTION int team_sums_stride(int k) { return k + ((4 - k) % 16 + 16) % 16; }

// (q, r) of lane `term` of a width x width outer product; Width is the
// width as a compile-time constant, or 0 for the run-time `width`.
template <int Width>
KOKKOS_INLINE_FUNCTION void term_of_lane(int term, int width, int& q, int& r) {
  if constexpr (Width > 0) {
    q = term / Width;
    r = term % Width;
  } else {
    q = term / width;
    r = term - q * width;
  }
}

template <int Width>
KOKKOS_INLINE_FUNCTION int terms_of_width(int width) {
  if constexpr (Width > 0)
    return Width * Width;
  else
    return width * width;
}

// launch(Width) with Width = 4 (cubic splines, the common case: the terms'
// (q, r) by shifts) as a compile-time constant, else 0 (read at run time).
template <class Launch>
void with_lane_width(int width, const Launch& launch) {
  if (width == 4)
    launch(std::integral_constant<int, 4>());
  else
    launch(std::integral_constant<int, 0>());
}

// The launch shape of the lane kernels: `teams` teams of team_size threads
// on up to vector_length lanes, with scratch_bytes of team scratch in shared
// memory (level 0) while they fit, else in the slower level-1 scratch; the
// level goes to the kernel, which asks for its scratch there.
template <class ExecutionSpace>
struct LaneLaunch {
  Kokkos::TeamPolicy<ExecutionSpace> policy;
  int level;
};

template <class ExecutionSpace>
LaneLaunch<ExecutionSpace> lane_launch(const ExecutionSpace& space, std::int64_t teams,
                                       int team_size, int vector_length,
                                       std::size_t scratch_bytes) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int level = scratch_bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;
  vector_length = std::min(vector_length, static_cast<int>(Policy::vector_length_max()));
  return {Policy(space, static_cast<int>(teams), team_size, vector_length)
              .set_scratch_size(level, Kokkos::PerTeam(scratch_bytes)),
          level};
}

// Vector lanes for a row's width^2 terms (a power of two, at most 32).
inline int lanes_for_width(int width) {
  int lanes = 1;
  while (lanes < width * width && lanes < 32) lanes *= 2;
  return lanes;
}

// What lane (q, r) reads of row i: the row's weight, B_j(i, first_j + q),
// B_other(i, first_other + r), and the index of the entry it adds to in the
// team's sums (rows team_sums_stride(k) apart).
struct LaneRow {
  double weight = 0;
  double left = 0, right = 0;
  int target = 0;
};

template <class T, class WView>
struct LaneRowReader {
  const int* first_j;
  const int* first_other;
  const T* left_values;
  const T* right_values;
  WView w;
  int stride, offset;

  KOKKOS_INLINE_FUNCTION LaneRow operator()(std::int64_t i) const {
    LaneRow row;
    row.weight = w.extent(0) != 0 ? double(w(i)) : 1.0;
    row.left = double(left_values[i]);
    row.right = double(right_values[i]);
    row.target = first_j[i] * stride + first_other[i] + offset;
    return row;
  }
};

template <class FirstView, class ValuesView, class WView>
KOKKOS_INLINE_FUNCTION auto lane_row_reader(const FirstView& first, const ValuesView& values,
                                            const WView& w, std::int64_t j, std::int64_t other,
                                            int q, int r, int k) {
  using T = typename ValuesView::non_const_value_type;
  const int stride = team_sums_stride(k);
  return LaneRowReader<T, WView>{
      &first(j, 0), &first(other, 0), &values(j, q, 0), &values(other, r, 0), w,
      stride,       q * stride + r};
}

// add(row) for rows i, i + step, ... below end of non-zero weight, each
// loaded one row ahead, so that the next row's loads are in flight while
// this row's atomic waits on shared memory. (The exact parts, three
// atomics a term, keep their own loop: this measured slower there.)
template <class Reader, class Add>
KOKKOS_INLINE_FUNCTION void for_each_lane_row(const Reader& read, std::int64_t i, std::int64_t end,
                                              std::int64_t step, const Add& add) {
  LaneRow next;
  if (i < end) next = read(i);
  for (; i < end; i += step) {
    const LaneRow row = next;
    if (i + step < end) next = read(i + step);
    if (row.weight != 0) add(row);
  }
}

// *target += value in a team's scratch, atomically. On CUDA, Kokkos' atomic
// on a scratch pointer is a generic one that asks at run time which memory
// the address is in; level-0 scratch is shared memory, so this says so.
// Shared memory adds doubles by compare-and-swap either way. (PTX has the
// double add from sm_60 on; older targets keep Kokkos' atomic.)
KOKKOS_INLINE_FUNCTION void atomic_add_to_scratch(double* target, double value, int level) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 600
  if (level == 0) {
    const auto address = static_cast<unsigned>(__cvta_generic_to_shared(target));
    asm volatile("red.shared.add.f64 [%0], %1;" ::"r"(address), "d"(value) : "memory");
    return;
  }
#else
  (void)level;
#endif
  Kokkos::atomic_add(target, value);
}

// The same for 64-bit integers: shared memory has no 64-bit integer add
// either (a compare-and-swap loop), but adds 32-bit words natively, so the
// low word is added first and the carry out of it goes with the high word;
// the sum mod 2^64 is the same.
KOKKOS_INLINE_FUNCTION void atomic_add_to_scratch(unsigned long long* target,
                                                  unsigned long long value, int level) {
#if defined(__CUDA_ARCH__)
  if (level == 0) {
    const auto address = static_cast<unsigned>(__cvta_generic_to_shared(target));
    const unsigned low = static_cast<unsigned>(value);
    unsigned high = static_cast<unsigned>(value >> 32), before;
    asm volatile("atom.shared.add.u32 %0, [%1], %2;"
                 : "=r"(before)
                 : "r"(address), "r"(low)
                 : "memory");
    high += static_cast<unsigned>(before + low < before);  // the carry
    if (high != 0)
      asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(address + 4), "r"(high) : "memory");
    return;
  }
#else
  (void)level;
#endif
  Kokkos::atomic_add(target, value);
}

}  // namespace impl
}  // namespace kpl
