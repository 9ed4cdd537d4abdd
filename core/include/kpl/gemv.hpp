// Dense matrix-vector products, y = alpha * op(A) * x + beta * y, in the three
// GPU strategies of Sieminski & Lee 2023 (§3.2, Appendix B; after Bainville's
// GPU gemv), plus Kokkos Kernels' gemv (cuBLAS or a CPU BLAS underneath) as
// the baseline, behind one call:
//
//   kpl::gemv(space, kpl::Transpose::yes, alpha, A, x, beta, y);            // automatic
//   kpl::gemv(space, kpl::Transpose::no, 1.0, A, x, 0.0, y,
//             {kpl::GemvStrategy::team_per_dot});
//
// - thread_per_row (§3.2.1): one thread computes one dot product.
// - team_per_dot (§3.2.2): P vector lanes share each dot product and combine
//   by Kokkos' vector reduction; a team holds M' such dot products.
// - partial_rows (§3.2.3): each dot product is cut into P segments; threads
//   write an M x P partial matrix that a second kernel reduces. On data where
//   a dot product runs along memory, a team takes a block of outputs and one
//   share of the reduction (every P-th chunk of it on GPUs), reads x once for
//   the whole block, and the last team of a block to finish adds the block's
//   partial sums (the kernel for tall, skinny B^T g).
// - kokkos_kernels: KokkosBlas::gemv, the baseline users have today.
// - automatic: partial_rows, except on GPUs for small outputs-contiguous
//   products, where team_per_dot or thread_per_row wins
//   (impl::automatic_strategy says when and why). On the H100 within 5 %
//   of the fastest strategy at every shape of the seed's grid
//   (perf/RESULTS.md).
//
// A is any 2-D View (LayoutLeft, LayoutRight, LayoutStride); x and y any 1-D
// Views; float or double; all accessible from the execution space. As in
// BLAS, beta = 0 means y is written without being read, and alpha = 0 means A
// and x are not read. gemv_batched applies one x to a batch of matrices
// ([batch, m, n], e.g. the GAM's base-learner bases B_j) in one launch.
//
// The partial-matrix strategy needs device memory for the partial sums; pass
// a GemvWorkspace to reuse it across calls (otherwise each such call
// allocates, which on GPUs costs more than a small product).
#pragma once

#include <kpl/impl/gemv_kernels.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/pack.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace kpl {

// op(A): A itself or its transpose (BLAS' TRANS = 'N' or 'T').
enum class Transpose { no, yes };

enum class GemvStrategy {
  automatic,
  thread_per_row,
  team_per_dot,
  partial_rows,
  kokkos_kernels,
};

struct GemvOptions {
  GemvStrategy strategy = GemvStrategy::automatic;
  // P. team_per_dot: vector lanes per dot product (rounded down to a power of
  // two within the backend's vector length). partial_rows: segments each dot
  // product is cut into. 0: chosen from the shape and the concurrency.
  int threads_per_dot = 0;
  // M'. team_per_dot: dot products per team. partial_rows on data where dot
  // products run along memory: outputs per team (rounded down to 1, 2, 4, 8
  // or 16). 0: chosen.
  int rows_per_team = 0;
};

// The names used on kpl's command line and in benchmark labels.
inline std::string_view to_string(GemvStrategy strategy) {
  switch (strategy) {
    case GemvStrategy::automatic:
      return "automatic";
    case GemvStrategy::thread_per_row:
      return "thread-per-row";
    case GemvStrategy::team_per_dot:
      return "team-per-dot";
    case GemvStrategy::partial_rows:
      return "partial-rows";
    case GemvStrategy::kokkos_kernels:
      return "kokkos-kernels";
  }
  return "unknown";
}

inline GemvStrategy gemv_strategy_from_string(std::string_view name) {
  for (auto strategy :
       {GemvStrategy::automatic, GemvStrategy::thread_per_row, GemvStrategy::team_per_dot,
        GemvStrategy::partial_rows, GemvStrategy::kokkos_kernels}) {
    if (to_string(strategy) == name) return strategy;
  }
  throw std::invalid_argument("unknown gemv strategy '" + std::string(name) +
                              "' (automatic, thread-per-row, team-per-dot, partial-rows, "
                              "kokkos-kernels)");
}

