// c_j = B_j^T u for every block of an evaluated basis (kpl/evaluated_basis.hpp):
// each row's B-spline values computed from x_j(i) as the row is read. Each
// team sums one chunk of rows of one or more blocks; chunks are added in
// order (impl/compact_basis_chunks.hpp), so the same inputs give the same
// bits.
//
// The CPU strategy sums each chunk in row order (the stored basis' own sums,
// bit for bit); the GPU one gives each thread its own column of sums and adds
// the columns in a fixed order: deterministic without atomics or fixed point.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/compact_basis_chunks.hpp>
#include <kpl/impl/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace kpl {
namespace impl {

// covariates(j, i) = X(i, j), one index j n + i per value: consecutive
// threads write consecutive rows.
template <class XView, class Covariates>
struct TransposeCovariates {
  XView X;
  Covariates covariates;
  std::int64_t rows;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t index) const {
    const std::int64_t j = index / rows, i = index - j * rows;
    covariates(j, i) = static_cast<double>(X(i, j));
  }
};

// The same through 32 x 32 tiles in team scratch, for a row-major X on GPUs:
// a team reads its tile's 32 rows of X 32 consecutive values at a time, and
// writes each of its 32 covariates' 32 consecutive rows. Read one value a
// thread as above, X's rows p values apart cost a 32-byte sector for every
// 8-byte value.
template <class ExecutionSpace, class XView, class Covariates>
struct TransposeCovariatesByTiles {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int tile = 32, stride = tile + 1;  // + 1: fewer shared-memory bank conflicts
  XView X;
  Covariates covariates;
  std::int64_t rows, blocks, row_tiles;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t first_row = member.league_rank() % row_tiles * tile;
    const std::int64_t first_block = member.league_rank() / row_tiles * tile;
    const Scratch values(member.team_scratch(0), tile * stride);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile * tile), [&](const int e) {
      const int r = e / tile, b = e % tile;
      if (first_row + r < rows && first_block + b < blocks)
        values(r * stride + b) = static_cast<double>(X(first_row + r, first_block + b));
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile * tile), [&](const int e) {
      const int b = e / tile, r = e % tile;
      if (first_row + r < rows && first_block + b < blocks)
        covariates(first_block + b, first_row + r) = values(r * stride + b);
    });
  }
};

// By tiles with teams of team_size threads (public so that a test can run it
// on CPU threads too).
template <class ExecutionSpace, class XView, class Covariates>
void transpose_covariates_by_tiles(const ExecutionSpace& space, const XView& X,
                                   const Covariates& covariates, int team_size) {
  using Functor = TransposeCovariatesByTiles<ExecutionSpace, XView, Covariates>;
  const std::int64_t rows = covariates.extent(1), blocks = covariates.extent(0);
  if (rows == 0 || blocks == 0) return;
  const std::int64_t row_tiles = (rows + Functor::tile - 1) / Functor::tile;
  const std::int64_t block_tiles = (blocks + Functor::tile - 1) / Functor::tile;
  Kokkos::parallel_for(
      "kpl::evaluated_basis::transpose_covariates",
      Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(row_tiles * block_tiles),
                                         team_size)
          .set_scratch_size(
              0, Kokkos::PerTeam(Functor::Scratch::shmem_size(Functor::tile * Functor::stride))),
      Functor{X, covariates, rows, blocks, row_tiles});
}

// covariates := X transposed: by tiles where X is row-major on a GPU, else one
// value a thread (a column-major X is read along its columns then).
template <class ExecutionSpace, class XView, class Covariates>
void transpose_covariates(const ExecutionSpace& space, const XView& X,
                          const Covariates& covariates) {
  if constexpr (!compact_basis_on_host<ExecutionSpace> &&
                !std::is_same_v<typename XView::array_layout, Kokkos::LayoutLeft>) {
    transpose_covariates_by_tiles(space, X, covariates, 256);
  } else {
    Kokkos::parallel_for(
        "kpl::evaluated_basis::transpose_covariates",
        Kokkos::RangePolicy<ExecutionSpace>(space, 0, std::int64_t(covariates.size())),
        TransposeCovariates<XView, Covariates>{X, covariates, std::int64_t(covariates.extent(1))});
  }
}

