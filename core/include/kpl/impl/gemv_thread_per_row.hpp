// gemv strategy thread_per_row: one thread computes one dot product
// (Sieminski & Lee 2023, §3.2.1, the seed's naive kernel). Users need not
// read this; kpl/gemv.hpp is the API, impl/gemv_dispatch.hpp the launch.
//
// The functor is generalised to Width adjacent outputs and one segment of the
// reduction per thread. Width = 1 and one segment is §3.2.1's kernel, which
// the thread_per_row strategy launches. partial_rows (impl/gemv_partial_rows.hpp)
// launches the same functor on outputs-contiguous data with Width > 1, which
// makes each load a 16-byte pack (GPUs) or a vectorisable run (CPUs), and
// with segments, which give square matrices enough threads (§3.2.3's partial
// matrix, threads along outputs so that reads stay coalesced).
#pragma once

#include <kpl/impl/gemv_common.hpp>
#include <kpl/impl/pack.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl::impl {

template <class T, int Width, bool PackLoads>
struct ThreadPerOutputs {
  GemvProblem<T> problem;
  Segments segments;
  T* partials;  // used when segments.count > 1
  PartialLayout partial_layout;
  std::int64_t groups;  // ceil(outputs / Width)

  // CPUs: sum[0 .. count) += the group's rows times x over columns [begin,
  // end), in column order, each column a contiguous run of count elements
  // (first points at column 0 of the group). Eight columns per pass over
  // sum[], so the sums are loaded and stored once per eight columns: with
  // one column a pass, the L1 traffic of sum[] bound the loop (perf/RESULTS.md).
  KOKKOS_INLINE_FUNCTION void accumulate_column_runs(T* sum, const T* first, int count,
                                                     std::int64_t begin, std::int64_t end) const {
    const std::int64_t stride = problem.length_stride;
    const T* x = problem.x;
    const std::int64_t x_stride = problem.x_stride;
    std::int64_t c = begin;
    for (; c + 7 < end; c += 8) {
      const T* a0 = first + c * stride;
      const T* a1 = a0 + stride;
      const T* a2 = a1 + stride;
      const T* a3 = a2 + stride;
      const T* a4 = a3 + stride;
      const T* a5 = a4 + stride;
      const T* a6 = a5 + stride;
      const T* a7 = a6 + stride;
      const T x0 = x[c * x_stride], x1 = x[(c + 1) * x_stride], x2 = x[(c + 2) * x_stride],
              x3 = x[(c + 3) * x_stride], x4 = x[(c + 4) * x_stride], x5 = x[(c + 5) * x_stride],
              x6 = x[(c + 6) * x_stride], x7 = x[(c + 7) * x_stride];
      for (int w = 0; w < count; ++w)
        sum[w] += ((a0[w] * x0 + a1[w] * x1) + (a2[w] * x2 + a3[w] * x3)) +
                  ((a4[w] * x4 + a5[w] * x5) + (a6[w] * x6 + a7[w] * x7));
    }
    for (; c < end; ++c) {
      const T* a = first + c * stride;
      const T x_c = x[c * x_stride];
      for (int w = 0; w < count; ++w) sum[w] += a[w] * x_c;
    }
  }

  // A whole group: Width adjacent elements per term, one access.
  KOKKOS_INLINE_FUNCTION void accumulate_whole_group(T* sum, const T* first, std::int64_t begin,
                                                     std::int64_t end) const {
    const T* column = first + begin * problem.length_stride;
    const T* x = problem.x + begin * problem.x_stride;
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll 4
#endif
    for (std::int64_t c = begin; c < end; ++c) {
      const T x_c = *x;
      if constexpr (PackLoads) {
        const auto pack = load_pack<Width>(column);
        for (int w = 0; w < Width; ++w) sum[w] += pack.value[w] * x_c;
      } else {
        for (int w = 0; w < Width; ++w) sum[w] += column[w] * x_c;
      }
      column += problem.length_stride;
      x += problem.x_stride;
    }
  }

  // The last, partial group or strided outputs: one output at a time. Loops
  // bounded by the constant Width with a predicate, not by count: sum[] then
  // stays in registers on GPUs instead of local memory.
  KOKKOS_INLINE_FUNCTION void accumulate_each(T* sum, std::int64_t b, std::int64_t first_output,
                                              std::int64_t count, std::int64_t begin,
                                              std::int64_t end) const {
    for (int w = 0; w < Width; ++w) {
      if (w < count) {
        const T* element = problem.row(b, first_output + w) + begin * problem.length_stride;
        for (std::int64_t c = begin; c < end; ++c) {
          sum[w] += *element * problem.x[c * problem.x_stride];
          element += problem.length_stride;
        }
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    const std::int64_t group = index % groups;
    const std::int64_t rest = index / groups;
    const std::int64_t segment = rest % segments.count;
    const std::int64_t b = rest / segments.count;
    const std::int64_t first_output = group * Width;
    const std::int64_t begin = segment * segments.length;
    const std::int64_t end =
        begin + segments.length < problem.length ? begin + segments.length : problem.length;
    T sum[Width];
    for (int w = 0; w < Width; ++w) sum[w] = T(0);
    const std::int64_t count =
        problem.outputs - first_output < Width ? problem.outputs - first_output : Width;
    // CPUs (wide groups without packs): every group, whole or the last,
    // partial one, walks its columns as contiguous runs.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    constexpr bool column_runs = false;
#else
    constexpr bool column_runs = !PackLoads && Width > 1;
#endif
    if (column_runs && problem.output_stride == 1) {
      accumulate_column_runs(sum, problem.row(b, first_output), int(count), begin, end);
    } else if (count == Width && (Width == 1 || problem.output_stride == 1)) {
      accumulate_whole_group(sum, problem.row(b, first_output), begin, end);
    } else {
      accumulate_each(sum, b, first_output, count, begin, end);
    }
    for (int w = 0; w < Width; ++w) {
      if (w < count) {
        if (segments.count == 1) {
          problem.store(b, first_output + w, sum[w]);
        } else {
          partials[partial_layout.at(b, first_output + w, segment)] = sum[w];
        }
      }
    }
  }
};

// §3.2.1 as the seed has it: one thread per output, the whole dot product.
template <class ExecutionSpace, class T>
void launch_thread_per_row(const ExecutionSpace& space, const GemvProblem<T>& problem) {
  const std::int64_t threads = problem.batch * problem.outputs;
  Kokkos::parallel_for("kpl::gemv::thread_per_row", GemvRange<ExecutionSpace>(space, 0, threads),
                       ThreadPerOutputs<T, 1, false>{problem, Segments{1, problem.length}, nullptr,
                                                     PartialLayout{}, problem.outputs});
}

}  // namespace kpl::impl
