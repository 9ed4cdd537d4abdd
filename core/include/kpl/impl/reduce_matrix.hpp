// Row and column reductions of a 2-D View behind kpl::reduce_rows and
// kpl::reduce_columns. Two kernels, chosen by which way the reduced
// dimension runs in memory:
//   along_contiguous: the reduced dimension is contiguous; one thread per
//                     output (and segment of the reduced dimension, where
//                     the outputs alone cannot fill the device), its vector
//                     lanes over the reduced elements;
//   across_strided:   the reduced dimension is strided; threads own outputs
//                     and walk one segment of the reduced dimension, the
//                     segments combined by atomics (GPUs, operations with an
//                     atomic form) or by a second kernel.
// Include kpl/reduce.hpp, not this file.
#pragma once

#include <kpl/impl/pack.hpp>
#include <kpl/impl/reduce_op_reducer.hpp>
#include <kpl/impl/reduce_tree.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kpl::impl {

// A(output, k) for the output being reduced over k: reduce_rows reads A(i, k),
// reduce_columns A(k, j).
template <class Matrix, bool Columns>
struct Oriented {
  using value_type = typename Matrix::non_const_value_type;
  Matrix matrix;
  KOKKOS_INLINE_FUNCTION auto operator()(std::int64_t output, std::int64_t k) const {
    if constexpr (Columns) {
      return matrix(k, output);
    } else {
      return matrix(output, k);
    }
  }
  KOKKOS_INLINE_FUNCTION const auto* address(std::int64_t output, std::int64_t k) const {
    if constexpr (Columns) {
      return &matrix(k, output);
    } else {
      return &matrix(output, k);
    }
  }
  KOKKOS_INLINE_FUNCTION std::int64_t outputs() const { return matrix.extent(Columns ? 1 : 0); }
  KOKKOS_INLINE_FUNCTION std::int64_t reduced() const { return matrix.extent(Columns ? 0 : 1); }
  std::int64_t reduced_stride() const { return matrix.stride(Columns ? 0 : 1); }
  std::int64_t output_stride() const { return matrix.stride(Columns ? 1 : 0); }
};

// op over the Width elements of a pack, element i lifted with index k + i.
template <int Width, class Op, class T>
KOKKOS_INLINE_FUNCTION typename Op::value_type fold_pack(const Op& op, const Pack<T, Width>& pack,
                                                         std::int64_t k) {
  auto value = op.lift(pack.value[0], k);
  for (int w = 1; w < Width; ++w) op.combine(value, op.lift(pack.value[w], k + w));
  return value;
}

// Reduced dimension contiguous in memory: one thread per output (and
// segment, when Segmented), its vector lanes over the contiguous elements
// (coalesced on GPUs), Width elements per lane and load (see pack.hpp).
// Unsegmented, a thread writes its output; segmented, it writes
// partials(segment, o), which CombineSegments combines.
template <class Op, class Access, class Partials, class Output, class ExecutionSpace, int Width,
          bool Segmented>
struct ReduceAlongContiguous {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Op op;
  Access access;
  Partials partials;  // unsegmented: unused
  Output output;
  std::int64_t segments;
  int output_teams;  // teams per segment
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    std::int64_t segment = 0, team = member.league_rank();
    if constexpr (Segmented) {
      segment = team / output_teams;
      team -= segment * output_teams;
    }
    const std::int64_t o = team * member.team_size() + member.team_rank();
    // Threads past the last output still take part (with nothing to reduce):
    // the vector lanes of a warp shuffle together.
    const bool active = o < access.outputs();
    const std::int64_t all_groups = access.reduced() / Width;
    const std::int64_t first = Segmented ? all_groups * segment / segments : 0;
    const std::int64_t last = Segmented ? all_groups * (segment + 1) / segments : all_groups;
    const int groups = active ? static_cast<int>(last - first) : 0;
    typename Op::value_type value;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, groups),
        [&](const int group, typename Op::value_type& partial) {
          const std::int64_t k = (first + group) * Width;
          op.combine(partial, fold_pack<Width>(op, load_pack<Width>(access.address(o, k)), k));
        },
        OpReducer<Op>(op, value));
    if (!active) return;
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      if constexpr (Segmented) {
        partials(segment, o) = value;
      } else {
        output(o) = value;
      }
    });
  }
};

