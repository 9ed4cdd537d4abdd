// gemv strategy partial_rows: P threads per row with a partial matrix
// (Sieminski & Lee 2023, §3.2.3). Users need not read this; kpl/gemv.hpp is
// the API, impl/gemv_dispatch.hpp chooses the strategy.
//
// Each dot product is cut into P segments; threads write an M x P partial
// matrix whose rows are then added. Two kernels, by which of the matrix's
// strides is 1 (impl/gemv_common.hpp, GemvAccess):
//   - reduction contiguous (op T on LayoutLeft, op N on LayoutRight):
//     RowBlockPerTeam below. A team takes a block of outputs and one share of
//     the reduction (every P-th chunk of it on GPUs), reads x once for the
//     whole block, and the last team of a block to finish adds the block's
//     partial sums: the kernel for tall, skinny B^T g.
//   - otherwise: ThreadPerOutputs (impl/gemv_thread_per_row.hpp) with Width
//     adjacent outputs per thread and P segments, then GemvCombinePartials.
#pragma once

#include <kpl/execution_spaces.hpp>
#include <kpl/impl/gemv_common.hpp>
#include <kpl/impl/gemv_thread_per_row.hpp>
#include <kpl/impl/pack.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kpl::impl {

// ---------------------------------------------------------------------------
// Second kernel of §3.2.3: y(b, r) = alpha * sum_s partials(b, r, s) +
// beta * y(b, r), one thread per output. Four running sums keep four loads
// in flight: a single chain of dependent adds waits on one L2 load after
// another.
template <class T>
struct GemvCombinePartials {
  GemvProblem<T> problem;
  const T* partials;
  PartialLayout partial_layout;
  std::int64_t segments;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t output) const {
    const std::int64_t b = output / problem.outputs;
    const std::int64_t r = output - b * problem.outputs;
    T sums[4] = {T(0), T(0), T(0), T(0)};
    std::int64_t s = 0;
    for (; s + 3 < segments; s += 4) {
      for (int u = 0; u < 4; ++u) sums[u] += partials[partial_layout.at(b, r, s + u)];
    }
    for (; s < segments; ++s) sums[0] += partials[partial_layout.at(b, r, s)];
    problem.store(b, r, (sums[0] + sums[1]) + (sums[2] + sums[3]));
  }
};

// ---------------------------------------------------------------------------
// §3.2.3 on reduction-contiguous data: a team takes a block of Rows outputs
// and one of `segments` shares of the reduction; its threads walk the share
// in 16-byte packs, each keeping Rows running sums, so x is read once per
// block of outputs and every thread has Rows loads in flight. The team then
// combines its sums and writes one column of the partial matrix, or y itself
// when there is one segment. This is the kernel for tall, skinny matrices
// such as the GAM's B^T g (n = 1e6, k = 16-64) and, with Rows = 2, for
// transposed products with many outputs.
//
// A share is a set of chunks of `chunk_packs` consecutive packs: chunk
// numbers segment, segment + segments, segment + 2 segments, ... On GPUs a
// chunk is one pack per thread of the team, so at any moment all teams read
// one window of each row that slides down the matrix (DRAM pages opened once,
// every team busy until the end); on CPUs a share is one contiguous chunk, so
// a thread streams through its own part of memory.
// Steps > 1 walks the share Steps positions at a time (launch_row_blocks
// chooses it).
template <class T, int Rows>
struct RowSums {
  T value[Rows];
};

template <class T, int Rows>
struct RowSumsOp {
  using value_type = RowSums<T, Rows>;
  KOKKOS_INLINE_FUNCTION value_type identity() const {
    value_type zero;
    for (int i = 0; i < Rows; ++i) zero.value[i] = T(0);
    return zero;
  }
  KOKKOS_INLINE_FUNCTION void combine(value_type& into, const value_type& other) const {
    for (int i = 0; i < Rows; ++i) into.value[i] += other.value[i];
  }
};