// CPU: one thread per (block, chunk) evaluates and sums the chunk's rows in
// row order into four sets of partial sums: the compact basis'
// TransposeProductInRowOrder term for term. Host only: its sums live in a
// std::vector.
template <class T, class Degree, class Covariates, class Meshes, class UView, class Output>
struct EvaluatedTransposeProductInRowOrder {
  Covariates covariates;
  Meshes meshes;
  UView u;
  Output output;
  std::int64_t rows, rows_per_team;
  int k;
  Degree degree;

  void operator()(const std::int64_t team) const {
    const std::int64_t chunks = output.chunks;
    const std::int64_t j = team / chunks, chunk = team % chunks;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const int width = bspline_degree_value(degree) + 1;
    const BsplineRows rows_of(meshes(j));
    const double* x = &covariates(j, 0);
    std::vector<double> sums(cpu_row_partials * std::size_t(k), 0.0);
    for_each_row_interleaved(begin, end, [&](std::int64_t i, int set) {
      const double weight = u(i);
      double row[bspline_max_degree + 1];
      double* target = sums.data() + set * k + rows_of.row(x[i], row, degree);
      for (int q = 0; q < width; ++q) target[q] += double(T(row[q])) * weight;
    });
    for (int a = 0; a < k; ++a) output.store(j, chunk, a, added_partials(sums, k, a));
  }
};

// A thread's column of sums in team scratch: entry a at a * stride doubles
// from its first (the team's columns interleaved, see below).
struct GenericColumn {
  double* first;
  int stride;
  KOKKOS_INLINE_FUNCTION double load(int a) const { return first[a * stride]; }
  KOKKOS_INLINE_FUNCTION void store(int a, double value) const { first[a * stride] = value; }
};

// The same in shared memory with a compile-time stride, read and written on
// GPUs by its 32-bit shared-memory address (LDS and STS, each entry's
// offset an immediate). Through the generic pointer Kokkos' scratch gives,
// the compiler cannot tell that the memory is shared: each access was a
// generic load or store after a 64-bit address computation.
template <int Stride>
struct SharedColumn {
  double* first;
  unsigned address = 0;

  KOKKOS_INLINE_FUNCTION explicit SharedColumn(double* first_) : first(first_) {
#if defined(__CUDA_ARCH__)
    address = static_cast<unsigned>(__cvta_generic_to_shared(first));
#endif
  }

  // Volatile, both: the compiler keeps them in program order, so a load
  // never passes the store before it to the same sum.
  KOKKOS_INLINE_FUNCTION double load(int a) const {
#if defined(__CUDA_ARCH__)
    double value;
    asm volatile("ld.shared.f64 %0, [%1];"
                 : "=d"(value)
                 : "r"(address + 8u * unsigned(a * Stride)));
    return value;
#else
    return first[a * Stride];
#endif
  }

  KOKKOS_INLINE_FUNCTION void store(int a, double value) const {
#if defined(__CUDA_ARCH__)
    asm volatile("st.shared.f64 [%0], %1;" ::"r"(address + 8u * unsigned(a * Stride)), "d"(value)
                 : "memory");
#else
    first[a * Stride] = value;
#endif
  }
};

// *address, read on GPUs with the evict-first policy (ld.global.cs): the
// covariates stream through the L2 cache once a product, and would otherwise
// evict the small arrays that a fit's other kernels read every iteration (c's
// partials, M, R, u, f), which then wait on memory instead of the cache.
KOKKOS_INLINE_FUNCTION double load_streaming(const double* address) {
#if defined(__CUDA_ARCH__)
  return __ldcs(address);
#else
  return *address;
#endif
}

// Threads per GPU team where k allows it (evaluated_team_size): the
// columns' stride, a compile-time constant in the kernel's fast path.
inline constexpr int evaluated_gpu_team_size = 64;

