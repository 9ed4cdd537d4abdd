// kpl::team::nnls (kpl/team.hpp): one system solved by the calling team with
// the solve kpl::nnls runs per team (NnlsTeamSolve::solve,
// impl/nnls_team_solve.hpp), its workspace carved from the caller's team
// scratch. Users need not read this.
#pragma once

#include <kpl/impl/nnls_launch.hpp>
#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_team_solve.hpp>
#include <kpl/impl/reduce_op_reducer.hpp>
#include <kpl/impl/team_member.hpp>
#include <kpl/nnls.hpp>
#include <kpl/nnls_options.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace kpl::impl {

// kpl::nnls' parameters for one m x n system on ExecutionSpace. The
// cross-product gradient needs A^T A formed before the launch for an A that
// all systems share; a team solve has only its own A.
template <class ExecutionSpace, class T>
NnlsParameters<T> team_nnls_parameters(std::int64_t rows, std::int64_t columns,
                                       const NnlsOptions& options) {
  if (rows < 0 || columns < 0) throw std::invalid_argument("kpl::team::NnlsPlan: negative extents");
  if (options.gradient == NnlsGradient::from_cross_products)
    throw std::invalid_argument(
        "kpl::team::NnlsPlan: the gradient from cross products needs a shared A (kpl::nnls)");
  return nnls_parameters<T>(1, rows, columns, options, runs_on_host_v<ExecutionSpace>);
}

template <class ExecutionSpace, class Value>
using TeamScratchArray = Kokkos::View<Value*, typename ExecutionSpace::scratch_memory_space,
                                      Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// The workspace of one system (NnlsWorkspacePointers' values and indices)
// as team scratch.
template <class ExecutionSpace, class T>
std::size_t team_nnls_scratch_bytes(const NnlsParameters<T>& parameters) {
  using Pointers = NnlsWorkspacePointers<T>;
  return TeamScratchArray<ExecutionSpace, T>::shmem_size(
             Pointers::values_needed(parameters.rows, parameters.columns, parameters.max_passive)) +
         TeamScratchArray<ExecutionSpace, int>::shmem_size(
             Pointers::indices_needed(parameters.columns, parameters.max_passive));
}

// System 0 of a batch of one: A, b and x addressed through their strides,
// the workspace in `scratch` (every thread carves the same addresses). The
// vectors are in the caller's scratch already, so none is copied to level 0
// (vectors_in_scratch stays false, as nnls_parameters leaves it).
template <class Member, class T, class AView, class BView, class XView, class Scratch>
KOKKOS_INLINE_FUNCTION NnlsSystemResult<T> team_nnls(const Member& member,
                                                     const NnlsParameters<T>& parameters,
                                                     const AView& A, const BView& b, const XView& x,
                                                     const Scratch& scratch) {
  using ExecutionSpace = member_execution_space_t<Member>;
  using Pointers = NnlsWorkspacePointers<T>;
  const std::int64_t m = parameters.rows, n = parameters.columns, k = parameters.max_passive;
  const TeamScratchArray<ExecutionSpace, T> values(scratch, Pointers::values_needed(m, n, k));
  const TeamScratchArray<ExecutionSpace, int> indices(scratch, Pointers::indices_needed(n, k));
  const Pointers workspace{values.data(), indices.data(), 0, 0};
  const NnlsOutputs<T> outputs{
      x.data(), 0, std::int64_t(x.stride(0)), nullptr, nullptr, nullptr, nullptr, nullptr};
  const DenseColumns<T> columns{A.data(), 0, std::int64_t(A.stride(0)), std::int64_t(A.stride(1)),
                                m};
  const NnlsTeamSolve<T, DenseColumns<T>, ExecutionSpace> solver{
      {columns, b.data(), 0, std::int64_t(b.stride(0)), parameters, workspace, outputs, nullptr,
       0}};
  const NnlsSystemResult<T> result = solver.solve(member, 0, workspace.system(0, m, n, k));
  member.team_barrier();  // x complete for every thread
  return result;
}

}  // namespace kpl::impl
