// The GAM's predictions (kpl/gam.hpp): each row's B-spline values on the
// model's meshes, times its coefficients. Part of kpl/gam.hpp, included
// after its types.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kpl {
namespace impl {

template <class XView, class MeshView, class CoefficientView, class PredictionView,
          class PartialView>
struct GamPredict {
  XView X;
  MeshView meshes;
  CoefficientView coefficients;
  PredictionView prediction;
  PartialView partial_effects;
  double offset;
  std::int64_t p;
  int k;
  bool partial;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    double sum = offset;
    double row[bspline_max_degree + 1];
    for (std::int64_t j = 0; j < p; ++j) {
      const BsplineMesh mesh = meshes(j);
      const int first = bspline_row(mesh, double(X(i, j)), row);
      double effect = 0;
      for (int q = 0; q <= mesh.degree; ++q) effect += row[q] * coefficients(j * k + first + q);
      if (partial) partial_effects(i, j) = effect;
      sum += effect;
    }
    prediction(i) = sum;
  }
};

template <class XView, class PredictionView, class PartialView>
void check_gam_prediction_shapes(const GamModel& model, const XView& X,
                                 const PredictionView& prediction,
                                 const PartialView& partial_effects) {
  const std::int64_t n = X.extent(0), p = X.extent(1);
  if (p != model.covariates)
    throw input_error("kpl::predict_gam: X has " + std::to_string(p) + " covariates, the model " +
                      std::to_string(model.covariates));
  if (static_cast<std::int64_t>(prediction.extent(0)) != n)
    throw std::invalid_argument("kpl::predict_gam: prediction must hold one value per row of X");
  if (partial_effects.size() != 0 && (static_cast<std::int64_t>(partial_effects.extent(0)) != n ||
                                      static_cast<std::int64_t>(partial_effects.extent(1)) != p))
    throw std::invalid_argument("kpl::predict_gam: partial effects must be [n, p] or empty");
}

template <class ExecutionSpace, class XView, class PredictionView, class PartialView>
void predict_gam(const ExecutionSpace& space, const GamModel& model, const XView& X,
                 const PredictionView& prediction, const PartialView& partial_effects) {
  check_gam_prediction_shapes(model, X, prediction, partial_effects);
  using Memory = typename ExecutionSpace::memory_space;
  const std::int64_t n = X.extent(0), p = X.extent(1);
  const int k = model.options.basis_size;
  Kokkos::View<BsplineMesh*, Memory> meshes("kpl::gam::meshes", p);
  Kokkos::View<double*, Memory> coefficients("kpl::gam::coefficients", p * k);
  Kokkos::deep_copy(space, meshes,
                    Kokkos::View<const BsplineMesh*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        model.meshes.data(), model.meshes.size()));
  Kokkos::deep_copy(space, coefficients,
                    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        model.coefficients.data(), model.coefficients.size()));
  using Functor =
      GamPredict<XView, decltype(meshes), decltype(coefficients), PredictionView, PartialView>;
  Kokkos::parallel_for("kpl::gam::predict", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
                       Functor{X, meshes, coefficients, prediction, partial_effects, model.offset,
                               p, k, partial_effects.size() != 0});
  space.fence();
}

}  // namespace impl
}  // namespace kpl
