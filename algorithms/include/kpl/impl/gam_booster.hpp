// The GAM's booster (kpl/gam.hpp): the device state of one fit and its
// steps: set-up (basis, penalties, offset), the iterations
// (impl/gam_boosting_iteration.hpp) and the model read back. It holds this
// process's rows of the group's (impl/gam_processes.hpp). Part of
// kpl/gam.hpp, included after its types.
#pragma once

#include <kpl/compact_basis.hpp>
#include <kpl/error.hpp>
#include <kpl/evaluated_basis.hpp>
#include <kpl/gemv.hpp>
#include <kpl/impl/gam_family.hpp>
#include <kpl/impl/gam_options.hpp>
#include <kpl/impl/gam_penalise.hpp>
#include <kpl/impl/gam_penalise_on_device.hpp>
#include <kpl/impl/gam_processes.hpp>
#include <kpl/impl/gam_risk.hpp>
#include <kpl/impl/gam_setup.hpp>
#include <kpl/impl/gam_update_rows.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpl {
namespace impl {

template <class View>
using gam_scalar_t = typename View::non_const_value_type;

// to(i) = from(i) in to's precision.
template <class To, class From>
struct ConvertValues {
  To to;
  From from;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    to(i) = typename To::non_const_value_type(from(i));
  }
};

// f(i) += change(i), or f(i) += shift where change is empty.
template <class Vector, class Change>
struct AddToRows {
  Vector f;
  Change change;
  double shift;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    f(i) += change.extent(0) != 0 ? double(change(i)) : shift;
  }
};

// Counts the values that are not finite.
template <class Vector>
struct GamNonFinite {
  Vector values;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, RiskSums& bad) const {
    if (!compat::math::isfinite(double(values(i)))) bad.training += 1;
  }
};

// mboost's varimp (R/varimp.R): the training risk's decrease at every
// iteration, credited to the learner it selected, summed and divided by
// the number of rows n (zero-weight ones counted); 0 for learners never
// selected, so sum_j varimp_j = (risk[0] - risk[mstop]) / n.
inline std::vector<double> gam_variable_importance(const std::vector<double>& risk,
                                                   const std::vector<std::int64_t>& selected,
                                                   std::int64_t learners, std::int64_t n) {
  std::vector<double> varimp(learners, 0.0);
  for (std::size_t m = 0; m < selected.size(); ++m)
    varimp[selected[m]] += (risk[m] - risk[m + 1]) / double(n);
  return varimp;
}

template <class ExecutionSpace, class T>
class GamBooster {
 public:
  // T is the precision of the basis, the data streamed every iteration; the
  // O(n) vectors and the O(p k^2) matrices stay in double, so a float basis
  // halves the traffic without rounding the sums that pick the learner.
  using Memory = typename ExecutionSpace::memory_space;
  using Vector = Kokkos::View<double*, Memory>;
  using ConstVector = Kokkos::View<const double*, Memory>;
  using LowVector = Kokkos::View<T*, Memory>;

  // One fit's state between its steps (start, iterate, finish), so that the
  // folds of a cross-validation can interleave on separate instances.
  struct Run {
    ConstVector weights;
    ConstVector held_out;  // weights of the held-out risk; empty: 1 - weights
    int mstop = 0;
    GamMode mode = GamMode::direct;
    GamModel model;
    Vector gram;  // B_j^T W B_j, [p k k]
    Kokkos::View<RiskSums*, Memory> risk_sums;
    Kokkos::View<int*, Memory> selected;
    Kokkos::View<double*, Memory> coefficients;
    Vector cache;  // Gram mode: cached blocks B_j^T W B_s ([p k k] each) per selected s
    std::vector<int> slot_of;
    std::int64_t slots = 0, used = 0;
    // Gram mode on the device (impl/gam_gram_iteration.hpp): two buffers
    // each of c and the scores (iteration m's in [m % 2]), slot_of's device
    // copy, and the iteration that waits for the host to form its blocks
    // (-1: none).
    Vector c_at[2], scores_at[2];
    Kokkos::View<int*, Memory> device_slot_of;
    Kokkos::View<int[2], Memory> halted;  // and the halted iteration's selection
    // The blocks a formation takes from earlier slots (form_cross_product_slot).
    Kokkos::View<std::uint8_t*, Memory> reused;
  };

