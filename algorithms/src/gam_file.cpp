#include <kpl/config.hpp>
#include <kpl/gam_file.hpp>
#include <kpl/impl/nnls_file_group.hpp>
#include <kpl/impl/portable_random.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace kpl {

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Memory = Space::memory_space;

// Runs `function`; a kpl::input_error it raises gets the input file's name in front.
template <class Function>
auto with_file_context(const std::string& path, Function&& function) {
  try {
    return function();
  } catch (const input_error& error) {
    throw input_error(path + ": " + error.what());
  }
}

// X as read, in the fit's precision, moved to the fit's memory.
template <class T>
Kokkos::View<T**, Kokkos::LayoutRight, Memory> to_device(const hdf5::HostArray<T, 2>& host) {
  using Device = Kokkos::View<T**, Kokkos::LayoutRight, Memory>;
  // On host backends the rows as read are already what the fit takes: a copy
  // would cost a second X and the page faults of its first touch.
  if constexpr (std::is_same_v<Device, hdf5::HostArray<T, 2>>) {
    return host;
  } else {
    Device device(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::gam::X"), host.extent(0),
                  host.extent(1));
    Kokkos::deep_copy(device, host);
    return device;
  }
}

// What the fit requires of /X, /y: finite values; an empty X is read, and
// fit_gam explains what it lacks.
hdf5::ReadRequirements gam_read_requirements() {
  hdf5::ReadRequirements requirements;
  requirements.finite = true;
  requirements.allow_empty = true;
  return requirements;
}

// Whether /X goes from the file straight into device memory (double X in
// memory the host cannot reach): no host copy of the whole is made then,
// only two blocks of x_block_bytes.
constexpr std::size_t x_block_bytes = std::size_t(8) << 20;
template <class T>
constexpr bool x_read_to_device() {
  return std::is_same_v<T, double> &&
         !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible;
}

// This process's rows of /X in the fit's precision, in the fit's memory.
template <class T>
Kokkos::View<T**, Kokkos::LayoutRight, Memory> read_X(const hdf5::InputFile& input,
                                                      RowBlock block,
                                                      hdf5::ReadRequirements requirements) {
  if constexpr (x_read_to_device<T>()) {
    Kokkos::View<double**, Kokkos::LayoutRight, Memory> X(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::gam::X"), block.count,
        input.shape("/X")[1]);
    input.read_rows_to(Space(), "/X", block.first, X, requirements, x_block_bytes);
    return X;
  } else {
    // In float, the reader refuses a value beyond float's range (or one it
    // would flush to zero that matters) and names it.
    return to_device<T>(input.read_rows<T, 2>("/X", block.first, block.count, requirements));
  }
}

template <class T>
Kokkos::View<T*, Memory> to_device(const hdf5::HostArray<double, 1>& host) {
  Kokkos::View<T*, Memory> device(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::gam::y"),
                                  host.extent(0));
  auto mirror = Kokkos::create_mirror_view(device);
  for (std::size_t i = 0; i < host.extent(0); ++i) mirror(i) = T(host(i));
  Kokkos::deep_copy(device, mirror);
  return device;
}

// This process's /y as a float fit takes it, held in double (exactly): the
// reader refuses (and names) a response beyond float's range, which the
// conversion would otherwise make infinite.
hdf5::HostArray<double, 1> read_y_in_float(const hdf5::InputFile& input, RowBlock block) {
  const auto in_float =
      input.read_rows<float, 1>("/y", block.first, block.count, gam_read_requirements());
  hdf5::HostArray<double, 1> y(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::gam::y"),
                               in_float.extent(0));
  for (std::size_t i = 0; i < in_float.extent(0); ++i) y(i) = in_float(i);
  return y;
}

std::string penalty_name(int differences) { return differences == 0 ? "ridge" : "pspline"; }

// A fit whose risk or coefficients stopped being finite (a Poisson mean
// exp(f) past the largest double, say) is refused: no model is written.
// Resamples or folds of the choice of mstop (0: none).
int gam_resamples(const GamFitFileOptions& options) {
  return options.cv_folds > 0 ? options.cv_folds : options.cv_bootstrap;
}
std::string gam_resampling_name(const GamFitFileOptions& options) {
  return options.cv_folds > 0      ? "kfold"
         : options.cv_bootstrap > 0 ? "bootstrap"
                                    : "given: " + options.cv_weights_path + ":" +
                                          options.cv_weights_dataset;
}

