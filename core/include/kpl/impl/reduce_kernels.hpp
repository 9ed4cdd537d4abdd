// Kernels and entry points behind kpl/reduce.hpp. Include kpl/reduce.hpp.
#pragma once

#include <kpl/impl/pack.hpp>
#include <kpl/reduce.hpp>

#include <cstring>

namespace kpl {

// How the per-team results are combined (see reduce.hpp).
enum class cross_team { automatic, atomics, second_pass };

struct ReduceOptions {
  cross_team combine = cross_team::automatic;
  int teams = 0;  // 0: chosen from the length and the execution space
};

namespace impl {

// Variables, not functions: device code may not call host constexpr functions.
template <class ExecutionSpace>
inline constexpr bool runs_on_host_v =
    std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;

// Whether teams may combine their results by one atomic each.
template <class Op, class = void>
struct has_atomic_add : std::false_type {};
template <class Op>
struct has_atomic_add<Op, std::void_t<decltype(Op::atomic_add)>>
    : std::bool_constant<Op::atomic_add> {};
template <class Op, class = void>
struct has_atomic_exchange : std::false_type {};
template <class Op>
struct has_atomic_exchange<Op, std::void_t<decltype(Op::atomic_exchange)>>
    : std::bool_constant<Op::atomic_exchange &&
                         (sizeof(typename Op::value_type) == 4 ||
                          sizeof(typename Op::value_type) == 8) &&
                         alignof(typename Op::value_type) == sizeof(typename Op::value_type)> {};
template <class Op>
inline constexpr bool supports_atomics_v =
    has_atomic_add<Op>::value || has_atomic_exchange<Op>::value;

// The bits of a 4- or 8-byte value as an unsigned integer: the
// compare-and-swap below works on these, so a NaN (NaN != NaN) cannot keep the
// loop spinning and a struct such as MinMaxValue<float> needs no operator==.
template <class T>
using bits_of_t = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;

template <class T>
KOKKOS_INLINE_FUNCTION bits_of_t<T> to_bits(const T& value) {
  bits_of_t<T> bits;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class Op>
KOKKOS_INLINE_FUNCTION void atomic_combine(const Op& op, typename Op::value_type* target,
                                           const typename Op::value_type& value) {
  if constexpr (has_atomic_add<Op>::value) {
    Kokkos::atomic_add(target, value);
  } else {
    using value_type = typename Op::value_type;
    using bits_type = bits_of_t<value_type>;
    // value_type's alignment is its size (MinMaxValue is declared so), as a
    // compare-and-swap on bits_type needs.
    auto* target_bits = reinterpret_cast<bits_type*>(target);
    bits_type expected = *static_cast<volatile bits_type*>(target_bits);
    while (true) {
      value_type desired;
      std::memcpy(&desired, &expected, sizeof(value_type));
      op.combine(desired, value);
      const bits_type desired_bits = to_bits(desired);
      if (desired_bits == expected) return;  // nothing to change
      const bits_type seen = Kokkos::atomic_compare_exchange(target_bits, expected, desired_bits);
      if (seen == expected) return;
      expected = seen;
    }
  }
}

// Team shape for a reduction of `length` elements (or rows).
struct LaunchShape {
  int teams;
  int team_size;
  int vector_length;
};

template <class ExecutionSpace>
LaunchShape reduction_shape(const ExecutionSpace& space, std::int64_t length, int requested_teams) {
  LaunchShape shape{1, 1, 1};
  if constexpr (!runs_on_host_v<ExecutionSpace>) {
    // 8 x 32 = 256 threads a team; enough teams to fill the device once,
    // each thread then loops over a strided range (fewer partial results).
    shape.team_size = 8;
    shape.vector_length = 32;
  }
  const std::int64_t threads_per_team = std::int64_t(shape.team_size) * shape.vector_length;
  const std::int64_t fill = std::max<std::int64_t>(1, space.concurrency() / threads_per_team);
  // At least ~16 elements a thread, or the launch costs more than the work.
  const std::int64_t useful = (length + 16 * threads_per_team - 1) / (16 * threads_per_team);
  shape.teams = static_cast<int>(std::max<std::int64_t>(1, std::min(fill, useful)));
  if (requested_teams > 0) shape.teams = requested_teams;
  return shape;
}

// Levels 1-3: each thread accumulates its elements, then vector lanes, then
// the team combine; the team's result goes out by one atomic or into
// partials(team).
template <class Op, class InputView, class ResultView, class PartialView, class ExecutionSpace>
struct ReduceTeams {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  // Not named value_type: Kokkos 3.4 would take the functor for the reducer.
  using team_value_type = typename Op::value_type;
  using input_type = typename Op::input_type;
  // 16-byte chunks: one vector load per chunk on GPUs.
  static constexpr int chunk = pack_elements<input_type>();
  using Chunk = Pack<input_type, chunk>;

  Op op;
  InputView input;
  const input_type* data;  // non-null when input is contiguous and 16-byte aligned
  std::int64_t length;
  ResultView result;
  PartialView partials;
  bool use_atomics;
  int lanes;  // the policy's vector length (not every team member reports it)

  KOKKOS_INLINE_FUNCTION void accumulate_interleaved(std::int64_t thread, std::int64_t threads,
                                                     team_value_type& value) const {
    std::int64_t tail_begin = 0;
    if (data != nullptr) {
      // Chunk c goes to thread c mod threads: a warp reads consecutive chunks.
      const Chunk* chunks = reinterpret_cast<const Chunk*>(data);
      const std::int64_t chunk_count = length / chunk;
      std::int64_t c = thread;
      // Four independent loads in flight before their first use.
      for (; c + 3 * threads < chunk_count; c += 4 * threads) {
        const Chunk a = chunks[c];
        const Chunk b = chunks[c + threads];
        const Chunk d = chunks[c + 2 * threads];
        const Chunk e = chunks[c + 3 * threads];
        for (int k = 0; k < chunk; ++k) op.combine(value, op.lift(a.value[k], c * chunk + k));
        for (int k = 0; k < chunk; ++k)
          op.combine(value, op.lift(b.value[k], (c + threads) * chunk + k));
        for (int k = 0; k < chunk; ++k)
          op.combine(value, op.lift(d.value[k], (c + 2 * threads) * chunk + k));
        for (int k = 0; k < chunk; ++k)
          op.combine(value, op.lift(e.value[k], (c + 3 * threads) * chunk + k));
      }
      for (; c < chunk_count; c += threads) {
        const Chunk a = chunks[c];
        for (int k = 0; k < chunk; ++k) op.combine(value, op.lift(a.value[k], c * chunk + k));
      }
      tail_begin = chunk_count * chunk;
    }
    for (std::int64_t i = tail_begin + thread; i < length; i += threads) {
      op.combine(value, op.lift(input(i), i));
    }
  }

  KOKKOS_INLINE_FUNCTION void accumulate_contiguous(std::int64_t thread, std::int64_t threads,
                                                    team_value_type& value) const {
    // CPU threads take one contiguous range each (caches and prefetchers),
    // summed in blocks so rounding error grows with the block count rather
    // than with the whole range.
    const std::int64_t begin = length * thread / threads;
    const std::int64_t end = length * (thread + 1) / threads;
    constexpr std::int64_t block = 1024;
    for (std::int64_t block_begin = begin; block_begin < end; block_begin += block) {
      const std::int64_t block_end = block_begin + block < end ? block_begin + block : end;
      // Four independent accumulators: one dependent chain of adds would run
      // at the add latency, not at memory speed (the operation is
      // associative and commutative, so any grouping is valid).
      team_value_type partial[4] = {op.identity(), op.identity(), op.identity(), op.identity()};
      std::int64_t i = block_begin;
      if (data != nullptr) {
        for (; i + 3 < block_end; i += 4) {
          op.combine(partial[0], op.lift(data[i], i));
          op.combine(partial[1], op.lift(data[i + 1], i + 1));
          op.combine(partial[2], op.lift(data[i + 2], i + 2));
          op.combine(partial[3], op.lift(data[i + 3], i + 3));
        }
      }
      for (; i < block_end; ++i) op.combine(partial[0], op.lift(input(i), i));
      op.combine(partial[0], partial[1]);
      op.combine(partial[2], partial[3]);
      op.combine(partial[0], partial[2]);
      const team_value_type& block_value = partial[0];
      op.combine(value, block_value);
    }
  }

  // Levels 1 to 3; every thread of the team gets the team's value.
  KOKKOS_INLINE_FUNCTION team_value_type team_value(const member_type& member) const {
    const std::int64_t team = member.league_rank();
    const std::int64_t threads = std::int64_t(member.league_size()) * member.team_size() * lanes;
    team_value_type thread_value;
    // Level 1 and 2: every lane accumulates its elements, then the lanes combine.
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, lanes),
        [&](const int lane, team_value_type& lane_value) {
          const std::int64_t thread =
              (team * member.team_size() + member.team_rank()) * lanes + lane;
          if constexpr (runs_on_host_v<ExecutionSpace>) {
            accumulate_contiguous(thread, threads, lane_value);
          } else {
            accumulate_interleaved(thread, threads, lane_value);
          }
        },
        OpReducer<Op>(op, thread_value));
    // Level 3: the threads of the team.
    return team_reduce(member, op, thread_value);
  }

