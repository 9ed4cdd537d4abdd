// The scratch-memory broadcast kernel (Çoban, Yuret & Unat, §III-E), for a
// matrix and a row or column vector: a team stages the part of the vector
// its tile reuses in scratch (shared) memory, then every thread reads it
// from there. Include kpl/broadcast.hpp, not this file.
#pragma once

#include <kpl/impl/broadcast_plan.hpp>
#include <kpl/impl/broadcast_sliding_factor.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace kpl::impl {

// The scratch-memory kernel (§III-E), for plans of rank <= 2 (a matrix and a
// row or column vector after merging). A team owns a tile of
// `sliding_factor` rows × `tile_columns` columns; it first copies the part of
// each vector operand that the tile reuses into scratch memory (a row
// vector's tile_columns elements, a column vector's sliding_factor
// elements), then every thread reads the vector from scratch.
// Which operand the scratch kernel stages, and how.
enum class Staging {
  none,
  row_vector,     // the same for every row: one value per column of the tile
  column_vector,  // the same along a row: one value per row of the tile
};

template <class Op, class T, class ExecutionSpace>
struct BroadcastScratch {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  using scratch_view = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Op op;
  BroadcastPlan plan;
  const T* a;
  const T* b;
  T* out;
  std::int64_t sliding_factor;  // rows per team
  std::int64_t tile_columns;    // columns per team
  std::int64_t column_tiles;
  Staging a_staging, b_staging;

  static std::size_t scratch_bytes(std::int64_t sliding_factor, std::int64_t tile_columns,
                                   Staging a_staging, Staging b_staging) {
    auto bytes = [&](Staging staging) -> std::size_t {
      return staging == Staging::row_vector      ? scratch_view::shmem_size(tile_columns)
             : staging == Staging::column_vector ? scratch_view::shmem_size(sliding_factor)
                                                 : 0;
    };
    return bytes(a_staging) + bytes(b_staging);
  }

  KOKKOS_INLINE_FUNCTION std::int64_t row_stride(const std::int64_t* strides) const {
    return plan.rank > 1 ? strides[0] : 0;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    const std::int64_t tile = member.league_rank();
    const std::int64_t row_begin = (tile / column_tiles) * sliding_factor;
    const std::int64_t column_begin = (tile % column_tiles) * tile_columns;
    const std::int64_t columns = plan.columns;
    const int tile_rows = static_cast<int>(
        row_begin + sliding_factor < plan.rows ? sliding_factor : plan.rows - row_begin);
    const int tile_width = static_cast<int>(
        column_begin + tile_columns < columns ? tile_columns : columns - column_begin);
    const std::int64_t sa = plan.a_column_stride, sb = plan.b_column_stride,
                       so = plan.out_column_stride;
    const std::int64_t ra = row_stride(plan.a_strides), rb = row_stride(plan.b_strides),
                       ro = row_stride(plan.out_strides);

    auto stage = [&](const T* source, Staging staging, std::int64_t row_step,
                     std::int64_t column_step, scratch_view& staged) {
      if (staging == Staging::row_vector) {
        staged = scratch_view(member.team_scratch(0), tile_columns);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile_width), [&](const int k) {
          staged(k) = source[(column_begin + k) * column_step];
        });
      } else if (staging == Staging::column_vector) {
        staged = scratch_view(member.team_scratch(0), sliding_factor);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile_rows),
                             [&](const int r) { staged(r) = source[(row_begin + r) * row_step]; });
      }
    };
    scratch_view a_staged, b_staged;
    stage(a, a_staging, ra, sa, a_staged);
    stage(b, b_staging, rb, sb, b_staged);
    member.team_barrier();

    // Rows outer, the team's threads across the row's columns: coalesced on
    // GPUs, contiguous on CPUs.
    for (int r = 0; r < tile_rows; ++r) {
      const std::int64_t i = row_begin + r;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile_width), [&](const int k) {
        const std::int64_t j = column_begin + k;
        const T a_value = a_staging == Staging::row_vector      ? a_staged(k)
                          : a_staging == Staging::column_vector ? a_staged(r)
                                                                : a[i * ra + j * sa];
        const T b_value = b_staging == Staging::row_vector      ? b_staged(k)
                          : b_staging == Staging::column_vector ? b_staged(r)
                                                                : b[i * rb + j * sb];
        out[i * ro + j * so] = op(a_value, b_value);
      });
    }
  }
};

template <class ExecutionSpace, class Op, class T>
void launch_scratch(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                    const T* a, const T* b, T* out, std::int64_t sliding_factor,
                    int requested_team_size = 0) {
  constexpr bool host = is_host_space<ExecutionSpace>();
  using Kernel = BroadcastScratch<Op, T, ExecutionSpace>;
  const std::int64_t rows = plan.rows, columns = plan.columns;
  // Stage a row vector when there are several rows to reuse it over, a
  // column vector when there are several columns.
  // (A plan of rank <= 2 has at most one row dimension, dimension 0.)
  auto staging = [&](const std::int64_t* strides, std::int64_t column_stride) {
    const std::int64_t row_stride = plan.rank > 1 ? strides[0] : 0;
    if (row_stride == 0 && rows > 1) return Staging::row_vector;
    if (column_stride == 0 && columns > 1) return Staging::column_vector;
    return Staging::none;
  };
  const Staging a_staging = staging(plan.a_strides, plan.a_column_stride),
                b_staging = staging(plan.b_strides, plan.b_column_stride);
  const int team_size = requested_team_size > 0 ? requested_team_size : (host ? 1 : 256);
  const std::int64_t tile_columns =
      host ? std::min<std::int64_t>(columns, 4096) : std::min<std::int64_t>(columns, team_size);
  const std::int64_t column_tiles = (columns + tile_columns - 1) / tile_columns;
  const auto available =
      static_cast<std::size_t>(Kokkos::TeamPolicy<ExecutionSpace>::scratch_size_max(0));
  if (sliding_factor == 0) {
    sliding_factor = automatic_sliding_factor(rows, host ? 1 : column_tiles * team_size,
                                              space.concurrency(), host, 64);
    // Chosen for parallelism; halved until the tile fits a team's scratch
    // memory (a staged column vector takes one value per row of the tile).
    while (sliding_factor > 1 && Kernel::scratch_bytes(std::min(sliding_factor, rows), tile_columns,
                                                       a_staging, b_staging) > available)
      sliding_factor = (sliding_factor + 1) / 2;
  }
  sliding_factor = std::min(sliding_factor, rows);  // a tile holds at most every row
  const std::int64_t row_tiles = (rows + sliding_factor - 1) / sliding_factor;
  const std::int64_t tiles = row_tiles * column_tiles;
  if (tiles > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(
        "kpl::broadcast: the scratch variant needs fewer than 2^31 tiles; raise sliding_factor");
  }
  const std::size_t bytes =
      Kernel::scratch_bytes(sliding_factor, tile_columns, a_staging, b_staging);
  if (bytes > available) {
    throw std::invalid_argument("kpl::broadcast: the scratch variant's tile needs " +
                                std::to_string(bytes) + " bytes of scratch memory, a team has " +
                                std::to_string(available) + "; lower sliding_factor");
  }
  Kokkos::parallel_for("kpl::broadcast::scratch",
                       Kokkos::TeamPolicy<ExecutionSpace>(space, static_cast<int>(tiles), team_size)
                           .set_scratch_size(0, Kokkos::PerTeam(bytes)),
                       Kernel{op, plan, a, b, out, sliding_factor, tile_columns, column_tiles,
                              a_staging, b_staging});
}

}  // namespace kpl::impl