// The model's datasets, and the cross-validation's risks when it ran.
void write_model_datasets(const GamModel& model, const GamCrossValidation& cv,
                          const GamFitFileOptions& options, hdf5::OutputFile& output) {
  const std::int64_t p = model.covariates, k = model.options.basis_size;
  hdf5::HostArray<std::int64_t, 1> selected("selected", model.selected.size());
  std::copy(model.selected.begin(), model.selected.end(), selected.data());
  output.write("/selected", selected);
  const auto write_vector = [&](const std::string& name, const std::vector<double>& values) {
    hdf5::HostArray<double, 1> array(name, values.size());
    std::copy(values.begin(), values.end(), array.data());
    output.write(name, array);
  };
  write_vector("/risk", model.risk);
  write_vector("/varimp", model.varimp);
  write_vector("/offset", {model.offset});
  write_vector("/lambda", model.lambda);
  write_vector("/df", model.df);
  hdf5::HostArray<double, 2> coefficients("/coefficients", p, k);
  std::copy(model.coefficients.begin(), model.coefficients.end(), coefficients.data());
  output.write("/coefficients", coefficients);
  hdf5::HostArray<double, 2> boundary("/boundary", p, 2);
  for (std::int64_t j = 0; j < p; ++j) {
    boundary(j, 0) = model.meshes[j].lower;
    boundary(j, 1) = model.meshes[j].upper;
  }
  output.write("/boundary", boundary);
  if (cv.folds > 0) {
    const int range = options.gam.mstop;
    hdf5::HostArray<double, 2> cv_risk("/cv_risk", cv.folds, range + 1);
    std::copy(cv.risk.begin(), cv.risk.end(), cv_risk.data());
    output.write("/cv_risk", cv_risk);
    output.write_attribute("/", "cv_folds", std::int64_t(cv.folds));
    output.write_attribute("/", "cv_type", gam_resampling_name(options));
    output.write_attribute("/", "cv_seed", std::int64_t(options.cv_seed));
    output.write_attribute("/", "cv_mstop_range", std::int64_t(range));
    output.write_attribute("/", "cv_mstop", std::int64_t(cv.best_mstop));
  }
}

// The fit's settings, provenance and timings as root attributes.
template <class T>
void write_fit_attributes(const GamModel& model, const GamFitFileOptions& options,
                          const GamFitSummary& summary, const std::string& input_path,
                          hdf5::OutputFile& output) {
  const GamOptions& gam = model.options;
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "input", input_path);
  output.write_attribute("/", "observations", std::int64_t(summary.observations));
  output.write_attribute("/", "basis_size", std::int64_t(gam.basis_size));
  output.write_attribute("/", "degree", std::int64_t(gam.degree));
  output.write_attribute("/", "penalty", penalty_name(gam.differences));
  output.write_attribute("/", "differences", std::int64_t(gam.differences));
  output.write_attribute("/", "df", gam.df);
  output.write_attribute("/", "df_definition", to_string(gam.df_definition));
  output.write_attribute("/", "nu", gam.nu);
  output.write_attribute("/", "mstop", std::int64_t(gam.mstop));
  output.write_attribute("/", "family", to_string(gam.family));
  output.write_attribute("/", "offset_type",
                         model.row_offset ? "per_row" : gam.offset ? "fixed" : "mean");
  output.write_attribute("/", "weights", options.weights.empty() ? "none" : options.weights);
  if (model.row_offset) output.write_attribute("/", "offset_dataset", options.offset);
  output.write_attribute("/", "mode", to_string(gam.mode));
  output.write_attribute("/", "basis", to_string(gam.basis));
  output.write_attribute("/", "gemv", std::string(to_string(gam.gemv.strategy)));
  output.write_attribute("/", "precision", std::is_same_v<T, float> ? "float" : "double");
  output.write_attribute("/", "execution_space", Space::name());
  output.write_attribute("/", "seconds_basis", summary.timings.basis_seconds);
  output.write_attribute("/", "seconds_penalty", summary.timings.penalty_seconds);
  output.write_attribute("/", "seconds_boosting", summary.timings.boosting_seconds);
  output.write_attribute("/", "description",
                         "Boosted GAM (mboost gamboost/bbs model): prediction = offset + sum_j "
                         "B_j(x_j) coefficients[j] (+ each row's own offset where offset_type is "
                         "per_row); /selected 0-based covariate per iteration; /risk training "
                         "risk sum w loss, first at the offset; /varimp mboost's varimp");
}

