// What every gemv strategy shares (kpl/gemv.hpp; the strategies are
// impl/gemv_thread_per_row.hpp, impl/gemv_team_per_dot.hpp and
// impl/gemv_partial_rows.hpp). Users need not read this.
//
// Every kernel sees one problem: for each batch entry b and output r,
//   y(b, r) = alpha * sum_c M(b, r, c) * x(c) + beta * y(b, r),
// where M is A (op N) or A^T (op T) addressed through strides, so one kernel
// serves both operations and every layout. What differs between kernels is
// which of M's two strides is 1 (GemvAccess):
//   - "outputs contiguous" (op N on LayoutLeft, op T on LayoutRight): adjacent
//     outputs are adjacent in memory, so adjacent threads take adjacent
//     outputs (ThreadPerOutputs);
//   - "reduction contiguous" (op N on LayoutRight, op T on LayoutLeft): a dot
//     product runs along memory, so adjacent threads (or vector lanes) take
//     adjacent terms of it (LanesPerDot, RowBlockPerTeam).
// Long reductions are cut into segments; each (output, segment) partial sum
// goes into a partial matrix that is then reduced (Sieminski & Lee 2023,
// §3.2.3).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>

namespace kpl::impl {

template <class T>
struct GemvProblem {
  const T* matrix;
  const T* x;
  T* y;
  std::int64_t batch;
  std::int64_t outputs;  // length of y per batch entry
  std::int64_t length;   // length of x: terms per dot product
  // Strides of M(b, r, c), x(c) and y(b, r), in elements.
  std::int64_t batch_stride;
  std::int64_t output_stride;
  std::int64_t length_stride;
  std::int64_t x_stride;
  std::int64_t y_batch_stride;
  std::int64_t y_stride;
  T alpha;
  T beta;

  KOKKOS_INLINE_FUNCTION const T* row(std::int64_t b, std::int64_t r) const {
    return matrix + b * batch_stride + r * output_stride;
  }
  // BLAS semantics: with beta = 0, y is written without being read, so NaNs
  // already in y do not propagate.
  KOKKOS_INLINE_FUNCTION void store(std::int64_t b, std::int64_t r, T dot) const {
    T& out = y[b * y_batch_stride + r * y_stride];
    out = beta == T(0) ? alpha * dot : alpha * dot + beta * out;
  }
};

// Which of the matrix strides is 1 decides the thread mapping.
enum class GemvAccess { reduction_contiguous, outputs_contiguous, strided };

template <class T>
KOKKOS_INLINE_FUNCTION GemvAccess gemv_access(const GemvProblem<T>& problem) {
  if (problem.length_stride == 1 && problem.x_stride == 1) return GemvAccess::reduction_contiguous;
  if (problem.output_stride == 1) return GemvAccess::outputs_contiguous;
  return GemvAccess::strided;
}

// Where the partial sum of output (b, r) over segment s lives.
struct PartialLayout {
  std::int64_t batch_stride;
  std::int64_t output_stride;
  std::int64_t segment_stride;
  KOKKOS_INLINE_FUNCTION std::int64_t at(std::int64_t b, std::int64_t r, std::int64_t s) const {
    return b * batch_stride + r * output_stride + s * segment_stride;
  }
};

// How the reduction dimension is cut: segment s covers terms
// [s * segment_length, min(length, (s + 1) * segment_length)).
struct Segments {
  std::int64_t count;
  std::int64_t length;  // a multiple of the pack width where packs are used
};

// The largest power of two <= min(value, limit), at least 1.
inline int round_down_to_power_of_two(int value, int limit) {
  int result = 1;
  while (result * 2 <= std::min(value, limit)) result *= 2;
  return result;
}

// One thread per (batch entry, output) or similar flat index spaces that can
// exceed 2^31.
template <class ExecutionSpace>
using GemvRange = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;

// y = beta * y for alpha = 0 or empty dot products (BLAS' quick return: A
// and x are not read).
template <class T>
struct ScaleOutputs {
  GemvProblem<T> problem;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    const std::int64_t b = index / problem.outputs;
    const std::int64_t r = index - b * problem.outputs;
    T& out = problem.y[b * problem.y_batch_stride + r * problem.y_stride];
    out = problem.beta == T(0) ? T(0) : problem.beta * out;
  }
};

}  // namespace kpl::impl
