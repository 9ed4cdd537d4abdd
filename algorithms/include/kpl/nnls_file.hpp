// `kpl nnls`: batched NNLS on systems read from an HDF5 file.
#pragma once

#include <kpl/hdf5_io.hpp>
#include <kpl/nnls.hpp>

#include <cstdint>
#include <string>

namespace kpl {

struct NnlsFileOptions {
  NnlsOptions nnls;
  bool single_precision = false;
};

struct NnlsFileSummary {
  std::int64_t systems = 0;
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::int64_t status_counts[nnls_status_count] = {};  // by NnlsStatus
  double seconds = 0;                                  // the solve alone, on the device
};

// Reads /A ([m, n] shared, or [B, m, n]) and /b ([B, m], or [m] for one
// system), solves on the default execution space and writes /x [B, n],
// /rnorm, /iterations, /status [B] and the settings as attributes to
// output_path, which appears only when everything succeeded. Bad input
// (missing datasets, mismatched shapes, NaN/Inf, an empty batch) is a
// kpl::input_error naming the file and dataset.
NnlsFileSummary solve_nnls_file(const std::string& input_path, const std::string& output_path,
                                const NnlsFileOptions& options);

namespace impl {
// The settings `kpl nnls` and `kpl deconv` record as attributes of "/" (and
// what /status means); defaults written as the values they resolve to.
void write_solver_settings(hdf5::OutputFile& output, const std::string& input_path,
                           const NnlsOptions& options, bool single_precision,
                           std::int64_t default_max_iterations, std::int64_t default_max_passive);
}  // namespace impl

}  // namespace kpl