// The timings of the slowest process (the attributes are the same on all).
GamTimings slowest(const ProcessGroup& group, GamTimings timings) {
  double seconds[] = {timings.basis_seconds, timings.penalty_seconds, timings.boosting_seconds,
                      timings.reduction_seconds, double(timings.device_bytes)};
  group.max(seconds, 5);
  return {seconds[0], seconds[1], seconds[2], seconds[3], std::int64_t(seconds[4])};
}

// Per-row inputs beside /X and /y (each empty when not asked for): this
// process's rows.
struct GamRowInputs {
  hdf5::HostArray<double, 1> weights, offset;
  hdf5::HostArray<double, 2> resample_weights;  // [rows, B]
};

Kokkos::View<const double*, Memory> to_device_or_empty(const hdf5::HostArray<double, 1>& host) {
  if (host.extent(0) == 0) return {};
  return Kokkos::create_mirror_view_and_copy(Memory(), host);
}

// Cross-validation (if asked for) and the fit over the group's rows; every
// process ends with the same model and summary.
template <class XView, class YView>
GamModel fit_rows(const ProcessGroup& group, const XView& X, const YView& y,
                  const GamRowInputs& inputs, const std::string& input_path,
                  const GamFitFileOptions& options, GamCrossValidation& cv,
                  GamFitSummary& summary) {
  const Space space;
  summary.observations = X.extent(0);
  group.sum(&summary.observations, 1);
  summary.covariates = X.extent(1);
  GamOptions gam = options.gam;
  GamObservations<Memory> observations;
  agreed(group, [&] {
    observations.weights = to_device_or_empty(inputs.weights);
    observations.offset = to_device_or_empty(inputs.offset);
  });
  if (gam_resamples(options) > 0 || !options.cv_weights_path.empty()) {
    Kokkos::Timer timer;
    cv = with_file_context(input_path, [&] {
      if (options.cv_folds > 0)
        return cross_validate_gam(space, X, y, observations, gam, options.cv_folds,
                                  options.cv_seed, group);
      if (options.cv_bootstrap > 0)
        return bootstrap_gam(space, X, y, observations, gam, options.cv_bootstrap,
                             options.cv_seed, group);
      return resample_gam(space, X, y, observations, gam, inputs.resample_weights, group);
    });
    summary.cv_seconds = timer.seconds();
    gam.mstop = cv.best_mstop;
  }
  GamModel model = with_file_context(input_path, [&] {
    return fit_gam(space, X, y, observations, gam, group, &summary.timings, options.progress);
  });
  summary.mstop = gam.mstop;
  summary.final_risk = model.risk.back();
  require_finite_gam_fit(model, cv.risk, input_path);
  return model;
}

template <class T>
GamFitSummary fit_in_precision(const ProcessGroup& group, const hdf5::InputFile& input,
                               RowBlock block, const hdf5::HostArray<double, 1>& host_y,
                               const GamRowInputs& inputs, const std::string& input_path,
                               hdf5::OutputFile& output, const GamFitFileOptions& options) {
  const auto requirements = gam_read_requirements();
  decltype(read_X<T>(input, block, requirements)) X;
  decltype(to_device<T>(host_y)) y;
  agreed(group, [&] {
    X = read_X<T>(input, block, requirements);
    y = to_device<T>(host_y);
  });
  GamFitSummary summary;
  GamCrossValidation cv;
  const GamModel model = agreed(
      group, [&] { return fit_rows(group, X, y, inputs, input_path, options, cv, summary); });
  summary.timings = slowest(group, summary.timings);
  group.max(&summary.cv_seconds, 1);
  agreed(group, [&] {
    write_model_datasets(model, cv, options, output);
    write_fit_attributes<T>(model, options, summary, input_path, output);
  });
  agreed(group, [&] { output.commit(); });
  return summary;
}