// What one team of RowBlockPerTeam reads: its block of outputs and its share
// of the reduction.
struct RowBlockShare {
  std::int64_t b;             // batch entry
  std::int64_t first_output;  // of the block
  int block;
  int segment;
  int rows;                // outputs in the block (Rows but for the last)
  std::int64_t packs;      // whole packs per dot product
  std::int64_t stride;     // threads x lanes of the team
  std::int64_t share_end;  // pack index where the share ends
  std::int64_t step;       // packs between a lane's consecutive positions
};

template <class T, int Rows, int Width, class ExecutionSpace, int Steps = 1>
struct RowBlockPerTeam {
  // At most 256 threads a team. Tall, skinny blocks (8-16 rows) are launched
  // as one wave of four teams per SM, so four must fit: 64 registers (without
  // the bound, the compiler's extra registers push some teams into a second
  // wave; perf/RESULTS.md). Blocks of 1-4 rows fit four teams an SM without
  // the bound.
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<256, (Rows >= 8 ? 4 : 1)>>;
  using Member = typename Policy::member_type;
  using Sums = RowSums<T, Rows>;
  GemvProblem<T> problem;
  std::int64_t segments;     // teams per block of outputs
  std::int64_t chunk_packs;  // packs in one chunk
  T* partials;
  PartialLayout partial_layout;
  int* arrivals;        // per (batch entry, block): teams done; zero between calls
  std::int64_t blocks;  // ceil(outputs / Rows)
  int lanes;            // the team's vector length

  // Team scratch: Rows sums per thread, then the Rows totals (none for
  // one-thread teams).
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(int team_size) {
    return team_size == 1 ? 0 : sizeof(T) * Rows * (std::size_t(team_size) + 1);
  }

