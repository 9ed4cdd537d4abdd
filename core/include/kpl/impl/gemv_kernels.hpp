// The kernels behind kpl::gemv (kpl/gemv.hpp). Users need not read this.
//
// Every kernel sees one problem: for each batch entry b and output r,
//   y(b, r) = alpha * sum_c M(b, r, c) * x(c) + beta * y(b, r),
// where M is A (op N) or A^T (op T) addressed through strides, so one kernel
// serves both operations and every layout. What differs between kernels is
// which of M's two strides is 1:
//   - "outputs contiguous" (op N on LayoutLeft, op T on LayoutRight): adjacent
//     outputs are adjacent in memory, so adjacent threads take adjacent
//     outputs (ThreadPerOutputs);
//   - "reduction contiguous" (op N on LayoutRight, op T on LayoutLeft): a dot
//     product runs along memory, so adjacent threads (or vector lanes) take
//     adjacent terms of it (LanesPerDot, RowBlockPerTeam).
// Long reductions are cut into segments; each (output, segment) partial sum
// goes into a partial matrix that GemvCombinePartials reduces (Sieminski & Lee
// 2023, §3.2.3).
#pragma once

#include <kpl/impl/pack.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

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

// ---------------------------------------------------------------------------
// Thread per output (§3.2.1), generalised to Width adjacent outputs and one
// segment of the reduction per thread. Width = 1 and one segment is the
// seed's naive kernel; on outputs-contiguous data Width > 1 makes each load a
// 16-byte pack (GPUs) or a vectorisable run (CPUs), and segments give square
// matrices enough threads (§3.2.3's partial matrix, threads along outputs so
// that reads stay coalesced).
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
  // one column a pass, the L1 traffic of sum[] bound the loop (2-core VM,
  // OpenMP, 16384^2 N float: 62.9 ms one column a pass, 42.8 four, 42.3
  // eight; 1e6 x 64 N double 20.7, 16.4, 11.3 ms).
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
      // Whole group: Width adjacent elements per term, one access.
      const T* column = problem.row(b, first_output) + begin * problem.length_stride;
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
    } else {
      // Loops bounded by the constant Width with a predicate, not by count:
      // sum[] then stays in registers on GPUs instead of local memory.
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

// ---------------------------------------------------------------------------
// P threads per dot product (§3.2.2): each thread of a team owns one output
// (team_size outputs per team, the seed's M'), and its P vector lanes split
// the dot product, then combine by Kokkos' vector reduction (warp shuffles,
// log2 P steps, on CUDA). With Width > 1 each lane reads 16-byte packs of
// the row and of x.
template <class T, int Width, class ExecutionSpace>
struct LanesPerDot {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  GemvProblem<T> problem;
  std::int64_t teams_per_batch;
  int lanes;  // the team's vector length, P

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t b = member.league_rank() / teams_per_batch;
    const std::int64_t r =
        (member.league_rank() - b * teams_per_batch) * member.team_size() + member.team_rank();
    if (r >= problem.outputs) return;  // no team-wide synchronisation follows
    const T* row = problem.row(b, r);
    T dot = T(0);
    if constexpr (Width > 1) {
      // Lane l takes packs l, l + P, l + 2P, ...; four at a time with separate
      // sums, so each lane has four loads in flight on long rows.
      const std::int64_t packs = problem.length / Width;
      const std::int64_t stride = lanes;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, lanes),
          [&](const int lane, T& partial) {
            T sums[4] = {T(0), T(0), T(0), T(0)};
            std::int64_t p = lane;
            for (; p + 3 * stride < packs; p += 4 * stride) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
              for (int u = 0; u < 4; ++u) {
                const auto a = load_pack<Width>(row + (p + u * stride) * Width);
                const auto x = load_pack<Width>(problem.x + (p + u * stride) * Width);
                for (int w = 0; w < Width; ++w) sums[u] += a.value[w] * x.value[w];
              }
            }
            for (; p < packs; p += stride) {
              const auto a = load_pack<Width>(row + p * Width);
              const auto x = load_pack<Width>(problem.x + p * Width);
              for (int w = 0; w < Width; ++w) sums[0] += a.value[w] * x.value[w];
            }
            // Terms after the last whole pack.
            for (std::int64_t c = packs * Width + lane; c < problem.length; c += stride) {
              sums[0] += row[c] * problem.x[c];
            }
            partial += (sums[0] + sums[1]) + (sums[2] + sums[3]);
          },
          dot);
    } else {
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, problem.length),
          [&](const std::int64_t c, T& partial) {
            partial += row[c * problem.length_stride] * problem.x[c * problem.x_stride];
          },
          dot);
    }
    Kokkos::single(Kokkos::PerThread(member), [&] { problem.store(b, r, dot); });
  }
};