// This process's rows of a per-row dataset [n] (weights or offsets) of
// `input`: input_error naming the file, the dataset and the first bad row
// (0-based over all rows; the lowest rank's is reported) for a weight that
// is negative or not finite, an offset that is not finite, or weights all 0.
hdf5::HostArray<double, 1> read_row_values(const ProcessGroup& group, const hdf5::InputFile& input,
                                           const std::string& dataset, RowBlock block,
                                           bool weights) {
  const std::string what = weights ? "weight" : "offset";
  hdf5::HostArray<double, 1> values;
  double positive = 0;
  agreed(group, [&] {
    values = input.read_rows<double, 1>(dataset, block.first, block.count);
    for (std::int64_t i = 0; i < block.count; ++i) {
      const double value = values(i);
      if (!std::isfinite(value) || (weights && value < 0))
        throw input_error("'" + input.path() + "': dataset " + dataset + ": " + what + " " +
                          std::to_string(block.first + i) + " (0-based row) is " +
                          format_number(value) +
                          (weights ? "; weights must be finite and not negative"
                                   : "; offsets must be finite"));
      positive += value > 0;
    }
  });
  group.sum(&positive, 1);
  if (weights && positive == 0)
    throw input_error("'" + input.path() + "': dataset " + dataset +
                      ": every weight is 0; nothing to fit");
  return values;
}

// FILE:DATASET of --cv-weights: this process's rows of the [n, B] resample
// weights, checked like weights, B the same everywhere. Every resample needs
// a row to fit (weight > 0 in its column) and one held out (0 in its column,
// of positive --weights): the message names the file, the dataset and the
// 0-based column, which the library's own check cannot.
hdf5::HostArray<double, 2> read_resample_weights(const ProcessGroup& group,
                                                 const GamFitFileOptions& options, RowBlock block,
                                                 std::int64_t n,
                                                 const hdf5::HostArray<double, 1>& weights) {
  hdf5::HostArray<double, 2> counts;
  std::string path;
  const std::string& dataset = options.cv_weights_dataset;
  agreed(group, [&] {
    const hdf5::InputFile file(options.cv_weights_path);
    path = file.path();
    const auto shape = file.shape(dataset);
    if (shape.size() != 2 || std::int64_t(shape[0]) != n || shape[1] < 1)
      throw input_error("'" + path + "': dataset " + dataset + " must be [n, B] with n = " +
                        std::to_string(n) + " rows of /X and B >= 1 resamples");
    counts = file.read_rows<double, 2>(dataset, block.first, block.count);
    for (std::int64_t i = 0; i < block.count; ++i)
      for (std::size_t b = 0; b < counts.extent(1); ++b)
        if (!std::isfinite(counts(i, b)) || counts(i, b) < 0)
          throw input_error("'" + path + "': dataset " + dataset + ": value (" +
                            std::to_string(block.first + i) + ", " + std::to_string(b) +
                            ") is " + format_number(counts(i, b)) +
                            "; resample weights must be finite and not negative");
  });
  // [fitted of column 0.., held out of column 0..]; the file is the same on
  // every process, so is B.
  const std::size_t resamples = counts.extent(1);
  std::vector<double> sums(2 * resamples, 0.0);
  for (std::int64_t i = 0; i < block.count; ++i)
    for (std::size_t b = 0; b < resamples; ++b) {
      sums[b] += counts(i, b);
      if (counts(i, b) == 0) sums[resamples + b] += weights.extent(0) != 0 ? weights(i) : 1.0;
    }
  group.sum(sums.data(), static_cast<std::int64_t>(sums.size()));
  for (std::size_t b = 0; b < resamples; ++b)
    if (!(sums[b] > 0) || !(sums[resamples + b] > 0))
      throw input_error("'" + path + "': dataset " + dataset + ": resample " +
                        std::to_string(b) + " (0-based column) " +
                        (sums[b] > 0 ? "leaves no row of positive weight out"
                                     : "has no row of positive weight to fit"));
  return counts;
}

// The bytes of this process's rows of a dataset (all of it on one process);
// input_error if the whole dataset's count overflows.
std::int64_t block_bytes(const hdf5::InputFile& input, const std::string& dataset,
                         std::size_t element_size, RowBlock block, std::int64_t rows) {
  const std::int64_t whole = input.bytes(dataset, element_size);
  return block.count == rows ? whole : whole / rows * block.count;
}

