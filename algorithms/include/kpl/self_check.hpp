// `kpl self-check`: the job kpl runs on its shipped inputs until the GAM and
// deconvolution modules exist. It reads inputs/self_check.h5, runs kpl's
// kernels (the reductions, for now) on its data on every enabled execution
// space and compares what each backend computes with the reference values
// stored in the file (exactly rounded, by scripts/make_inputs.py). A failed check is reported, not
// hidden: the report says which backend and check failed and by how much.
#pragma once

#include <string>
#include <vector>

namespace kpl {

struct SelfCheckResult {
  std::string backend;   // execution space name
  std::string check;     // what was computed
  double value = 0;      // what the backend computed
  double reference = 0;  // what the file says
  double relative_error = 0;
  double tolerance = 0;
  bool passed() const { return relative_error <= tolerance; }  // NaN fails
};

// Runs every check on every enabled execution space. Throws kpl::input_error
// when the input file is missing or malformed. Requires Kokkos initialised.
std::vector<SelfCheckResult> run_self_check(const std::string& input_path);

// Writes the results to an HDF5 file (one row per result), atomically.
void write_self_check_report(const std::vector<SelfCheckResult>& results,
                             const std::string& input_path, const std::string& output_path);

}  // namespace kpl