// Device memory for partial sums and the counters of the partial-rows
// kernel, grown on demand and kept between calls. One workspace serves one
// stream of calls at a time (calls on different execution-space instances
// that may overlap need a workspace each).
template <class ExecutionSpace, class T>
class GemvWorkspace {
 public:
  // The first `elements` partial sums, reallocated only when too small.
  T* reserve(const ExecutionSpace& space, std::int64_t elements) {
    if (static_cast<std::int64_t>(partials_.extent(0)) < elements) {
      partials_ = decltype(partials_)();
      partials_ = decltype(partials_)(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gemv::partials"),
          static_cast<std::size_t>(elements));
    }
    return partials_.data();
  }
  // `count` counters, zero on return; kernels leave them at zero.
  int* counters(const ExecutionSpace& space, std::int64_t count) {
    if (static_cast<std::int64_t>(counters_.extent(0)) < count) {
      counters_ = decltype(counters_)();
      counters_ = decltype(counters_)(Kokkos::view_alloc(space, "kpl::gemv::arrivals"),
                                      static_cast<std::size_t>(count));
    }
    return counters_.data();
  }

 private:
  Kokkos::View<T*, typename ExecutionSpace::memory_space> partials_;
  Kokkos::View<int*, typename ExecutionSpace::memory_space> counters_;
};

namespace impl {

// Which of the matrix strides is 1 decides the thread mapping (see
// gemv_kernels.hpp).
enum class GemvAccess { reduction_contiguous, outputs_contiguous, strided };

template <class T>
GemvAccess gemv_access(const GemvProblem<T>& problem) {
  if (problem.length_stride == 1 && problem.x_stride == 1) return GemvAccess::reduction_contiguous;
  if (problem.output_stride == 1) return GemvAccess::outputs_contiguous;
  return GemvAccess::strided;
}

inline int round_down_to_power_of_two(int value, int limit) {
  int result = 1;
  while (result * 2 <= std::min(value, limit)) result *= 2;
  return result;
}

template <class ExecutionSpace, class T>
void launch_scale(const ExecutionSpace& space, const GemvProblem<T>& problem) {
  Kokkos::parallel_for("kpl::gemv::scale_y",
                       Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                           space, 0, problem.batch * problem.outputs),
                       ScaleOutputs<T>{problem});
}

template <class ExecutionSpace, class T>
void launch_combine(const ExecutionSpace& space, const GemvProblem<T>& problem, const T* partials,
                    const PartialLayout& layout, std::int64_t segments) {
  Kokkos::parallel_for("kpl::gemv::combine_partials",
                       Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                           space, 0, problem.batch * problem.outputs),
                       GemvCombinePartials<T>{problem, partials, layout, segments});
}

template <class ExecutionSpace, class T>
void launch_thread_per_row(const ExecutionSpace& space, const GemvProblem<T>& problem) {
  const std::int64_t threads = problem.batch * problem.outputs;
  Kokkos::parallel_for(
      "kpl::gemv::thread_per_row",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, threads),
      ThreadPerOutputs<T, 1, false>{problem, Segments{1, problem.length}, nullptr, PartialLayout{},
                                    problem.outputs});
}

template <class ExecutionSpace, class T>
void launch_team_per_dot(const ExecutionSpace& space, const GemvProblem<T>& problem,
                         const GemvOptions& options) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  const int max_vector = static_cast<int>(Kokkos::TeamPolicy<ExecutionSpace>::vector_length_max());
  constexpr int pack = host ? 1 : pack_elements<T>();
  const bool packs = pack > 1 && gemv_access(problem) == GemvAccess::reduction_contiguous &&
                     is_pack_aligned<pack>(problem.matrix, problem.output_stride) &&
                     is_pack_aligned<pack>(problem.matrix, problem.batch_stride) &&
                     is_pack_aligned<pack>(problem.x, pack);
  // P: enough lanes to cover the dot product in one pass of packs, at most a warp.
  int lanes = options.threads_per_dot;
  if (lanes <= 0) {
    const std::int64_t steps = (problem.length + (packs ? pack : 1) - 1) / (packs ? pack : 1);
    lanes = static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(steps, 1), max_vector));
  }
  lanes = round_down_to_power_of_two(lanes, max_vector);
  auto launch = [&](auto functor_type) {
    using Functor = typename decltype(functor_type)::type;
    // M': 256 threads a team on GPUs unless the caller says otherwise, never
    // more than the backend allows.
    const int largest = Kokkos::TeamPolicy<ExecutionSpace>(space, 1, 1, lanes)
                            .team_size_max(Functor{problem, 1, lanes}, Kokkos::ParallelForTag());
    const int rows_per_team = std::clamp(
        options.rows_per_team > 0 ? options.rows_per_team : (host ? 1 : 256 / lanes), 1, largest);
    const std::int64_t teams_per_batch = (problem.outputs + rows_per_team - 1) / rows_per_team;
    Kokkos::parallel_for(
        "kpl::gemv::team_per_dot",
        Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(problem.batch * teams_per_batch),
                                           rows_per_team, lanes),
        Functor{problem, teams_per_batch, lanes});
  };
  if (packs) {
    launch(type_tag<LanesPerDot<T, pack, ExecutionSpace>>{});
  } else {
    launch(type_tag<LanesPerDot<T, 1, ExecutionSpace>>{});
  }
}

