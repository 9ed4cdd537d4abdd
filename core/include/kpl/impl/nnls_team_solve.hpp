// One Kokkos team solves one NNLS system by the Lawson–Hanson active-set
// method (Luo & Duraiswami 2011, Algorithm 1), the passive least-squares
// problem kept as a QR factorisation: each step below is one named team-level
// function.
//   1. choose the entering column: the zero-set column with the largest
//      gradient per unit norm (choose_entering);
//   2. append it by reordered MGS (impl/nnls_reordered_mgs.hpp, Algorithm 2);
//   3. solve the triangular system R z = u (impl/nnls_back_substitution.hpp);
//   4. step back to feasibility when some z_p <= 0 (step_to_feasibility),
//      the columns that reach zero leaving by Givens downdates
//      (impl/nnls_givens_downdate.hpp, §3.4);
//   5. update the gradient (impl/nnls_gradient.hpp) and repeat;
//   6. after the solve, the KKT check from the residual (kkt_residual).
#pragma once

#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/nnls_back_substitution.hpp>
#include <kpl/impl/nnls_givens_downdate.hpp>
#include <kpl/impl/nnls_gradient.hpp>
#include <kpl/impl/nnls_reordered_mgs.hpp>
#include <kpl/impl/nnls_storage.hpp>
#include <kpl/impl/nnls_system_scale.hpp>
#include <kpl/impl/nnls_team_ops.hpp>
#include <kpl/impl/power_of_two.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl {
namespace impl {

// Where one system's solve stands (every thread of the team holds the same
// copy: each decision comes from a team reduction all threads receive).
struct NnlsProgress {
  int status = static_cast<int>(NnlsStatus::converged);
  int iterations = 0;  // passive least-squares solves
  int passive = 0;     // k, the size of P-hat
  int updates = 0;     // columns that entered (QR updates)
  int downdates = 0;   // columns that left (Givens downdates)
  KOKKOS_INLINE_FUNCTION void stopped(NnlsStatus why) { status = static_cast<int>(why); }
  KOKKOS_INLINE_FUNCTION bool running() const {
    return status == static_cast<int>(NnlsStatus::converged);
  }
};

// What one system's solve reports (every thread of the team holds the same
// copy): kpl::NnlsSolution's per-system entries, kpl::team::NnlsResult.
template <class T>
struct NnlsSystemResult {
  int status;           // an NnlsStatus value
  int iterations;       // passive least-squares solves
  T residual_norm;      // ||A x - b|| in the caller's units (NaN if A or b is not finite)
  T kkt_residual;       // see kpl/nnls.hpp (NaN if not checked)
  int columns_entered;  // QR updates
  int columns_left;     // Givens downdates
};

template <class T, class Columns, class ExecutionSpace>
struct NnlsTeamSolve {
  using Batch = NnlsBatch<T, Columns, ExecutionSpace>;
  using Member = typename Batch::Member;
  using Accumulator = typename Batch::Accumulator;
  using Storage = NnlsSystemStorage<T>;

  Batch batch;

  // Marks column j as not to be taken until the passive set next grows.
  KOKKOS_INLINE_FUNCTION void reject(const Member& member, const Storage& s, int j) const {
    Kokkos::single(Kokkos::PerTeam(member), [&] { s.position[j] = rejected; });
    member.team_barrier();
  }

