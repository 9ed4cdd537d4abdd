// Elementwise binary operations on N-d Views under NumPy's broadcasting rules,
// through strides (Çoban, Yuret & Unat, "Multidimensional broadcast operation
// on the GPU", §III-B/C): shapes are aligned at their trailing dimensions, and
// a dimension that is missing or of extent 1 in an input is read with stride
// 0, so every input element index is the output coordinate · input strides.
//
// Before launching, extent-1 dimensions are dropped and adjacent dimensions
// that are contiguous in every operand are merged. Three kernels
// (impl/broadcast_kernels.hpp): the general one (§III-B/C), the
// sliding-factor one (§III-D: a thread reuses a vector element over
// `sliding_factor` rows) and the scratch-memory one (§III-E); the automatic
// choice takes the one that measured fastest (perf/RESULTS.md).
#pragma once

#include <kpl/impl/broadcast_kernels.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kpl {

// Extents and strides (in elements) of an N-d array, rank <= 8, any layout.
struct ArrayDescriptor {
  static constexpr int max_rank = impl::max_broadcast_rank;
  int rank = 0;
  std::array<std::int64_t, max_rank> extents{};
  std::array<std::int64_t, max_rank> strides{};
};

template <class View>
ArrayDescriptor describe(const View& view) {
  static_assert(Kokkos::is_view<View>::value, "kpl::describe takes a Kokkos::View");
  static_assert(View::rank <= ArrayDescriptor::max_rank, "rank above 8");
  ArrayDescriptor descriptor;
  descriptor.rank = static_cast<int>(View::rank);
  for (int d = 0; d < descriptor.rank; ++d) {
    descriptor.extents[d] = static_cast<std::int64_t>(view.extent(d));
    descriptor.strides[d] = static_cast<std::int64_t>(view.stride(d));
  }
  return descriptor;
}

inline std::string shape_text(const ArrayDescriptor& descriptor) {
  std::string text = "[";
  for (int d = 0; d < descriptor.rank; ++d) {
    text += (d > 0 ? ", " : "") + std::to_string(descriptor.extents[d]);
  }
  return text + "]";
}

// NumPy's broadcast shape of a and b; throws std::invalid_argument naming both
// shapes when a dimension differs and neither extent is 1.
inline ArrayDescriptor broadcast_shape(const ArrayDescriptor& a, const ArrayDescriptor& b) {
  ArrayDescriptor shape;
  shape.rank = a.rank > b.rank ? a.rank : b.rank;
  for (int d = 0; d < shape.rank; ++d) {
    const int from_end = shape.rank - 1 - d;
    const int da = a.rank - 1 - from_end;
    const int db = b.rank - 1 - from_end;
    const std::int64_t ea = da >= 0 ? a.extents[da] : 1;
    const std::int64_t eb = db >= 0 ? b.extents[db] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      throw std::invalid_argument("kpl::broadcast: shapes " + shape_text(a) + " and " +
                                  shape_text(b) + " cannot be broadcast together (dimension " +
                                  std::to_string(d) + ": " + std::to_string(ea) + " vs " +
                                  std::to_string(eb) + ")");
    }
    shape.extents[d] = ea == 1 ? eb : ea;
  }
  return shape;
}

