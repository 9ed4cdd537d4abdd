// Levels 1 to 3 of kpl's reduction tree (impl/reduce_tree.hpp): every
// thread's lanes accumulate their share of the input, the lanes combine,
// then the threads of the team. kpl::team::reduce (kpl/team.hpp) runs them
// with the calling team as the only team; kpl::reduce's kernel
// (ReduceTeams) with each team one of the league. Users need not read this.
#pragma once

#include <kpl/impl/pack.hpp>
#include <kpl/impl/reduce_op_reducer.hpp>
#include <kpl/impl/team_member.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl::impl {

// The input of one reduction and how one thread (lane) accumulates its share
// of it. Input is a View or any callable input(i) returning Op::input_type;
// data, when not null, is the same input as contiguous 16-byte aligned
// memory (read in chunks). ReadOnce: the input is streamed once, as by
// kpl::reduce over a whole View, so GPUs load it evict-first
// (load_pack_read_once); a team's reduction inside a user's kernel keeps
// plain loads, since the caller may read the same data again.
template <class Op, class Input, bool ReadOnce = false>
struct ReduceShare {
  using value_type = typename Op::value_type;
  using input_type = typename Op::input_type;
  // 16-byte chunks: one vector load per chunk on GPUs.
  static constexpr int chunk = pack_elements<input_type>();
  using Chunk = Pack<input_type, chunk>;

  Op op;
  Input input;
  const input_type* data;
  std::int64_t length;

  KOKKOS_INLINE_FUNCTION void combine_chunk(const Chunk& values, std::int64_t c,
                                            value_type& value) const {
    for (int k = 0; k < chunk; ++k) op.combine(value, op.lift(values.value[k], c * chunk + k));
  }

  // Level 1 on GPUs: chunk c goes to thread c mod threads, so a warp reads
  // consecutive chunks; four independent loads in flight before their use.
  KOKKOS_INLINE_FUNCTION void accumulate_interleaved(std::int64_t thread, std::int64_t threads,
                                                     value_type& value) const {
    std::int64_t tail_begin = 0;
    if (data != nullptr) {
      const Chunk* chunks = reinterpret_cast<const Chunk*>(data);
      const std::int64_t chunk_count = length / chunk;
      const auto load = [&](std::int64_t k) {
        if constexpr (ReadOnce) {
          return load_pack_read_once<chunk>(data + k * chunk);
        } else {
          return chunks[k];
        }
      };
      std::int64_t c = thread;
      for (; c + 3 * threads < chunk_count; c += 4 * threads) {
        const Chunk a = load(c);
        const Chunk b = load(c + threads);
        const Chunk d = load(c + 2 * threads);
        const Chunk e = load(c + 3 * threads);
        combine_chunk(a, c, value);
        combine_chunk(b, c + threads, value);
        combine_chunk(d, c + 2 * threads, value);
        combine_chunk(e, c + 3 * threads, value);
      }
      for (; c < chunk_count; c += threads) combine_chunk(chunks[c], c, value);
      tail_begin = chunk_count * chunk;
    }
    for (std::int64_t i = tail_begin + thread; i < length; i += threads) {
      op.combine(value, op.lift(input(i), i));
    }
  }

  // One block of a CPU thread's range, with four independent accumulators:
  // one dependent chain would run at the combine's latency, not at memory
  // speed (combine is associative and commutative, so any grouping is valid).
  KOKKOS_INLINE_FUNCTION value_type block_value(std::int64_t begin, std::int64_t end) const {
    value_type partial[4] = {op.identity(), op.identity(), op.identity(), op.identity()};
    std::int64_t i = begin;
    if (data != nullptr) {
      for (; i + 3 < end; i += 4) {
        op.combine(partial[0], op.lift(data[i], i));
        op.combine(partial[1], op.lift(data[i + 1], i + 1));
        op.combine(partial[2], op.lift(data[i + 2], i + 2));
        op.combine(partial[3], op.lift(data[i + 3], i + 3));
      }
    }
    for (; i < end; ++i) op.combine(partial[0], op.lift(input(i), i));
    op.combine(partial[0], partial[1]);
    op.combine(partial[2], partial[3]);
    op.combine(partial[0], partial[2]);
    return partial[0];
  }

  // Level 1 on CPUs: one contiguous range a thread, summed in blocks so that
  // rounding error grows with the block count rather than the range length.
  KOKKOS_INLINE_FUNCTION void accumulate_contiguous(std::int64_t thread, std::int64_t threads,
                                                    value_type& value) const {
    const std::int64_t begin = length * thread / threads;
    const std::int64_t end = length * (thread + 1) / threads;
    constexpr std::int64_t block = 1024;
    for (std::int64_t block_begin = begin; block_begin < end; block_begin += block) {
      const std::int64_t block_end = block_begin + block < end ? block_begin + block : end;
      const value_type block_result = block_value(block_begin, block_end);
      op.combine(value, block_result);
    }
  }
};

// Levels 1 to 3 for the calling team, whose lanes are threads
// [first_thread, first_thread + team_size * lanes) of `threads` that share
// the input: every thread of the team returns the team's value. The team
// reduction synchronises the team; it does not order other memory accesses.
template <bool Host, class Member, class Op, class Input, bool ReadOnce>
KOKKOS_INLINE_FUNCTION typename Op::value_type team_tree_value(
    const Member& member, const ReduceShare<Op, Input, ReadOnce>& share, std::int64_t first_thread,
    std::int64_t threads, int lanes) {
  using value_type = typename Op::value_type;
  value_type thread_value;
  // Levels 1 and 2: every lane accumulates its elements, then the lanes combine.
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, lanes),
      [&](const int lane, value_type& lane_value) {
        const std::int64_t thread = first_thread + std::int64_t(member.team_rank()) * lanes + lane;
        if constexpr (Host) {
          share.accumulate_contiguous(thread, threads, lane_value);
        } else {
          share.accumulate_interleaved(thread, threads, lane_value);
        }
      },
      OpReducer<Op>(share.op, thread_value));
  // Level 3: the threads of the team.
  OpReducer<Op> team_reducer(share.op, thread_value);
  member.team_reduce(team_reducer);
  return thread_value;
}

// The contiguous, 16-byte aligned data of a 1-D View, or nullptr.
template <class InputView>
KOKKOS_INLINE_FUNCTION const typename InputView::non_const_value_type* contiguous_aligned_data(
    const InputView& input) {
  const bool contiguous =
      input.span_is_contiguous() || input.extent(0) <= 1 || input.stride(0) == 1;
  const auto address = reinterpret_cast<std::uintptr_t>(input.data());
  return contiguous && address % 16 == 0 ? input.data() : nullptr;
}

// kpl::team::reduce after its checks: the calling team is the only team,
// its threads and lanes share the whole input.
template <class Member, class Op, class Input>
KOKKOS_INLINE_FUNCTION typename Op::value_type team_reduce_values(
    const Member& member, const Op& op, const Input& input, const typename Op::input_type* data,
    std::int64_t length) {
  constexpr bool host = runs_on_host_v<member_execution_space_t<Member>>;
  const int lanes = vector_length(member);
  const ReduceShare<Op, Input> share{op, input, data, length};
  return team_tree_value<host>(member, share, 0, std::int64_t(member.team_size()) * lanes, lanes);
}

}  // namespace kpl::impl