  // Level 4 by one atomic per team, or into partials(team) for a second pass.
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const team_value_type value = team_value(member);
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      if constexpr (supports_atomics_v<Op>) {
        if (use_atomics) {
          atomic_combine(op, &result(), value);
          return;
        }
      }
      partials(member.league_rank()) = value;
    });
  }

  // Level 4 by Kokkos' own inter-team stage (parallel_reduce over the teams):
  // one launch and Kokkos' reused buffers, for results wanted on the host.
  // Only one thread of each team contributes; all others hold the identity.
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member, team_value_type& update) const {
    const team_value_type value = team_value(member);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { op.combine(update, value); });
  }
};

// The second pass: one team combines the per-team partial results.
template <class Op, class ResultView, class PartialView, class ExecutionSpace>
struct CombinePartials {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using value_type = typename Op::value_type;
  Op op;
  PartialView partials;
  ResultView result;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    value_type total;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, static_cast<int>(partials.extent(0))),
        [&](const int team, value_type& partial) { op.combine(partial, partials(team)); },
        OpReducer<Op>(op, total));
    Kokkos::single(Kokkos::PerTeam(member), [&]() { result() = total; });
  }
};

template <class InputView>
const typename InputView::non_const_value_type* contiguous_aligned_data(const InputView& input) {
  const bool contiguous =
      input.span_is_contiguous() || input.extent(0) <= 1 || input.stride(0) == 1;
  const auto address = reinterpret_cast<std::uintptr_t>(input.data());
  return contiguous && address % 16 == 0 ? input.data() : nullptr;
}

