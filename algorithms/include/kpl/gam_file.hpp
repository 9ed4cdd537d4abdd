// The boosted GAM's file layer (`kpl gam fit`, `kpl gam predict`, `kpl
// simulate gam`): HDF5 in and out, on the default execution space. With a
// ProcessGroup every process reads its kpl::row_block of the input's rows,
// and all write one output file; every process returns the same summary or
// throws the same error (kpl::agree). Without one: this process alone.
#pragma once

#include <kpl/gam.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/process_group.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kpl {

// Sieminski & Lee (2023) §4.1: x_j ~ U(0, 1); a random set of `informative`
// covariates adds 10 sin(2 pi x_j) each; intercept 7; Gaussian noise.
struct GamSimulation {
  std::int64_t observations = 2000;
  std::int64_t covariates = 100;
  std::int64_t informative = 20;
  std::uint64_t seed = 1;
  double noise_variance = 1e-3;
};

struct GamSimulatedData {
  hdf5::HostArray<double, 2> X;           // [n, p]
  hdf5::HostArray<double, 1> y;           // [n]
  std::vector<std::int64_t> informative;  // ascending, 0-based
};

GamSimulatedData simulate_gam(const GamSimulation& simulation);
// Writes /X, /y and /informative.
void simulate_gam_file(const GamSimulation& simulation, const std::string& output_path);

struct GamFitFileOptions {
  GamOptions gam;  // gam.offset: a fixed scalar offset
  bool single_precision = false;
  int cv_folds = 0;      // >= 2: choose mstop in [0, gam.mstop] by K-fold cross-validation
  int cv_bootstrap = 0;  // >= 1: ... by that many bootstrap resamples (mboost's cvrisk)
  std::string cv_weights_path, cv_weights_dataset;  // ... by given resamples [n, B]
  std::uint64_t cv_seed = 1;
  std::string weights;  // dataset [n] of the input: observation weights
  std::string offset;   // dataset [n] of the input: per-row offsets
  GamProgress progress;
};

// kpl gam predict: the link (offset + sum_j f_j) or the response (its mean:
// f, the probability, e^f); offset: a model fitted with per-row offsets
// needs the new rows' own, a dataset [n] of the input or one number.
struct GamPredictFileOptions {
  bool partial_effects = false;
  bool response = false;
  std::string offset;
};

struct GamFitSummary {
  std::int64_t observations = 0;
  std::int64_t covariates = 0;
  int mstop = 0;  // iterations of the written model
  double final_risk = 0;
  GamTimings timings;     // of the final fit (the slowest process's)
  double cv_seconds = 0;  // the cross-validation's fits, if any
};

// Reads /X [n, p] and /y [n], fits (after cross-validation when asked) and
// writes the model (see the README's `kpl gam fit`). Bad input is a
// kpl::input_error naming the file; output_path appears only on success.
GamFitSummary fit_gam_file(const std::string& input_path, const std::string& output_path,
                           const GamFitFileOptions& options);
GamFitSummary fit_gam_file(const ProcessGroup& group, const std::string& input_path,
                           const std::string& output_path, const GamFitFileOptions& options);

// A model written by fit_gam_file.
GamModel read_gam_model(const std::string& model_path);

// Throws kpl::input_error, starting with `context` (the input file, or the
// calling function), when a fit's training risk, coefficients, offset or
// cross-validation risks are not finite: the fit diverged and is no model.
void require_finite_gam_fit(const GamModel& model, const std::vector<double>& cv_risk,
                            const std::string& context);

// Writes /prediction [n] (link scale unless asked for the response) and, if asked, /partial_effects
// [n, p] for the rows of the input's /X. Returns n.
std::int64_t predict_gam_file(const std::string& model_path, const std::string& input_path,
                              const std::string& output_path, bool partial_effects);
std::int64_t predict_gam_file(const ProcessGroup& group, const std::string& model_path,
                              const std::string& input_path, const std::string& output_path,
                              bool partial_effects);
std::int64_t predict_gam_file(const ProcessGroup& group, const std::string& model_path,
                              const std::string& input_path, const std::string& output_path,
                              const GamPredictFileOptions& options);

}  // namespace kpl