// GPU: a team takes one chunk of rows and a group of consecutive blocks. For
// each block, every thread evaluates its rows (consecutive threads,
// consecutive rows: coalesced reads of x) and adds their terms, in row
// order, to its own column of k sums in scratch memory: no atomics, so the
// sums are plain doubles in a fixed order. The team's columns are then
// added up, each entry in its own fixed order.
//
// Shared-memory banks: a warp's threads add to rows of their columns that
// their rows' intervals pick, which differ from thread to thread. Sum a of
// thread t lives at a T + t (T threads, a whole number of warps on GPUs), so
// its bank depends on t alone and a warp's 32 adds take the two wavefronts
// 32 doubles need whatever the intervals. (Columns padded to T + 1 made the
// bank depend on the interval too: ~5-way conflicts, and the kernel was
// bound by shared-memory wavefronts.) The columns are added up without
// conflicts too (add_up_columns).
template <class ExecutionSpace, class T, class Degree, class Covariates, class Meshes, class UView,
          class Output>
struct EvaluatedTransposeProductByColumns {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Covariates covariates;
  Meshes meshes;
  UView u;
  Output output;
  std::int64_t rows, rows_per_team, blocks, blocks_per_team;
  int k, level;
  Degree degree;

  KOKKOS_INLINE_FUNCTION static constexpr std::int64_t column_stride(int team_size) {
    return team_size;
  }

  // Row i's terms added to the thread's column: the width sums loaded first,
  // then stored, so that their shared-memory latencies overlap (written as
  // load-add-store per sum, the compiler keeps the four round trips in
  // order, as it cannot tell that the addresses differ).
  template <class Column>
  KOKKOS_INLINE_FUNCTION void add_row(int first, const double* row, double weight,
                                      const Column& column) const {
    constexpr int max_width = bspline_max_degree + 1;
    const int width = bspline_degree_value(degree) + 1;
    double sums[max_width];
    for (int q = 0; q < width; ++q) sums[q] = column.load(first + q);
    for (int q = 0; q < width; ++q) column.store(first + q, sums[q] + double(T(row[q])) * weight);
  }

  // One row: its values evaluated from x, times weight, added.
  template <class Column>
  KOKKOS_INLINE_FUNCTION void evaluate_and_add_row(const BsplineRows& rows_of, double x,
                                                   double weight, const Column& column) const {
    double values[bspline_max_degree + 1];
    const int first = rows_of.row(x, values, degree);
    add_row(first, values, weight, column);
  }

  // Thread t's terms of block j over rows begin + t, begin + t + T, ..., in
  // that order, four rows at a time: their covariates and weights are loaded
  // before the first is evaluated, so that four loads from memory are in
  // flight instead of one (the kernel waits on memory latency, not on
  // bandwidth). Eight rows ahead, or two rows evaluated at a time, need
  // registers that cost more occupancy than the overlap gains. The rows of
  // a last incomplete group of four come one at a time. Rows are counted
  // from the chunk's first in 32 bits: 64-bit indices take two instructions
  // for each addition.
  static constexpr int rows_in_flight = 4;
  template <class Column>
  KOKKOS_INLINE_FUNCTION void add_rows(std::int64_t j, int thread, int threads, std::int64_t begin,
                                       std::int64_t end, const Column& column) const {
    const BsplineRows rows_of(meshes(j));
    for (int a = 0; a < k; ++a) column.store(a, 0);
    const double* x = &covariates(j, begin);
    const int rows_here = static_cast<int>(end - begin), step = rows_in_flight * threads;
    const int whole_groups_end = rows_here / step * step;
    int i = thread;
    for (; i < whole_groups_end; i += step) {
      double covariate[rows_in_flight], weight[rows_in_flight];
      for (int r = 0; r < rows_in_flight; ++r) {
        covariate[r] = load_streaming(x + i + r * threads);
        weight[r] = u_of(begin, i + r * threads);
      }
      for (int r = 0; r < rows_in_flight; ++r)
        evaluate_and_add_row(rows_of, covariate[r], weight[r], column);
    }
    for (; i < rows_here; i += threads)
      evaluate_and_add_row(rows_of, load_streaming(x + i), u_of(begin, i), column);
  }

  // u(begin + offset), through a pointer where u is contiguous.
  KOKKOS_INLINE_FUNCTION double u_of(std::int64_t begin, int offset) const {
    if constexpr (std::is_same_v<typename UView::array_layout, Kokkos::LayoutStride>)
      return double(u(begin + offset));
    else
      return double(u.data()[begin + offset]);
  }