// The input as the kernels read it: const, random-access (read-only cache).
template <class InputView>
using ReadOnlyInput =
    Kokkos::View<const typename InputView::non_const_value_type*, typename InputView::array_layout,
                 typename InputView::device_type, Kokkos::MemoryTraits<Kokkos::RandomAccess>>;

template <class ExecutionSpace, class InputView, class Op, class ResultView, class PartialView>
ReduceTeams<Op, ReadOnlyInput<InputView>, ResultView, PartialView, ExecutionSpace> team_kernel(
    const InputView& input, const Op& op, const ResultView& result, const PartialView& partials,
    bool use_atomics, const LaunchShape& shape) {
  static_assert(Kokkos::is_view<InputView>::value && InputView::rank == 1,
                "kpl::reduce takes a 1-D Kokkos::View");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename InputView::memory_space>::accessible,
      "the input View is not accessible from this execution space");
  return {op,
          ReadOnlyInput<InputView>(input),
          contiguous_aligned_data(input),
          static_cast<std::int64_t>(input.extent(0)),
          result,
          partials,
          use_atomics,
          shape.vector_length};
}

}  // namespace impl

// Reduces a 1-D View with `op` into the rank-0 View `result` (in the
// execution space's memory). Asynchronous: nothing is fenced, so the result
// can feed the next kernel on `space` directly.
template <class ExecutionSpace, class InputView, class Op, class ResultView>
void reduce(const ExecutionSpace& space, const InputView& input, const Op& op,
            const ResultView& result, const ReduceOptions& options = {}) {
  static_assert(ResultView::rank == 0, "kpl::reduce writes into a rank-0 View");
  static_assert(std::is_same_v<typename ResultView::value_type, typename Op::value_type>,
                "the result View's value type must be the operation's value_type");
  using PartialView = Kokkos::View<typename Op::value_type*, typename ExecutionSpace::memory_space>;
  const std::int64_t length = static_cast<std::int64_t>(input.extent(0));
  const auto shape = impl::reduction_shape(space, length, options.teams);
  bool use_atomics = false;
  if constexpr (impl::supports_atomics_v<Op>) {
    use_atomics = options.combine != cross_team::second_pass;
  } else if (options.combine == cross_team::atomics) {
    throw std::invalid_argument("kpl::reduce: this operation cannot combine teams by atomics");
  }
  if (use_atomics) {
    Kokkos::deep_copy(space, result, op.identity());
  }
  PartialView partials;
  if (!use_atomics) {
    partials =
        PartialView(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::reduce::partials"),
                    shape.teams);
  }
  const auto teams =
      impl::team_kernel<ExecutionSpace>(input, op, result, partials, use_atomics, shape);
  Kokkos::parallel_for(
      "kpl::reduce::teams",
      Kokkos::TeamPolicy<ExecutionSpace>(space, shape.teams, shape.team_size, shape.vector_length),
      teams);
  if (!use_atomics) {
    const int team_size = impl::runs_on_host_v<ExecutionSpace> ? 1 : 256;
    Kokkos::parallel_for(
        "kpl::reduce::combine_teams", Kokkos::TeamPolicy<ExecutionSpace>(space, 1, team_size),
        impl::CombinePartials<Op, ResultView, PartialView, ExecutionSpace>{op, partials, result});
  }
}