  // The team's Rows totals of every lane's sums: vector lanes first (warp
  // shuffles on CUDA), then the threads' sums through the team's scratch
  // (`sums`, scratch_bytes long; unused by one-thread teams), one row per
  // lane of the team. Every thread and lane gets the totals.
  template <class Accumulate>
  KOKKOS_INLINE_FUNCTION Sums team_totals(const Member& member, T* sums,
                                          const Accumulate& accumulate) const {
    Sums thread_sums;
    Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(member, lanes), accumulate,
                            OpReducer<RowSumsOp<T, Rows>>(RowSumsOp<T, Rows>{}, thread_sums));
    const int threads = member.team_size();
    if (threads == 1) return thread_sums;
    T* totals = sums + Rows * threads;
    Kokkos::single(Kokkos::PerThread(member), [&] {
      for (int i = 0; i < Rows; ++i) sums[i * threads + member.team_rank()] = thread_sums.value[i];
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, Rows), [&](const int i) {
      T total = T(0);
      for (int t = 0; t < threads; ++t) total += sums[i * threads + t];
      totals[i] = total;
    });
    member.team_barrier();
    Sums result;
    for (int i = 0; i < Rows; ++i) result.value[i] = totals[i];
    member.team_barrier();  // scratch free for the next combine
    return result;
  }

  // 32-bit arithmetic for the league (64-bit division is a subroutine on
  // GPUs); the launch checks that the league fits an int.
  KOKKOS_INLINE_FUNCTION RowBlockShare share_of(const Member& member) const {
    RowBlockShare share;
    const int league = member.league_rank();
    share.block = league % int(blocks);
    const int rest = league / int(blocks);
    share.segment = rest % int(segments);
    share.b = rest / int(segments);
    share.first_output = std::int64_t(share.block) * Rows;
    share.rows = problem.outputs - share.first_output < Rows
                     ? static_cast<int>(problem.outputs - share.first_output)
                     : Rows;
    share.packs = problem.length / Width;
    share.stride = std::int64_t(member.team_size()) * lanes;
    // Chunks one pack per thread (GPUs): the share is one strided sequence.
    // Longer chunks (CPUs): segments own one contiguous chunk each.
    const bool interleaved = chunk_packs == share.stride;
    share.share_end = interleaved || (share.segment + 1) * chunk_packs > share.packs
                          ? share.packs
                          : (share.segment + 1) * chunk_packs;
    share.step = interleaved ? share.stride * segments : share.stride;
    return share;
  }

  // Steps positions of the share at a time from pack p, every load issued
  // before the first product: Rows x Steps row packs in flight per thread.
  // Returns where the one-step loop goes on.
  template <bool Full>
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t accumulate_steps(const RowBlockShare& share,
                                                            const T* first_row, std::int64_t p,
                                                            Sums& mine) const {
    if constexpr (Steps > 1) {
      for (; p + (Steps - 1) * share.step < share.share_end; p += Steps * share.step) {
        Pack<T, Width> x_packs[Steps];
        Pack<T, Width> a[Steps][Rows];
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
        for (int s = 0; s < Steps; ++s) {
          x_packs[s] = load_pack<Width>(problem.x + (p + s * share.step) * Width);
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
          for (int i = 0; i < Rows; ++i) {
            if (Full || i < share.rows)
              a[s][i] = load_pack_read_once<Width>(first_row + i * problem.output_stride +
                                                   (p + s * share.step) * Width);
          }
        }
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
        for (int s = 0; s < Steps; ++s) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
          for (int i = 0; i < Rows; ++i) {
            if (Full || i < share.rows) {
              T sum = a[s][i].value[0] * x_packs[s].value[0];
              for (int w = 1; w < Width; ++w) sum += a[s][i].value[w] * x_packs[s].value[w];
              mine.value[i] += sum;
            }
          }
        }
      }
    }
    return p;
  }

  // One position of the share at a time from pack p. Not merged with
  // accumulate_steps as its one-step case: loading every row's pack before
  // the first product was slower on the H100 (perf/RESULTS.md).
  template <bool Full>
  KOKKOS_FORCEINLINE_FUNCTION void accumulate_packs(const RowBlockShare& share, const T* first_row,
                                                    std::int64_t p, Sums& mine) const {
    for (; p < share.share_end; p += share.step) {
      const auto x_pack = load_pack<Width>(problem.x + p * Width);
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
      for (int i = 0; i < Rows; ++i) {
        if (Full || i < share.rows) {
          const auto a =
              load_pack_read_once<Width>(first_row + i * problem.output_stride + p * Width);
          T sum = a.value[0] * x_pack.value[0];
          for (int w = 1; w < Width; ++w) sum += a.value[w] * x_pack.value[w];
          mine.value[i] += sum;
        }
      }
    }
  }

  // Lane `lane` of this thread: its positions of the share, and segment 0's
  // terms after the last whole pack. One running sum per row; every loop
  // runs to the constant Rows with a predicate, so the sums stay in
  // registers on GPUs. The pack loop is a single loop with a computable trip
  // count: a loop over chunks around an inner pack loop kept fewer loads in
  // flight per thread.
  template <bool Full>
  KOKKOS_FORCEINLINE_FUNCTION void accumulate(const Member& member, const RowBlockShare& share,
                                              const int lane, Sums& mine) const {
    const T* first_row = problem.row(share.b, share.first_output);
    const std::int64_t first = std::int64_t(member.team_rank()) * lanes + lane;
    std::int64_t p = share.segment * chunk_packs + first;
    p = accumulate_steps<Full>(share, first_row, p, mine);
    accumulate_packs<Full>(share, first_row, p, mine);
    if (share.segment == 0) {
      for (std::int64_t c = share.packs * Width + first; c < problem.length; c += share.stride) {
        for (int i = 0; i < Rows; ++i) {
          if (i < share.rows)
            mine.value[i] += first_row[i * problem.output_stride + c] * problem.x[c];
        }
      }
    }
  }

  // §3.2.3's partial matrix, reduced without a second kernel: every team
  // writes its column of partial sums, and the last team of a block to
  // arrive (an atomic count per block) learns that it is last. A second
  // launch cost more than this whole kernel for the GAM's tall, skinny B^T g
  // (perf/RESULTS.md).
  KOKKOS_INLINE_FUNCTION bool arrive(const Member& member, const RowBlockShare& share,
                                     const Sums& team_sums) const {
    bool last = false;
    Kokkos::single(
        Kokkos::PerTeam(member),
        [&](bool& is_last) {
          for (int i = 0; i < Rows; ++i) {
            if (i < share.rows)
              partials[partial_layout.at(share.b, share.first_output + i, share.segment)] =
                  team_sums.value[i];
          }
          Kokkos::memory_fence();  // partials visible before the count
          int* count = arrivals + share.b * blocks + share.block;
          is_last = Kokkos::atomic_fetch_add(count, 1) == segments - 1;
        },
        last);
    return last;
  }

  // The last team of a block: the block's columns of partial sums added in
  // segment order.
  KOKKOS_INLINE_FUNCTION Sums add_partials(const Member& member, T* scratch,
                                           const RowBlockShare& share) const {
    Kokkos::memory_fence();
    // Other teams' partials: volatile reads bypass this SM's L1 cache.
    const volatile T* column = partials;
    return team_totals(member, scratch, [&](const int lane, Sums& totals) {
      for (std::int64_t s = std::int64_t(member.team_rank()) * lanes + lane; s < segments;
           s += share.stride) {
        for (int i = 0; i < Rows; ++i) {
          if (i < share.rows)
            totals.value[i] += column[partial_layout.at(share.b, share.first_output + i, s)];
        }
      }
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    // Taken once: every get_shmem call takes a new piece of the team's
    // scratch, so asking again for the last team's second combine would run
    // past the scratch_bytes requested and get a null pointer.
    T* const scratch =
        member.team_size() == 1
            ? nullptr
            : static_cast<T*>(member.team_shmem().get_shmem(scratch_bytes(member.team_size())));
    const RowBlockShare share = share_of(member);
    // A whole block has no per-row test: branches between the loads would
    // make each wait for the previous one's use.
    Sums team_sums = share.rows == Rows
                         ? team_totals(member, scratch,
                                       [&](const int lane, Sums& mine) {
                                         accumulate<true>(member, share, lane, mine);
                                       })
                         : team_totals(member, scratch, [&](const int lane, Sums& mine) {
                             accumulate<false>(member, share, lane, mine);
                           });
    if (segments > 1) {
      if (!arrive(member, share, team_sums)) return;
      team_sums = add_partials(member, scratch, share);
    }
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      for (int i = 0; i < Rows; ++i) {
        if (i < share.rows) problem.store(share.b, share.first_output + i, team_sums.value[i]);
      }
      if (segments > 1) arrivals[share.b * blocks + share.block] = 0;  // ready for the next call
    });
  }
};

