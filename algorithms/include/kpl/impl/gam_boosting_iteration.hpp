// The GAM's boosting loop (kpl/gam.hpp; Sieminski & Lee 2023, Algorithm 2):
// the booster's fit from start to finish, one iteration at a time. One
// iteration is, in launch order:
//   c = B^T (w u)            compact_basis transpose_product, or kpl::gemv
//   score_j = -c_j^T R_j c_j  scores: RSS_j - u^T W u, no fit formed
//   s = argmin_j score_j      select (ties: the lowest j, as R's which.min)
//   step = nu M_s c_s         take_step: coefficients_s += step
//   f += B_s step, u, risk    update_rows (direct mode), or
//   c_j -= (B_j^T B_s) step   Gram mode: all in gram_iteration, with the
//                             next scores
// and only s (dense mode) or nothing (direct, compact) reaches the host. Gram
// mode runs up to a refresh's worth of iterations on the device between two
// reads by the host (impl/gam_gram_iteration.hpp), which learns from them
// only whether a selection needs blocks not cached yet. Across processes c
// (p k numbers) is summed over the group after it is computed from the rows,
// so that every process selects the same s; in Gram mode also each block
// B_j^T B_s as it is formed and the risk from the rows.
//
// Modes: direct, c = B^T u from the basis every iteration, O(n p (d + 1))
// with the compact basis or O(n p k) with the dense one through kpl::gemv
// (the seed's gemv strategies); gram (Gaussian only), c kept up to date by
// c_j -= nu B_j^T B_s gamma_s, O(p k^2) an iteration, B_j^T B_s formed when
// s is first selected, and c, f and the risk recomputed from the rows every
// gram_refresh iterations and at the end so rounding cannot drift.
//
// Part of kpl/gam.hpp, included after its types.
#pragma once

#include <kpl/impl/gam_booster.hpp>
#include <kpl/impl/gam_gram_iteration.hpp>
#include <kpl/impl/gam_learner_selection.hpp>
#include <kpl/impl/gam_take_step.hpp>
#include <kpl/impl/gam_update_rows.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpl {
namespace impl {

// gram(e) = the value of entry e's exact parts: the host's additions in the
// same order, so the same bits.
template <class Parts, class Gram>
struct GramFromExactParts {
  ExactSumGrid grid;
  Parts parts;
  Gram gram;
  std::int64_t entries;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t e) const {
    double entry_parts[ExactSumGrid::parts];
    for (int l = 0; l < ExactSumGrid::parts; ++l) entry_parts[l] = parts(l * entries + e);
    gram(e) = grid.value_of(entry_parts);
  }
};

// Fits with weights (empty: all ones; cross-validation passes its
// resamples') for `mstop` iterations in `mode`. held_out, if given,
// receives at every iteration 0..mstop the sum over rows of
// held_out_weights loss (empty: (1 - weight) loss, the 0/1 folds' rows
// left out), direct mode.
template <class ExecutionSpace, class T>
GamModel GamBooster<ExecutionSpace, T>::fit(const ConstVector& weights, int mstop, GamMode mode,
                                            GamTimings* timings, const GamProgress& progress,
                                            std::vector<double>* held_out,
                                            const ConstVector& held_out_weights) {
  if (held_out != nullptr && mode != GamMode::direct)
    throw std::invalid_argument("kpl::fit_gam: out-of-fold risks need the direct mode");
  Run run = start(weights, mstop, mode, timings, held_out_weights);
  const bool reporting = gam_on_any(*group_, bool(progress.report));
  Kokkos::Timer boosting_timer, since_report;
  const double reductions_before = reduction_seconds_;
  // Every process calls it after the same iterations (a collective).
  const auto after_iterations = [&](int done) {
    if (reporting && gam_report_due(*group_, since_report.seconds() >= progress.interval_seconds,
                                    done == mstop)) {
      report_progress(run, done - 1, progress);
      since_report.reset();
    }
  };
  if (mode == GamMode::gram) {
    boost_gram(run, after_iterations);
  } else {
    for (int m = 0; m < mstop; ++m) {
      iterate(run, m);
      after_iterations(m + 1);
    }
  }
  GamModel model = finish(run, held_out);
  if (timings) {
    timings->boosting_seconds = boosting_timer.seconds();
    timings->reduction_seconds = reduction_seconds_ - reductions_before;
    timings->device_bytes = device_bytes(mstop, mode);
  }
  return model;
}

