// `kpl gam predict`'s file layer (kpl/gam_file.hpp): every process of the
// group predicts its block of the input's rows and writes them into the one
// output file.
#include <kpl/config.hpp>
#include <kpl/gam_file.hpp>
#include <kpl/impl/nnls_file_group.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

namespace kpl {

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Memory = Space::memory_space;
using DevicePrediction = Kokkos::View<double*, Kokkos::LayoutRight, Memory>;
using DevicePartial = Kokkos::View<double**, Kokkos::LayoutRight, Memory>;

// This process's rows of the input: n, p and its block.
struct PredictionPlan {
  std::int64_t rows = 0, covariates = 0;
  RowBlock block;
};

// This process's predictions on the host; partial empty unless asked for.
struct Predictions {
  hdf5::HostArray<double, 1> prediction;
  hdf5::HostArray<double, 2> partial;
};

// Checks the input against the model, the output's target and the resources
// this process's rows need.
PredictionPlan plan_prediction(const ProcessGroup& group, const GamModel& model,
                               const std::string& model_path, const hdf5::InputFile& input,
                               const std::string& output_path, bool partial_effects) {
  const std::string& input_path = input.path();
  const auto shape = input.shape("/X");
  if (shape.size() != 2)
    throw input_error("'" + input_path + "': dataset /X must be [n, p], not of rank " +
                      std::to_string(shape.size()));
  if (static_cast<std::int64_t>(shape[1]) != model.covariates)
    throw input_error(input_path + ": /X has " + std::to_string(shape[1]) +
                      " covariates, the model " + model_path + " " +
                      std::to_string(model.covariates));
  hdf5::require_distinct(output_path, {model_path, input_path});
  hdf5::require_writable_target(output_path);
  const PredictionPlan plan{std::int64_t(shape[0]), std::int64_t(shape[1]),
                            row_block(group, std::int64_t(shape[0]))};
  const std::int64_t X_bytes = input.bytes("/X", sizeof(double));  // input_error on overflow
  const std::int64_t block_X_bytes =
      plan.block.count == plan.rows ? X_bytes : X_bytes / plan.rows * plan.block.count;
  const std::int64_t rows_bytes = checked_bytes({shape[0]}, sizeof(double));
  const std::int64_t block_rows_bytes = checked_bytes({std::uint64_t(plan.block.count)}, 8);
  ResourceNeeds needs;
  needs.host_bytes =
      checked_sum({block_X_bytes, block_rows_bytes, partial_effects ? block_X_bytes : 0});
  needs.device_bytes = needs.host_bytes;
  needs.disk_bytes =
      checked_sum({rows_bytes, partial_effects ? X_bytes : 0, std::int64_t(1) << 16});
  needs.disk_directory = hdf5::directory_of(output_path);
  require_resources("kpl gam predict on '" + input_path + "'", needs);
  return plan;
}

// The predictions of rows first_row, first_row + 1, ... of the input (host_X);
// input_error naming the first row whose prediction is not finite.
Predictions predict_rows(const GamModel& model, const hdf5::HostArray<double, 2>& host_X,
                         const hdf5::HostArray<double, 1>& row_offset,
                         const GamPredictFileOptions& options, const std::string& input_path,
                         std::int64_t first_row) {
  const bool partial_effects = options.partial_effects;
  const Space space;
  const std::int64_t n = host_X.extent(0), p = host_X.extent(1);
  const auto X = Kokkos::create_mirror_view_and_copy(Memory(), host_X);
  DevicePrediction prediction("kpl::gam::prediction", n);
  DevicePartial partial;
  if (partial_effects) partial = DevicePartial("kpl::gam::partial_effects", n, p);
  predict_gam(space, model, X, prediction, partial);
  Predictions rows{Kokkos::create_mirror_view(Kokkos::HostSpace(), prediction),
                   Kokkos::create_mirror_view(Kokkos::HostSpace(), partial)};
  Kokkos::deep_copy(rows.prediction, prediction);
  for (std::int64_t i = 0; i < n; ++i) {
    if (row_offset.extent(0) != 0) rows.prediction(i) += row_offset(i);
    if (options.response)
      rows.prediction(i) = gam_response(model.options.family, rows.prediction(i));
  }
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(rows.prediction(i)))
      throw input_error("'" + input_path + "': the prediction for row " +
                        std::to_string(first_row + i) +
                        " of /X is not finite (a covariate far outside the model's training "
                        "range, extrapolated linearly, overflows)");
  Kokkos::deep_copy(rows.partial, partial);
  return rows;
}

// /prediction (and /partial_effects): every process its own rows.
void write_predictions(hdf5::OutputFile& output, const Predictions& rows,
                       const PredictionPlan& plan, bool partial_effects) {
  output.create_dataset<double>("/prediction", {std::size_t(plan.rows)});
  output.write_rows("/prediction", plan.block.first, rows.prediction);
  if (!partial_effects) return;
  output.create_dataset<double>("/partial_effects",
                                {std::size_t(plan.rows), std::size_t(plan.covariates)});
  output.write_rows("/partial_effects", plan.block.first, rows.partial);
}