  // After x = z a column entered for good: earlier rejections may no longer
  // hold.
  KOKKOS_INLINE_FUNCTION void clear_rejections(const Member& member, const Storage& s) const {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, batch.parameters.columns),
                         [&](std::int64_t j) {
                           if (s.position[j] == rejected) s.position[j] = not_passive;
                         });
    member.team_barrier();
  }

  // Step 1: the zero-set column with the largest gradient per unit norm,
  // w_j / ||a_j|| (index -1: none).
  KOKKOS_INLINE_FUNCTION ValueIndex<T> choose_entering(const Member& member,
                                                       const Storage& s) const {
    return nnls_team_combine(member, batch.parameters.columns, ArgMax<T>{}, [&](std::int64_t j) {
      return ValueIndex<T>{s.gradient[j] * s.inverse_norms[j],
                           s.position[j] == not_passive ? j : -1};
    });
  }

  // Why no column enters: KKT hold, unless a violating column was rejected
  // as dependent on the passive set or the gradient is not finite.
  KOKKOS_INLINE_FUNCTION NnlsStatus status_without_entering(const Member& member,
                                                            const Storage& s,
                                                            const ValueIndex<T>& candidate,
                                                            T tolerance) const {
    if (candidate.index >= 0 && !compat::math::isfinite(candidate.value))
      return NnlsStatus::numerical_issue;
    const Accumulator rejected_violators =
        nnls_team_sum<Accumulator>(member, batch.parameters.columns, [&](std::int64_t j) {
          return s.position[j] == rejected && s.gradient[j] * s.inverse_norms[j] > tolerance ? 1
                                                                                             : 0;
        });
    return rejected_violators > 0 ? NnlsStatus::dependent_columns : NnlsStatus::converged;
  }

  KOKKOS_INLINE_FUNCTION bool all_finite(const Member& member, int count, const T* values) const {
    return nnls_team_sum<Accumulator>(member, count, [&](std::int64_t p) {
             return compat::math::isfinite(values[p]) ? 0 : 1;
           }) == 0;
  }

  // Step 4's bound: alpha = min over z_p <= 0 of x_p / (x_p - z_p), the
  // first point on the way from x to z where a passive x_p reaches 0
  // (index -1: z > 0, x moves to z).
  KOKKOS_INLINE_FUNCTION ValueIndex<T> feasibility_bound(const Member& member, const Storage& s,
                                                         const T* x, int k) const {
    return nnls_team_combine(member, k, ArgMin<T>{}, [&](std::int64_t p) {
      const T z = s.solution[p];
      const T current = x[s.passive[p] * batch.outputs.x_column_stride];
      return z > T(0) ? ValueIndex<T>{T(0), -1} : ValueIndex<T>{current / (current - z), p};
    });
  }

  // Step 4: x moves to the passive solution z if z > 0 (returns true);
  // otherwise to the feasibility bound, where x_p of the bounding column is
  // set to exactly 0, and every column at or below zero leaves P-hat.
  KOKKOS_INLINE_FUNCTION bool step_to_feasibility(const Member& member, const Storage& s, T* x,
                                                  NnlsProgress& progress) const {
    const int k = progress.passive;
    const auto limit = feasibility_bound(member, s, x, k);
    if (limit.index < 0) {
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k),
                           [&](int p) { batch.x_at(x, s.passive[p]) = s.solution[p]; });
      member.team_barrier();
      return true;
    }
    const T alpha = limit.value;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k), [&](int p) {
      T& value = batch.x_at(x, s.passive[p]);
      value = p == limit.index ? T(0) : value + alpha * (s.solution[p] - value);
    });
    member.team_barrier();
    remove_nonpositive_columns(member, s, x, progress);
    return false;
  }

  // Columns at or below zero leave by Givens downdates, rightmost first so
  // the positions still to be visited do not shift; each is found by a team
  // reduction.
  KOKKOS_INLINE_FUNCTION void remove_nonpositive_columns(const Member& member, const Storage& s,
                                                         T* x, NnlsProgress& progress) const {
    for (int bound = progress.passive; bound > 0;) {
      const auto leaving = nnls_team_combine(member, bound, ArgMax<T>{}, [&](std::int64_t p) {
        return batch.x_at(x, s.passive[p]) <= T(0) ? ValueIndex<T>{T(p), p}
                                                   : ValueIndex<T>{T(0), -1};
      });
      if (leaving.index < 0) break;
      const int p = static_cast<int>(leaving.index);
      Kokkos::single(Kokkos::PerTeam(member), [&] { batch.x_at(x, s.passive[p]) = T(0); });
      givens_downdate(member, batch, s, p, progress.passive);
      --progress.passive;
      ++progress.downdates;
      bound = p;
    }
    member.team_barrier();
  }

  // Steps 3-4 after column `entering` joined P-hat: passive solves and steps
  // back to feasibility until the passive solution is positive. Returns
  // false if the entering column had to be taken back out (x unchanged).
  KOKKOS_INLINE_FUNCTION bool solve_until_feasible(const Member& member, const Storage& s, T* x,
                                                   int entering, NnlsProgress& progress) const {
    for (bool first = true;; first = false) {
      ++progress.iterations;
      const int k = progress.passive;
      solve_passive(member, batch, s, k);
      if (!all_finite(member, k, s.solution)) {
        progress.stopped(NnlsStatus::numerical_issue);  // R broke down: x is the last iterate
        return true;
      }
      if (first && s.passive[k - 1] == entering && !(s.solution[k - 1] > T(0))) {
        // Lawson–Hanson: the entering column would get a non-positive value
        // (rounding): take it back out and try the next best.
        reject(member, s, entering);
        --progress.passive;
        ++progress.downdates;
        return false;
      }
      if (step_to_feasibility(member, s, x, progress)) {
        clear_rejections(member, s);
        return true;
      }
      if (progress.iterations >= batch.parameters.max_iterations) {
        progress.stopped(NnlsStatus::max_iterations);
        return true;
      }
      if (progress.passive == 0) return true;
    }
  }

  // x = 0: r = b and w = A^T b (kept as A^T b for the cross-product
  // gradient).
  KOKKOS_INLINE_FUNCTION void start_from_zero(const Member& member, std::int64_t system,
                                              const Storage& s, const T* x) const {
    compute_residual(member, batch, system, s, x, 0);
    compute_gradient(member, batch, system, s);
    if (batch.cross_products != nullptr) {
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, batch.parameters.columns),
                           [&](std::int64_t j) { s.b_projections[j] = s.gradient[j]; });
      member.team_barrier();
    }
  }

  // Algorithm 1 from x = 0 until KKT hold or a cap or failure stops it.
  KOKKOS_INLINE_FUNCTION void solve_active_set(const Member& member, std::int64_t system,
                                               const Storage& s, T* x, T tolerance,
                                               NnlsProgress& progress) const {
    const auto& parameters = batch.parameters;
    start_from_zero(member, system, s, x);
    while (true) {
      const auto candidate = choose_entering(member, s);
      if (candidate.index < 0 || !(candidate.value > tolerance)) {
        progress.stopped(status_without_entering(member, s, candidate, tolerance));
        return;
      }
      if (progress.iterations >= parameters.max_iterations) {
        progress.stopped(NnlsStatus::max_iterations);
        return;
      }
      const int entering = static_cast<int>(candidate.index);
      const int k = progress.passive;
      if (k >= parameters.max_passive && parameters.passive_capped_by_caller) {
        progress.stopped(NnlsStatus::passive_set_full);
        return;
      }
      // With k = min(m, n) columns every further column is dependent.
      const T independence =
          k >= parameters.max_passive ? T(0)
                                      : reordered_mgs_append(member, batch, system, s, entering, k);
      if (!(independence > parameters.dependence_threshold)) {
        reject(member, s, entering);  // numerically in the span of P-hat: the next best
        continue;
      }
      ++progress.passive;
      ++progress.updates;
      const bool moved = solve_until_feasible(member, s, x, entering, progress);
      if (!progress.running()) return;
      if (moved) update_gradient(member, batch, system, s, x, progress.passive);
    }
  }

  // Step 6: with w = A^T (b - A x), x >= 0, w_j <= 0 where x_j = 0 and
  // w_j = 0 where x_j > 0. Returns the largest violation of column j over
  // ||a_j|| ||b|| (the largest |w_j| can be); s.residual must hold b - A x.
  KOKKOS_INLINE_FUNCTION T kkt_residual(const Member& member, std::int64_t system,
                                        const Storage& s, const T* x,
                                        const SystemScale<T>& scale) const {
    compute_gradient(member, batch, system, s);
    const std::int64_t stride = batch.outputs.x_column_stride;
    const T violation =
        nnls_team_combine(member, batch.parameters.columns, Max<T>{}, [&](std::int64_t j) {
          const T value = x[j * stride], w = s.gradient[j] * s.inverse_norms[j];
          const T gradient_violation =
              value > T(0) ? compat::math::fabs(w) : (w > T(0) ? w : T(0));
          return value < T(0) ? largest<T>() : magnitude(gradient_violation);
        });
    if (!(violation > T(0))) return T(0);
    return scale.b_norm > T(0) ? violation / scale.b_norm : largest<T>();
  }

  // x_j = 2^(b_exponent - e_j) x'_j back in the caller's units; false if an
  // x_j is past the precision's range (A's entries denormal, b's huge): no
  // solution.
  KOKKOS_INLINE_FUNCTION bool rescale_x(const Member& member, const Storage& s, T* x,
                                        const SystemScale<T>& scale) const {
    return nnls_team_sum<Accumulator>(member, batch.parameters.columns, [&](std::int64_t j) {
             T& value = batch.x_at(x, j);
             if (scale.finite)
               value = scale_by_power_of_two(value, scale.b_exponent - s.column_exponents[j]);
             return compat::math::isfinite(value) ? 0 : 1;
           }) == 0;
  }

  // Residual, KKT check, x and ||b - A x|| in the caller's units.
  KOKKOS_INLINE_FUNCTION NnlsSystemResult<T> finish(const Member& member, std::int64_t system,
                                                    const Storage& s, T* x,
                                                    const SystemScale<T>& scale,
                                                    NnlsProgress& progress) const {
    const auto& parameters = batch.parameters;
    compute_residual(member, batch, system, s, x, progress.passive);
    const T residual_norm = T(compat::math::sqrt(nnls_team_sum<Accumulator>(
        member, parameters.rows, [&](std::int64_t i) { return s.residual[i] * s.residual[i]; })));
    T kkt = parameters.not_a_number;
    if (scale.finite && parameters.check_kkt) kkt = kkt_residual(member, system, s, x, scale);
    if (progress.running() && !(kkt <= parameters.kkt_tolerance))
      progress.stopped(NnlsStatus::kkt_not_met);
    if (!rescale_x(member, s, x, scale)) progress.stopped(NnlsStatus::numerical_issue);
    return {progress.status,
            progress.iterations,
            scale.finite ? scale_by_power_of_two(residual_norm, scale.b_exponent)
                         : parameters.not_a_number,
            kkt,
            progress.updates,
            progress.downdates};
  }

  // The system's workspace. The vectors every step reads back right after
  // another thread wrote them live in team scratch (shared memory on GPUs)
  // when the launch gave the team some: a back substitution step then waits
  // for shared memory, not for L2.
  KOKKOS_INLINE_FUNCTION Storage system_storage(const Member& member, std::int64_t system) const {
    const auto& parameters = batch.parameters;
    const std::int64_t m = parameters.rows, n = parameters.columns;
    Storage s = batch.workspace.system(system, m, n, parameters.max_passive);
    if (!parameters.vectors_in_scratch) return s;
    using Scratch = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    const int kmax = parameters.max_passive;
    s.residual = Scratch(member.team_scratch(0), m).data();
    s.candidate = Scratch(member.team_scratch(0), m).data();
    s.right_hand_side = Scratch(member.team_scratch(0), kmax).data();
    s.solution = Scratch(member.team_scratch(0), kmax).data();
    s.triangle =
        Scratch(member.team_scratch(0), back_substitution_block * back_substitution_block).data();
    if (parameters.gradient_in_scratch) s.gradient = Scratch(member.team_scratch(0), n).data();
    return s;
  }

  // One system, from x = 0 to its result: the whole team solve, which
  // kpl::team::nnls runs on a batch of one. x (outputs.x of `system`) is
  // written, every thread returns the same result.
  KOKKOS_INLINE_FUNCTION NnlsSystemResult<T> solve(const Member& member, std::int64_t system,
                                                   Storage s) const {
    T* x = batch.outputs.x + system * batch.outputs.x_system_stride;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, batch.parameters.columns),
                         [&](std::int64_t j) {
                           batch.x_at(x, j) = T(0);
                           s.position[j] = not_passive;
                         });
    member.team_barrier();
    const SystemScale<T> scale = measure_system(member, batch, system, s);
    NnlsProgress progress;
    if (!scale.finite) {
      progress.stopped(NnlsStatus::numerical_issue);  // x = 0
    } else {
      const T tolerance = batch.parameters.tolerance * scale.b_norm;  // for w_j / ||a_j||
      solve_active_set(member, system, s, x, tolerance, progress);
    }
    return finish(member, system, s, x, scale, progress);
  }

  // kpl::nnls: team `system` solves system `system` and stores its result.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const std::int64_t system = member.league_rank();
    const NnlsSystemResult<T> result = solve(member, system, system_storage(member, system));
    const auto& outputs = batch.outputs;
    Kokkos::single(Kokkos::PerTeam(member), [&] {
      outputs.residual_norm[system] = result.residual_norm;
      outputs.kkt_residual[system] = result.kkt_residual;
      outputs.iterations[system] = result.iterations;
      outputs.status[system] = result.status;
      outputs.column_changes[2 * system] = result.columns_entered;
      outputs.column_changes[2 * system + 1] = result.columns_left;
    });
    member.team_barrier();
  }
};

}  // namespace impl
}  // namespace kpl