// Checks the input's datasets, the output's target and the resources this
// process's rows need; returns its rows.
RowBlock plan_fit(const ProcessGroup& group, const hdf5::InputFile& input,
                  const std::string& output_path, const GamFitFileOptions& options) {
  const std::string& input_path = input.path();
  const auto shape = input.shape("/X");
  if (shape.size() != 2)
    throw input_error("'" + input_path + "': dataset /X must be [n, p], not of rank " +
                      std::to_string(shape.size()));
  if (input.shape("/y").size() != 1)
    throw input_error("'" + input_path + "': dataset /y must be [n]");
  hdf5::require_matching_extent(input, "/X", 0, "/y", 0);
  for (const auto& dataset : {options.weights, options.offset}) {
    if (dataset.empty()) continue;
    if (input.shape(dataset).size() != 1)
      throw input_error("'" + input_path + "': dataset " + dataset + " must be [n]");
    hdf5::require_matching_extent(input, "/X", 0, dataset, 0);
  }
  hdf5::require_distinct(output_path, {input_path});
  hdf5::require_writable_target(output_path);
  const std::int64_t n = shape[0], p = shape[1];
  const RowBlock block = row_block(group, n);
  const std::int64_t element = options.single_precision ? 4 : 8;
  const auto bytes = [&](const std::string& dataset, std::size_t size) {
    return block_bytes(input, dataset, size, block, n);
  };
  GamOptions resolved = options.gam;
  resolved.basis = gam_basis_for<Space>(options.gam.basis);
  ResourceNeeds needs;
  const std::int64_t staging = 2 * std::int64_t(x_block_bytes);
  needs.host_bytes =
      (options.single_precision ? x_read_to_device<float>() : x_read_to_device<double>())
          ? checked_sum({staging, bytes("/y", 16)})
          : checked_sum({bytes("/X", element), bytes("/y", 16)});
  needs.device_bytes =
      checked_sum({bytes("/X", element), bytes("/y", element),
                   gam_device_bytes(block.count, p, resolved, element, gam_resamples(options))});
  needs.disk_bytes = checked_sum(
      {checked_bytes({std::uint64_t(p), std::uint64_t(options.gam.basis_size) + 4}, 8),
       checked_bytes(
           {std::uint64_t(options.gam.mstop) + 1, std::uint64_t(gam_resamples(options)) + 2}, 8),
       std::int64_t(1) << 16});
  needs.disk_directory = hdf5::directory_of(output_path);
  require_resources("kpl gam fit on '" + input_path + "'", needs);
  return block;
}

}  // namespace

void require_finite_gam_fit(const GamModel& model, const std::vector<double>& cv_risk,
                            const std::string& context) {
  for (std::size_t m = 0; m < model.risk.size(); ++m)
    if (!std::isfinite(model.risk[m]))
      throw input_error(context + ": the fit diverged: the training risk is " +
                        std::to_string(model.risk[m]) + " at iteration " + std::to_string(m) +
                        " (" + to_string(model.options.family) +
                        " family); y's scale may overflow the link");
  for (std::size_t e = 0; e < model.coefficients.size(); ++e)
    if (!std::isfinite(model.coefficients[e]))
      throw input_error(context + ": the fit diverged: coefficient " +
                        std::to_string(e % model.options.basis_size) + " of covariate " +
                        std::to_string(e / model.options.basis_size) + " is not finite");
  if (!std::isfinite(model.offset))
    throw input_error(context + ": the offset (y's mean on the link scale) is not finite");
  for (std::size_t e = 0; e < cv_risk.size(); ++e)
    if (!std::isfinite(cv_risk[e]))
      throw input_error(context +
                        ": the cross-validation diverged: a fold's out-of-fold risk "
                        "is not finite");
}