// partial_rows on outputs-contiguous or strided data: threads along outputs,
// Width at a time, P segments along the reduction.
template <class ExecutionSpace, class T>
void launch_partial_rows_across(const ExecutionSpace& space, const GemvProblem<T>& problem,
                                const GemvOptions& options,
                                GemvWorkspace<ExecutionSpace, T>& workspace) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  // GPUs: one 16-byte pack per load. CPUs: a 4 KB run of each column (1024
  // floats, 512 doubles), which the compiler turns into vector loads and the
  // hardware prefetcher follows; the group's sums stay in L1. (One 64-byte
  // line per column, as before, made every term a jump of a whole column:
  // a new page per load on tall matrices.)
  constexpr int width = host ? int(4096 / sizeof(T)) : pack_elements<T>();
  const bool contiguous = problem.output_stride == 1;
  const bool packs = !host && contiguous &&
                     is_pack_aligned<width>(problem.matrix, problem.length_stride) &&
                     is_pack_aligned<width>(problem.matrix, problem.batch_stride);
  const std::int64_t groups = (problem.outputs + width - 1) / width;
  std::int64_t segments = options.threads_per_dot;
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
  T* partials = nullptr;
  // Partial (b, r, s) at ((b * segments + s) * outputs + r): adjacent threads
  // write adjacent outputs.
  const PartialLayout layout{segments * problem.outputs, 1, problem.outputs};
  if (segments > 1) partials = workspace.reserve(space, problem.batch * segments * problem.outputs);
  const Segments cut{segments, segment_length};
  const auto policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
      space, 0, problem.batch * segments * groups);
  if (packs) {
    Kokkos::parallel_for("kpl::gemv::partial_rows", policy,
                         ThreadPerOutputs<T, width, true>{problem, cut, partials, layout, groups});
  } else {
    Kokkos::parallel_for("kpl::gemv::partial_rows", policy,
                         ThreadPerOutputs<T, width, false>{problem, cut, partials, layout, groups});
  }
  if (segments > 1) launch_combine(space, problem, partials, layout, segments);
}

// GPUs: the row-block kernel's teams are 8 threads of 32 vector lanes (a
// warp each on CUDA, so the team's sums combine by warp shuffles first), and
// a chunk of the reduction is one pack per thread.
constexpr int gpu_row_block_threads = 8, gpu_row_block_lanes = 32;

// GPUs: about one team per 512 threads the device holds (528 on the H100: one
// wave of four teams per SM). H100 sweep (raw CUDA prototype of the row-block
// kernel, 256 threads): 1e6 x 16 float 28 us with 264-528 teams, 30-33 us
// with 132 or 2112.
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