// Reduces a 1-D View with one operation and returns the value on the host
// (waits for the result). With cross_team::automatic, inputs under
// 2^24 elements have their teams combined by Kokkos' parallel_reduce (one
// launch, no allocation: 16-21 us for 1e3-1e6 elements on an H100, as plain
// Kokkos); larger ones go through a device result with atomics or a second
// pass, whose fixed cost (allocation, initialisation, copy) is small there
// and whose kernel measured faster (2^28 floats: 371 us against 429 us,
// perf/RESULTS.md).
template <class ExecutionSpace, class InputView, class Op>
typename Op::value_type reduce(const ExecutionSpace& space, const InputView& input, const Op& op,
                               const ReduceOptions& options = {}) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  using value_type = typename Op::value_type;
  constexpr std::int64_t large = std::int64_t(1) << 24;
  if (options.combine != cross_team::automatic ||
      static_cast<std::int64_t>(input.extent(0)) >= large) {
    Kokkos::View<value_type, MemorySpace> result(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::reduce::result"));
    reduce(space, input, op, result, options);
    value_type value;
    Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(&value);
    Kokkos::deep_copy(space, host, result);
    space.fence();
    return value;
  }
  const auto shape =
      impl::reduction_shape(space, static_cast<std::int64_t>(input.extent(0)), options.teams);
  const auto teams =
      impl::team_kernel<ExecutionSpace>(input, op, Kokkos::View<value_type, MemorySpace>(),
                                          Kokkos::View<value_type*, MemorySpace>(), false, shape);
  value_type value;
  Kokkos::parallel_reduce(
      "kpl::reduce::teams_to_host",
      Kokkos::TeamPolicy<ExecutionSpace>(space, shape.teams, shape.team_size, shape.vector_length),
      teams, impl::OpReducer<Op>(op, value));
  return value;
}

namespace impl {
template <class Pack, std::size_t... I>
auto pack_to_tuple(const Pack& pack, std::index_sequence<I...>) {
  return std::make_tuple(kpl::get<I>(pack)...);
}
}  // namespace impl