// Reduced dimension strided: each GPU thread owns Width neighbouring outputs
// (one pack per step; neighbouring threads read neighbouring packs) over one
// segment of the reduced dimension; a CPU thread owns one segment and sweeps
// it row by row over all outputs (sequential in memory). Segment results go
// to partials(segment, o), or with Atomic (GPUs, operations with an atomic
// form) straight into output(o).
template <class Op, class Access, class Partials, class Output, class ExecutionSpace, int Width,
          bool Atomic>
struct ReduceAcrossStrided {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Op op;
  Access access;
  Partials partials;  // Atomic: unused
  Output output;      // Atomic: each segment combines its result here
  std::int64_t segments;
  int output_blocks;  // teams per segment (GPU)

  KOKKOS_INLINE_FUNCTION void sweep_segment_on_host(std::int64_t segment, std::int64_t begin,
                                                    std::int64_t end) const {
    const std::int64_t outputs = access.outputs();
    for (std::int64_t o = 0; o < outputs; ++o) partials(segment, o) = op.identity();
    for (std::int64_t k = begin; k < end; ++k)
      for (std::int64_t o = 0; o < outputs; ++o)
        op.combine(partials(segment, o), op.lift(access(o, k), k));
  }

  // Four rows' loads issued before their combines: more bytes in flight.
  KOKKOS_INLINE_FUNCTION void sweep_packs(std::int64_t o, std::int64_t begin, std::int64_t end,
                                          typename Op::value_type (&values)[Width]) const {
    constexpr int unroll = 4;
    std::int64_t k = begin;
    for (; k + unroll <= end; k += unroll) {
      Pack<typename Access::value_type, Width> packs[unroll];
      for (int u = 0; u < unroll; ++u) packs[u] = load_pack<Width>(access.address(o, k + u));
      for (int u = 0; u < unroll; ++u)
        for (int w = 0; w < Width; ++w) op.combine(values[w], op.lift(packs[u].value[w], k + u));
    }
    for (; k < end; ++k) {
      const auto pack = load_pack<Width>(access.address(o, k));
      for (int w = 0; w < Width; ++w) op.combine(values[w], op.lift(pack.value[w], k));
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t reduced = access.reduced();
    const std::int64_t segment = member.league_rank() / output_blocks;
    const std::int64_t begin = reduced * segment / segments;
    const std::int64_t end = reduced * (segment + 1) / segments;
    if constexpr (runs_on_host_v<ExecutionSpace>) {
      sweep_segment_on_host(segment, begin, end);
    } else {
      const std::int64_t block = member.league_rank() % output_blocks;
      const std::int64_t o = (block * member.team_size() + member.team_rank()) * Width;
      if (o >= access.outputs()) return;
      typename Op::value_type values[Width];
      for (int w = 0; w < Width; ++w) values[w] = op.identity();
      sweep_packs(o, begin, end, values);
      for (int w = 0; w < Width; ++w) {
        if constexpr (Atomic) {
          atomic_combine(op, &output(o + w), values[w]);
        } else {
          partials(segment, o + w) = values[w];
        }
      }
    }
  }
};

// output(o) = the segments' partials(s, o) combined: on CPUs by one thread
// in segment order; on GPUs by a thread's vector lanes (lane l takes
// segments l, l + L, ...; then Kokkos' fixed tree of the lanes), since one
// thread's chain of a thousand dependent loads (the GAM's ranges: 100
// columns of 1e5 rows in ~1000 segments) took longer than the segments'
// own kernel.
template <class ExecutionSpace, class Op, class Partials, class Output>
struct CombineSegments {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Op op;
  Partials partials;
  Output output;
  std::int64_t outputs;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t o =
        member.league_rank() * std::int64_t(member.team_size()) + member.team_rank();
    if (o >= outputs) return;
    typename Op::value_type value = op.identity();
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, std::int64_t(partials.extent(0))),
        [&](const std::int64_t s, typename Op::value_type& into) {
          op.combine(into, partials(s, o));
        },
        OpReducer<Op>(op, value));
    Kokkos::single(Kokkos::PerThread(member), [&] { output(o) = value; });
  }
};

// Kernel labels, per orientation.
template <bool Columns>
struct MatrixLabels {
  static constexpr const char* along_contiguous =
      Columns ? "kpl::reduce_columns::along_contiguous" : "kpl::reduce_rows::along_contiguous";
  static constexpr const char* across_strided =
      Columns ? "kpl::reduce_columns::across_strided" : "kpl::reduce_rows::across_strided";
  static constexpr const char* combine_segments =
      Columns ? "kpl::reduce_columns::combine_segments" : "kpl::reduce_rows::combine_segments";
};

