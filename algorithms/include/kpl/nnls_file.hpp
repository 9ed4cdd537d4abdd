// `kpl nnls`: batched NNLS on systems read from an HDF5 file.
#pragma once

#include <kpl/hdf5_io.hpp>
#include <kpl/impl/nnls_file_group.hpp>
#include <kpl/nnls.hpp>
#include <kpl/process_group.hpp>

#include <cstdint>
#include <string>

namespace kpl {

struct NnlsFileOptions {
  NnlsOptions nnls;
  bool single_precision = false;
  RowWrites row_writes = RowWrites::independent;  // several processes: DeconvolutionFileOptions'
};

struct NnlsFileSummary {
  std::int64_t systems = 0;
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::int64_t status_counts[nnls_status_count] = {};  // by NnlsStatus
  double seconds = 0;   // the solve alone, on the device (the busiest process's)
  WorkBalance balance;  // WorkBalance: impl/nnls_file_group.hpp
};

// Reads /A ([m, n] shared, or [B, m, n]) and /b ([B, m], or [m] for one
// system), solves on the default execution space and writes /x [B, n],
// /rnorm, /iterations, /status [B] and the settings as attributes to
// output_path, which appears only when everything succeeded. Bad input
// (missing datasets, mismatched shapes, NaN/Inf, an empty batch) is a
// kpl::input_error naming the file and dataset.
//
// On a group of several processes (every one calls it, with the same
// arguments) the systems are handed out in chunks, first come, first served;
// each process reads its chunks' /b (and /A when every system has its own)
// and writes their rows of the one output: the same file, bit for bit, as
// one process writes. The summary is the same on every process.
NnlsFileSummary solve_nnls_file(const ProcessGroup& group, const std::string& input_path,
                                const std::string& output_path, const NnlsFileOptions& options);
// On this process alone (kpl::single_process()).
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