GamSimulatedData simulate_gam(const GamSimulation& simulation) {
  const std::int64_t n = simulation.observations, p = simulation.covariates;
  if (n < 1 || p < 1 || simulation.informative < 0 || simulation.informative > p ||
      !(simulation.noise_variance >= 0))
    throw std::invalid_argument(
        "kpl::simulate_gam: need n >= 1, p >= 1, 0 <= informative <= p "
        "and a non-negative noise variance");
  impl::PortableRandom random(simulation.seed);
  std::vector<std::int64_t> order(p);
  std::iota(order.begin(), order.end(), 0);
  random.shuffle(order.begin(), order.end());
  GamSimulatedData data;
  data.informative.assign(order.begin(), order.begin() + simulation.informative);
  std::sort(data.informative.begin(), data.informative.end());
  data.X = hdf5::HostArray<double, 2>("/X", n, p);
  data.y = hdf5::HostArray<double, 1>("/y", n);
  const double noise_deviation = std::sqrt(simulation.noise_variance);
  const double two_pi = 2 * std::acos(-1.0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < p; ++j) data.X(i, j) = random.uniform();
    double value = 7;
    for (auto j : data.informative) value += 10 * std::sin(two_pi * data.X(i, j));
    data.y(i) = random.normal(value, noise_deviation);
  }
  return data;
}

void simulate_gam_file(const GamSimulation& simulation, const std::string& output_path) {
  hdf5::require_writable_target(output_path);
  const std::int64_t bytes = checked_bytes(
      {std::uint64_t(simulation.observations), std::uint64_t(simulation.covariates) + 1}, 8);
  ResourceNeeds needs;
  needs.host_bytes = bytes;
  needs.disk_bytes = checked_sum({bytes, std::int64_t(1) << 16});
  needs.disk_directory = hdf5::directory_of(output_path);
  require_resources("kpl simulate gam", needs);
  hdf5::OutputFile output(output_path);
  const auto data = simulate_gam(simulation);
  output.write("/X", data.X);
  output.write("/y", data.y);
  hdf5::HostArray<std::int64_t, 1> informative("/informative", data.informative.size());
  std::copy(data.informative.begin(), data.informative.end(), informative.data());
  output.write("/informative", informative);
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "generator", "kpl simulate gam");
  output.write_attribute("/", "seed", std::int64_t(simulation.seed));
  output.write_attribute("/", "noise_variance", simulation.noise_variance);
  output.write_attribute("/", "description",
                         "Sieminski & Lee (2023) 4.1: x_j ~ U(0, 1); y = 7 + sum over /informative "
                         "of 10 sin(2 pi x_j) + N(0, noise_variance)");
  output.commit();
}

GamFitSummary fit_gam_file(const std::string& input_path, const std::string& output_path,
                           const GamFitFileOptions& options) {
  return fit_gam_file(single_process(), input_path, output_path, options);
}

GamFitSummary fit_gam_file(const ProcessGroup& group, const std::string& input_path,
                           const std::string& output_path, const GamFitFileOptions& options) {
  std::optional<hdf5::InputFile> input;
  const RowBlock block = agreed(group, [&] {
    input.emplace(input_path);
    return plan_fit(group, *input, output_path, options);
  });
  // Every process must split the same rows; the attributes name rank 0's path.
  agreed(group, [&] {
    const auto shape = input->shape("/X");
    impl::require_same_input(group, input->path(),
                             "/X [" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + "]");
  });
  std::string model_input_path = input_path;
  group.broadcast(model_input_path);
  const auto output = group.create_output(output_path);  // before any work: the target is writable

  hdf5::HostArray<double, 1> y;
  agreed(group, [&] {
    y = options.single_precision
            ? read_y_in_float(*input, block)
            : input->read_rows<double, 1>("/y", block.first, block.count, gam_read_requirements());
  });
  GamRowInputs inputs;
  if (!options.weights.empty())
    inputs.weights = read_row_values(group, *input, options.weights, block, true);
  if (!options.offset.empty())
    inputs.offset = read_row_values(group, *input, options.offset, block, false);
  if (!options.cv_weights_path.empty())
    inputs.resample_weights =
        read_resample_weights(group, options, block, std::int64_t(input->shape("/X")[0]),
                              inputs.weights);
  return options.single_precision ? fit_in_precision<float>(group, *input, block, y, inputs,
                                                            model_input_path, *output, options)
                                  : fit_in_precision<double>(group, *input, block, y, inputs,
                                                             model_input_path, *output, options);
}

// The value of a string attribute that must name one of `values`.
template <class Enum>
Enum named_attribute(const hdf5::InputFile& file, const std::string& name,
                     std::initializer_list<Enum> values) {
  const std::string text = file.read_string_attribute("/", name);
  std::string allowed;
  for (const Enum value : values) {
    if (to_string(value) == text) return value;
    allowed += (allowed.empty() ? "" : ", ") + to_string(value);
  }
  throw input_error("'" + file.path() + "': attribute '" + name + "' of / is '" + text +
                    "', not one kpl knows (" + allowed + "); not a kpl gam model");
}