// ---------------------------------------------------------------------------
// Launches. `Workspace` is kpl::GemvWorkspace<ExecutionSpace, T>: partial
// sums and arrival counters kept between calls.

// Outputs-contiguous or strided data: threads along outputs, Width at a
// time, P segments along the reduction, then GemvCombinePartials.
template <class ExecutionSpace, class T, class Workspace>
void launch_partial_rows_across(const ExecutionSpace& space, const GemvProblem<T>& problem,
                                std::int64_t segments_wanted, Workspace& workspace) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  // GPUs: one 16-byte pack per load. CPUs: a 4 KB run of each column, which
  // the compiler turns into vector loads and the hardware prefetcher
  // follows; the group's sums stay in L1. (One 64-byte line per column made
  // every term a jump of a whole column: a new page per load on tall
  // matrices.)
  constexpr int width = host ? int(4096 / sizeof(T)) : pack_elements<T>();
  const bool packs = !host && problem.output_stride == 1 &&
                     is_pack_aligned<width>(problem.matrix, problem.length_stride) &&
                     is_pack_aligned<width>(problem.matrix, problem.batch_stride);
  const std::int64_t groups = (problem.outputs + width - 1) / width;
  std::int64_t segments = segments_wanted;
  if (segments <= 0) {
    // Enough threads to fill the device twice (GPU) or a few work items per
    // thread (CPU), but segments of at least 64 terms.
    const std::int64_t wanted = host ? 4 * space.concurrency() : 2 * space.concurrency();
    const std::int64_t threads = problem.batch * groups;
    segments = std::max<std::int64_t>(
        1, std::min((wanted + threads - 1) / threads, (problem.length + 63) / 64));
  }
  segments = std::min<std::int64_t>(segments, std::max<std::int64_t>(problem.length, 1));
  const std::int64_t segment_length = (problem.length + segments - 1) / segments;
  segments = (problem.length + segment_length - 1) / segment_length;
  // Partial (b, r, s) at ((b * segments + s) * outputs + r): adjacent threads
  // write adjacent outputs.
  const PartialLayout layout{segments * problem.outputs, 1, problem.outputs};
  T* partials =
      segments > 1 ? workspace.reserve(space, problem.batch * segments * problem.outputs) : nullptr;
  const Segments cut{segments, segment_length};
  const GemvRange<ExecutionSpace> policy(space, 0, problem.batch * segments * groups);
  if (packs) {
    Kokkos::parallel_for("kpl::gemv::partial_rows", policy,
                         ThreadPerOutputs<T, width, true>{problem, cut, partials, layout, groups});
  } else {
    Kokkos::parallel_for("kpl::gemv::partial_rows", policy,
                         ThreadPerOutputs<T, width, false>{problem, cut, partials, layout, groups});
  }
  if (segments > 1) {
    Kokkos::parallel_for("kpl::gemv::combine_partials",
                         GemvRange<ExecutionSpace>(space, 0, problem.batch * problem.outputs),
                         GemvCombinePartials<T>{problem, partials, layout, segments});
  }
}