template <class ExecutionSpace, class T, int Rows, int Width>
void launch_row_blocks(const ExecutionSpace& space, const GemvProblem<T>& problem,
                       std::int64_t segments_wanted, GemvWorkspace<ExecutionSpace, T>& workspace) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  // CPUs: one thread, one lane.
  const int threads = host ? 1 : gpu_row_block_threads, lanes = host ? 1 : gpu_row_block_lanes;
  const int team_size = threads * lanes;
  const std::int64_t blocks = (problem.outputs + Rows - 1) / Rows;
  const std::int64_t packs = std::max<std::int64_t>(problem.length / Width, 1);
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
  T* partials = nullptr;
  int* arrivals = nullptr;
  // Partial (b, r, s) at ((b * outputs + r) * segments + s): the last team
  // of a block reads adjacent segments.
  const PartialLayout layout{problem.outputs * segments, segments, 1};
  if (segments > 1) {
    partials = workspace.reserve(space, problem.batch * problem.outputs * segments);
    arrivals = workspace.counters(space, problem.batch * blocks);
  }
  if (problem.batch * segments * blocks > std::numeric_limits<int>::max()) {
    throw std::length_error("kpl::gemv: " + std::to_string(problem.batch * blocks) +
                            " blocks of outputs exceed the league of one launch");
  }
  const auto teams = static_cast<int>(problem.batch * segments * blocks);
  // Two-row blocks on GPUs load two steps of their share before using either
  // (four row packs in flight per thread instead of two). H100 sweep of rows
  // x steps in this kernel: 16384^2 T float 368 -> 351 us, double 728 -> 699;
  // 100000 x 6400 T float 899 -> 854, double 1820 -> 1728. Four steps, or two
  // steps with 4 or more rows, were slower (register pressure: 8 float rows
  // x 2 steps 67 us at 1e6 x 16 against 34 with one step).
  constexpr int steps = !host && Rows == 2 ? 2 : 1;
  using Functor = RowBlockPerTeam<T, Rows, Width, ExecutionSpace, steps>;
  Kokkos::parallel_for(
      "kpl::gemv::partial_rows",
      typename Functor::Policy(space, teams, threads, lanes)
          .set_scratch_size(0, Kokkos::PerTeam(Functor::scratch_bytes(threads))),
      Functor{problem, segments, chunk_packs, partials, layout, arrivals, blocks, lanes});
}

// partial_rows on reduction-contiguous data.
template <class ExecutionSpace, class T>
void launch_partial_rows_along(const ExecutionSpace& space, const GemvProblem<T>& problem,
                               const GemvOptions& options,
                               GemvWorkspace<ExecutionSpace, T>& workspace) {
  constexpr bool host = runs_on_host_v<ExecutionSpace>;
  constexpr int pack = pack_elements<T>();
  const bool packs = is_pack_aligned<pack>(problem.matrix, problem.output_stride) &&
                     is_pack_aligned<pack>(problem.matrix, problem.batch_stride) &&
                     is_pack_aligned<pack>(problem.x, pack);
  int rows = options.rows_per_team;
  if (rows <= 0) {
    // CPUs: 16 rows. GPUs, few outputs (tall, skinny B^T g): 4 float rows, 8
    // double rows (x's 16-byte pack reused 4 or 8 times per load, and few
    // enough sums to keep every row load in flight in 64 registers); many
    // outputs: 2 rows, so every block's team has plenty of work. H100 sweep
    // of this kernel (rows 2/4/8/16, back to back): 1e6 x 16 float
    // 34.9/30.5/33.8/41.6 us, 1e6 x 64 float 108/95.4/96.6/102; 1e6 x 16
    // double 60.7/56.2/56.7/72.6, 1e6 x 64 double 207/188/185/196.
    const std::int64_t outputs = problem.batch * problem.outputs;
    rows = host ? 16 : outputs * 256 >= space.concurrency() ? 2 : (sizeof(T) == 4 ? 4 : 8);
    if (!host && rows > 2) {
      // Dot products too short to give those blocks half the wanted teams
      // (n <= 1e4 on the H100, and 1e5 x 16): 2-row blocks, four times the
      // teams of 8-row ones and a quarter of their team reduction. H100, GPU
      // time per call (graph replays, medians of 5; RESULTS, "automatic on
      // small shapes"), rows 8 or 4 -> 2: T double 1000 x 32 5.27 -> 3.62
      // us, 10000 x 16 double 9.00 -> 5.75, 10000 x 16 float 6.16 -> 5.48;
      // team_per_dot takes 4.3-4.5 us at 1000 rows, 16-17 at 10000.
      const std::int64_t blocks = problem.batch * ((problem.outputs + rows - 1) / rows);
      const std::int64_t reduction_packs =
          std::max<std::int64_t>(problem.length / (packs ? pack : 1), 1);
      if (2 * blocks * gpu_row_block_segments(space, blocks, reduction_packs) <
          gpu_wanted_teams(space))
        rows = 2;
    }
  }
  rows = round_down_to_power_of_two(
      std::min<int>(rows, int(std::max<std::int64_t>(problem.outputs, 1))), 16);
  const std::int64_t segments = options.threads_per_dot;
  auto launch = [&](auto rows_constant) {
    constexpr int Rows = decltype(rows_constant)::value;
    if (packs) {
      launch_row_blocks<ExecutionSpace, T, Rows, pack>(space, problem, segments, workspace);
    } else {
      launch_row_blocks<ExecutionSpace, T, Rows, 1>(space, problem, segments, workspace);
    }
  };
  switch (rows) {
    case 1:
      launch(std::integral_constant<int, 1>{});
      break;
    case 2:
      launch(std::integral_constant<int, 2>{});
      break;
    case 4:
      launch(std::integral_constant<int, 4>{});
      break;
    case 8:
      launch(std::integral_constant<int, 8>{});
      break;
    default:
      launch(std::integral_constant<int, 16>{});
      break;
  }
}

