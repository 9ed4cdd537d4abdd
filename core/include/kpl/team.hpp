// Team-level callables: kpl's gemv, NNLS and reduction for one problem,
// called by every thread of a team inside the user's own TeamPolicy kernel
// (as Kokkos Kernels' KokkosBatched::TeamGemv). kpl::gemv_batched's
// team_per_dot strategy, kpl::nnls (one team per system) and kpl::reduce
// (each team's share) run these same functions.
//
//   const kpl::team::NnlsPlan<Space, double> plan(m, n);        // host
//   Kokkos::TeamPolicy<Space> policy(space, systems, Kokkos::AUTO);
//   policy.set_scratch_size(1, Kokkos::PerTeam(plan.scratch_bytes()));
//   Kokkos::parallel_for("solve", policy, KOKKOS_LAMBDA(const Member& member) {
//     const auto s = member.league_rank();
//     auto A_s = Kokkos::subview(A, s, Kokkos::ALL, Kokkos::ALL);
//     kpl::team::gemv(member, kpl::Transpose::no, 1.0, A_s, x0, 0.0, y_s);
//     const auto result = kpl::team::nnls(member, plan, A_s, b_s, x_s, member.team_scratch(1));
//     const double total = kpl::team::reduce(member, x_s, kpl::Sum<double>{});
//   });
//
// Contract of every function here:
//   - every thread of the team calls it, with the same arguments (they hold
//     team-wide reductions and barriers: a call from some threads only
//     deadlocks on GPUs);
//   - Views are 1-D or 2-D Kokkos::Views of one problem in any layout,
//     in global memory or the team's scratch, float or double;
//   - inputs other threads of the team wrote just before must be behind a
//     member.team_barrier() (the function does not order them);
//   - on return every thread holds the result: gemv's y and nnls' x are
//     complete and visible to the whole team (each ends with a team
//     barrier); reduce and nnls return the same value to every thread.
#pragma once

#include <kpl/gemv.hpp>
#include <kpl/impl/gemv_team.hpp>
#include <kpl/impl/nnls_team_system.hpp>
#include <kpl/impl/reduce_team.hpp>
#include <kpl/impl/team_member.hpp>
#include <kpl/nnls.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace kpl::team {

// What one team's NNLS solve reports: status (an NnlsStatus value), passive
// solves, ||A x - b||, the KKT residual and the columns that entered and
// left, as kpl::NnlsSolution holds them per system.
template <class T>
using NnlsResult = impl::NnlsSystemResult<T>;

// One NNLS problem shape, m x n, for a team solve on ExecutionSpace: the
// options resolved on the host (as kpl::nnls resolves them; team_threads is
// the caller's policy's business, and the gradient comes from the residual:
// a team has no shared A^T A) and the team scratch the solve takes.
// Throws std::invalid_argument for invalid options.
template <class ExecutionSpace, class T>
class NnlsPlan {
  static_assert(std::is_floating_point_v<T>, "kpl::team::NnlsPlan: float or double systems");

 public:
  NnlsPlan(std::int64_t rows, std::int64_t columns, const NnlsOptions& options = {})
      : parameters_(impl::team_nnls_parameters<ExecutionSpace, T>(rows, columns, options)) {}
  std::int64_t rows() const { return parameters_.rows; }
  std::int64_t columns() const { return parameters_.columns; }
  int max_passive() const { return parameters_.max_passive; }
  // Bytes of team scratch one solve takes from the scratch level it is given
  // (Q, R, the vectors, the passive list): pass to TeamPolicy::set_scratch_size,
  // plus whatever else the kernel takes from that level.
  std::size_t scratch_bytes() const {
    return impl::team_nnls_scratch_bytes<ExecutionSpace>(parameters_);
  }
  KOKKOS_INLINE_FUNCTION const impl::NnlsParameters<T>& parameters() const { return parameters_; }

 private:
  impl::NnlsParameters<T> parameters_;
};

// NnlsPlan<ExecutionSpace, T>(rows, columns, options).scratch_bytes().
template <class ExecutionSpace, class T>
std::size_t nnls_scratch_bytes(std::int64_t rows, std::int64_t columns,
                               const NnlsOptions& options = {}) {
  return NnlsPlan<ExecutionSpace, T>(rows, columns, options).scratch_bytes();
}

// y = alpha * op(A) * x + beta * y for one problem, by the calling team:
// each thread takes whole outputs, its vector lanes split the dot product.
// BLAS semantics: beta = 0 writes y without reading it; alpha = 0 reads
// neither A nor x. y must not overlap A or x. Extents must match
// (op(A) is [y.extent(0), x.extent(0)]): the kernel aborts otherwise.
template <class Member, class AView, class XView, class YView>
KOKKOS_INLINE_FUNCTION void gemv(const Member& member, Transpose transpose,
                                 typename YView::const_value_type alpha, const AView& A,
                                 const XView& x, typename YView::const_value_type beta,
                                 const YView& y) {
  static_assert(Kokkos::is_view<AView>::value && AView::rank == 2,
                "kpl::team::gemv: A must be a 2-D Kokkos::View");
  static_assert(Kokkos::is_view<XView>::value && XView::rank == 1,
                "kpl::team::gemv: x must be a 1-D Kokkos::View");
  static_assert(Kokkos::is_view<YView>::value && YView::rank == 1,
                "kpl::team::gemv: y must be a 1-D Kokkos::View");
  static_assert(impl::gemv_value_types<AView, XView, YView>(),
                "kpl::team::gemv: A, x and y must hold one value type, float or double");
  static_assert(!std::is_const_v<typename YView::value_type>,
                "kpl::team::gemv: y must be writable");
  static_assert(!std::is_void_v<impl::member_execution_space_t<Member>>,
                "kpl::team::gemv: member must be the team member of an enabled execution space");
  using T = typename YView::non_const_value_type;
  const auto problem = impl::gemv_problem<T>(transpose, alpha, A, x, beta, y);
  if (problem.length != std::int64_t(x.extent(0)) || problem.outputs != std::int64_t(y.extent(0)))
    Kokkos::abort("kpl::team::gemv: op(A) is not [y.extent(0), x.extent(0)]");
  impl::team_gemv(member, problem);
}