// GPUs: the row-block kernel's teams are 8 threads of 32 vector lanes (a
// warp each on CUDA, so the team's sums combine by warp shuffles first), and
// a chunk of the reduction is one pack per thread.
constexpr int gpu_row_block_threads = 8, gpu_row_block_lanes = 32;

// GPUs: about one team per 512 threads the device holds (one wave of four
// 256-thread teams per SM, which a sweep of team counts found best;
// perf/RESULTS.md).
template <class ExecutionSpace>
std::int64_t gpu_wanted_teams(const ExecutionSpace& space) {
  return std::max<std::int64_t>(space.concurrency() / 512, 1);
}

// GPUs: teams per block of outputs (segments of the reduction) for
// `blocks` blocks in all whose dot products are `packs` packs long: enough
// for the wanted teams, each with at least two chunks. Shapes with that many
// blocks already get one segment: no partial sums.
template <class ExecutionSpace>
std::int64_t gpu_row_block_segments(const ExecutionSpace& space, std::int64_t blocks,
                                    std::int64_t packs) {
  const std::int64_t chunks = (packs + gpu_row_block_threads * gpu_row_block_lanes - 1) /
                              (gpu_row_block_threads * gpu_row_block_lanes);
  const std::int64_t segments = (gpu_wanted_teams(space) + blocks - 1) / blocks;
  return std::clamp<std::int64_t>(std::min(segments, chunks / 2), 1,
                                  std::max<std::int64_t>(chunks, 1));
}

// Threads per team of the row-block kernel: the caller's `wanted` (clamped
// to what the backend and the kernel's launch bounds allow), else 8 on GPUs
// and 1 on CPUs (a CPU thread needs no partner to stream its share).
template <class Functor, class ExecutionSpace>
int row_block_threads(const ExecutionSpace& space, int lanes, int wanted) {
  if (wanted <= 0) return runs_on_host_v<ExecutionSpace> ? 1 : gpu_row_block_threads;
  const int largest =
      std::min(256 / lanes, typename Functor::Policy(space, 1, 1, lanes)
                                .team_size_max(Functor{}, Kokkos::ParallelForTag()));
  return std::clamp(wanted, 1, std::max(largest, 1));
}