// What strategy::automatic runs. CPUs: partial_rows everywhere (a thread
// needs no lanes to share a dot product; perf/RESULTS.md, CPU sections).
// GPUs: partial_rows, except on outputs-contiguous data (B d on column-major
// B) where its threads would each walk a long chain of dependent loads with
// too few threads to hide it. There a partial_rows thread takes one segment
// of the dot product (all of it up to 64 terms), so its time grows with the
// segment, not with n; team_per_dot's lanes (up to 32 per dot product) take
// a term or two each. That wins while the outputs are few (at most one per
// 128 resident threads: 2112 on the H100) with dot products of 16 terms or
// more, or the matrix is small (at most four elements per resident thread)
// with 64 terms or more; thread_per_row is the case below. H100, GPU time
// per call (CUDA-graph replays, medians of 5; perf/RESULTS.md, "automatic on
// small shapes"), partial_rows -> team_per_dot: B d double 1000 x 16 3.31 ->
// 2.89 us, 1000 x 32 4.69 -> 2.78, 1000 x 64 7.42 -> 3.06, 10000 x 64 7.73
// -> 6.01; but 10000 x 16 3.44 -> 4.08 and 100000 x 64 24.6 -> 39.4
// (team_per_dot's scattered loads).
template <class ExecutionSpace, class T>
GemvStrategy automatic_strategy(const ExecutionSpace& space, const GemvProblem<T>& problem) {
  if constexpr (runs_on_host_v<ExecutionSpace>) {
    (void)space;
    (void)problem;
    return GemvStrategy::partial_rows;
  } else {
    const std::int64_t resident_threads = space.concurrency();
    const std::int64_t outputs = problem.batch * problem.outputs;
    const bool few_outputs = outputs * 128 <= resident_threads && problem.length >= 16;
    const bool small_long_dots =
        outputs * problem.length <= 4 * resident_threads && problem.length >= 64;
    if (gemv_access(problem) == GemvAccess::outputs_contiguous) {
      if (few_outputs || small_long_dots) return GemvStrategy::team_per_dot;
      // Dot products of at most 64 terms (partial_rows' one segment) and
      // its 16-byte-pack threads filling at most an eighth of the device: a
      // thread per output puts 4 (float) or 2 (double) times the threads,
      // and loads in flight, on chains of the same length. H100, graph
      // replays: B d float 10000 x 32 3.75 -> 3.59 us, 100000 x 64 6.56 ->
      // 6.34; double 10000 x 32 4.88 -> 4.78. With more threads than that
      // the two are within 3 % either way (n = 1e5 double, 1e6).
      const std::int64_t pack_threads = outputs / pack_elements<T>();
      if (problem.length <= 64 && pack_threads * 8 <= resident_threads)
        return GemvStrategy::thread_per_row;
    }
    return GemvStrategy::partial_rows;
  }
}