template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::report_progress(const Run& run, int m,
                                                    const GamProgress& progress) {
  RiskSums latest;
  Kokkos::deep_copy(space_,
                    Kokkos::View<RiskSums, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&latest),
                    Kokkos::subview(run.risk_sums, m + 1));
  space_.fence();
  if (run.mode != GamMode::gram && !group_->is_single()) gam_sum_over(*group_, latest);
  if (progress.report) progress.report(m + 1, latest.training);
}

// The fit's set-up: B_j^T W B_j, lambda_j, M_j, R_j, the offset, f, u and
// the risk at the offset.
template <class ExecutionSpace, class T>
typename GamBooster<ExecutionSpace, T>::Run GamBooster<ExecutionSpace, T>::start(
    const ConstVector& weights, int mstop, GamMode mode, GamTimings* timings,
    const ConstVector& held_out) {
  Kokkos::Timer timer;
  Run run;
  run.weights = weights;
  run.held_out = held_out;
  run.mstop = mstop;
  run.mode = mode;
  GamModel& model = run.model;
  model.options = options_;
  model.options.mstop = mstop;
  model.options.mode = mode;
  model.covariates = learners_;
  model.observations = rows_;
  model.meshes = meshes_;
  if (mode == GamMode::gram) build_stored_basis_if_missing();
  gram_over_processes(run);
  const double cross_product_seconds = timer.seconds();
  // mboost: a user's offset is taken as it is; the family's (the weighted
  // mean response on the link scale) is computed afresh for every fit, the
  // resamples' included. Per-row offsets replace the family's.
  model.row_offset = row_offset_.extent(0) != 0;
  model.offset = options_.offset    ? *options_.offset
                 : model.row_offset ? 0.0
                                    : gam_offset(space_, y_, weights, options_.family, *group_);
  model.observations = total_rows_;
  // f, u and (Gram mode) the first c need no lambda: on a GPU they are
  // computed while the host searches for the lambdas.
  begin_boosting(run);
  const double penalties_begin = timer.seconds();
  penalise(run.gram, model);
  if (timings) {
    timings->basis_seconds = basis_seconds_ + cross_product_seconds;
    timings->penalty_seconds = timer.seconds() - penalties_begin;
  }
  return run;
}

// B_j^T W B_j summed over the group's rows, in run.gram: in exact parts (kpl::cross_product_parts)
// added across processes, so that it has the same bits on any number of processes. lambda's search
// amplifies a last-bit difference in it far beyond the 1e-12 agreement that the model promises
// across processes (kpl/gam_penalty.hpp).
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::gram_over_processes(Run& run) {
  const std::int64_t entries = learners_ * k_ * k_;
  Vector parts;
  agreed(*group_, [&] {  // an allocation may fail on one process alone
    run.gram =
        Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::gram"), entries);
    parts = Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::gram_parts"),
                   ExactSumGrid::parts * entries);
  });
  // Each factor's largest over the group: the grid one process would use.
  CrossProductBounds bounds;
  with_row_basis(
      [&](const auto& basis) { bounds = kpl::cross_product_bounds(space_, basis, run.weights); });
  double largest[2] = {bounds.weight, bounds.value};
  group_->max(largest, 2);
  const auto grid =
      ExactSumGrid::covering(CrossProductBounds{largest[0], largest[1]}.term(), total_rows_);
  with_row_basis([&](const auto& basis) {
    kpl::cross_product_parts(space_, basis, run.weights, -1, grid, parts);
  });
  if (group_->is_single()) {
    // G formed where the parts are: nothing crosses to the host.
    Kokkos::parallel_for("kpl::gam::gram_from_parts",
                         Kokkos::RangePolicy<ExecutionSpace>(space_, 0, entries),
                         GramFromExactParts<Vector, Vector>{grid, parts, run.gram, entries});
    return;
  }
  auto host_parts = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), parts);
  group_->sum(host_parts.data(), static_cast<std::int64_t>(host_parts.size()));
  Kokkos::View<double*, Kokkos::HostSpace> host_gram(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::gam::gram_host"), entries);
  for (std::int64_t e = 0; e < entries; ++e) host_gram(e) = grid.value(host_parts, entries, e);
  Kokkos::deep_copy(space_, run.gram, host_gram);
}