  // X and y: this process's rows of the group's (every process of the group
  // constructs its booster together).
  template <class XView, class YView>
  GamBooster(const ExecutionSpace& space, const XView& X, const YView& y, const GamOptions& options,
             const ProcessGroup& group = single_process())
      : space_(space), options_(options), group_(&group) {
    options_.basis = gam_basis_for<ExecutionSpace>(options.basis);
    static_assert(XView::rank == 2 && YView::rank == 1, "kpl::fit_gam: X [n, p] and y [n]");
    impl::check_gam_options(options);
    Kokkos::Timer timer;
    check_shapes(X, y);
    gam_check_data(space, X, y, options.family, group);
    // Allocations may fail on one process alone.
    agreed(group, [&] {
      y_ = Vector(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "kpl::gam::y"), rows_);
      convert(y_, y);
    });
    meshes_ = gam_meshes(space, X, k_, options.degree, group);
    agreed(group, [&] {
      build_basis(X);
      allocate_state();
      space.fence();
    });
    basis_seconds_ = timer.seconds();
  }

  // A booster on another execution-space instance that shares `other`'s
  // basis and response (read-only) and has its own fit state: the folds of a
  // cross-validation, run side by side.
  GamBooster(const GamBooster& other, const ExecutionSpace& instance)
      : space_(instance),
        options_(other.options_),
        group_(other.group_),
        rows_(other.rows_),
        total_rows_(other.total_rows_),
        learners_(other.learners_),
        k_(other.k_),
        basis_seconds_(other.basis_seconds_),
        meshes_(other.meshes_),
        basis_(other.basis_),
        evaluated_(other.evaluated_),
        dense_(other.dense_),
        y_(other.y_),
        row_offset_(other.row_offset_) {
    agreed(*group_, [&] { allocate_state(); });
  }

  // The steps of a fit, below and in impl/gam_boosting_iteration.hpp.
  // Public because CUDA forbids device lambdas in private member functions;
  // impl:: is not API.
  GamModel fit(const ConstVector& weights, int mstop, GamMode mode, GamTimings* timings,
               const GamProgress& progress, std::vector<double>* held_out = nullptr,
               const ConstVector& held_out_weights = {});
  Run start(const ConstVector& weights, int mstop, GamMode mode, GamTimings* timings,
            const ConstVector& held_out = {});
  // Each row's own offset (this process's rows; mboost's vector offset):
  // f starts at it, plus options.offset if set (else 0).
  template <class OffsetView>
  void set_row_offset(const OffsetView& offset) {
    Vector copy;
    agreed(*group_, [&] {
      if (static_cast<std::int64_t>(offset.extent(0)) != rows_)
        throw input_error("kpl::fit_gam: X has " + std::to_string(rows_) + " rows, the offset " +
                          std::to_string(offset.extent(0)) + " values");
      copy = Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::row_offset"),
                    rows_);
    });
    convert(copy, offset);
    RiskSums bad{0, 0};
    Kokkos::parallel_reduce("kpl::gam::check_offset",
                            Kokkos::RangePolicy<ExecutionSpace>(space_, 0, rows_),
                            GamNonFinite<Vector>{copy}, host_sums(bad));
    gam_sum_over(*group_, bad);
    if (bad.training > 0)
      throw input_error("kpl::fit_gam: the offset holds " +
                        std::to_string(std::int64_t(bad.training)) + " NaN or infinite values");
    row_offset_ = copy;
  }
  void add_offsets(double offset);
  void gram_over_processes(Run& run);
  void allocate_run(Run& run);
  void begin_boosting(Run& run);
  void iterate(Run& run, int m);
  void select_and_step(Run& run, int m);
  template <class AfterIterations>
  void boost_gram(Run& run, const AfterIterations& after_iterations);
  void launch_gram_iteration(Run& run, int m);
  struct Halt {
    int iteration, learner;  // -1 and -1: the batch ran to its end
  };
  Halt halted_iteration(const Run& run);
  void resume_gram(Run& run, const Halt& halt);
  void form_cross_product_slot(Run& run, int s, std::int64_t slot);
  void iterate_dense(Run& run, int m);
  void compute_gradient_products();
  void products_from_rows();
  Vector gradient_products() const { return c_; }
  template <class View>
  void sum_over_processes(const View& values) {
    reduction_seconds_ += gam_sum_over(*group_, space_, values);
  }
  void refresh(const Run& run, std::int64_t slot);
  void report_progress(const Run& run, int m, const GamProgress& progress);
  GamModel finish(Run& run, std::vector<double>* held_out);

  // n is the group's: the rows of all its processes.
  template <class XView, class YView>
  void check_shapes(const XView& X, const YView& y) {
    rows_ = X.extent(0);
    learners_ = X.extent(1);
    k_ = options_.basis_size;
    agreed(*group_, [&] {
      if (static_cast<std::int64_t>(y.extent(0)) != rows_)
        throw input_error("kpl::fit_gam: X has " + std::to_string(rows_) + " rows, y " +
                          std::to_string(y.extent(0)) + " values");
    });
    double fewest = learners_, most = learners_;
    group_->min(&fewest, 1);
    group_->max(&most, 1);
    if (fewest != most)
      throw input_error("kpl::fit_gam: the processes' X have from " +
                        std::to_string(std::int64_t(fewest)) + " to " +
                        std::to_string(std::int64_t(most)) + " covariates");
    total_rows_ = gam_rows(*group_, rows_).total;
    if (learners_ == 0) throw input_error("kpl::fit_gam: X has no covariates (p = 0)");
    if (total_rows_ < k_)
      throw input_error("kpl::fit_gam: " + std::to_string(total_rows_) +
                        " observations are fewer than the basis size " + std::to_string(k_));
  }

  // The bases on the meshes: the evaluated one if asked for, the compact one
  // unless the evaluated basis does without it (the direct mode reads its
  // rows from x: a quarter of the compact basis' memory, and no pass to
  // build it), the dense one if asked for.
  template <class XView>
  void build_basis(const XView& X) {
    if (options_.basis == GamBasis::evaluated)
      evaluated_ = evaluated_bspline_basis<T>(space_, "kpl::gam::evaluated", X, meshes_);
    if (options_.basis != GamBasis::evaluated || options_.mode == GamMode::gram)
      build_stored_basis(X);
    if (options_.basis != GamBasis::dense) return;
    dense_ = Kokkos::View<T**, Kokkos::LayoutLeft, Memory>(
        Kokkos::view_alloc(space_, "kpl::gam::dense_basis"), rows_, learners_ * k_);
    gam_expand_basis(space_, basis_, dense_);
  }

  template <class XView>
  void build_stored_basis(const XView& X) {
    Kokkos::View<BsplineMesh*, Memory> device_meshes(
        Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::meshes"), learners_);
    Kokkos::deep_copy(space_, device_meshes,
                      Kokkos::View<const BsplineMesh*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                          meshes_.data(), meshes_.size()));
    basis_ = CompactBasis<T, Memory>("kpl::gam::basis", learners_, rows_, options_.degree + 1, k_);
    kpl::build_bspline_basis(space_, X, device_meshes, basis_);
  }

  // Whether the fit reads its rows from the evaluated basis: it has no
  // compact one (every built basis has p >= 1 blocks).
  bool reads_evaluated_rows() const { return basis_.blocks() == 0; }

  // launch(basis) with the basis whose rows the fit reads.
  template <class Launch>
  void with_row_basis(const Launch& launch) const {
    if (reads_evaluated_rows())
      launch(evaluated_);
    else
      launch(basis_);
  }

  // The compact basis where a fit needs it (Gram mode's cross products) and
  // the booster was built without it: from the evaluated basis' copy of X,
  // the same values.
  void build_stored_basis_if_missing() {
    if (!reads_evaluated_rows()) return;
    const Kokkos::View<const double**, Kokkos::LayoutLeft, Memory, Kokkos::MemoryUnmanaged> X(
        evaluated_.covariates.data(), rows_, learners_);
    agreed(*group_, [&] { build_stored_basis(X); });
  }

  // f += B_s step where add_step (s = current), then u and the risk into
  // run.risk_sums(slot) (gam_update_rows).
  void update_rows(const Run& run, bool add_step, std::int64_t slot) {
    with_row_basis([&](const auto& basis) {
      gam_update_rows(space_, basis, add_step, current_, step_, GamFamilyFunctions{options_.family},
                      ConstVector(y_), run.weights, run.held_out, f_, u_, run.risk_sums, slot);
    });
  }

  // lambda_j, M_j and R_j from gram (B_j^T W B_j, [p k k]): on a GPU where
  // gram is, on the host's threads where memory is the host's.
  void penalise(const Vector& gram, GamModel& model) {
    const std::int64_t block = static_cast<std::int64_t>(k_) * k_;
    agreed(*group_, [&] {
      if (inverse_.extent(0) == static_cast<std::size_t>(learners_ * block)) return;
      inverse_ =
          Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::inverse"),
                 learners_ * block);
      reduction_ =
          Vector(Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, "kpl::gam::reduction"),
                 learners_ * block);
    });
    if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible) {
      if (gam_penalties_fit_the_device(options_)) {
        gam_penalise_on_device(space_, gram, options_, inverse_, reduction_, model);
        return;
      }
    }
    space_.fence();  // gram's kernels, before the host reads it
    const auto host_gram = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gram);
    const auto penalties = gam_learner_penalties(host_gram, options_, learners_);
    gam_upload_penalties(space_, penalties, block, model, inverse_, reduction_);
  }

  // The per-fit device state (the basis and y are shared between boosters).
  void allocate_state() {
    const auto uninitialised = [&](const std::string& label) {
      return Kokkos::view_alloc(space_, Kokkos::WithoutInitializing, label);
    };
    f_ = Vector(uninitialised("kpl::gam::f"), rows_);
    u_ = Vector(uninitialised("kpl::gam::u"), rows_);
    c_ = Vector(uninitialised("kpl::gam::c"), learners_ * k_);
    step_ = Vector(Kokkos::view_alloc(space_, "kpl::gam::step"), k_);
    scores_ = Kokkos::View<double*, Memory>(uninitialised("kpl::gam::scores"), learners_);
    current_ = Kokkos::View<int, Memory>(Kokkos::view_alloc(space_, "kpl::gam::current"));
    if constexpr (!std::is_same_v<T, double>) {
      if (options_.basis == GamBasis::dense) {
        u_low_ = LowVector("kpl::gam::u_low", rows_);
        c_low_ = LowVector("kpl::gam::c_low", learners_ * k_);
        step_low_ = LowVector("kpl::gam::step_low", k_);
      }
    }
  }

  // Copies between the double vectors and the basis' precision (dense mode
  // in float: kpl::gemv takes one precision).
  template <class To, class From>
  void convert(const To& to, const From& from) {
    Kokkos::parallel_for("kpl::gam::convert",
                         Kokkos::RangePolicy<ExecutionSpace>(space_, 0, from.extent(0)),
                         ConvertValues<To, From>{to, from});
  }

  // What the fit holds on the device: the basis, O(n) and O(p k^2) arrays,
  // and in Gram mode the cached cross-product blocks.
  std::int64_t device_bytes(int mstop, GamMode mode) const {
    const std::int64_t block = static_cast<std::int64_t>(k_) * k_;
    std::int64_t bytes = basis_.bytes() + evaluated_.bytes() + dense_.size() * sizeof(T);
    bytes += (y_.size() + f_.size() + u_.size() + c_.size() + 2 * learners_ * block +
              4 * learners_ * block /* gram and its exact parts */ + scores_.size() +
              learners_ * k_ /* coefficients */) *
             sizeof(double);
    bytes += (u_low_.size() + c_low_.size()) * sizeof(T) + (mstop + 1) * sizeof(RiskSums);
    if (mode == GamMode::gram && mstop > 0)
      bytes += (gram_cache_slots(mstop) + 1) * learners_ * block * sizeof(double) +
               (c_.size() + learners_) * sizeof(double) + learners_ * sizeof(int);
    return bytes;
  }

  // Gram mode: B_j^T W B_s blocks ([p k k] doubles each) kept at once, within
  // the options' memory budget (one more slot holds an uncached block).
  std::int64_t gram_cache_slots(int mstop) const {
    const std::int64_t bytes_per_slot =
        learners_ * static_cast<std::int64_t>(k_) * k_ * sizeof(double);
    return std::max<std::int64_t>(
        1, std::min<std::int64_t>({learners_, mstop, options_.gram_cache_bytes / bytes_per_slot}));
  }

  int selected_on_host() {
    int s;
    Kokkos::deep_copy(space_, Kokkos::View<int, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&s),
                      current_);
    space_.fence();
    return s;
  }

 private:
  ExecutionSpace space_;
  GamOptions options_;
  const ProcessGroup* group_;
  std::int64_t rows_ = 0;        // this process's
  std::int64_t total_rows_ = 0;  // the group's
  std::int64_t learners_ = 0;
  int k_ = 0;
  double basis_seconds_ = 0;
  double reduction_seconds_ = 0;  // in sum_over_processes, accumulated
  std::vector<BsplineMesh> meshes_;
  CompactBasis<T, Memory> basis_;
  EvaluatedBasis<T, Memory> evaluated_;  // GamBasis::evaluated only
  Kokkos::View<T**, Kokkos::LayoutLeft, Memory> dense_;
  Vector y_, f_, u_, c_, step_, inverse_, reduction_;
  ConstVector row_offset_;              // empty: none
  LowVector u_low_, c_low_, step_low_;  // dense basis in float only
  Kokkos::View<double*, Memory> scores_;
  Kokkos::View<int, Memory> current_;
  GemvWorkspace<ExecutionSpace, T> gemv_workspace_;
  CompactProductWorkspace<Memory> product_workspace_;  // per booster: folds run side by side
};

// Checks and uploads a fit's observations into the booster: its per-row
// offsets set, the rescaled weights returned (empty without weights).
template <class ExecutionSpace, class Booster, class Observations>
Kokkos::View<const double*, typename ExecutionSpace::memory_space> gam_prepare_observations(
    const ExecutionSpace& space, Booster& booster, const Observations& observations,
    std::int64_t rows, const ProcessGroup& group) {
  if (gam_on_any(group, observations.offset.extent(0) != 0))
    booster.set_row_offset(observations.offset);
  const bool weighted = gam_on_any(group, observations.weights.extent(0) != 0);
  if (!weighted) return {};
  agreed(group, [&] {
    if (static_cast<std::int64_t>(observations.weights.extent(0)) != rows)
      throw input_error("kpl::fit_gam: X has " + std::to_string(rows) + " rows, the weights " +
                        std::to_string(observations.weights.extent(0)) + " values");
  });
  return gam_model_weights(space, observations.weights, gam_rows(group, rows).first, group);
}

}  // namespace impl
}  // namespace kpl