template <bool Columns, class ExecutionSpace, class Op, class Partials, class Output>
void combine_segments(const ExecutionSpace& space, const Op& op, const Partials& partials,
                      const Output& output, std::int64_t outputs) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  const int team_size = host ? 1 : 8, vector_length = host ? 1 : 32;
  Kokkos::parallel_for(
      MatrixLabels<Columns>::combine_segments,
      Kokkos::TeamPolicy<ExecutionSpace>(
          space, static_cast<int>((outputs + team_size - 1) / team_size), team_size, vector_length),
      CombineSegments<ExecutionSpace, Op, Partials, Output>{op, partials, output, outputs});
}

// Segments of the contiguous reduced dimension for `lanes_per_output`
// lanes on each output: one unless the outputs' lanes would fill under an
// eighth of the device (a few outputs of many elements: the GAM's covariate
// ranges, p columns of n rows, ran on a few warps of a GPU); then as many as
// fill it once, each at least `shortest` elements long. (Where the outputs
// fill a good part of the device, the partials' second pass costs more than
// the extra lanes gain.)
template <class ExecutionSpace>
std::int64_t contiguous_segments(const ExecutionSpace& space, std::int64_t outputs,
                                 std::int64_t reduced, int lanes_per_output,
                                 std::int64_t shortest) {
  const std::int64_t lanes = outputs * lanes_per_output;
  if (8 * lanes >= space.concurrency()) return 1;
  const std::int64_t to_fill = (space.concurrency() + lanes - 1) / lanes;
  return std::max<std::int64_t>(1, std::min(to_fill, reduced / shortest));
}

// The lanes of each output's reduction: a warp's worth on GPUs (fewer for
// short rows), one on CPUs.
template <class ExecutionSpace, class Access>
int contiguous_vector_length(const Access& access) {
  int vector_length = 1;
  if constexpr (!runs_on_host_v<ExecutionSpace>) {
    constexpr int pack = pack_elements<typename Access::value_type>();
    while (vector_length < 32 && vector_length * pack < access.reduced()) vector_length *= 2;
  }
  return vector_length;
}

// The reduced dimension contiguous (or of length <= 1), in `segments`
// segments (public so that a test can run several on CPU threads too).
template <bool Columns, class ExecutionSpace, class Access, class Op, class Output>
void reduce_along_contiguous_in_segments(const ExecutionSpace& space, const Access& access,
                                         const Op& op, const Output& output,
                                         std::int64_t segments) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  using Partials = Kokkos::View<typename Op::value_type**, Kokkos::LayoutRight,
                                typename ExecutionSpace::memory_space>;
  constexpr int pack = host ? 1 : pack_elements<typename Access::value_type>();
  const std::int64_t outputs = access.outputs();
  const int vector_length = contiguous_vector_length<ExecutionSpace>(access);
  const int team_size = host ? 1 : 256 / vector_length;
  const auto output_teams = static_cast<int>((outputs + team_size - 1) / team_size);
  const Kokkos::TeamPolicy<ExecutionSpace> policy(space, static_cast<int>(segments) * output_teams,
                                                  team_size, vector_length);
  Partials partials;
  if (segments > 1)
    partials =
        Partials(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::reduce::segments"),
                 segments, outputs);
  auto launch = [&](auto width_constant, auto segmented_constant) {
    Kokkos::parallel_for(
        MatrixLabels<Columns>::along_contiguous, policy,
        ReduceAlongContiguous<Op, Access, Partials, Output, ExecutionSpace,
                              decltype(width_constant)::value, decltype(segmented_constant)::value>{
            op, access, partials, output, segments, output_teams});
  };
  auto launch_width = [&](auto width_constant) {
    segments > 1 ? launch(width_constant, std::true_type{})
                 : launch(width_constant, std::false_type{});
  };
  // Packs when every output's run starts aligned and holds whole packs.
  if (pack > 1 && access.reduced_stride() == 1 && access.reduced() % pack == 0 &&
      is_pack_aligned<pack>(access.matrix.data(), access.output_stride())) {
    launch_width(std::integral_constant<int, pack>{});
  } else {
    launch_width(std::integral_constant<int, 1>{});
  }
  if (segments == 1) return;
  combine_segments<Columns>(space, op, partials, output, outputs);
}