// f at the offset, u and the risk there; in Gram mode the first c.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::begin_boosting(Run& run) {
  agreed(*group_, [&] { allocate_run(run); });
  Kokkos::deep_copy(space_, f_, 0.0);
  add_offsets(run.model.offset);
  update_rows(run, false, 0);
  // Gram mode: each risk from the previous one (take_step), so it is summed
  // here and at each refresh; the other modes sum all risks in finish().
  if (run.mode == GamMode::gram)
    sum_over_processes(Kokkos::subview(run.risk_sums, std::make_pair(0, 1)));
  run.slot_of.assign(learners_, -1);
  if (run.mode == GamMode::gram && run.mstop > 0) compute_gradient_products();
}

// The run's device arrays; in Gram mode the cache of cross-product blocks.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::allocate_run(Run& run) {
  const std::int64_t block = static_cast<std::int64_t>(k_) * k_;
  const int mstop = run.mstop;
  run.risk_sums =
      Kokkos::View<RiskSums*, Memory>(Kokkos::view_alloc(space_, "kpl::gam::risk"), mstop + 1);
  run.selected = Kokkos::View<int*, Memory>(Kokkos::view_alloc(space_, "kpl::gam::selected"),
                                            std::max(mstop, 1));
  run.coefficients = Kokkos::View<double*, Memory>(
      Kokkos::view_alloc(space_, "kpl::gam::coefficients"), learners_ * k_);
  if (run.mode != GamMode::gram || mstop <= 0) return;
  run.slots = gram_cache_slots(mstop);
  run.cache = Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::cross"),
                     (run.slots + 1) * learners_ * block);  // + 1: the block of an uncached s
  run.scores_at[0] = scores_;
  run.scores_at[1] = Vector(
      Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::next_scores"), learners_);
  run.c_at[0] = c_;
  run.c_at[1] = Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::next_c"),
                       learners_ * k_);
  run.device_slot_of = Kokkos::View<int*, Memory>(
      Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::slot_of"), learners_);
  run.halted = Kokkos::View<int[2], Memory>(
      Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::halted"));
  Kokkos::deep_copy(space_, run.device_slot_of, -1);
  Kokkos::deep_copy(space_, run.halted, -1);
  run.reused = Kokkos::View<std::uint8_t*, Memory>(
      Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::reused_blocks"),
      learners_);
}

// c = B^T u over the group's rows.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::compute_gradient_products() {
  products_from_rows();
  sum_over_processes(c_);
}

// c = B^T u over this process's rows, from the compact basis or through
// kpl::gemv on the dense one.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::products_from_rows() {
  if (options_.basis == GamBasis::evaluated) {
    kpl::transpose_product(space_, evaluated_, u_, c_, &product_workspace_);
  } else if (options_.basis != GamBasis::dense) {
    kpl::transpose_product(space_, basis_, u_, c_, &product_workspace_);
  } else if constexpr (std::is_same_v<T, double>) {
    gemv(space_, Transpose::yes, 1.0, dense_, u_, 0.0, c_, gemv_workspace_, options_.gemv);
  } else {
    convert(u_low_, u_);
    gemv(space_, Transpose::yes, T(1), dense_, u_low_, T(0), c_low_, gemv_workspace_,
         options_.gemv);
    convert(c_, c_low_);
  }
}

// f = offset + sum_j B_j coefficients_j, then u and the exact risk.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::refresh(const Run& run, std::int64_t slot) {
  kpl::apply(space_, basis_, run.coefficients, f_);
  add_offsets(run.model.offset);
  update_rows(run, false, slot);
  sum_over_processes(Kokkos::subview(run.risk_sums, std::make_pair(slot, slot + 1)));
}

// f += offset, and each row's own offset where the fit has them.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::add_offsets(double offset) {
  Kokkos::parallel_for("kpl::gam::add_offset",
                       Kokkos::RangePolicy<ExecutionSpace>(space_, 0, rows_),
                       AddToRows<Vector, Vector>{f_, Vector(), offset});
  if (row_offset_.extent(0) != 0)
    Kokkos::parallel_for("kpl::gam::add_row_offset",
                         Kokkos::RangePolicy<ExecutionSpace>(space_, 0, rows_),
                         AddToRows<Vector, ConstVector>{f_, row_offset_, 0.0});
}

