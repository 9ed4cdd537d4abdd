// Elementwise binary operations on N-d Views under NumPy's broadcasting rules,
// through strides (Çoban, Yuret & Unat, "Multidimensional broadcast operation
// on the GPU", §III-B/C): shapes are aligned at their trailing dimensions, and
// a dimension that is missing or of extent 1 in an input is read with stride
// 0, so every input element index is the output coordinate · input strides.
//
// Before launching, adjacent dimensions that are contiguous in every operand
// are merged, and the index arithmetic is done once per row chunk. This is the general kernel of
// the paper; the sliding-factor (§III-D) and scratch-memory (§III-E) variants are not implemented
// yet.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kpl {

// Extents and strides (in elements) of an N-d array, rank <= 8, any layout.
struct ArrayDescriptor {
  static constexpr int max_rank = 8;
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

namespace detail {

// Output shape and the three operands' strides over it, after broadcasting
// (stride 0 on broadcast dimensions) and merging contiguous neighbours.
struct BroadcastPlan {
  int rank = 0;
  std::int64_t extents[ArrayDescriptor::max_rank] = {};
  std::int64_t out_strides[ArrayDescriptor::max_rank] = {};
  std::int64_t a_strides[ArrayDescriptor::max_rank] = {};
  std::int64_t b_strides[ArrayDescriptor::max_rank] = {};
  std::int64_t size = 1;
};

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
  return plan;
}

// The general kernel (§III-B/C), organised by rows of the innermost merged
// dimension: each (thread, work item) takes one chunk of one row, finds the
// three operands' row offsets from the row's coordinate (the divisions happen
// once per chunk, not per element), and its vector lanes sweep the chunk,
// consecutive lanes on consecutive elements.
template <class Op, class T, class ExecutionSpace>
struct BroadcastRows {
  using member_type = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  Op op;
  BroadcastPlan plan;  // outer dimensions 0..rank-2, inner dimension rank-1
  const T* a;
  const T* b;
  T* out;
  std::int64_t inner;         // extent of the innermost dimension
  std::int64_t chunk_length;  // elements of a row one work item handles
  std::int64_t chunks_per_row;
  std::int64_t work_items;  // rows * chunks_per_row

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& member) const {
    // A persistent grid: each thread walks work items strided by the number
    // of threads, so short rows do not cost one block launch each.
    const std::int64_t threads = std::int64_t(member.league_size()) * member.team_size();
    for (std::int64_t work =
             std::int64_t(member.league_rank()) * member.team_size() + member.team_rank();
         work < work_items; work += threads) {
      process(member, work);
    }
  }

  KOKKOS_INLINE_FUNCTION void process(const member_type& member, const std::int64_t work) const {
    std::int64_t row = work / chunks_per_row;
    const std::int64_t begin = (work % chunks_per_row) * chunk_length;
    const std::int64_t end = begin + chunk_length < inner ? begin + chunk_length : inner;
    std::int64_t a_offset = 0, b_offset = 0, out_offset = 0;
    for (int d = plan.rank - 2; d >= 0; --d) {
      const std::int64_t coordinate = row % plan.extents[d];
      row /= plan.extents[d];
      a_offset += coordinate * plan.a_strides[d];
      b_offset += coordinate * plan.b_strides[d];
      out_offset += coordinate * plan.out_strides[d];
    }
    const int last = plan.rank - 1;
    const std::int64_t sa = last >= 0 ? plan.a_strides[last] : 0;
    const std::int64_t sb = last >= 0 ? plan.b_strides[last] : 0;
    const std::int64_t so = last >= 0 ? plan.out_strides[last] : 0;
    Kokkos::parallel_for(
        Kokkos::ThreadVectorRange(member, static_cast<int>(end - begin)), [&](const int k) {
          const std::int64_t i = begin + k;
          out[out_offset + i * so] = op(a[a_offset + i * sa], b[b_offset + i * sb]);
        });
  }
};

}  // namespace detail

// out = op(a, b) elementwise with NumPy broadcasting. a, b and out are Views
// of any rank <= 8 and any layout (subviews, transposes) accessible from
// `space`; out must have the broadcast shape. out may alias an input that has
// out's own shape and strides (in place: a = a + b). Asynchronous.
template <class ExecutionSpace, class Op, class ViewA, class ViewB, class ViewOut>
void broadcast(const ExecutionSpace& space, const Op& op, const ViewA& a, const ViewB& b,
               const ViewOut& out) {
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
  const auto plan = detail::plan_broadcast(describe(a), describe(b), describe(out));
  if (plan.size == 0) return;
  constexpr bool host = std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;
  const std::int64_t inner = plan.rank > 0 ? plan.extents[plan.rank - 1] : 1;
  const std::int64_t rows = plan.size / inner;
  // Chunks of up to 2048 (GPU: 64 per lane) so long rows still spread over
  // the whole device; CPUs take whole rows.
  const std::int64_t chunk_length = host ? inner : (inner < 2048 ? inner : 2048);
  const std::int64_t chunks_per_row = (inner + chunk_length - 1) / chunk_length;
  const std::int64_t work_items = rows * chunks_per_row;
  int vector_length = 1;
  if constexpr (!host) {
    while (vector_length < 32 && vector_length < inner) vector_length *= 2;
  }
  const int team_size = host ? 1 : 256 / vector_length;
  // GPUs: enough teams to fill the device a few times over, never more than
  // the work. CPUs: one team per work item (Kokkos hands each thread a
  // contiguous block of rows).
  const std::int64_t needed = (work_items + team_size - 1) / team_size;
  const std::int64_t fill =
      host ? needed
           : 4 * std::max<std::int64_t>(
                     1, space.concurrency() / (std::int64_t(team_size) * vector_length));
  const auto teams = static_cast<int>(needed < fill ? needed : fill);
  Kokkos::parallel_for(
      "kpl::broadcast::general",
      Kokkos::TeamPolicy<ExecutionSpace>(space, teams, team_size, vector_length),
      detail::BroadcastRows<Op, T, ExecutionSpace>{op, plan, a.data(), b.data(), out.data(), inner,
                                                   chunk_length, chunks_per_row, work_items});
}

}  // namespace kpl
