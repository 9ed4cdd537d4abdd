// kpl's entry points called with an MPI communicator the caller owns
// (built with KPL_ENABLE_MPI): each makes a kpl::mpi::ProcessGroup over it
// for the call (a duplicate, so kpl's messages never mix with the caller's;
// collective) and runs the ProcessGroup overload. A code that calls kpl
// often keeps one kpl::mpi::ProcessGroup instead (kpl/mpi.hpp).
//
//   kpl::deconvolve_file(MPI_COMM_WORLD, "in.h5", "out.h5", options);
//   auto model = kpl::fit_gam(space, X_my_rows, y_my_rows, options, MPI_COMM_WORLD);
#pragma once

#include <kpl/deconvolution.hpp>
#include <kpl/gam.hpp>
#include <kpl/gam_file.hpp>
#include <kpl/mpi.hpp>
#include <kpl/nnls_file.hpp>

#include <mpi.h>

#include <string>

namespace kpl {

inline DeconvolutionSummary deconvolve_file(MPI_Comm communicator, const std::string& input_path,
                                            const std::string& output_path,
                                            const DeconvolutionFileOptions& options) {
  const mpi::ProcessGroup group(communicator);
  return deconvolve_file(group, input_path, output_path, options);
}

inline NnlsFileSummary solve_nnls_file(MPI_Comm communicator, const std::string& input_path,
                                       const std::string& output_path,
                                       const NnlsFileOptions& options) {
  const mpi::ProcessGroup group(communicator);
  return solve_nnls_file(group, input_path, output_path, options);
}

inline GamFitSummary fit_gam_file(MPI_Comm communicator, const std::string& input_path,
                                  const std::string& output_path,
                                  const GamFitFileOptions& options) {
  const mpi::ProcessGroup group(communicator);
  return fit_gam_file(group, input_path, output_path, options);
}

inline std::int64_t predict_gam_file(MPI_Comm communicator, const std::string& model_path,
                                     const std::string& input_path,
                                     const std::string& output_path, bool partial_effects) {
  const mpi::ProcessGroup group(communicator);
  return predict_gam_file(group, model_path, input_path, output_path, partial_effects);
}

// X and y: this rank's rows (see kpl::fit_gam with a ProcessGroup).
template <class ExecutionSpace, class XView, class YView>
GamModel fit_gam(const ExecutionSpace& space, const XView& X, const YView& y,
                 const GamOptions& options, MPI_Comm communicator,
                 GamTimings* timings = nullptr, const GamProgress& progress = {}) {
  const mpi::ProcessGroup group(communicator);
  return fit_gam(space, X, y, options, group, timings, progress);
}

}  // namespace kpl