// Iteration m of the direct mode: asynchronous on the booster's instance,
// except that the dense basis reads the selected index back.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::iterate(Run& run, int m) {
  compute_gradient_products();
  select_and_step(run, m);
}

// Iteration m of the direct mode once c is the group's.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::select_and_step(Run& run, int m) {
  gam_scores(space_, learners_, k_, c_, reduction_, scores_);
  if (options_.basis == GamBasis::dense) {
    gam_select(space_, learners_, scores_, run.selected, m, current_);
    iterate_dense(run, m);
  } else {
    gam_select_and_take_step(space_, learners_, scores_, run.selected, m, current_, k_, options_.nu,
                             inverse_, c_, step_, run.coefficients);
    update_rows(run, true, m + 1);
  }
}

// Gram mode's iterations. The host launches them in batches that end at
// the refreshes (c, f and the risk from the rows every gram_refresh
// iterations and at the end) and reads back after each batch only whether
// a selection halted it. A halt costs the rest of its batch's launches
// (each returns at once), so a batch starts small after a halt and doubles
// while none comes: the first iterations, which select new learners often,
// wait for the host every few; later ones run a refresh's worth at a time.
// It starts at four, not one: each batch costs a round trip to the host,
// in which the device idles, and that costs more than the few launches a
// halt leaves undone in a batch of four.
template <class ExecutionSpace, class T>
template <class AfterIterations>
void GamBooster<ExecutionSpace, T>::boost_gram(Run& run, const AfterIterations& after_iterations) {
  constexpr int first_batch = 4;
  const int mstop = run.mstop, refresh_every = options_.gram_refresh;
  if (mstop <= 0) return;
  gam_scores(space_, learners_, k_, c_, reduction_, run.scores_at[0]);
  int m = 0, batch = first_batch;
  while (m < mstop) {
    const int refresh_at = std::min(mstop, (m / refresh_every + 1) * refresh_every);
    const int end = std::min(refresh_at, m + batch);
    for (int i = m; i < end; ++i) launch_gram_iteration(run, i);
    const Halt halt = halted_iteration(run);
    if (halt.iteration < 0) {
      m = end;
      batch = std::min(2 * batch, refresh_every);
    } else {
      resume_gram(run, halt);
      m = halt.iteration + 1;
      batch = first_batch;
    }
    if (m == refresh_at) {
      refresh(run, m);
      c_ = run.c_at[m % 2];
      if (m < mstop) {
        compute_gradient_products();
        gam_scores(space_, learners_, k_, c_, reduction_, run.scores_at[m % 2]);
      }
    }
    after_iterations(m);
  }
}

// Iteration m's kernel: the selection, the step, c at m + 1 and its scores.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::launch_gram_iteration(Run& run, int m) {
  using Select = GamSelect<ExecutionSpace, Vector, decltype(run.selected), decltype(current_)>;
  using Iteration =
      GamGramIteration<ExecutionSpace, Select, Vector, decltype(run.coefficients),
                       decltype(run.risk_sums), decltype(run.device_slot_of), decltype(run.halted)>;
  gam_gram_iteration(
      space_, Iteration{Select{run.scores_at[m % 2], run.selected, current_, learners_, m},
                        run.scores_at[(m + 1) % 2], inverse_, reduction_, run.gram, run.cache,
                        run.c_at[m % 2], run.c_at[(m + 1) % 2], step_, run.coefficients,
                        run.risk_sums, run.device_slot_of, run.halted, options_.nu, k_});
}

// The iteration whose selection halted the device's run, -1 if none, and
// that selection, in one read.
template <class ExecutionSpace, class T>
auto GamBooster<ExecutionSpace, T>::halted_iteration(const Run& run) -> Halt {
  int halted[2];
  Kokkos::deep_copy(
      space_, Kokkos::View<int[2], Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(halted), run.halted);
  space_.fence();
  return {halted[0], halted[0] < 0 ? -1 : halted[1]};
}