// How the row-block kernel cuts the reduction for `team_size` threads x
// lanes a team.
struct RowBlockGrid {
  std::int64_t blocks;       // of outputs, per batch entry
  std::int64_t segments;     // teams per block
  std::int64_t chunk_packs;  // packs per chunk
};

template <class ExecutionSpace, class T>
RowBlockGrid row_block_grid(const ExecutionSpace& space, const GemvProblem<T>& problem, int rows,
                            int width, int team_size, std::int64_t segments_wanted) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  const std::int64_t blocks = (problem.outputs + rows - 1) / rows;
  const std::int64_t packs = std::max<std::int64_t>(problem.length / width, 1);
  // GPUs: a chunk is one pack per thread. CPUs: one contiguous chunk per team.
  const std::int64_t gpu_chunks = (packs + team_size - 1) / team_size;
  std::int64_t segments = segments_wanted;
  if (segments <= 0) {
    if constexpr (host) {
      // Four work items per thread.
      segments = (4 * space.concurrency() + problem.batch * blocks - 1) / (problem.batch * blocks);
    } else {
      segments = gpu_row_block_segments(space, problem.batch * blocks, packs);
    }
  }
  segments = std::clamp<std::int64_t>(segments, 1, host ? packs : gpu_chunks);
  const std::int64_t chunk_packs = host ? (packs + segments - 1) / segments : team_size;
  if constexpr (host) segments = (packs + chunk_packs - 1) / chunk_packs;
  if (problem.batch * segments * blocks > std::numeric_limits<int>::max()) {
    throw std::length_error("kpl::gemv: " + std::to_string(problem.batch * blocks) +
                            " blocks of outputs exceed the league of one launch");
  }
  return {blocks, segments, chunk_packs};
}

template <class ExecutionSpace, class T, int Rows, int Width, class Workspace>
void launch_row_blocks(const ExecutionSpace& space, const GemvProblem<T>& problem,
                       std::int64_t segments_wanted, int threads_wanted, Workspace& workspace) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  // Two-row blocks on GPUs load two steps of their share before using either
  // (four row packs in flight per thread instead of two). Four steps, or two
  // steps with 4 or more rows, were slower in a sweep of rows x steps
  // (register pressure; perf/RESULTS.md).
  constexpr int steps = !host && Rows == 2 ? 2 : 1;
  using Functor = RowBlockPerTeam<T, Rows, Width, ExecutionSpace, steps>;
  const int lanes = host ? 1 : gpu_row_block_lanes;  // CPUs: lanes are a loop
  const int threads = row_block_threads<Functor>(space, lanes, threads_wanted);
  const RowBlockGrid grid =
      row_block_grid(space, problem, Rows, Width, threads * lanes, segments_wanted);
  T* partials = nullptr;
  int* arrivals = nullptr;
  // Partial (b, r, s) at ((b * outputs + r) * segments + s): the last team
  // of a block reads adjacent segments.
  const PartialLayout layout{problem.outputs * grid.segments, grid.segments, 1};
  if (grid.segments > 1) {
    partials = workspace.reserve(space, problem.batch * problem.outputs * grid.segments);
    arrivals = workspace.counters(space, problem.batch * grid.blocks);
  }
  const auto teams = static_cast<int>(problem.batch * grid.segments * grid.blocks);
  Kokkos::parallel_for("kpl::gemv::partial_rows",
                       typename Functor::Policy(space, teams, threads, lanes)
                           .set_scratch_size(0, Kokkos::PerTeam(Functor::scratch_bytes(threads))),
                       Functor{problem, grid.segments, grid.chunk_packs, partials, layout, arrivals,
                               grid.blocks, lanes});
}

