// What the GAM's options (kpl/gam.hpp) allow, the device memory a fit with
// them takes, and the names of the modes. Part of kpl/gam.hpp, included
// after its types; the functions in namespace kpl are API.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/resources.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kpl {
namespace impl {

inline void check_gam_options(const GamOptions& options) {
  const auto fail = [](const std::string& message) {
    throw std::invalid_argument("kpl::fit_gam: " + message);
  };
  if (options.degree < 1 || options.degree > bspline_max_degree)
    fail("degree " + std::to_string(options.degree) + " outside [1, " +
         std::to_string(bspline_max_degree) + "]");
  if (options.basis_size < options.degree + 2)
    fail("basis size " + std::to_string(options.basis_size) +
         " below degree + 2 = " + std::to_string(options.degree + 2) + " (no interior knot)");
  if (options.differences < 0 || options.differences > 3)
    fail("difference order " + std::to_string(options.differences) + " outside [0, 3]");
  if (!(options.df > 0) || options.df > options.basis_size)
    fail("df " + std::to_string(options.df) + " outside (0, basis size " +
         std::to_string(options.basis_size) + "]");
  if (!(options.nu > 0) || options.nu > 1)
    fail("nu " + std::to_string(options.nu) + " outside (0, 1]");
  if (options.mstop < 0) fail("mstop must not be negative");
  if (options.gram_refresh < 1) fail("gram_refresh must be positive");
  if (options.mode == GamMode::gram && options.family != GamFamily::gaussian)
    fail("the Gram mode needs the Gaussian family (its gradient is linear in f)");
}

// Gram mode: the cached B_j^T B_s blocks, one slot more (for an uncached s).
inline std::int64_t gam_gram_cache_bytes(std::int64_t p, const GamOptions& options) {
  if (options.mode != GamMode::gram || options.mstop <= 0) return 0;
  const std::uint64_t learners = std::uint64_t(p), k = std::uint64_t(options.basis_size);
  const std::int64_t slot = checked_bytes({learners, k, k}, sizeof(double));
  const std::int64_t slots =
      slot <= 0
          ? 1
          : std::max<std::int64_t>(
                1, std::min<std::int64_t>({p, options.mstop, options.gram_cache_bytes / slot}));
  return slot < 0 ? -1 : checked_bytes({std::uint64_t(slots + 1)}, std::uint64_t(slot));
}

inline std::int64_t gam_device_bytes(std::int64_t n, std::int64_t p, const GamOptions& options,
                                     std::int64_t element_size, int folds) {
  const std::uint64_t rows = std::uint64_t(n), learners = std::uint64_t(p),
                      k = std::uint64_t(options.basis_size),
                      width = std::uint64_t(options.degree + 1);
  // The compact basis, which the evaluated basis' direct mode does without;
  // automatic: the larger of the compact and the evaluated basis.
  const std::int64_t compact =
      checked_sum({checked_bytes({learners, rows, width}, std::uint64_t(element_size)),
                   checked_bytes({learners, rows}, sizeof(int))});
  const std::int64_t evaluated = checked_sum({checked_bytes({rows, learners}, sizeof(double)),
                                              options.mode == GamMode::gram ? compact : 0});
  const std::int64_t basis =
      options.basis == GamBasis::dense
          ? checked_sum({compact, checked_bytes({rows, learners, k}, std::uint64_t(element_size))})
      : options.basis == GamBasis::evaluated ? evaluated
      : options.basis == GamBasis::automatic
          ? (compact < 0 || evaluated < 0 ? -1 : std::max(compact, evaluated))
          : compact;
  // y, f, u, fold weights and the float copies; c, steps, scores,
  // coefficients; the learners' k x k matrices (Gram, inverse, reduction,
  // and the Gram's three exact parts while it is summed).
  const std::int64_t booster = checked_sum(
      {checked_bytes({rows, 4}, sizeof(double)), checked_bytes({learners, k, 4}, sizeof(double)),
       checked_bytes({learners, k, k, 6}, sizeof(double)),
       checked_bytes({std::uint64_t(options.mstop) + 1, 2}, sizeof(double))});
  const std::int64_t fold_boosters =
      booster < 0 ? -1 : checked_bytes({std::uint64_t(folds)}, std::uint64_t(booster));
  return checked_sum({basis, booster, fold_boosters, gam_gram_cache_bytes(p, options)});
}

}  // namespace impl

inline std::string to_string(GamMode mode) { return mode == GamMode::direct ? "direct" : "gram"; }
inline std::string to_string(GamBasis basis) {
  switch (basis) {
    case GamBasis::compact:
      return "compact";
    case GamBasis::dense:
      return "dense";
    case GamBasis::evaluated:
      return "evaluated";
    default:
      return "automatic";
  }
}

// The basis a fit on ExecutionSpace uses: GamBasis::automatic resolved to
// the evaluated basis on GPUs (B^T u from x moves a quarter of the bytes and
// their cores have flops to spare) and to the compact one on CPUs (de Boor's
// recursion costs a CPU core more than the bytes it saves); others as they
// are.
template <class ExecutionSpace>
GamBasis gam_basis_for(GamBasis basis) {
  if (basis != GamBasis::automatic) return basis;
  return impl::runs_on_host_v<ExecutionSpace> ? GamBasis::compact : GamBasis::evaluated;
}

// Throws std::invalid_argument for options no data can satisfy.
inline void check_gam_options(const GamOptions& options) { impl::check_gam_options(options); }

// Device memory a fit of n rows and p covariates takes at its peak, the
// caller's X and y aside, with `folds` cross-validation boosters beside it
// (0: none); the basis stored in element_size bytes (GamBasis::automatic
// counted as the larger of the compact and the evaluated basis in
// options.mode: resolve it with gam_basis_for first for the exact figure).
// -1 if the count overflows. For checking a run against the free memory
// before it starts.
inline std::int64_t gam_device_bytes(std::int64_t n, std::int64_t p, const GamOptions& options,
                                     std::int64_t element_size, int folds = 0) {
  return impl::gam_device_bytes(n, p, options, element_size, folds);
}

}  // namespace kpl