// After the selection s of iteration m halted the run: s's blocks formed in
// a free slot (or the spare one, which keeps no learner's), then iteration
// m's step on the device.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::resume_gram(Run& run, const Halt& halt) {
  const int m = halt.iteration, s = halt.learner;
  const std::int64_t slot = run.used < run.slots ? run.used++ : run.slots;
  form_cross_product_slot(run, s, slot);
  if (slot < run.slots) run.slot_of[s] = static_cast<int>(slot);
  gam_gram_resume(space_, run.device_slot_of, run.halted, s, static_cast<int>(slot));
  launch_gram_iteration(run, m);  // its selection again: the same s, the run not halted
  if (slot == run.slots) gam_gram_resume(space_, run.device_slot_of, run.halted, s, -1);
}

// Slot `slot` of the Gram cache := B_j^T W B_s for every block j. Without
// weights a block j selected before is (B_s^T B_j)^T, already in j's slot
// with the same bits: copied, not summed again. Every term is the same
// product either way round (the host's B_j(i, a) B_s(i, b); the GPU's
// fixed-point B_s(i, b) (B_j(i, a) 2^e), a power of two scaling exactly),
// in the same rows, chunks and order of chunks.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::form_cross_product_slot(Run& run, int s, std::int64_t slot) {
  const std::int64_t block = static_cast<std::int64_t>(k_) * k_;
  const auto slot_blocks = Kokkos::subview(
      run.cache, std::make_pair(slot * learners_ * block, (slot + 1) * learners_ * block));
  bool reusing = false;
  if (run.weights.extent(0) == 0)  // the same choice on every process
    for (std::int64_t j = 0; j < learners_; ++j)
      reusing = reusing || (j != s && run.slot_of[j] >= 0);
  if (reusing) gam_gram_reused_blocks(space_, run.reused, run.device_slot_of, s);
  if (!reusing || basis_.rows() == 0) {  // a process without rows adds zeros
    kpl::cross_products(space_, basis_, run.weights, s, slot_blocks, &product_workspace_);
  } else {
    impl::compact_cross_products(space_, basis_, run.weights, s, slot_blocks, product_workspace_,
                                 impl::SkippedBlocksIn<Memory>(run.reused));
  }
  sum_over_processes(slot_blocks);
  if (reusing)
    gam_gram_transposed_blocks(space_, run.cache, run.device_slot_of, run.reused, s, slot, k_);
}

// Dense basis after the selection: the step, f += B_s step through kpl::gemv
// on the block's columns, then u and the risk.
template <class ExecutionSpace, class T>
void GamBooster<ExecutionSpace, T>::iterate_dense(Run& run, int m) {
  const int k = k_;
  gam_take_step(space_, k, options_.nu, current_, inverse_, c_, step_, run.coefficients);
  const std::int64_t s = selected_on_host();
  const auto block_columns =
      Kokkos::subview(dense_, Kokkos::ALL, std::make_pair(s * k, (s + 1) * k));
  if constexpr (std::is_same_v<T, double>) {
    gemv(space_, Transpose::no, 1.0, block_columns, step_, 1.0, f_, gemv_workspace_, options_.gemv);
  } else {
    convert(step_low_, step_);
    gemv(space_, Transpose::no, T(1), block_columns, step_low_, T(0), u_low_, gemv_workspace_,
         options_.gemv);
    Kokkos::parallel_for("kpl::gam::add_fit", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, rows_),
                         AddToRows<Vector, LowVector>{f_, u_low_, 0.0});
  }
  update_rows(run, false, m + 1);
}

// The model on the host: risks, selections and coefficients read back.
template <class ExecutionSpace, class T>
GamModel GamBooster<ExecutionSpace, T>::finish(Run& run, std::vector<double>* held_out) {
  if (run.mode != GamMode::gram) sum_over_processes(run.risk_sums);
  space_.fence();
  const int mstop = run.mstop;
  GamModel& model = run.model;
  auto host_risk = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), run.risk_sums);
  auto host_selected = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), run.selected);
  auto host_coefficients =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), run.coefficients);
  model.risk.resize(mstop + 1);
  if (held_out) held_out->resize(mstop + 1);
  for (int m = 0; m <= mstop; ++m) {
    model.risk[m] = host_risk(m).training;
    if (held_out) (*held_out)[m] = host_risk(m).held_out;
  }
  model.selected.assign(host_selected.data(), host_selected.data() + mstop);
  model.varimp = gam_variable_importance(model.risk, model.selected, learners_, total_rows_);
  model.coefficients.assign(host_coefficients.data(),
                            host_coefficients.data() + host_coefficients.size());
  return std::move(model);
}

}  // namespace impl
}  // namespace kpl