void write_prediction_attributes(hdf5::OutputFile& output, const GamModel& model,
                                 const std::string& model_path, const std::string& input_path,
                                 const GamPredictFileOptions& options) {
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "model", model_path);
  output.write_attribute("/", "input", input_path);
  const bool gaussian = model.options.family == GamFamily::gaussian;
  output.write_attribute(
      "/", "scale",
      gaussian           ? "response (= link)"
      : options.response ? (model.options.family == GamFamily::binomial ? "response (probability)"
                                                                        : "response (mean)")
                         : "link (log-odds for binomial, log mean for poisson)");
  if (model.row_offset) output.write_attribute("/", "offset", options.offset);
}

// A model fitted with per-row offsets needs the new rows' (--offset: a
// dataset [n] of the input, or one number for all rows, 0 giving what
// mboost's predict(newdata) gives: the learners' sum and no offset); other
// models take none. This process's rows; empty where none.
hdf5::HostArray<double, 1> read_row_offset(const GamModel& model, const std::string& model_path,
                                           const hdf5::InputFile& input,
                                           const GamPredictFileOptions& options,
                                           const PredictionPlan& plan) {
  hdf5::HostArray<double, 1> offset;
  if (!model.row_offset) {
    if (!options.offset.empty())
      throw input_error("'" + model_path +
                        "': the model was fitted without per-row offsets; --offset is for "
                        "models fitted with gam fit --offset /DATASET");
    return offset;
  }
  if (options.offset.empty())
    throw input_error("'" + model_path +
                      "': the model was fitted with per-row offsets (offset_type per_row): "
                      "give the new rows' with --offset /DATASET (or --offset 0 for the "
                      "learners' sum alone, as mboost's predict(newdata))");
  offset = hdf5::HostArray<double, 1>("offset", plan.block.count);
  if (options.offset.front() != '/') {
    char* end = nullptr;
    const double value = std::strtod(options.offset.c_str(), &end);
    if (end == options.offset.c_str() || *end != '\0' || !std::isfinite(value))
      throw input_error("--offset '" + options.offset +
                        "': neither a finite number nor a dataset (/NAME)");
    Kokkos::deep_copy(offset, value);
    return offset;
  }
  if (input.shape(options.offset).size() != 1)
    throw input_error("'" + input.path() + "': dataset " + options.offset + " must be [n]");
  hdf5::require_matching_extent(input, "/X", 0, options.offset, 0);
  hdf5::ReadRequirements requirements;
  requirements.finite = true;
  return input.read_rows<double, 1>(options.offset, plan.block.first, plan.block.count,
                                    requirements);
}

}  // namespace

std::int64_t predict_gam_file(const std::string& model_path, const std::string& input_path,
                              const std::string& output_path, bool partial_effects) {
  return predict_gam_file(single_process(), model_path, input_path, output_path, partial_effects);
}

std::int64_t predict_gam_file(const ProcessGroup& group, const std::string& model_path,
                              const std::string& input_path, const std::string& output_path,
                              bool partial_effects) {
  GamPredictFileOptions options;
  options.partial_effects = partial_effects;
  return predict_gam_file(group, model_path, input_path, output_path, options);
}

std::int64_t predict_gam_file(const ProcessGroup& group, const std::string& model_path,
                              const std::string& input_path, const std::string& output_path,
                              const GamPredictFileOptions& options) {
  const bool partial_effects = options.partial_effects;
  GamModel model;
  std::optional<hdf5::InputFile> input;
  const PredictionPlan plan = agreed(group, [&] {
    model = read_gam_model(model_path);
    input.emplace(input_path);
    return plan_prediction(group, model, model_path, *input, output_path, partial_effects);
  });
  // Every process must split the same rows; the attributes name rank 0's paths.
  agreed(group, [&] {
    impl::require_same_input(group, input->path(),
                             "/X [" + std::to_string(plan.rows) + ", " +
                                 std::to_string(plan.covariates) + "]");
  });
  std::string paths[] = {model_path, input_path};
  for (auto& path : paths) group.broadcast(path);
  const auto output = group.create_output(output_path);  // before any work: the target is writable

  const Predictions rows = agreed(group, [&] {
    hdf5::ReadRequirements requirements;
    requirements.finite = true;
    const auto X =
        input->read_rows<double, 2>("/X", plan.block.first, plan.block.count, requirements);
    const auto offset = read_row_offset(model, model_path, *input, options, plan);
    return predict_rows(model, X, offset, options, input_path, plan.block.first);
  });
  agreed(group, [&] {
    write_predictions(*output, rows, plan, partial_effects);
    write_prediction_attributes(*output, model, paths[0], paths[1], options);
  });
  agreed(group, [&] { output->commit(); });
  return plan.rows;
}

}  // namespace kpl