// Elementwise operations; any functor T(T, T) works as well.
struct Add {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a + b;
  }
};
struct Subtract {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a - b;
  }
};
struct Multiply {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a * b;
  }
};
struct Divide {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a / b;
  }
};
struct Maximum {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct Minimum {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};

namespace impl {

// Strides of `input` aligned to the output's dimensions: 0 where the input
// lacks the dimension or has extent 1.
inline void aligned_strides(const ArrayDescriptor& input, int rank, std::int64_t* strides) {
  for (int d = 0; d < rank; ++d) {
    const int di = input.rank - rank + d;
    strides[d] = (di >= 0 && input.extents[di] != 1) ? input.strides[di] : 0;
  }
}

inline BroadcastPlan plan_broadcast(const ArrayDescriptor& a, const ArrayDescriptor& b,
                                    const ArrayDescriptor& out) {
  const ArrayDescriptor shape = broadcast_shape(a, b);
  bool matches = shape.rank == out.rank;
  for (int d = 0; matches && d < shape.rank; ++d) matches = shape.extents[d] == out.extents[d];
  if (!matches) {
    throw std::invalid_argument("kpl::broadcast: inputs " + shape_text(a) + " and " +
                                shape_text(b) + " broadcast to " + shape_text(shape) +
                                " but the output is " + shape_text(out));
  }
  BroadcastPlan full;
  full.rank = shape.rank;
  for (int d = 0; d < shape.rank; ++d) {
    full.extents[d] = shape.extents[d];
    full.out_strides[d] = out.strides[d];
  }
  aligned_strides(a, shape.rank, full.a_strides);
  aligned_strides(b, shape.rank, full.b_strides);

  // Drop extent-1 dimensions, then merge d into its inner neighbour when every
  // operand steps through d exactly as through the merged range.
  BroadcastPlan plan;
  for (int d = 0; d < full.rank; ++d) {
    if (full.extents[d] == 1) continue;
    const int last = plan.rank - 1;
    // Merging needs the outer dimension (last) to step by extent(d) × stride(d).
    if (last >= 0 && plan.out_strides[last] == full.out_strides[d] * full.extents[d] &&
        plan.a_strides[last] == full.a_strides[d] * full.extents[d] &&
        plan.b_strides[last] == full.b_strides[d] * full.extents[d]) {
      plan.extents[last] *= full.extents[d];
      plan.out_strides[last] = full.out_strides[d];
      plan.a_strides[last] = full.a_strides[d];
      plan.b_strides[last] = full.b_strides[d];
      continue;
    }
    plan.extents[plan.rank] = full.extents[d];
    plan.out_strides[plan.rank] = full.out_strides[d];
    plan.a_strides[plan.rank] = full.a_strides[d];
    plan.b_strides[plan.rank] = full.b_strides[d];
    ++plan.rank;
  }
  for (int d = 0; d < full.rank; ++d) plan.size *= full.extents[d];
  plan.finish();
  return plan;
}

}  // namespace impl

enum class BroadcastVariant {
  automatic,       // the fastest measured (perf/RESULTS.md)
  general,         // §III-B/C: threads over row chunks, any shape
  sliding_factor,  // §III-D: each thread slides over sliding_factor rows, any shape
  scratch,         // §III-E: vectors staged in scratch memory; matrix-and-vector shapes only
};

struct BroadcastOptions {
  BroadcastVariant variant = BroadcastVariant::automatic;
  // Rows per thread (sliding_factor) or per team (scratch); 0 chooses it from
  // the shape and the execution space's concurrency.
  std::int64_t sliding_factor = 0;
};

namespace impl {

template <class ExecutionSpace>
constexpr bool is_host_space() {
  return std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;
}

// Rows per thread (GPUs) or per work item (CPUs). CPUs: about four work
// items per thread, for balance. GPUs: at most gpu_cap rows per thread (4 for
// the sliding-factor kernel), fewer when
// the shape would leave the device short of threads. The factor trades reuse
// against parallelism (H100, perf/RESULTS.md): 262144x1024 float + row
// vector: 2894, 2899, 2878, 2825, 2763, 2659 GB/s for factors 1, 2, 4, 8,
// 16, 64; the 4-D case [64,1,256,128] + [1,512,1,128]: 1321, 2147, 2824,
// 2781, 2731, 2275 GB/s. The scratch kernel passes 64: its staging is paid
// once per team, so it wants tall tiles.
inline std::int64_t automatic_sliding_factor(std::int64_t rows, std::int64_t threads_per_row_block,
                                             std::int64_t concurrency, bool host,
                                             std::int64_t gpu_cap = 4) {
  const std::int64_t wanted_blocks =
      host ? 4 * concurrency
           : std::max<std::int64_t>(
                 1, 2 * concurrency / std::max<std::int64_t>(1, threads_per_row_block));
  const std::int64_t factor = (rows + wanted_blocks - 1) / wanted_blocks;
  const std::int64_t cap = host ? rows : gpu_cap;
  return std::max<std::int64_t>(1, std::min(factor, cap));
}

template <class ExecutionSpace, class Op, class T>
void launch_general(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                    const T* a, const T* b, T* out) {
  constexpr bool host = is_host_space<ExecutionSpace>();
  const std::int64_t columns = plan.columns;
  // Chunks of up to 2048 (GPU: 64 per lane) so long rows still spread over
  // the whole device; CPUs take whole rows.
  const std::int64_t chunk_length = host ? columns : std::min<std::int64_t>(columns, 2048);
  const std::int64_t chunks_per_row = (columns + chunk_length - 1) / chunk_length;
  const std::int64_t work_items = plan.rows * chunks_per_row;
  int vector_length = 1;
  if constexpr (!host) {
    while (vector_length < 32 && vector_length < columns) vector_length *= 2;
  }
  const int team_size = host ? 1 : 256 / vector_length;
  // GPUs: enough teams to fill the device a few times over, never more than
  // the work. CPUs: one team per work item.
  const std::int64_t needed = (work_items + team_size - 1) / team_size;
  const std::int64_t fill =
      host ? needed
           : 4 * std::max<std::int64_t>(
                     1, space.concurrency() / (std::int64_t(team_size) * vector_length));
  const auto teams = static_cast<int>(std::min(needed, fill));
  Kokkos::parallel_for("kpl::broadcast::general",
                       Kokkos::TeamPolicy<ExecutionSpace>(space, teams, team_size, vector_length),
                       BroadcastGeneral<Op, T, ExecutionSpace>{op, plan, a, b, out, chunk_length,
                                                               chunks_per_row, work_items});
}

// Elements per aligned 16-byte access when every operand allows it (column
// strides 0 or 1; for stride 1, base pointer and row starts 16-byte aligned;
// whole groups per row), otherwise 1.
template <class T>
int pack_width(const BroadcastPlan& plan, const T* a, const T* b, const T* out) {
  constexpr int width = pack_elements<T>();
  if (width == 1 || plan.out_column_stride != 1 || plan.columns % width != 0) return 1;
  auto aligned = [&](const T* data, const std::int64_t* strides, std::int64_t column_stride) {
    if (column_stride == 0) return true;  // one element per row, read alone
    if (column_stride != 1) return false;
    if (reinterpret_cast<std::uintptr_t>(data) % 16 != 0) return false;
    for (int d = 0; d + 1 < plan.rank; ++d) {
      if (strides[d] % width != 0) return false;
    }
    return true;
  };
  return aligned(a, plan.a_strides, plan.a_column_stride) &&
                 aligned(b, plan.b_strides, plan.b_column_stride) &&
                 aligned(out, plan.out_strides, plan.out_column_stride)
             ? width
             : 1;
}

template <int Width, class ExecutionSpace, class Op, class T>
void launch_sliding_columns(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                            const T* a, const T* b, T* out, std::int64_t sliding_factor) {
  const std::int64_t column_groups = plan.columns / Width;
  if (sliding_factor == 0) {
    sliding_factor = automatic_sliding_factor(plan.rows, column_groups, space.concurrency(), false);
  }
  const std::int64_t row_blocks = (plan.rows + sliding_factor - 1) / sliding_factor;
  using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  const Policy policy(space, 0, row_blocks * column_groups);
  // The smallest cursor that holds the plan's rank (fewer registers).
  auto launch = [&](auto max_rank) {
    Kokkos::parallel_for("kpl::broadcast::sliding_factor", policy,
                         BroadcastSlidingColumns<Op, T, Width, decltype(max_rank)::value>{
                             op, plan, a, b, out, column_groups, sliding_factor});
  };
  if (plan.rank <= 2) {
    launch(std::integral_constant<int, 2>{});
  } else if (plan.rank <= 4) {
    launch(std::integral_constant<int, 4>{});
  } else {
    launch(std::integral_constant<int, max_broadcast_rank>{});
  }
}

template <class ExecutionSpace, class Op, class T>
void launch_sliding(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                    const T* a, const T* b, T* out, std::int64_t sliding_factor) {
  if constexpr (is_host_space<ExecutionSpace>()) {
    if (sliding_factor == 0) {
      sliding_factor = automatic_sliding_factor(plan.rows, 1, space.concurrency(), true);
    }
    const std::int64_t row_blocks = (plan.rows + sliding_factor - 1) / sliding_factor;
    using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for("kpl::broadcast::sliding_factor", Policy(space, 0, row_blocks),
                         BroadcastSlidingRows<Op, T>{op, plan, a, b, out, sliding_factor});
  } else {
    constexpr int width = pack_elements<T>();
    if (pack_width(plan, a, b, out) == width) {
      launch_sliding_columns<width>(space, op, plan, a, b, out, sliding_factor);
    } else {
      launch_sliding_columns<1>(space, op, plan, a, b, out, sliding_factor);
    }
  }
}

template <class ExecutionSpace, class Op, class T>
void launch_scratch(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                    const T* a, const T* b, T* out, std::int64_t sliding_factor) {
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
  const int team_size = host ? 1 : 256;
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

// The automatic choice, from the measurements in perf/RESULTS.md: the
// sliding-factor kernel was the fastest variant, or within noise of it, on
// every benchmarked shape and backend (H100 at 2^28 elements: 1.4-2.7x the
// general kernel, 1.3-1.9x the scratch kernel, and never slower from 16x1024
// up; 2-core CPU: 1.0-1.6x the general kernel). The scratch kernel never
// won: the vector it stages is already served from L1/L2 (GPU) or cache
// (CPU), so staging only adds a barrier.
template <class ExecutionSpace>
BroadcastVariant choose_variant(const BroadcastPlan&) {
  return BroadcastVariant::sliding_factor;
}

}  // namespace impl

// out = op(a, b) elementwise with NumPy broadcasting. a, b and out are Views
// of any rank <= 8 and any layout (subviews, transposes) accessible from
// `space`; out must have the broadcast shape. out may alias an input that has
// out's own shape and strides (in place: a = a + b). Asynchronous. Throws
// std::invalid_argument, before any kernel runs, for incompatible shapes, a
// negative sliding factor, and the scratch variant on a shape that does not
// merge to a matrix and vectors.
template <class ExecutionSpace, class Op, class ViewA, class ViewB, class ViewOut>
void broadcast(const ExecutionSpace& space, const Op& op, const ViewA& a, const ViewB& b,
               const ViewOut& out, const BroadcastOptions& options = {}) {
  using T = typename ViewOut::non_const_value_type;
  static_assert(std::is_same_v<typename ViewA::non_const_value_type, T> &&
                    std::is_same_v<typename ViewB::non_const_value_type, T>,
                "kpl::broadcast: a, b and out must have the same element type");
  static_assert(!std::is_const_v<typename ViewOut::value_type>,
                "kpl::broadcast: out must be writable");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename ViewA::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename ViewB::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename ViewOut::memory_space>::accessible,
      "kpl::broadcast: every View must be accessible from the execution space");
  if (options.sliding_factor < 0) {
    throw std::invalid_argument(
        "kpl::broadcast: sliding_factor must be >= 0 (0 = automatic), got " +
        std::to_string(options.sliding_factor));
  }
  const auto plan = impl::plan_broadcast(describe(a), describe(b), describe(out));
  const BroadcastVariant variant = options.variant == BroadcastVariant::automatic
                                       ? impl::choose_variant<ExecutionSpace>(plan)
                                       : options.variant;
  if (variant == BroadcastVariant::scratch && plan.rank > 2) {
    throw std::invalid_argument(
        "kpl::broadcast: the scratch variant takes a matrix and a row or column vector; " +
        shape_text(describe(a)) + " and " + shape_text(describe(b)) + " merge to rank " +
        std::to_string(plan.rank));
  }
  if (plan.size == 0) return;
  switch (variant) {
    case BroadcastVariant::general:
      impl::launch_general(space, op, plan, a.data(), b.data(), out.data());
      break;
    case BroadcastVariant::scratch:
      impl::launch_scratch(space, op, plan, a.data(), b.data(), out.data(),
                             options.sliding_factor);
      break;
    default:
      impl::launch_sliding(space, op, plan, a.data(), b.data(), out.data(),
                             options.sliding_factor);
      break;
  }
}

}  // namespace kpl