template <class ExecutionSpace, class T>
void launch_gemv(const ExecutionSpace& space, const GemvProblem<T>& problem,
                 const GemvOptions& options, GemvWorkspace<ExecutionSpace, T>& workspace) {
  if (problem.batch == 0 || problem.outputs == 0) return;
  if (problem.length == 0 || problem.alpha == T(0)) {
    launch_scale(space, problem);
    return;
  }
  const GemvStrategy strategy = options.strategy == GemvStrategy::automatic
                                    ? automatic_strategy(space, problem)
                                    : options.strategy;
  switch (strategy) {
    case GemvStrategy::thread_per_row:
      launch_thread_per_row(space, problem);
      break;
    case GemvStrategy::team_per_dot:
      launch_team_per_dot(space, problem, options);
      break;
    default:
      // partial_rows. H100, back to back, partial_rows / team_per_dot
      // (perf/RESULTS.md, "row-block steps"): 16384^2 T float 351 / 411 us,
      // double 699 / 715; 100000 x 6400 T float 854 / 1058, double 1728 /
      // 1762; 1e6 x 16-64 T: 30-185 us / 3.2-3.4 ms. Outputs-contiguous data
      // goes to ThreadPerOutputs (packs on GPUs, column runs on CPUs),
      // reduction-contiguous data to the row-block kernel.
      if (gemv_access(problem) == GemvAccess::reduction_contiguous) {
        launch_partial_rows_along(space, problem, options, workspace);
      } else {
        launch_partial_rows_across(space, problem, options, workspace);
      }
  }
}

template <class ExecutionSpace, class AView, class XView, class YView>
void check_gemv_views() {
  static_assert(Kokkos::is_view<AView>::value && Kokkos::is_view<XView>::value &&
                    Kokkos::is_view<YView>::value,
                "kpl::gemv takes Kokkos::Views");
  static_assert(XView::rank == 1, "kpl::gemv: x must be a 1-D View");
  using T = typename YView::non_const_value_type;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "kpl::gemv: float or double");
  static_assert(std::is_same_v<typename AView::non_const_value_type, T> &&
                    std::is_same_v<typename XView::non_const_value_type, T>,
                "kpl::gemv: A, x and y must have the same value type");
  static_assert(!std::is_const_v<typename YView::value_type>, "kpl::gemv: y must be writable");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename AView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename XView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename YView::memory_space>::accessible,
      "kpl::gemv: A, x and y must be accessible from the execution space");
}

inline void check_gemv_extents(const char* function, Transpose transpose, std::int64_t rows,
                               std::int64_t columns, std::int64_t x_length, std::int64_t y_length) {
  const std::int64_t wanted_x = transpose == Transpose::no ? columns : rows;
  const std::int64_t wanted_y = transpose == Transpose::no ? rows : columns;
  if (x_length != wanted_x || y_length != wanted_y) {
    throw std::invalid_argument(
        std::string(function) + ": A is " + std::to_string(rows) + " x " + std::to_string(columns) +
        (transpose == Transpose::no ? " (op N)" : " (op T)") + ", so x needs " +
        std::to_string(wanted_x) + " and y " + std::to_string(wanted_y) + " elements; got " +
        std::to_string(x_length) + " and " + std::to_string(y_length));
  }
}

}  // namespace impl

// y = alpha * op(A) * x + beta * y on `space` (asynchronous, like any Kokkos
// kernel). Throws std::invalid_argument when the extents do not match.
template <class ExecutionSpace, class AView, class XView, class YView>
void gemv(const ExecutionSpace& space, Transpose transpose, typename YView::const_value_type alpha,
          const AView& A, const XView& x, typename YView::const_value_type beta, const YView& y,
          GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type>& workspace,
          const GemvOptions& options = {}) {
  impl::check_gemv_views<ExecutionSpace, AView, XView, YView>();
  static_assert(AView::rank == 2, "kpl::gemv: A must be a 2-D View (gemv_batched takes 3-D)");
  static_assert(YView::rank == 1, "kpl::gemv: y must be a 1-D View");
  using T = typename YView::non_const_value_type;
  const auto rows = static_cast<std::int64_t>(A.extent(0));
  const auto columns = static_cast<std::int64_t>(A.extent(1));
  impl::check_gemv_extents("kpl::gemv", transpose, rows, columns, x.extent(0), y.extent(0));
  if (options.strategy == GemvStrategy::kokkos_kernels) {
    compat::kokkos_blas_gemv(space, transpose == Transpose::no ? "N" : "T", alpha, A, x, beta, y);
    return;
  }
  const bool normal = transpose == Transpose::no;
  const impl::GemvProblem<T> problem{A.data(),
                                       x.data(),
                                       y.data(),
                                       1,
                                       normal ? rows : columns,
                                       normal ? columns : rows,
                                       0,
                                       std::int64_t(normal ? A.stride(0) : A.stride(1)),
                                       std::int64_t(normal ? A.stride(1) : A.stride(0)),
                                       std::int64_t(x.stride(0)),
                                       0,
                                       std::int64_t(y.stride(0)),
                                       alpha,
                                       beta};
  impl::launch_gemv(space, problem, options, workspace);
}

