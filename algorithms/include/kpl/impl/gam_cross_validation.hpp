// The GAM's choice of mstop by resampling (kpl/gam.hpp; mboost's cvrisk):
// K folds from a documented permutation of the group's rows, B bootstrap
// resamples drawn from a seed, or given resample weights; one booster per
// fold or resample on its
// own execution-space instance (its own stream on GPUs with Kokkos 4; in
// order on CPUs), iterated side by side: no fold waits for another's host
// round trip. Part of kpl/gam.hpp, included after its types.
#pragma once

#include <kpl/error.hpp>
#include <kpl/impl/gam_booster.hpp>
#include <kpl/impl/gam_boosting_iteration.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/portable_random.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace kpl {
namespace impl {

// fold_of[i]: the fold of row i, its place in a permutation drawn from
// `seed` modulo `folds`.
inline std::vector<int> gam_fold_of(std::int64_t n, int folds, std::uint64_t seed) {
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  PortableRandom(seed).shuffle(order.begin(), order.end());
  std::vector<int> fold_of(n);
  for (std::int64_t position = 0; position < n; ++position)
    fold_of[order[position]] = static_cast<int>(position % folds);
  return fold_of;
}

// Every fold's c = B^T u (products_from_rows) summed over the group in one
// exchange, rather than one per fold.
template <class Booster>
void gam_sum_fold_products(const ProcessGroup& group, std::vector<Booster>& boosters) {
  if (group.is_single()) return;
  const std::int64_t size = boosters.front().gradient_products().size();
  Kokkos::View<double*, Kokkos::HostSpace> host(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::gam::fold_products"),
      size * boosters.size());
  const auto part = [&](std::size_t fold) {
    return Kokkos::subview(host, std::make_pair(fold * size, (fold + 1) * size));
  };
  for (std::size_t fold = 0; fold < boosters.size(); ++fold)
    Kokkos::deep_copy(part(fold), boosters[fold].gradient_products());
  group.sum(host.data(), static_cast<std::int64_t>(host.size()));
  for (std::size_t fold = 0; fold < boosters.size(); ++fold)
    Kokkos::deep_copy(boosters[fold].gradient_products(), part(fold));
}

// best_mstop: the first m of the least mean over folds of risk[fold, m].
inline int gam_best_mstop(const std::vector<double>& risk, int folds, int mstop) {
  double best = 0;
  int best_mstop = 0;
  for (int m = 0; m <= mstop; ++m) {
    double mean = 0;
    for (int fold = 0; fold < folds; ++fold)
      mean += risk[static_cast<std::size_t>(fold) * (mstop + 1) + m];
    mean /= folds;
    if (m == 0 || mean < best) {
      best = mean;
      best_mstop = m;
    }
  }
  return best_mstop;
}

// The model weights of all the group's rows on every process (ones without
// weights): each process's block summed into zeros, which is exact.
template <class WeightView>
std::vector<double> gam_all_weights(const WeightView& model_weights, GamRows rows,
                                    std::int64_t local_rows, const ProcessGroup& group) {
  std::vector<double> all(rows.total, model_weights.extent(0) == 0 ? 1.0 : 0.0);
  if (model_weights.extent(0) == 0) return all;
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model_weights);
  for (std::int64_t i = 0; i < local_rows; ++i) all[rows.first + i] = host(i);
  if (!group.is_single()) group.sum(all.data(), rows.total);
  return all;
}

// counts[b][i]: how often bootstrap resample b drew row first + i (i <
// local): n draws each over all n rows, row r with probability w_r / sum w
// (mboost's cv(w, "bootstrap") = rmultinom), by inverting the cumulative
// weights at uniform(); below(n) if unweighted.
inline std::vector<std::vector<double>> gam_bootstrap_counts(const std::vector<double>& weights,
                                                             bool weighted, int resamples,
                                                             std::uint64_t seed, std::int64_t first,
                                                             std::int64_t local) {
  const std::int64_t n = weights.size();
  std::vector<double> cumulative(n);
  std::partial_sum(weights.begin(), weights.end(), cumulative.begin());
  const double total = n > 0 ? cumulative.back() : 0;
  PortableRandom random(seed);
  std::vector<std::vector<double>> counts(resamples, std::vector<double>(local, 0.0));
  for (int b = 0; b < resamples; ++b) {
    for (std::int64_t draw = 0; draw < n; ++draw) {
      std::int64_t row;
      if (!weighted) {
        row = static_cast<std::int64_t>(random.below(n));
      } else {
        // The first row whose cumulative weight exceeds u: zero weights never.
        const double u = random.uniform() * total;
        row = std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
        while (row >= n || weights[row] == 0) --row;  // u rounded up to the total
      }
      if (row >= first && row < first + local) counts[b][row - first] += 1;
    }
  }
  return counts;
}