// The reduced dimension contiguous: segments where the outputs are few. A
// segment gives each lane at least 16 loads on GPUs, a thread 4096 elements
// on CPUs.
template <bool Columns, class ExecutionSpace, class Access, class Op, class Output>
void reduce_along_contiguous(const ExecutionSpace& space, const Access& access, const Op& op,
                             const Output& output) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  const int vector_length = contiguous_vector_length<ExecutionSpace>(access);
  const std::int64_t shortest =
      host ? 4096 : std::int64_t(vector_length) * pack_elements<typename Access::value_type>() * 16;
  reduce_along_contiguous_in_segments<Columns>(
      space, access, op, output,
      contiguous_segments(space, access.outputs(), access.reduced(), vector_length, shortest));
}

// Segments of the reduced dimension: enough to give every hardware thread
// work, each at least 32 long.
template <class ExecutionSpace>
std::int64_t strided_segments(const ExecutionSpace& space, std::int64_t reduced, int output_blocks,
                              int team_size) {
  const std::int64_t want =
      std::max<std::int64_t>(1, space.concurrency() / (std::int64_t(output_blocks) * team_size));
  return std::max<std::int64_t>(1, std::min<std::int64_t>(want, reduced / 32));
}

// The reduced dimension strided.
template <bool Columns, class ExecutionSpace, class Access, class Op, class Output>
void reduce_across_strided(const ExecutionSpace& space, const Access& access, const Op& op,
                           const Output& output) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  constexpr int pack = host ? 1 : pack_elements<typename Access::value_type>();
  using Partials = Kokkos::View<typename Op::value_type**, Kokkos::LayoutRight,
                                typename ExecutionSpace::memory_space>;
  const std::int64_t outputs = access.outputs();
  // Packs when outputs are contiguous, whole packs, and every step aligned.
  const bool packed = pack > 1 && access.output_stride() == 1 && outputs % pack == 0 &&
                      is_pack_aligned<pack>(access.matrix.data(), access.reduced_stride());
  const int team_size = host ? 1 : 256;
  const std::int64_t output_groups = outputs / (packed ? pack : 1);
  const int output_blocks =
      host ? 1 : static_cast<int>((output_groups + team_size - 1) / team_size);
  const std::int64_t segments = strided_segments(space, access.reduced(), output_blocks, team_size);
  const Kokkos::TeamPolicy<ExecutionSpace> policy(space, static_cast<int>(segments) * output_blocks,
                                                  team_size);
  auto launch = [&](auto width_constant, auto atomic_constant, const Partials& partials) {
    Kokkos::parallel_for(
        MatrixLabels<Columns>::across_strided, policy,
        ReduceAcrossStrided<Op, Access, Partials, Output, ExecutionSpace,
                            decltype(width_constant)::value, decltype(atomic_constant)::value>{
            op, access, partials, output, segments, output_blocks});
  };
  using Packed = std::integral_constant<int, pack>;
  using Single = std::integral_constant<int, 1>;
  if constexpr (!host && supports_atomics_v<Op>) {
    // GPUs, where the operation has an atomic form: segments combine into
    // the output directly, so no partials are allocated, written and read.
    Kokkos::deep_copy(space, output, op.identity());
    packed ? launch(Packed{}, std::true_type{}, Partials())
           : launch(Single{}, std::true_type{}, Partials());
    return;
  }
  Partials partials(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::reduce::segments"),
                    segments, outputs);
  packed ? launch(Packed{}, std::false_type{}, partials)
         : launch(Single{}, std::false_type{}, partials);
  combine_segments<Columns>(space, op, partials, output, outputs);
}

// Throws when output does not hold one value per row (Columns: column).
template <bool Columns, class Matrix, class Output>
void check_matrix_output(const Matrix& matrix, const Output& output) {
  const auto outputs = static_cast<std::int64_t>(matrix.extent(Columns ? 1 : 0));
  if (static_cast<std::int64_t>(output.extent(0)) != outputs) {
    throw std::invalid_argument(std::string("kpl::") +
                                (Columns ? "reduce_columns" : "reduce_rows") + ": the output has " +
                                std::to_string(output.extent(0)) + " elements, the matrix " +
                                std::to_string(outputs) + (Columns ? " columns" : " rows"));
  }
}

template <bool Columns, class ExecutionSpace, class Matrix, class Op, class Output>
void reduce_matrix(const ExecutionSpace& space, const Matrix& matrix, const Op& op,
                   const Output& output) {
  using Access = Oriented<Matrix, Columns>;
  const Access access{matrix};
  if (access.outputs() == 0) return;
  if (access.reduced_stride() == 1 || access.reduced() <= 1) {
    reduce_along_contiguous<Columns>(space, access, op, output);
  } else {
    reduce_across_strided<Columns>(space, access, op, output);
  }
}

}  // namespace kpl::impl