  // Entry a of the team's columns added up over its T threads, by all
  // threads: first each (entry, group of W columns: a warp's worth) by one
  // thread into a partial, kept in a slot of that group's own columns, then
  // each entry's partials in group order. In both passes the threads of a
  // half-warp read different banks: a group's columns are read from a start
  // that moves with the thread, and the partials' slots with the entry.
  // Teams that are not whole warps (CPU threads, in the tests) take one
  // column a group: banks do not matter there, and both passes still run.
  KOKKOS_INLINE_FUNCTION void add_up_columns(const Member& member, double* sums,
                                             std::int64_t stride, std::int64_t j,
                                             std::int64_t chunk) const {
    const int threads = member.team_size();
    const int width = threads % 32 == 0 ? 32 : 1;
    const int groups = threads / width;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k * groups), [&](int task) {
      const int a = task / groups, start = task % width;
      double* group = sums + a * stride + (task % groups) * width;
      double partial = 0;
      for (int s = 0; s < width; ++s)
        partial += group[s + start < width ? s + start : s + start - width];
      group[a % width] = partial;  // this task alone reads the group's columns
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](int a) {
      double total = 0;
      for (int g = 0; g < groups; ++g) total += sums[a * stride + g * width + a % width];
      output.store(j, chunk, a, total);
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t chunks = output.chunks;
    const std::int64_t group = member.league_rank() / chunks;
    const std::int64_t chunk = member.league_rank() % chunks;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const std::int64_t first_block = group * blocks_per_team;
    const std::int64_t last_block =
        first_block + blocks_per_team < blocks ? first_block + blocks_per_team : blocks;
    const int threads = member.team_size(), thread = member.team_rank();
    const std::int64_t stride = column_stride(threads);
    Scratch sums(member.team_scratch(level), k * stride);
    for (std::int64_t j = first_block; j < last_block; ++j) {
      if (level == 0 && stride == evaluated_gpu_team_size)
        add_rows(j, thread, threads, begin, end,
                 SharedColumn<evaluated_gpu_team_size>(sums.data() + thread));
      else
        add_rows(j, thread, threads, begin, end, GenericColumn{sums.data() + thread, int(stride)});
      member.team_barrier();
      add_up_columns(member, sums.data(), stride, j, chunk);
      member.team_barrier();  // the columns are zeroed for the next block
    }
  }
};

// Blocks per GPU team: few enough that the teams (chunks x groups) fill the
// device about twice.
inline std::int64_t evaluated_blocks_per_team(std::int64_t blocks, std::int64_t chunks,
                                              std::int64_t teams_wanted) {
  const std::int64_t groups =
      std::min(blocks, std::max<std::int64_t>(1, (teams_wanted + chunks - 1) / chunks));
  return (blocks + groups - 1) / groups;
}

// The GPU teams' launch bounds: at most evaluated_gpu_team_size threads,
// and registers for 12 teams a multiprocessor. Left to itself the compiler
// gave each thread registers for 8 teams of 64 (a quarter of the threads a
// multiprocessor holds), and the kernel waits on latency: it needs the
// teams more than the registers.
using EvaluatedLaunchBounds = Kokkos::LaunchBounds<evaluated_gpu_team_size, 12>;

// Threads per GPU team: k sums per thread in shared memory, at most 32 KiB
// (so that several teams share a multiprocessor), at least one warp, at
// most evaluated_gpu_team_size (teams of 128 and 256 threads, where k = 32
// and 16 allowed them, were slower on the H200).
inline int evaluated_team_size(int k) {
  const int fitting = 4096 / k / 32 * 32;
  return std::max(32, std::min(evaluated_gpu_team_size, fitting));
}