// ---------------------------------------------------------------------------
// P threads per row with a partial matrix (§3.2.3) on reduction-contiguous
// data: a team takes a block of Rows outputs and one of `segments` shares of
// the reduction; its threads walk the share in 16-byte packs, each keeping
// Rows running sums, so x is read once per block of outputs and every thread
// has Rows loads in flight. The team then combines its sums and writes one
// column of the partial matrix, or y itself when there is one segment. This
// is the kernel for tall, skinny matrices such as the GAM's B^T g (n = 1e6,
// k = 16-64) and, with Rows = 2, for transposed products with many outputs.
//
// A share is a set of chunks of `chunk_packs` consecutive packs: chunk
// numbers segment, segment + segments, segment + 2 segments, ... On GPUs a
// chunk is one pack per thread of the team, so at any moment all teams read
// one window of each row that slides down the matrix (DRAM pages opened once,
// every team busy until the end); on CPUs a share is one contiguous chunk, so
// a thread streams through its own part of memory.
// Steps > 1 walks the share Steps positions at a time (gemv.hpp chooses it).
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

template <class T, int Rows, int Width, class ExecutionSpace, int Steps = 1>
struct RowBlockPerTeam {
  // At most 256 threads a team. Tall, skinny blocks (8-16 rows) are launched
  // as one wave of four teams per SM, so four must fit: 64 registers
  // (without the bound, 70 registers put 92 of the 488 teams of 1e6 x 16
  // float into a second wave: 43 against 40 us). Blocks of 1-4 rows fit
  // four teams an SM without the bound.
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<256, (Rows >= 8 ? 4 : 1)>>;
  using Member = typename Policy::member_type;
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
  KOKKOS_INLINE_FUNCTION RowSums<T, Rows> team_totals(const Member& member, T* sums,
                                                      const Accumulate& accumulate) const {
    RowSums<T, Rows> thread_sums;
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
    RowSums<T, Rows> result;
    for (int i = 0; i < Rows; ++i) result.value[i] = totals[i];
    member.team_barrier();  // scratch free for the next combine
    return result;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    // Taken once: every get_shmem call takes a new piece of the team's
    // scratch, so asking again for the last team's second combine ran past
    // the scratch_bytes requested and got a null pointer (memcheck on CUDA).
    T* const scratch =
        member.team_size() == 1
            ? nullptr
            : static_cast<T*>(member.team_shmem().get_shmem(scratch_bytes(member.team_size())));
    // 32-bit arithmetic for the league (64-bit division is a subroutine on
    // GPUs); the launch checks that the league fits an int.
    const int league = member.league_rank();
    const int block = league % int(blocks);
    const int rest = league / int(blocks);
    const int segment = rest % int(segments);
    const std::int64_t b = rest / int(segments);
    const std::int64_t first_output = std::int64_t(block) * Rows;
    const int rows = problem.outputs - first_output < Rows
                         ? static_cast<int>(problem.outputs - first_output)
                         : Rows;
    const std::int64_t packs = problem.length / Width;
    const T* first_row = problem.row(b, first_output);
    const std::int64_t stride = std::int64_t(member.team_size()) * lanes;
    // Chunks one pack per thread (GPUs): the share is one strided sequence.
    // Longer chunks (CPUs): segments own one contiguous chunk each.
    const bool interleaved = chunk_packs == stride;
    const std::int64_t share_end =
        interleaved || (segment + 1) * chunk_packs > packs ? packs : (segment + 1) * chunk_packs;
    const std::int64_t step = interleaved ? stride * segments : stride;

    // One running sum per row; every loop runs to the constant Rows with a
    // predicate, so the sums stay in registers on GPUs. The pack loop is a
    // single loop with a computable trip count (a loop over chunks around an
    // inner pack loop kept two or three loads in flight per thread: H100,
    // 16384^2 T float 440 us that way, 379 us in one loop).
    auto accumulate = [&](auto full_block, const int lane, RowSums<T, Rows>& mine) {
      constexpr bool full = decltype(full_block)::value;
      const std::int64_t first = std::int64_t(member.team_rank()) * lanes + lane;
      std::int64_t p = segment * chunk_packs + first;
      if constexpr (Steps > 1) {
        // Steps positions of the share at a time, every load issued before
        // the first product: Rows x Steps row packs in flight per thread.
        for (; p + (Steps - 1) * step < share_end; p += Steps * step) {
          Pack<T, Width> x_packs[Steps];
          Pack<T, Width> a[Steps][Rows];
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
          for (int s = 0; s < Steps; ++s) {
            x_packs[s] = load_pack<Width>(problem.x + (p + s * step) * Width);
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
            for (int i = 0; i < Rows; ++i) {
              if (full || i < rows)
                a[s][i] = load_pack_read_once<Width>(first_row + i * problem.output_stride +
                                                     (p + s * step) * Width);
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
              if (full || i < rows) {
                T sum = a[s][i].value[0] * x_packs[s].value[0];
                for (int w = 1; w < Width; ++w) sum += a[s][i].value[w] * x_packs[s].value[w];
                mine.value[i] += sum;
              }
            }
          }
        }
      }
      // Not merged with the loop above as its one-step case: loading every
      // row's pack before the first product, the merged loop was slower on
      // the H100 (1e6 x 16 T float 30.5 -> 32.5 us, double 56.8 -> 69.6).
      for (; p < share_end; p += step) {
        const auto x_pack = load_pack<Width>(problem.x + p * Width);
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll
#endif
        for (int i = 0; i < Rows; ++i) {
          if (full || i < rows) {
            const auto a =
                load_pack_read_once<Width>(first_row + i * problem.output_stride + p * Width);
            T sum = a.value[0] * x_pack.value[0];
            for (int w = 1; w < Width; ++w) sum += a.value[w] * x_pack.value[w];
            mine.value[i] += sum;
          }
        }
      }
      // Terms after the last whole pack: segment 0's.
      if (segment == 0) {
        for (std::int64_t c = packs * Width + first; c < problem.length; c += stride) {
          for (int i = 0; i < Rows; ++i) {
            if (i < rows) mine.value[i] += first_row[i * problem.output_stride + c] * problem.x[c];
          }
        }
      }
    };
    // A whole block has no per-row test: branches between the loads would
    // make each wait for the previous one's use (H100, n = 1e6, k = 16,
    // float: 78 us with per-row tests, 45 us without).
    RowSums<T, Rows> team_sums =
        rows == Rows ? team_totals(member, scratch,
                                   [&](const int lane, RowSums<T, Rows>& mine) {
                                     accumulate(std::true_type{}, lane, mine);
                                   })
                     : team_totals(member, scratch, [&](const int lane, RowSums<T, Rows>& mine) {
                         accumulate(std::false_type{}, lane, mine);
                       });
    if (segments > 1) {
      // §3.2.3's partial matrix, reduced without a second kernel: every team
      // writes its column of partial sums, and the last team of a block to
      // arrive (an atomic count per block) adds the block's columns in
      // segment order and writes y. A second launch cost more than this
      // whole kernel for the GAM's tall, skinny B^T g (perf/RESULTS.md).
      bool last = false;
      Kokkos::single(
          Kokkos::PerTeam(member),
          [&](bool& is_last) {
            for (int i = 0; i < Rows; ++i) {
              if (i < rows)
                partials[partial_layout.at(b, first_output + i, segment)] = team_sums.value[i];
            }
            Kokkos::memory_fence();  // partials visible before the count
            int* count = arrivals + b * blocks + block;
            is_last = Kokkos::atomic_fetch_add(count, 1) == segments - 1;
          },
          last);
      if (!last) return;
      Kokkos::memory_fence();
      // Other teams' partials: volatile reads bypass this SM's L1 cache.
      const volatile T* column = partials;
      team_sums = team_totals(member, scratch, [&](const int lane, RowSums<T, Rows>& totals) {
        for (std::int64_t s = std::int64_t(member.team_rank()) * lanes + lane; s < segments;
             s += stride) {
          for (int i = 0; i < Rows; ++i) {
            if (i < rows) totals.value[i] += column[partial_layout.at(b, first_output + i, s)];
          }
        }
      });
    }
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      for (int i = 0; i < Rows; ++i) {
        if (i < rows) problem.store(b, first_output + i, team_sums.value[i]);
      }
      if (segments > 1) arrivals[b * blocks + block] = 0;  // ready for the next call
    });
  }
};

// ---------------------------------------------------------------------------
// Second kernel of §3.2.3: y(b, r) = alpha * sum_s partials(b, r, s) +
// beta * y(b, r), one thread per output. Four running sums keep four loads
// in flight: a single chain of dependent adds over L2-latency loads cost
// tens of microseconds for ~100 segments on the H100.
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

}  // namespace kpl::impl