// The resampled risk: resample b's model fitted with train(b, i) as weights
// (fill(b, train, held_out) sets this process's rows), its risk at
// iterations 0..mstop the held-out weighted mean loss; the boosters run side
// by side (one execution-space instance each) in direct mode.
template <class ExecutionSpace, class XView, class YView, class Fill>
GamCrossValidation gam_resampled_risk(
    const ExecutionSpace& space, const XView& X, const YView& y,
    const GamObservations<typename ExecutionSpace::memory_space>& observations,
    const GamOptions& options, int resamples, const ProcessGroup& group, const char* what,
    Fill&& fill) {
  using Booster = GamBooster<ExecutionSpace, gam_scalar_t<XView>>;
  using Vector = Kokkos::View<double*, typename ExecutionSpace::memory_space>;
  const std::int64_t rows = X.extent(0);
  Booster shared(space, X, y, options, group);
  const auto model_weights = gam_prepare_observations(space, shared, observations, rows, group);
  const auto host_model_weights =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model_weights);
  const int mstop = options.mstop;
  std::vector<Vector> train(resamples), held_out(resamples);
  std::vector<double> held_out_total(resamples, 0.0), train_total(resamples, 0.0);
  for (int b = 0; b < resamples; ++b) {
    agreed(group, [&] {
      train[b] = Vector(Kokkos::view_alloc(space, "kpl::gam::resample_weights"), rows);
      held_out[b] = Vector(Kokkos::view_alloc(space, "kpl::gam::held_out_weights"), rows);
    });
    auto host_train = Kokkos::create_mirror_view(train[b]);
    auto host_held_out = Kokkos::create_mirror_view(held_out[b]);
    for (std::int64_t i = 0; i < rows; ++i) {
      const double w = host_model_weights.extent(0) != 0 ? host_model_weights(i) : 1.0;
      fill(b, i, w, host_train(i), host_held_out(i));
      train_total[b] += host_train(i);
      held_out_total[b] += host_held_out(i);
    }
    Kokkos::deep_copy(train[b], host_train);
    Kokkos::deep_copy(held_out[b], host_held_out);
  }
  group.sum(held_out_total.data(), resamples);
  group.sum(train_total.data(), resamples);
  for (int b = 0; b < resamples; ++b)
    if (!(held_out_total[b] > 0) || !(train_total[b] > 0))
      throw input_error(std::string("kpl::fit_gam: ") + what + " " + std::to_string(b) +
                        (train_total[b] > 0 ? " leaves no row of positive weight out"
                                            : " has no row of positive weight to fit"));
  const auto instances = compat::concurrent_instances(space, resamples);
  std::vector<Booster> boosters;
  std::vector<typename Booster::Run> runs;
  boosters.reserve(resamples);
  for (int b = 0; b < resamples; ++b) {
    boosters.emplace_back(shared, instances[b]);
    runs.push_back(boosters.back().start(train[b], mstop, GamMode::direct, nullptr, held_out[b]));
  }
  for (int m = 0; m < mstop; ++m) {
    for (int b = 0; b < resamples; ++b) boosters[b].products_from_rows();
    gam_sum_fold_products(group, boosters);
    for (int b = 0; b < resamples; ++b) boosters[b].select_and_step(runs[b], m);
  }
  GamCrossValidation result;
  result.folds = resamples;
  result.risk.assign(static_cast<std::size_t>(resamples) * (mstop + 1), 0.0);
  for (int b = 0; b < resamples; ++b) {
    std::vector<double> risk;
    boosters[b].finish(runs[b], &risk);
    for (int m = 0; m <= mstop; ++m)
      result.risk[static_cast<std::size_t>(b) * (mstop + 1) + m] = risk[m] / held_out_total[b];
  }
  result.best_mstop = gam_best_mstop(result.risk, resamples, mstop);
  return result;
}

