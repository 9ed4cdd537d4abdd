// The GAM's K-fold cross-validation (kpl/gam.hpp): the folds from a
// documented permutation of the group's rows, one booster per fold on its
// own execution-space instance (its own stream on GPUs with Kokkos 4; in
// order on CPUs), iterated side by side: no fold waits for another's host
// round trip. Part of kpl/gam.hpp, included after its types.
#pragma once

#include <kpl/impl/gam_booster.hpp>
#include <kpl/impl/gam_boosting_iteration.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/portable_random.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
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

// The fold's weights of this process's rows: 0 on the fold's, 1 elsewhere.
template <class ExecutionSpace>
Kokkos::View<double*, typename ExecutionSpace::memory_space> gam_fold_weights(
    const ExecutionSpace& space, const std::vector<int>& fold_of, GamRows rows, std::int64_t n,
    int fold) {
  Kokkos::View<double*, typename ExecutionSpace::memory_space> weights(
      Kokkos::view_alloc(space, "kpl::gam::fold_weights"), n);
  auto host_weights = Kokkos::create_mirror_view(weights);
  for (std::int64_t i = 0; i < n; ++i)
    host_weights(i) = fold_of[rows.first + i] == fold ? 0.0 : 1.0;
  Kokkos::deep_copy(weights, host_weights);
  return weights;
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

template <class ExecutionSpace, class XView, class YView>
GamCrossValidation cross_validate_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                                      const GamOptions& options, int folds, std::uint64_t seed,
                                      const ProcessGroup& group) {
  using Booster = GamBooster<ExecutionSpace, gam_scalar_t<XView>>;
  const GamRows rows = gam_rows(group, X.extent(0));
  const std::int64_t n = rows.total;
  if (folds < 2 || folds > n)
    throw std::invalid_argument("kpl::cross_validate_gam: " + std::to_string(folds) +
                                " folds for " + std::to_string(n) + " observations");
  Booster shared(space, X, y, options, group);
  const std::vector<int> fold_of = gam_fold_of(n, folds, seed);
  const int mstop = options.mstop;
  const auto instances = compat::concurrent_instances(space, folds);
  std::vector<Booster> boosters;
  std::vector<typename Booster::Run> runs;
  boosters.reserve(folds);
  for (int fold = 0; fold < folds; ++fold) {
    const auto weights = gam_fold_weights(space, fold_of, rows, X.extent(0), fold);
    boosters.emplace_back(shared, instances[fold]);
    runs.push_back(boosters.back().start(weights, mstop, GamMode::direct, nullptr));
  }
  for (int m = 0; m < mstop; ++m) {
    for (int fold = 0; fold < folds; ++fold) boosters[fold].products_from_rows();
    gam_sum_fold_products(group, boosters);
    for (int fold = 0; fold < folds; ++fold) boosters[fold].select_and_step(runs[fold], m);
  }
  GamCrossValidation result;
  result.folds = folds;
  result.risk.assign(static_cast<std::size_t>(folds) * (mstop + 1), 0.0);
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<double> held_out;
    boosters[fold].finish(runs[fold], &held_out);
    const double fold_rows = std::count(fold_of.begin(), fold_of.end(), fold);
    for (int m = 0; m <= mstop; ++m)
      result.risk[static_cast<std::size_t>(fold) * (mstop + 1) + m] = held_out[m] / fold_rows;
  }
  result.best_mstop = gam_best_mstop(result.risk, folds, mstop);
  return result;
}

}  // namespace impl
}  // namespace kpl