// The GPU strategy with `team_size` threads per team and `blocks_per_team`
// blocks per team (public so that a test can run it on CPU threads too).
template <class ExecutionSpace, class Basis, class UView, class Output>
void evaluated_transpose_product_by_columns(const ExecutionSpace& space, const Basis& basis,
                                            const UView& u, std::int64_t rows_per_team,
                                            const Output& output, int team_size,
                                            std::int64_t blocks_per_team) {
  using T = typename Basis::value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using BoundedPolicy = Kokkos::TeamPolicy<ExecutionSpace, EvaluatedLaunchBounds>;
  const int k = basis.basis_size;
  const std::int64_t blocks = basis.blocks();
  const int teams =
      static_cast<int>((blocks + blocks_per_team - 1) / blocks_per_team * output.chunks);
  with_bspline_degree(basis.degree, [&](auto degree) {
    using Functor = EvaluatedTransposeProductByColumns<ExecutionSpace, T, decltype(degree),
                                                       decltype(basis.covariates),
                                                       decltype(basis.meshes), UView, Output>;
    const std::size_t bytes =
        Functor::Scratch::shmem_size(std::int64_t(k) * Functor::column_stride(team_size));
    // In shared memory while the sums fit, else in the slower level-1 scratch.
    const int level = bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;
    const Functor functor{basis.covariates, basis.meshes,    u, output, basis.rows(), rows_per_team,
                          blocks,           blocks_per_team, k, level,  degree};
    // The launch bounds where the teams' scratch lets that many teams share
    // a multiprocessor (larger k: the scratch bounds them anyway).
    const auto bounded =
        BoundedPolicy(space, teams, team_size).set_scratch_size(level, Kokkos::PerTeam(bytes));
    if (team_size <= bounded.team_size_max(functor, Kokkos::ParallelForTag()))
      Kokkos::parallel_for("kpl::evaluated_basis::transpose_product", bounded, functor);
    else
      Kokkos::parallel_for(
          "kpl::evaluated_basis::transpose_product",
          Policy(space, teams, team_size).set_scratch_size(level, Kokkos::PerTeam(bytes)), functor);
  });
}

template <class ExecutionSpace, class Basis, class UView, class Output>
void evaluated_transpose_product_in_row_order(const ExecutionSpace& space, const Basis& basis,
                                              const UView& u, std::int64_t rows_per_team,
                                              const Output& output) {
  using T = typename Basis::value_type;
  with_bspline_degree(basis.degree, [&](auto degree) {
    using Functor =
        EvaluatedTransposeProductInRowOrder<T, decltype(degree), decltype(basis.covariates),
                                            decltype(basis.meshes), UView, Output>;
    Kokkos::parallel_for(
        "kpl::evaluated_basis::transpose_product",
        Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.blocks() * output.chunks),
        Functor{basis.covariates, basis.meshes, u, output, basis.rows(), rows_per_team,
                basis.basis_size, degree});
  });
}

// Rows per GPU team: enough that a team's set-up (zeroing and adding up its
// columns) is small against its rows; 8192 rather than 4096 since the teams
// have 64 threads.
inline constexpr std::int64_t evaluated_gpu_rows_per_team = 8192;

// c = B^T u: chunks sized for the execution space, each summed by the
// space's strategy, then added in order. workspace: a CompactProductWorkspace.
template <class ExecutionSpace, class Basis, class UView, class CView, class Workspace>
void evaluated_transpose_product(const ExecutionSpace& space, const Basis& basis, const UView& u,
                                 const CView& c, Workspace& workspace) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const int k = basis.basis_size;
  const std::int64_t rows_per_team = compact_basis_on_host<ExecutionSpace>
                                         ? compact_rows_per_team(space, rows, blocks)
                                         : evaluated_gpu_rows_per_team;
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  const ChunkSums<CView> output{c, workspace.reserve(chunks > 1 ? blocks * chunks * k : 0), chunks,
                                k};
  if constexpr (compact_basis_on_host<ExecutionSpace>) {
    evaluated_transpose_product_in_row_order(space, basis, u, rows_per_team, output);
  } else {
    const int team_size = evaluated_team_size(k);
    const std::int64_t teams_wanted =
        std::max<std::int64_t>(1, 2 * space.concurrency() / team_size);
    evaluated_transpose_product_by_columns(space, basis, u, rows_per_team, output, team_size,
                                           evaluated_blocks_per_team(blocks, chunks, teams_wanted));
  }
  if (chunks > 1) add_chunks_in_order(space, output.partials, blocks, chunks, k, c);
}

}  // namespace impl
}  // namespace kpl
