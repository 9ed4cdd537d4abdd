// c_j = B_j^T u for every block of a compact basis (kpl/compact_basis.hpp).
// Each team sums one chunk of rows of one block; chunks are added in order
// (impl/compact_basis_chunks.hpp), so the same inputs give the same bits.
#pragma once

#include <kpl/impl/compact_basis_chunks.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kpl {
namespace impl {

// CPU: one thread per (block, chunk) sums the chunk's rows in row order into
// four sets of partial sums (for_each_row_interleaved), through raw streams
// the compiler keeps in registers (cubic splines unrolled). Host only: its
// sums live in a std::vector.
template <class FirstView, class ValuesView, class UView, class Output>
struct TransposeProductInRowOrder {
  FirstView first;
  ValuesView values;
  UView u;
  Output output;
  std::int64_t rows, rows_per_team;
  int k, width;

  void operator()(const std::int64_t team) const {
    using T = typename ValuesView::non_const_value_type;
    const std::int64_t chunks = output.chunks;
    const std::int64_t j = team / chunks, chunk = team % chunks;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    std::vector<double> sums(cpu_row_partials * std::size_t(k), 0.0);
    const int* columns = &first(j, 0);
    const T* row_values = &values(j, 0, 0);
    const std::int64_t stride = values.stride(1);
    with_width(width, [&](auto width_constant) {
      for_each_row_interleaved(begin, end, [&](std::int64_t i, int set) {
        const double weight = u(i);
        double* target = sums.data() + set * k + columns[i];
        for_each_of_width(width_constant, [&](int q) {
          target[q] += double(row_values[q * stride + i]) * weight;
        });
      });
    });
    for (int a = 0; a < k; ++a) output.store(j, chunk, a, added_partials(sums, k, a));
  }
};

// GPU: no atomics. Thread t owns entry a = t mod L (L: k rounded up to a
// warp, at most the team) of one slice of the chunk's rows and sums, in row
// order, the rows whose band holds a (first <= a < first + width); the
// slices are then added in order. Every warp reads one row at a time (its
// first index and u are one broadcast load each).
template <class ExecutionSpace, class FirstView, class ValuesView, class UView, class Output>
struct TransposeProductByOwners {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  FirstView first;
  ValuesView values;
  UView u;
  Output output;
  std::int64_t rows, rows_per_team;
  int k, width, lanes, slices;

  // Lane `lane`'s entries of slice [begin, end), into sums.
  KOKKOS_INLINE_FUNCTION void sum_slice(std::int64_t j, int lane, std::int64_t begin,
                                        std::int64_t end, double* sums) const {
    for (int a = lane; a < k; a += lanes) {
      double sum = 0;
      for (std::int64_t i = begin; i < end; ++i) {
        const int q = a - first(j, i);
        if (q >= 0 && q < width) sum += double(values(j, q, i)) * double(u(i));
      }
      sums[a] = sum;
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t chunks = output.chunks;
    const std::int64_t j = member.league_rank() / chunks;
    const std::int64_t chunk = member.league_rank() % chunks;
    const std::int64_t begin = chunk * rows_per_team;
    const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    const int lane = member.team_rank() % lanes, slice = member.team_rank() / lanes;
    const std::int64_t per_slice = (end - begin + slices - 1) / slices;
    const std::int64_t slice_begin = begin + slice * per_slice;
    const std::int64_t slice_end = slice_begin + per_slice < end ? slice_begin + per_slice : end;
    Scratch sums(member.team_scratch(0), std::int64_t(slices) * k);
    // Where lanes does not divide the team (k = 80: 96 lanes, 2 slices of a
    // 256-thread team), the threads left over sum nothing.
    if (slice < slices)
      sum_slice(j, lane, slice_begin, slice_end, sums.data() + std::int64_t(slice) * k);
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](int a) {
      double total = 0;
      for (int s = 0; s < slices; ++s) total += sums(std::int64_t(s) * k + a);
      output.store(j, chunk, a, total);
    });
  }
};

// The GPU strategy with `team_size` threads per team (public so that a test
// can run it on CPU threads too).
template <class ExecutionSpace, class Basis, class UView, class Output>
void transpose_product_by_owners(const ExecutionSpace& space, const Basis& basis, const UView& u,
                                 std::int64_t rows_per_team, const Output& output, int team_size) {
  using Functor = TransposeProductByOwners<ExecutionSpace, decltype(basis.first),
                                           decltype(basis.values), UView, Output>;
  const int k = basis.basis_size;
  const int lanes = std::min(team_size, (k + 31) / 32 * 32);  // threads per slice
  const int slices = team_size / lanes;
  Kokkos::parallel_for(
      "kpl::compact_basis::transpose_product",
      Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(basis.blocks() * output.chunks),
                                         team_size)
          .set_scratch_size(
              0, Kokkos::PerTeam(Functor::Scratch::shmem_size(std::int64_t(slices) * k))),
      Functor{basis.first, basis.values, u, output, basis.rows(), rows_per_team, k, basis.width(),
              lanes, slices});
}

template <class ExecutionSpace, class Basis, class UView, class Output>
void transpose_product_in_row_order(const ExecutionSpace& space, const Basis& basis, const UView& u,
                                    std::int64_t rows_per_team, const Output& output) {
  using Functor =
      TransposeProductInRowOrder<decltype(basis.first), decltype(basis.values), UView, Output>;
  Kokkos::parallel_for(
      "kpl::compact_basis::transpose_product",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.blocks() * output.chunks),
      Functor{basis.first, basis.values, u, output, basis.rows(), rows_per_team, basis.basis_size,
              basis.width()});
}

// c = B^T u: chunks sized for the execution space, each summed by the
// space's strategy, then added in order. workspace: a CompactProductWorkspace.
template <class ExecutionSpace, class Basis, class UView, class CView, class Workspace>
void compact_transpose_product(const ExecutionSpace& space, const Basis& basis, const UView& u,
                               const CView& c, Workspace& workspace) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const int k = basis.basis_size;
  const std::int64_t rows_per_team = compact_rows_per_team(space, rows, blocks);
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  const ChunkSums<CView> output{c, workspace.reserve(chunks > 1 ? blocks * chunks * k : 0), chunks,
                                k};
  if constexpr (compact_basis_on_host<ExecutionSpace>)
    transpose_product_in_row_order(space, basis, u, rows_per_team, output);
  else
    transpose_product_by_owners(space, basis, u, rows_per_team, output,
                                compact_team_size<ExecutionSpace>());
  if (chunks > 1) add_chunks_in_order(space, output.partials, blocks, chunks, k, c);
}

}  // namespace impl
}  // namespace kpl