// An integer attribute within [low, high].
int bounded_attribute(const hdf5::InputFile& file, const std::string& name, std::int64_t low,
                      std::int64_t high) {
  const std::int64_t value = file.read_integer_attribute("/", name);
  if (value < low || value > high)
    throw input_error("'" + file.path() + "': attribute '" + name + "' of / is " +
                      std::to_string(value) + ", outside [" + std::to_string(low) + ", " +
                      std::to_string(high) + "]");
  return static_cast<int>(value);
}

double positive_attribute(const hdf5::InputFile& file, const std::string& name) {
  const double value = file.read_number_attribute("/", name);
  if (!(value > 0) || !std::isfinite(value))
    throw input_error("'" + file.path() + "': attribute '" + name + "' of / is " +
                      std::to_string(value) + "; a positive finite number is expected");
  return value;
}

GamModel read_gam_model(const std::string& model_path) {
  const hdf5::InputFile file(model_path);
  GamModel model;
  auto& options = model.options;
  options.degree = bounded_attribute(file, "degree", 1, bspline_max_degree);
  options.basis_size = bounded_attribute(file, "basis_size", options.degree + 2, 256);
  options.differences = bounded_attribute(file, "differences", 0, 3);
  const std::string penalty = file.read_string_attribute("/", "penalty");
  if (penalty != penalty_name(options.differences))
    throw input_error("'" + model_path + "': attribute 'penalty' of / is '" + penalty +
                      "' with difference order " + std::to_string(options.differences) +
                      " (pspline needs 1 to 3, ridge 0); not a kpl gam model");
  options.df = positive_attribute(file, "df");
  options.df_definition =
      named_attribute(file, "df_definition", {DfDefinition::trace, DfDefinition::trace_2s_sts});
  options.nu = positive_attribute(file, "nu");
  options.mstop = bounded_attribute(file, "mstop", 0, std::numeric_limits<int>::max());
  options.family = named_attribute(file, "family",
                                   {GamFamily::gaussian, GamFamily::binomial, GamFamily::poisson});
  options.mode = named_attribute(file, "mode", {GamMode::direct, GamMode::gram});
  options.basis = named_attribute(
      file, "basis", {GamBasis::compact, GamBasis::dense, GamBasis::evaluated, GamBasis::automatic});
  model.observations = file.read_integer_attribute("/", "observations");
  const auto coefficients = file.read<double, 2>("/coefficients", {true, false});
  const auto boundary = file.read<double, 2>("/boundary", {true, false});
  const auto offset = file.read<double, 1>("/offset", {true, false});
  const std::int64_t p = coefficients.extent(0);
  if (static_cast<int>(coefficients.extent(1)) != options.basis_size ||
      boundary.extent(0) != coefficients.extent(0) || boundary.extent(1) != 2 ||
      offset.extent(0) != 1 || options.degree < 1 || options.degree > bspline_max_degree ||
      options.basis_size < options.degree + 2)
    throw input_error(model_path +
                      ": not a kpl gam model (/coefficients [p, basis_size], "
                      "/boundary [p, 2] and /offset [1] expected)");
  model.covariates = p;
  model.offset = offset(0);
  // Models written before offset_type existed had the family's offset.
  if (file.has_attribute("/", "offset_type")) {
    const std::string type = file.read_string_attribute("/", "offset_type");
    if (type != "mean" && type != "fixed" && type != "per_row")
      throw input_error("'" + model_path + "': attribute 'offset_type' of / is '" + type +
                        "', not one kpl knows (mean, fixed, per_row); not a kpl gam model");
    model.row_offset = type == "per_row";
  }
  model.coefficients.assign(coefficients.data(), coefficients.data() + coefficients.size());
  model.meshes.resize(p);
  for (std::int64_t j = 0; j < p; ++j) {
    model.meshes[j] =
        BsplineMesh{boundary(j, 0), boundary(j, 1), options.basis_size, options.degree};
    if (!(boundary(j, 1) > boundary(j, 0)))
      throw input_error(model_path + ": /boundary row " + std::to_string(j) + " is empty");
  }
  return model;
}

}  // namespace kpl