template <class ExecutionSpace, class AView, class XView, class YView>
void gemv(const ExecutionSpace& space, Transpose transpose, typename YView::const_value_type alpha,
          const AView& A, const XView& x, typename YView::const_value_type beta, const YView& y,
          const GemvOptions& options = {}) {
  GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type> workspace;
  gemv(space, transpose, alpha, A, x, beta, y, workspace, options);
}

// Y(b, :) = alpha * op(A(b, :, :)) * x + beta * Y(b, :) for every b: one x
// shared by a batch of matrices, in one launch (kokkos_kernels: one
// KokkosBlas::gemv per matrix). A is [batch, m, n] in any layout, so a stacked
// column-major [n, batch * k] matrix viewed as [batch, n, k] with strides
// (n * k, 1, n) is a batch too.
template <class ExecutionSpace, class AView, class XView, class YView>
void gemv_batched(const ExecutionSpace& space, Transpose transpose,
                  typename YView::const_value_type alpha, const AView& A, const XView& x,
                  typename YView::const_value_type beta, const YView& Y,
                  GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type>& workspace,
                  const GemvOptions& options = {}) {
  impl::check_gemv_views<ExecutionSpace, AView, XView, YView>();
  static_assert(AView::rank == 3, "kpl::gemv_batched: A must be a 3-D View [batch, m, n]");
  static_assert(YView::rank == 2, "kpl::gemv_batched: Y must be a 2-D View [batch, length]");
  using T = typename YView::non_const_value_type;
  const auto batch = static_cast<std::int64_t>(A.extent(0));
  const auto rows = static_cast<std::int64_t>(A.extent(1));
  const auto columns = static_cast<std::int64_t>(A.extent(2));
  if (static_cast<std::int64_t>(Y.extent(0)) != batch) {
    throw std::invalid_argument("kpl::gemv_batched: A holds " + std::to_string(batch) +
                                " matrices but Y " + std::to_string(Y.extent(0)) + " rows");
  }
  impl::check_gemv_extents("kpl::gemv_batched", transpose, rows, columns, x.extent(0),
                             Y.extent(1));
  if (options.strategy == GemvStrategy::kokkos_kernels) {
    for (std::int64_t b = 0; b < batch; ++b) {
      compat::kokkos_blas_gemv(space, transpose == Transpose::no ? "N" : "T", alpha,
                               Kokkos::subview(A, b, Kokkos::ALL, Kokkos::ALL), x, beta,
                               Kokkos::subview(Y, b, Kokkos::ALL));
    }
    return;
  }
  const bool normal = transpose == Transpose::no;
  const impl::GemvProblem<T> problem{A.data(),
                                       x.data(),
                                       Y.data(),
                                       batch,
                                       normal ? rows : columns,
                                       normal ? columns : rows,
                                       std::int64_t(A.stride(0)),
                                       std::int64_t(normal ? A.stride(1) : A.stride(2)),
                                       std::int64_t(normal ? A.stride(2) : A.stride(1)),
                                       std::int64_t(x.stride(0)),
                                       std::int64_t(Y.stride(0)),
                                       std::int64_t(Y.stride(1)),
                                       alpha,
                                       beta};
  impl::launch_gemv(space, problem, options, workspace);
}

template <class ExecutionSpace, class AView, class XView, class YView>
void gemv_batched(const ExecutionSpace& space, Transpose transpose,
                  typename YView::const_value_type alpha, const AView& A, const XView& x,
                  typename YView::const_value_type beta, const YView& Y,
                  const GemvOptions& options = {}) {
  GemvWorkspace<ExecutionSpace, typename YView::non_const_value_type> workspace;
  gemv_batched(space, transpose, alpha, A, x, beta, Y, workspace, options);
}

}  // namespace kpl