// op over element i of `input` (a 1-D View in global memory or scratch), by
// the calling team; every thread returns the value (an empty input gives
// op.identity()). Any operation of kpl/reduce_operations.hpp or the user's.
// (kpl::team_reduce and kpl::vector_reduce of kpl/reduce.hpp combine one
// value per thread or lane; this reduces a whole input, as kpl::reduce's
// teams do.)
template <class Member, class InputView, class Op>
KOKKOS_INLINE_FUNCTION typename Op::value_type reduce(const Member& member, const InputView& input,
                                                      const Op& op) {
  static_assert(Kokkos::is_view<InputView>::value && InputView::rank == 1,
                "kpl::team::reduce: input must be a 1-D Kokkos::View");
  static_assert(std::is_same_v<typename InputView::non_const_value_type, typename Op::input_type>,
                "kpl::team::reduce: the View's value type must be the operation's input_type");
  static_assert(!std::is_void_v<impl::member_execution_space_t<Member>>,
                "kpl::team::reduce: member must be the team member of an enabled execution space");
  return impl::team_reduce_values(member, op, input, impl::contiguous_aligned_data(input),
                                  std::int64_t(input.extent(0)));
}

// op over element(i), i in [0, count), by the calling team: element is a
// callable returning Op::input_type (op.lift sees i, so ArgMin/ArgMax report
// it). Every thread returns the value.
template <class Member, class Op, class Element>
KOKKOS_INLINE_FUNCTION typename Op::value_type reduce(const Member& member, std::int64_t count,
                                                      const Op& op, const Element& element) {
  static_assert(!std::is_void_v<impl::member_execution_space_t<Member>>,
                "kpl::team::reduce: member must be the team member of an enabled execution space");
  return impl::team_reduce_values(member, op, element, nullptr, count);
}

// min ||A x - b||_2 subject to x >= 0 for one system (A [m, n], b [m],
// x [n] as the plan says), solved by the calling team exactly as kpl::nnls
// solves each system (Lawson-Hanson with QR updates, Luo & Duraiswami 2011;
// see kpl/nnls.hpp for the tolerances and statuses). The workspace is taken
// from `scratch`, member.team_scratch(level) of a policy given at least
// plan.scratch_bytes() at that level. A and b are only read; x is written
// (its previous values are ignored). Mismatched extents abort the kernel.
// On GPUs a vector length of 32 takes kpl::nnls' own path (the warp back
// substitution); other lengths solve the triangle on one thread.
template <class Member, class ExecutionSpace, class T, class AView, class BView, class XView>
KOKKOS_INLINE_FUNCTION NnlsResult<T> nnls(
    const Member& member, const NnlsPlan<ExecutionSpace, T>& plan, const AView& A, const BView& b,
    const XView& x, const typename ExecutionSpace::scratch_memory_space& scratch) {
  static_assert(Kokkos::is_view<AView>::value && AView::rank == 2,
                "kpl::team::nnls: A must be a 2-D Kokkos::View [m, n]");
  static_assert(Kokkos::is_view<BView>::value && BView::rank == 1,
                "kpl::team::nnls: b must be a 1-D Kokkos::View [m]");
  static_assert(Kokkos::is_view<XView>::value && XView::rank == 1,
                "kpl::team::nnls: x must be a 1-D Kokkos::View [n]");
  static_assert(std::is_same_v<typename AView::non_const_value_type, T> &&
                    std::is_same_v<typename BView::non_const_value_type, T> &&
                    std::is_same_v<typename XView::value_type, T>,
                "kpl::team::nnls: A, b and a writable x must hold the plan's value type");
  static_assert(std::is_same_v<impl::member_execution_space_t<Member>, ExecutionSpace>,
                "kpl::team::nnls: the plan must be made for the member's execution space");
  const auto& parameters = plan.parameters();
  if (std::int64_t(A.extent(0)) != parameters.rows ||
      std::int64_t(A.extent(1)) != parameters.columns ||
      std::int64_t(b.extent(0)) != parameters.rows ||
      std::int64_t(x.extent(0)) != parameters.columns)
    Kokkos::abort("kpl::team::nnls: A, b or x do not have the plan's extents [m, n], [m], [n]");
  return impl::team_nnls(member, parameters, A, b, x, scratch);
}

}  // namespace kpl::team
