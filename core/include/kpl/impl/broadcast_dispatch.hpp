// From kpl::broadcast's arguments to one kernel: the plan (NumPy's
// broadcast shape, extent-1 dimensions dropped, mergeable dimensions
// merged), the automatic variant, the launch. Include kpl/broadcast.hpp,
// not this file.
#pragma once

#include <kpl/impl/broadcast_general.hpp>
#include <kpl/impl/broadcast_plan.hpp>
#include <kpl/impl/broadcast_scratch.hpp>
#include <kpl/impl/broadcast_sliding_factor.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

// The bodies of two functions declared in kpl/broadcast.hpp.
inline std::string kpl::shape_text(const ArrayDescriptor& descriptor) {
  std::string text = "[";
  for (int d = 0; d < descriptor.rank; ++d) {
    text += (d > 0 ? ", " : "") + std::to_string(descriptor.extents[d]);
  }
  return text + "]";
}

inline kpl::ArrayDescriptor kpl::broadcast_shape(const ArrayDescriptor& a,
                                                 const ArrayDescriptor& b) {
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

namespace kpl::impl {

// Strides of `input` aligned to the output's dimensions: 0 where the input
// lacks the dimension or has extent 1.
inline void aligned_strides(const ArrayDescriptor& input, int rank, std::int64_t* strides) {
  for (int d = 0; d < rank; ++d) {
    const int di = input.rank - rank + d;
    strides[d] = (di >= 0 && input.extents[di] != 1) ? input.strides[di] : 0;
  }
}

// Throws unless out has the broadcast shape of a and b.
inline void require_output_shape(const ArrayDescriptor& a, const ArrayDescriptor& b,
                                 const ArrayDescriptor& out) {
  const ArrayDescriptor shape = broadcast_shape(a, b);
  bool matches = shape.rank == out.rank;
  for (int d = 0; matches && d < shape.rank; ++d) matches = shape.extents[d] == out.extents[d];
  if (!matches) {
    throw std::invalid_argument("kpl::broadcast: inputs " + shape_text(a) + " and " +
                                shape_text(b) + " broadcast to " + shape_text(shape) +
                                " but the output is " + shape_text(out));
  }
}

// Appends dimension d of `full` to `plan`, merged into plan's innermost
// dimension when every operand steps through that one exactly as through
// extent(d) steps of d (the outer stride is extent(d) × stride(d)).
inline void append_or_merge(BroadcastPlan& plan, const BroadcastPlan& full, int d) {
  const int last = plan.rank - 1;
  if (last >= 0 && plan.out_strides[last] == full.out_strides[d] * full.extents[d] &&
      plan.a_strides[last] == full.a_strides[d] * full.extents[d] &&
      plan.b_strides[last] == full.b_strides[d] * full.extents[d]) {
    plan.extents[last] *= full.extents[d];
    plan.out_strides[last] = full.out_strides[d];
    plan.a_strides[last] = full.a_strides[d];
    plan.b_strides[last] = full.b_strides[d];
    return;
  }
  plan.extents[plan.rank] = full.extents[d];
  plan.out_strides[plan.rank] = full.out_strides[d];
  plan.a_strides[plan.rank] = full.a_strides[d];
  plan.b_strides[plan.rank] = full.b_strides[d];
  ++plan.rank;
}

// The plan (§III-B/C): every operand's strides over the output shape, then
// extent-1 dimensions dropped and mergeable neighbours merged.
inline BroadcastPlan plan_broadcast(const ArrayDescriptor& a, const ArrayDescriptor& b,
                                    const ArrayDescriptor& out) {
  require_output_shape(a, b, out);
  BroadcastPlan full;
  full.rank = out.rank;
  for (int d = 0; d < out.rank; ++d) {
    full.extents[d] = out.extents[d];
    full.out_strides[d] = out.strides[d];
  }
  aligned_strides(a, full.rank, full.a_strides);
  aligned_strides(b, full.rank, full.b_strides);
  BroadcastPlan plan;
  for (int d = 0; d < full.rank; ++d) {
    if (full.extents[d] != 1) append_or_merge(plan, full, d);
  }
  for (int d = 0; d < full.rank; ++d) plan.size *= full.extents[d];
  plan.finish();
  return plan;
}

// The automatic choice: the sliding-factor kernel was the fastest variant,
// or within noise of it, on every benchmarked shape and backend
// (perf/RESULTS.md). The scratch kernel never won: the vector it stages is
// already served from L1/L2 (GPU) or cache (CPU), so staging only adds a
// barrier.
template <class ExecutionSpace>
BroadcastVariant choose_variant(const BroadcastPlan&) {
  return BroadcastVariant::sliding_factor;
}

// Launches the chosen kernel on a plan with at least one element.
template <class ExecutionSpace, class Op, class T>
void launch_broadcast(const ExecutionSpace& space, const Op& op, const BroadcastPlan& plan,
                      BroadcastVariant variant, const BroadcastOptions& options, const T* a,
                      const T* b, T* out) {
  switch (variant) {
    case BroadcastVariant::general:
      launch_general(space, op, plan, a, b, out, options.team_size);
      break;
    case BroadcastVariant::scratch:
      launch_scratch(space, op, plan, a, b, out, options.sliding_factor, options.team_size);
      break;
    default:
      launch_sliding(space, op, plan, a, b, out, options.sliding_factor);
      break;
  }
}

}  // namespace kpl::impl