// K folds: fold f's model fitted with the weights w of the other rows (0 on
// its own), its risk over its own rows weighted by w.
template <class ExecutionSpace, class XView, class YView>
GamCrossValidation cross_validate_gam(
    const ExecutionSpace& space, const XView& X, const YView& y,
    const GamObservations<typename ExecutionSpace::memory_space>& observations,
    const GamOptions& options, int folds, std::uint64_t seed, const ProcessGroup& group) {
  const GamRows rows = gam_rows(group, X.extent(0));
  const std::int64_t n = rows.total;
  if (folds < 2 || folds > n)
    throw std::invalid_argument("kpl::cross_validate_gam: " + std::to_string(folds) +
                                " folds for " + std::to_string(n) + " observations");
  const std::vector<int> fold_of = gam_fold_of(n, folds, seed);
  return gam_resampled_risk(space, X, y, observations, options, folds, group, "fold",
                            [&](int fold, std::int64_t i, double w, double& train, double& held) {
                              const bool in_fold = fold_of[rows.first + i] == fold;
                              train = in_fold ? 0.0 : w;
                              held = in_fold ? w : 0.0;
                            });
}

// Resample b fitted with weights counts(i, b) (this process's rows), its risk
// over the rows of count 0, weighted by w.
template <class ExecutionSpace, class XView, class YView, class CountView>
GamCrossValidation resample_gam(
    const ExecutionSpace& space, const XView& X, const YView& y,
    const GamObservations<typename ExecutionSpace::memory_space>& observations,
    const GamOptions& options, const CountView& counts, const ProcessGroup& group) {
  const int resamples = static_cast<int>(counts.extent(1));
  const std::int64_t first = gam_rows(group, X.extent(0)).first;  // rows are named globally
  agreed(group, [&] {
    if (counts.extent(0) != X.extent(0))
      throw input_error("kpl::fit_gam: X has " + std::to_string(X.extent(0)) +
                        " rows, the resamples' weights " + std::to_string(counts.extent(0)));
    for (std::size_t i = 0; i < counts.extent(0); ++i)
      for (int b = 0; b < resamples; ++b)
        if (!(counts(i, b) >= 0) || !std::isfinite(double(counts(i, b))))
          throw input_error("kpl::fit_gam: resample weight (" + std::to_string(first + i) + ", " +
                            std::to_string(b) + ") is " + format_number(counts(i, b)) +
                            "; they must be finite and not negative");
  });
  double most = resamples, fewest = resamples;
  group.max(&most, 1);
  group.min(&fewest, 1);
  if (most != fewest || resamples < 1)
    throw input_error(
        "kpl::fit_gam: the resamples' weights need one column or more, the same "
        "number on every process");
  return gam_resampled_risk(space, X, y, observations, options, resamples, group, "resample",
                            [&](int b, std::int64_t i, double w, double& train, double& held) {
                              train = counts(i, b);
                              held = counts(i, b) == 0 ? w : 0.0;
                            });
}

// mboost's default: B bootstrap resamples of the group's rows drawn from the
// seed with probabilities w / sum w (the same draws on any number of
// processes).
template <class ExecutionSpace, class XView, class YView>
GamCrossValidation bootstrap_gam(
    const ExecutionSpace& space, const XView& X, const YView& y,
    const GamObservations<typename ExecutionSpace::memory_space>& observations,
    const GamOptions& options, int resamples, std::uint64_t seed, const ProcessGroup& group) {
  if (resamples < 1) throw std::invalid_argument("kpl::bootstrap_gam: no resamples");
  const std::int64_t local = X.extent(0);
  const GamRows rows = gam_rows(group, local);
  // The draws need every row's rescaled weight: check and rescale them once
  // here (as the fit will), on a throwaway copy.
  const bool weighted = gam_on_any(group, observations.weights.extent(0) != 0);
  std::vector<double> all(rows.total, 1.0);
  if (weighted) {
    Kokkos::View<const double*, typename ExecutionSpace::memory_space> model_weights;
    agreed(group, [&] {
      if (static_cast<std::int64_t>(observations.weights.extent(0)) != local)
        throw input_error("kpl::fit_gam: X has " + std::to_string(local) + " rows, the weights " +
                          std::to_string(observations.weights.extent(0)) + " values");
    });
    model_weights = gam_model_weights(space, observations.weights, rows.first, group);
    all = gam_all_weights(model_weights, rows, local, group);
  }
  const auto counts = gam_bootstrap_counts(all, weighted, resamples, seed, rows.first, local);
  return gam_resampled_risk(space, X, y, observations, options, resamples, group,
                            "bootstrap resample",
                            [&](int b, std::int64_t i, double w, double& train, double& held) {
                              const double count = counts[b][i];
                              train = count;
                              held = count == 0 ? w : 0.0;
                            });
}

}  // namespace impl
}  // namespace kpl
