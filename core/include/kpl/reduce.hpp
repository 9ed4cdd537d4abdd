// Hierarchical reductions: a 1-D View to one value (or several values in one
// pass), and a 2-D View along either dimension, with any operation of
// kpl/reduce_operations.hpp (Sum, Min, ..., custom, several).
//
// The 1-D reduction is a tree after GPU Coder's reduction kernels: threads,
// then vector lanes, then the team, then the teams (impl/reduce_tree.hpp).
// Rows and columns: impl/reduce_matrix.hpp. A whole input reduced by one
// team inside a user's own kernel: kpl::team::reduce (kpl/team.hpp).
#pragma once

#include <kpl/impl/reduce_op_reducer.hpp>
#include <kpl/reduce_operations.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace kpl {

// How the per-team results are combined: by one atomic per team (sums; min
// and max of 4- and 8-byte scalars; min+max of 4-byte scalars) or by a second
// pass over the per-team results. automatic: atomics where the operation
// allows them; for results wanted on the host under 2^24 elements, Kokkos'
// own inter-team stage (one launch, no allocation).
enum class cross_team { automatic, atomics, second_pass };

struct ReduceOptions {
  cross_team combine = cross_team::automatic;
  int teams = 0;      // 0: chosen from the length and the execution space
  int team_size = 0;  // threads a team; 0: 1 on CPUs, 16 (of 32 vector lanes) on GPUs
};

// Building blocks for a user's own team kernels. vector_reduce reduces
// element(i), i in [0, count), over the vector lanes of the calling thread
// (warp shuffles on CUDA, a plain loop on CPUs); every lane gets the result.
// element(i) returns Op::value_type.
template <class Member, class Op, class Element>
KOKKOS_INLINE_FUNCTION typename Op::value_type vector_reduce(const Member& member, int count,
                                                             const Op& op, const Element& element) {
  typename Op::value_type result;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, count),
      [&](const int i, typename Op::value_type& partial) { op.combine(partial, element(i)); },
      impl::OpReducer<Op>(op, result));
  return result;
}

// Combines one value per thread of the team (lanes of one thread must hold
// the same value, e.g. after vector_reduce); every thread gets the result.
template <class Member, class Op>
KOKKOS_INLINE_FUNCTION typename Op::value_type team_reduce(const Member& member, const Op& op,
                                                           typename Op::value_type value) {
  impl::OpReducer<Op> reducer(op, value);
  member.team_reduce(reducer);
  return value;
}

}  // namespace kpl

// The implementation needs the options above.
#include <kpl/impl/reduce_matrix.hpp>
#include <kpl/impl/reduce_tree.hpp>

namespace kpl {

// Reduces a 1-D View with `op` into the rank-0 View `result` (in the
// execution space's memory). Asynchronous: nothing is fenced, so the result
// can feed the next kernel on `space` directly. Throws std::invalid_argument
// for cross_team::atomics with an operation that has no atomic form.
template <class ExecutionSpace, class InputView, class Op, class ResultView>
void reduce(const ExecutionSpace& space, const InputView& input, const Op& op,
            const ResultView& result, const ReduceOptions& options = {}) {
  static_assert(Kokkos::is_view<InputView>::value && InputView::rank == 1,
                "kpl::reduce takes a 1-D Kokkos::View");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename InputView::memory_space>::accessible,
      "the input View is not accessible from this execution space");
  static_assert(ResultView::rank == 0, "kpl::reduce writes into a rank-0 View");
  static_assert(std::is_same_v<typename ResultView::value_type, typename Op::value_type>,
                "the result View's value type must be the operation's value_type");
  impl::reduce_into_view(space, input, op, result, options);
}

// Reduces a 1-D View with one operation and returns the value on the host
// (waits for the result).
template <class ExecutionSpace, class InputView, class Op>
typename Op::value_type reduce(const ExecutionSpace& space, const InputView& input, const Op& op,
                               const ReduceOptions& options = {}) {
  static_assert(Kokkos::is_view<InputView>::value && InputView::rank == 1,
                "kpl::reduce takes a 1-D Kokkos::View");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename InputView::memory_space>::accessible,
      "the input View is not accessible from this execution space");
  return impl::reduce_to_host(space, input, op, options);
}

// Several operations in one pass over the data, e.g. (as gpucoder.reduce with
// {@sum, @max}):  auto [total, largest] = kpl::reduce(space, x, Sum<float>{}, Max<float>{});
// (With options: kpl::reduce(space, x, kpl::several(ops...), options).)
template <class ExecutionSpace, class InputView, class FirstOp, class SecondOp, class... MoreOps,
          class = std::enable_if_t<!std::is_same_v<SecondOp, ReduceOptions> &&
                                   !Kokkos::is_view<SecondOp>::value>>
auto reduce(const ExecutionSpace& space, const InputView& input, const FirstOp& first,
            const SecondOp& second, const MoreOps&... more) {
  const auto pack = reduce(space, input, several(first, second, more...));
  return impl::pack_to_tuple(pack, std::make_index_sequence<2 + sizeof...(MoreOps)>{});
}

// output(i) = op over j of matrix(i, j). Asynchronous, like reduce into a
// View. Throws std::invalid_argument unless output has one element per row.
template <class ExecutionSpace, class Matrix, class Op, class Output>
void reduce_rows(const ExecutionSpace& space, const Matrix& matrix, const Op& op,
                 const Output& output) {
  static_assert(Kokkos::is_view<Matrix>::value && Matrix::rank == 2,
                "kpl::reduce_rows/reduce_columns take a 2-D Kokkos::View");
  static_assert(Output::rank == 1, "the output of a row or column reduction is a 1-D View");
  static_assert(std::is_same_v<typename Output::value_type, typename Op::value_type>,
                "the output View's value type must be the operation's value_type");
  impl::check_matrix_output<false>(matrix, output);
  impl::reduce_matrix<false>(space, matrix, op, output);
}

// output(j) = op over i of matrix(i, j). Asynchronous. Throws
// std::invalid_argument unless output has one element per column.
template <class ExecutionSpace, class Matrix, class Op, class Output>
void reduce_columns(const ExecutionSpace& space, const Matrix& matrix, const Op& op,
                    const Output& output) {
  static_assert(Kokkos::is_view<Matrix>::value && Matrix::rank == 2,
                "kpl::reduce_rows/reduce_columns take a 2-D Kokkos::View");
  static_assert(Output::rank == 1, "the output of a row or column reduction is a 1-D View");
  static_assert(std::is_same_v<typename Output::value_type, typename Op::value_type>,
                "the output View's value type must be the operation's value_type");
  impl::check_matrix_output<true>(matrix, output);
  impl::reduce_matrix<true>(space, matrix, op, output);
}

}  // namespace kpl