// Outputs per block of the row-block kernel: the caller's `wanted`, else
// CPUs 16; GPUs with many outputs 2, so every block's team has plenty of
// work; GPUs with few outputs (tall, skinny B^T g) 4 float or 8 double rows
// (x's 16-byte pack reused 4 or 8 times per load, and few enough sums to
// keep every row load in flight in 64 registers), unless the dot products
// are too short to give those blocks half the wanted teams: then 2-row
// blocks, four times the teams of 8-row ones and a quarter of their team
// reduction. A sweep of rows per block backs each case (perf/RESULTS.md).
// Rounded down to 1, 2, 4, 8 or 16.
template <class ExecutionSpace, class T>
int row_block_rows(const ExecutionSpace& space, const GemvProblem<T>& problem, int wanted,
                   std::int64_t reduction_packs) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  int rows = wanted;
  if (rows <= 0) {
    const std::int64_t outputs = problem.batch * problem.outputs;
    rows = host ? 16 : outputs * 256 >= space.concurrency() ? 2 : (sizeof(T) == 4 ? 4 : 8);
    if (!host && rows > 2) {
      const std::int64_t blocks = problem.batch * ((problem.outputs + rows - 1) / rows);
      if (2 * blocks * gpu_row_block_segments(space, blocks, reduction_packs) <
          gpu_wanted_teams(space))
        rows = 2;
    }
  }
  return round_down_to_power_of_two(
      std::min<int>(rows, int(std::max<std::int64_t>(problem.outputs, 1))), 16);
}

// Calls f(std::integral_constant<int, rows>) for rows 1, 2, 4, 8 or 16.
template <class F>
void with_rows_constant(int rows, const F& f) {
  switch (rows) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 8:
      return f(std::integral_constant<int, 8>{});
    default:
      return f(std::integral_constant<int, 16>{});
  }
}

// Reduction-contiguous data: the row-block kernel, in 16-byte packs where
// the rows and x are aligned to them.
template <class ExecutionSpace, class T, class Workspace>
void launch_partial_rows_along(const ExecutionSpace& space, const GemvProblem<T>& problem,
                               std::int64_t segments_wanted, int rows_wanted, int threads_wanted,
                               Workspace& workspace) {
  constexpr int pack = pack_elements<T>();
  const bool packs = is_pack_aligned<pack>(problem.matrix, problem.output_stride) &&
                     is_pack_aligned<pack>(problem.matrix, problem.batch_stride) &&
                     is_pack_aligned<pack>(problem.x, pack);
  const std::int64_t reduction_packs =
      std::max<std::int64_t>(problem.length / (packs ? pack : 1), 1);
  const int rows = row_block_rows(space, problem, rows_wanted, reduction_packs);
  with_rows_constant(rows, [&](auto rows_constant) {
    constexpr int Rows = decltype(rows_constant)::value;
    if (packs) {
      launch_row_blocks<ExecutionSpace, T, Rows, pack>(space, problem, segments_wanted,
                                                       threads_wanted, workspace);
    } else {
      launch_row_blocks<ExecutionSpace, T, Rows, 1>(space, problem, segments_wanted, threads_wanted,
                                                    workspace);
    }
  });
}

// §3.2.3 in the kernel that suits the data: outputs-contiguous data goes to
// ThreadPerOutputs (packs on GPUs, column runs on CPUs), reduction-contiguous
// data to the row-block kernel.
template <class ExecutionSpace, class T, class Workspace>
void launch_partial_rows(const ExecutionSpace& space, const GemvProblem<T>& problem,
                         std::int64_t segments_wanted, int rows_wanted, int threads_wanted,
                         Workspace& workspace) {
  if (gemv_access(problem) == GemvAccess::reduction_contiguous) {
    launch_partial_rows_along(space, problem, segments_wanted, rows_wanted, threads_wanted,
                              workspace);
  } else {
    launch_partial_rows_across(space, problem, segments_wanted, workspace);
  }
}

}  // namespace kpl::impl
