// The vocabulary of kpl::nnls (kpl/nnls.hpp) without Kokkos: how a solve is
// configured (NnlsOptions and its enums), why a system's solve stopped
// (NnlsStatus), the row range a column source reports, and their names.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace kpl {

// Why a system's solve stopped; the value is what `kpl nnls` writes. Only
// `converged` promises a solution: its KKT conditions were checked after the
// solve (kkt_residual <= kkt_tolerance). Otherwise x is the last feasible
// iterate (x >= 0, every step of the method taken in full).
enum class NnlsStatus : int {
  converged = 0,          // KKT verified within the tolerance
  max_iterations = 1,     // the iteration cap was reached first
  numerical_issue = 2,    // NaN/Inf in the input (x = 0), or one arose in the solve
  passive_set_full = 3,   // a column should enter but the passive cap is reached
  dependent_columns = 4,  // every column violating KKT is numerically dependent on the passive set
  kkt_not_met = 5,        // the solve ended, but the KKT check from the residual failed
};
inline constexpr int nnls_status_count = 6;

// Rows [begin, end) in which a column may be non-zero; sources of banded
// matrices (Toeplitz deconvolution) return their band so the dot products
// skip the zeros.
struct RowRange {
  std::int64_t begin;
  std::int64_t end;
};

enum class NnlsOrthogonalization {
  automatic,              // modified Gram-Schmidt on CPUs, classical twice on GPUs
  modified_gram_schmidt,  // Algorithm 2 as written: one projection at a time
  classical_twice,        // all projections at once, repeated where the first pass cancelled
                          // over half the column's norm squared (fewer team barriers)
};

// Where the gradient w = A^T (b - A x) comes from after each change of x.
enum class NnlsGradient {
  automatic,            // cross products for a shared A (on CPUs from two systems on) unless A^T A
                        // outgrows A and 2^23 values
  from_residual,        // r = b - A x, then A^T r: all of A read every outer iteration
  from_cross_products,  // A^T b - (A^T A) x with A^T A formed once: needs a shared A
};

struct NnlsOptions {
  int max_iterations = -1;           // < 0: 3 n
  double tolerance = -1;             // relative to G_j; < 0: 10 eps max(m, n)
  double kkt_tolerance = -1;         // relative to G_j; < 0: nnls_default_kkt_tolerance
  int max_passive = -1;              // < 0: min(m, n); caps memory at m x max_passive per system
  double dependence_threshold = -1;  // < 0: 10 eps max(m, n)
  NnlsOrthogonalization orthogonalization = NnlsOrthogonalization::automatic;
  NnlsGradient gradient = NnlsGradient::automatic;
  // Threads per team. GPUs: x 32 vector lanes, at most 8; 0: 8. CPUs: 0: 1
  // (one thread per system); more is clamped to what the backend allows.
  int team_threads = 0;
  // For benchmarks that price the check: skip it (kkt_residual NaN, and a
  // system the method ends normally is reported kkt_not_met, never converged).
  bool skip_kkt_check = false;
};

// The KKT check's default tolerance (relative to G, see kpl/nnls.hpp).
template <class T>
double nnls_default_kkt_tolerance(std::int64_t rows, std::int64_t columns) {
  return 10 * double(std::numeric_limits<T>::epsilon()) *
         double(std::max<std::int64_t>({rows, columns, 1}));
}

inline std::string to_string(NnlsOrthogonalization orthogonalization) {
  switch (orthogonalization) {
    case NnlsOrthogonalization::modified_gram_schmidt:
      return "modified-gram-schmidt";
    case NnlsOrthogonalization::classical_twice:
      return "classical-twice";
    case NnlsOrthogonalization::automatic:
      break;
  }
  return "automatic";
}

inline std::string to_string(NnlsGradient gradient) {
  switch (gradient) {
    case NnlsGradient::from_residual:
      return "residual";
    case NnlsGradient::from_cross_products:
      return "cross-products";
    case NnlsGradient::automatic:
      break;
  }
  return "automatic";
}

inline std::string to_string(NnlsStatus status) {
  switch (status) {
    case NnlsStatus::converged:
      return "converged";
    case NnlsStatus::max_iterations:
      return "max_iterations";
    case NnlsStatus::numerical_issue:
      return "numerical_issue";
    case NnlsStatus::passive_set_full:
      return "passive_set_full";
    case NnlsStatus::dependent_columns:
      return "dependent_columns";
    case NnlsStatus::kkt_not_met:
      return "kkt_not_met";
  }
  return "unknown";
}

// "0 converged, 1 max_iterations, ...": what the status values mean.
inline std::string nnls_status_legend() {
  std::string legend;
  for (int status = 0; status < nnls_status_count; ++status)
    legend += (status > 0 ? ", " : "") + std::to_string(status) + " " +
              to_string(static_cast<NnlsStatus>(status));
  return legend;
}

}  // namespace kpl