// Several operations in one pass over the data, e.g. (as gpucoder.reduce with
// {@sum, @max}):  auto [total, largest] = kpl::reduce(space, x, Sum<float>{}, Max<float>{});
template <class ExecutionSpace, class InputView, class FirstOp, class SecondOp, class... MoreOps,
          class = std::enable_if_t<!std::is_same_v<SecondOp, ReduceOptions> &&
                                   !Kokkos::is_view<SecondOp>::value>>
auto reduce(const ExecutionSpace& space, const InputView& input, const FirstOp& first,
            const SecondOp& second, const MoreOps&... more) {
  const auto pack = reduce(space, input, several(first, second, more...));
  return impl::pack_to_tuple(pack, std::make_index_sequence<2 + sizeof...(MoreOps)>{});
}

// ------------------------------------------------ 2-D: rows and columns

namespace impl {

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

// Reduced dimension contiguous in memory: one thread per output, its vector
// lanes over the contiguous elements (coalesced on GPUs), Width elements per
// lane and load (see pack.hpp).
template <class Op, class Access, class Output, class ExecutionSpace, int Width>
struct ReduceAlongContiguous {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Op op;
  Access access;
  Output output;
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t o =
        std::int64_t(member.league_rank()) * member.team_size() + member.team_rank();
    // Threads past the last output still take part (with nothing to reduce):
    // the vector lanes of a warp shuffle together.
    const bool active = o < access.outputs();
    const int groups = active ? static_cast<int>(access.reduced() / Width) : 0;
    const auto value = vector_reduce(member, groups, op, [&](const int group) {
      const std::int64_t k = std::int64_t(group) * Width;
      return fold_pack<Width>(op, load_pack<Width>(access.address(o, k)), k);
    });
    if (active) Kokkos::single(Kokkos::PerThread(member), [&]() { output(o) = value; });
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
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t reduced = access.reduced();
    const std::int64_t outputs = access.outputs();
    const std::int64_t segment = member.league_rank() / output_blocks;
    const std::int64_t begin = reduced * segment / segments;
    const std::int64_t end = reduced * (segment + 1) / segments;
    if constexpr (runs_on_host_v<ExecutionSpace>) {
      for (std::int64_t o = 0; o < outputs; ++o) partials(segment, o) = op.identity();
      for (std::int64_t k = begin; k < end; ++k)
        for (std::int64_t o = 0; o < outputs; ++o)
          op.combine(partials(segment, o), op.lift(access(o, k), k));
    } else {
      const std::int64_t block = member.league_rank() % output_blocks;
      const std::int64_t o = (block * member.team_size() + member.team_rank()) * Width;
      if (o >= outputs) return;
      typename Op::value_type values[Width];
      for (int w = 0; w < Width; ++w) values[w] = op.identity();
      // Four rows' loads issued before their adds: more bytes in flight
      // (H100, 16384^2 float column sums: 2216 -> 2293 GB/s).
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

template <class Op, class Partials, class Output>
struct CombineSegments {
  Op op;
  Partials partials;
  Output output;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t o) const {
    auto value = op.identity();
    for (std::size_t s = 0; s < partials.extent(0); ++s) op.combine(value, partials(s, o));
    output(o) = value;
  }
};

template <bool Columns, class ExecutionSpace, class Matrix, class Op, class Output>
void reduce_matrix(const ExecutionSpace& space, const Matrix& matrix, const Op& op,
                   const Output& output) {
  static_assert(Kokkos::is_view<Matrix>::value && Matrix::rank == 2,
                "kpl::reduce_rows/reduce_columns take a 2-D Kokkos::View");
  static_assert(Output::rank == 1, "the output of a row or column reduction is a 1-D View");
  static_assert(std::is_same_v<typename Output::value_type, typename Op::value_type>,
                "the output View's value type must be the operation's value_type");
  using Access = Oriented<Matrix, Columns>;
  const Access access{matrix};
  const std::int64_t outputs = access.outputs();
  const std::int64_t reduced = access.reduced();
  if (static_cast<std::int64_t>(output.extent(0)) != outputs) {
    throw std::invalid_argument(std::string("kpl::") +
                                (Columns ? "reduce_columns" : "reduce_rows") + ": the output has " +
                                std::to_string(output.extent(0)) + " elements, the matrix " +
                                std::to_string(outputs) + (Columns ? " columns" : " rows"));
  }
  if (outputs == 0) return;
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  using Input = typename Matrix::non_const_value_type;
  constexpr int pack = host ? 1 : pack_elements<Input>();
  const Input* data = matrix.data();
  if (access.reduced_stride() == 1 || reduced <= 1) {
    int vector_length = 1;
    if constexpr (!host) {
      while (vector_length < 32 && vector_length * pack < reduced) vector_length *= 2;
    }
    const int team_size = host ? 1 : 256 / vector_length;
    const auto teams = static_cast<int>((outputs + team_size - 1) / team_size);
    const Kokkos::TeamPolicy<ExecutionSpace> policy(space, teams, team_size, vector_length);
    const char* label =
        Columns ? "kpl::reduce_columns::along_contiguous" : "kpl::reduce_rows::along_contiguous";
    // Packs when every output's run starts aligned and holds whole packs.
    if (pack > 1 && access.reduced_stride() == 1 && reduced % pack == 0 &&
        is_pack_aligned<pack>(data, access.output_stride())) {
      Kokkos::parallel_for(
          label, policy,
          ReduceAlongContiguous<Op, Access, Output, ExecutionSpace, pack>{op, access, output});
    } else {
      Kokkos::parallel_for(
          label, policy,
          ReduceAlongContiguous<Op, Access, Output, ExecutionSpace, 1>{op, access, output});
    }
    return;
  }
  using Partials = Kokkos::View<typename Op::value_type**, Kokkos::LayoutRight,
                                typename ExecutionSpace::memory_space>;
  // Packs when outputs are contiguous, whole packs, and every step aligned.
  const bool packed = pack > 1 && access.output_stride() == 1 && outputs % pack == 0 &&
                      is_pack_aligned<pack>(data, access.reduced_stride());
  const int width = packed ? pack : 1;
  const int team_size = host ? 1 : 256;
  const std::int64_t output_groups = outputs / width;
  const int output_blocks =
      host ? 1 : static_cast<int>((output_groups + team_size - 1) / team_size);
  // Enough segments to give every hardware thread work, each at least 32 long.
  const std::int64_t want =
      std::max<std::int64_t>(1, space.concurrency() / (std::int64_t(output_blocks) * team_size));
  const std::int64_t segments =
      std::max<std::int64_t>(1, std::min<std::int64_t>(want, reduced / 32));
  const Kokkos::TeamPolicy<ExecutionSpace> policy(space, static_cast<int>(segments) * output_blocks,
                                                  team_size);
  const char* label =
      Columns ? "kpl::reduce_columns::across_strided" : "kpl::reduce_rows::across_strided";
  auto launch = [&](auto width_constant, auto atomic_constant, const Partials& partials) {
    Kokkos::parallel_for(
        label, policy,
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
    if (packed) {
      launch(Packed{}, std::true_type{}, Partials());
    } else {
      launch(Single{}, std::true_type{}, Partials());
    }
    return;
  }
  Partials partials(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::reduce::segments"),
                    segments, outputs);
  if (packed) {
    launch(Packed{}, std::false_type{}, partials);
  } else {
    launch(Single{}, std::false_type{}, partials);
  }
  Kokkos::parallel_for(
      Columns ? "kpl::reduce_columns::combine_segments" : "kpl::reduce_rows::combine_segments",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, outputs),
      CombineSegments<Op, Partials, Output>{op, partials, output});
}

}  // namespace impl

// output(i) = op over j of matrix(i, j). Asynchronous, like reduce into a View.
template <class ExecutionSpace, class Matrix, class Op, class Output>
void reduce_rows(const ExecutionSpace& space, const Matrix& matrix, const Op& op,
                 const Output& output) {
  impl::reduce_matrix<false>(space, matrix, op, output);
}

// output(j) = op over i of matrix(i, j). Asynchronous.
template <class ExecutionSpace, class Matrix, class Op, class Output>
void reduce_columns(const ExecutionSpace& space, const Matrix& matrix, const Op& op,
                    const Output& output) {
  impl::reduce_matrix<true>(space, matrix, op, output);
}

}  // namespace kpl
