// kpl._kpl.gam_fit, gam_load and GamModel: kpl::fit_gam and kpl::predict_gam
// on the default execution space, as `kpl gam fit` and `kpl gam predict` run
// them (gam_file.cpp, gam_predict_file.cpp; not changed here).
#include "arrays.hpp"
#include "bindings.hpp"
#include "kokkos_thread.hpp"

#include <kpl/gam.hpp>
#include <kpl/gam_file.hpp>

#include <pybind11/stl.h>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kpl::python {
namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Memory = Space::memory_space;

// A fitted model and what `kpl gam fit` writes beside it.
struct FittedGam {
  GamModel model;
  std::vector<double> cv_risk;  // [cv_folds, cv_mstop_range + 1]
  int cv_folds = 0, cv_mstop_range = 0;
  GamTimings timings;
};

// The command line's options (gam_fit_command.cpp), checked as it checks them.
struct GamArguments {
  int basis_size, degree, differences, mstop, gram_refresh;
  std::string penalty, df_definition, family, mode, basis;
  std::optional<std::string> gemv;
  double df, nu;
  std::optional<int> cv;
};

template <class Enum>
Enum choose(const char* option, const std::string& name, std::initializer_list<Enum> values) {
  std::string allowed;
  for (const Enum value : values) {
    if (std::string(to_string(value)) == name) return value;
    allowed += (allowed.empty() ? "'" : ", '") + std::string(to_string(value)) + "'";
  }
  throw std::invalid_argument(std::string("kpl.gam.fit: ") + option + " must be one of " + allowed +
                              ", not '" + name + "'");
}

template <class Number>
void require_range(const char* option, Number value, Number low, Number high) {
  if (!(value >= low && value <= high))
    throw std::invalid_argument(
        std::string("kpl.gam.fit: ") + option + " " + format_number(double(value)) +
        " is outside [" + format_number(double(low)) + ", " + format_number(double(high)) + "]");
}

GamOptions gam_options(const GamArguments& arguments) {
  require_range("basis_size", arguments.basis_size, 3, 256);
  require_range("degree", arguments.degree, 1, bspline_max_degree);
  require_range("differences", arguments.differences, 1, 3);
  require_range("df", arguments.df, 1e-6, 256.0);
  require_range("nu", arguments.nu, 1e-12, 1.0);
  require_range("mstop", arguments.mstop, 0, 10000000);
  require_range("gram_refresh", arguments.gram_refresh, 1, 10000000);
  if (arguments.cv) require_range("cv", *arguments.cv, 2, 1 << 20);
  if (arguments.penalty != "pspline" && arguments.penalty != "ridge")
    throw std::invalid_argument("kpl.gam.fit: penalty must be 'pspline' or 'ridge', not '" +
                                arguments.penalty + "'");
  GamOptions options;
  options.basis_size = arguments.basis_size;
  options.degree = arguments.degree;
  options.differences = arguments.penalty == "ridge" ? 0 : arguments.differences;
  options.df = arguments.df;
  options.df_definition = choose("df_definition", arguments.df_definition,
                                 {DfDefinition::trace, DfDefinition::trace_2s_sts});
  options.nu = arguments.nu;
  options.mstop = arguments.mstop;
  options.family = choose("family", arguments.family,
                          {GamFamily::gaussian, GamFamily::binomial, GamFamily::poisson});
  options.mode = choose("mode", arguments.mode, {GamMode::direct, GamMode::gram});
  options.basis =
      choose("basis", arguments.basis,
             {GamBasis::automatic, GamBasis::compact, GamBasis::dense, GamBasis::evaluated});
  options.gram_refresh = arguments.gram_refresh;
  if (arguments.gemv) {  // as --gemv: implies the dense basis
    options.basis = GamBasis::dense;
    options.gemv.strategy =
        choose("gemv", *arguments.gemv,
               {GemvStrategy::automatic, GemvStrategy::thread_per_row, GemvStrategy::team_per_dot,
                GemvStrategy::partial_rows, GemvStrategy::kokkos_kernels});
  }
  check_gam_options(options);
  return options;
}

template <class T>
FittedGam fit_typed(const py::array& X_array, const py::array& y_array, const GamOptions& options,
                    std::optional<int> folds, std::uint64_t seed) {
  const Argument x_argument{"kpl.gam.fit", "X"}, y_argument{"kpl.gam.fit", "y"};
  const auto X = contiguous<T>(X_array);
  const auto y = contiguous<T>(y_array);
  require_matching_extent(X, x_argument, 0, y, y_argument, 0);
  const HostData<T> x_data = host_data(X), y_data = host_data(y);
  return on_kokkos_thread([&] {
    require_finite(x_data, x_argument);
    require_finite(y_data, y_argument);
    const Space space;
    Kokkos::View<T**, Kokkos::LayoutRight, Memory> device_X(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::python::X"), x_data.shape[0],
        x_data.shape[1]);
    Kokkos::View<T*, Memory> device_y(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::python::y"), y_data.shape[0]);
    Kokkos::deep_copy(device_X, HostMatrix<const T>(x_data.data, x_data.shape[0], x_data.shape[1]));
    Kokkos::deep_copy(device_y, HostVector<const T>(y_data.data, y_data.shape[0]));
    FittedGam fitted;
    GamOptions used = options;
    if (folds) {
      const auto cv = cross_validate_gam(space, device_X, device_y, options, *folds, seed);
      fitted.cv_risk = cv.risk;
      fitted.cv_folds = cv.folds;
      fitted.cv_mstop_range = options.mstop;
      used.mstop = cv.best_mstop;
    }
    fitted.model = fit_gam(space, device_X, device_y, used, &fitted.timings);
    require_finite_gam_fit(fitted.model, fitted.cv_risk, "kpl.gam.fit");
    return fitted;
  });
}

FittedGam fit_binding(const py::array& X, const py::array& y, const GamArguments& arguments,
                      std::uint64_t cv_seed) {
  const Argument x_argument{"kpl.gam.fit", "X"}, y_argument{"kpl.gam.fit", "y"};
  require_rank(X, {2}, x_argument, "[n, p]");
  require_rank(y, {1}, y_argument, "[n]");
  const bool single = is_single(X, x_argument);
  if (single != is_single(y, y_argument))
    throw py::type_error("kpl.gam.fit: X and y must have the same dtype (X is " +
                         std::string(py::str(X.dtype())) + ", y " +
                         std::string(py::str(y.dtype())) + "); float32 fits in single precision");
  const GamOptions options = gam_options(arguments);
  return single ? fit_typed<float>(X, y, options, arguments.cv, cv_seed)
                : fit_typed<double>(X, y, options, arguments.cv, cv_seed);
}

// prediction [n] and, when asked, partial effects [n, p] (kpl::predict_gam),
// as `kpl gam predict`: a prediction that is not finite is an input_error.
template <class T>
py::object predict_typed(const GamModel& model, const py::array& X_array, bool partial_effects) {
  const Argument x_argument{"kpl.gam.Model.predict", "X"};
  const auto X = contiguous<T>(X_array);
  const HostData<T> x_data = host_data(X);
  const std::int64_t n = x_data.shape[0], p = x_data.shape[1];
  auto prediction = new_array<double>({n});
  auto partial = new_array<double>({partial_effects ? n : 0, p});
  const HostVector<double> prediction_host(prediction.mutable_data(), n);
  const HostMatrix<double> partial_host(partial.mutable_data(), partial_effects ? n : 0, p);
  on_kokkos_thread([&] {
    require_finite(x_data, x_argument);
    Kokkos::View<T**, Kokkos::LayoutRight, Memory> device_X(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::python::X"), n, p);
    Kokkos::deep_copy(device_X, HostMatrix<const T>(x_data.data, n, p));
    Kokkos::View<double*, Memory> device_prediction("kpl::python::prediction", n);
    Kokkos::View<double**, Kokkos::LayoutRight, Memory> device_partial(
        "kpl::python::partial_effects", partial_effects ? n : 0, p);
    predict_gam(Space{}, model, device_X, device_prediction, device_partial);
    Kokkos::deep_copy(prediction_host, device_prediction);
    Kokkos::deep_copy(partial_host, device_partial);
    for (std::int64_t i = 0; i < n; ++i)
      if (!std::isfinite(prediction_host(i)))
        throw input_error("kpl.gam.Model.predict: the prediction for row " + std::to_string(i) +
                          " of X is not finite (a covariate far outside the model's training "
                          "range, extrapolated linearly, overflows)");
    return 0;
  });
  if (!partial_effects) return std::move(prediction);
  return py::make_tuple(prediction, partial);
}

py::object predict_binding(const FittedGam& fitted, const py::array& X, bool partial_effects) {
  const Argument x_argument{"kpl.gam.Model.predict", "X"};
  if (fitted.model.row_offset)
    throw input_error(
        "kpl.gam.Model.predict: the model was fitted with per-row offsets, which new rows need "
        "too, and predict takes none: use `kpl gam predict --offset /NAME` (or --offset 0 for "
        "the learners' sum alone)");
  require_rank(X, {2}, x_argument, "[n, p]");
  if (X.shape(1) != fitted.model.covariates)
    throw input_error("kpl.gam.Model.predict: X has " + std::to_string(X.shape(1)) +
                      " covariates, the model " + std::to_string(fitted.model.covariates));
  return is_single(X, x_argument) ? predict_typed<float>(fitted.model, X, partial_effects)
                                  : predict_typed<double>(fitted.model, X, partial_effects);
}

template <class Value>
py::array_t<Value> array_of(const std::vector<Value>& values, std::vector<std::int64_t> shape) {
  auto array = new_array<Value>(std::move(shape));
  std::copy(values.begin(), values.end(), array.mutable_data());
  return array;
}

py::dict options_of(const GamModel& model) {
  const GamOptions& options = model.options;
  py::dict settings;
  settings["basis_size"] = options.basis_size;
  settings["degree"] = options.degree;
  settings["penalty"] = options.differences == 0 ? "ridge" : "pspline";
  settings["differences"] = options.differences;
  settings["df"] = options.df;
  settings["df_definition"] = to_string(options.df_definition);
  settings["nu"] = options.nu;
  settings["mstop"] = options.mstop;
  settings["family"] = to_string(options.family);
  settings["mode"] = to_string(options.mode);
  settings["basis"] = to_string(options.basis);
  settings["gemv"] = std::string(to_string(options.gemv.strategy));
  return settings;
}

void bind_model(py::module_& module) {
  using namespace pybind11::literals;
  py::class_<FittedGam>(module, "GamModel",
                        "A fitted boosted GAM (kpl::GamModel); from kpl.gam.fit or kpl.gam.load.")
      .def_property_readonly("offset", [](const FittedGam& f) { return f.model.offset; })
      .def_property_readonly("covariates", [](const FittedGam& f) { return f.model.covariates; })
      .def_property_readonly("observations",
                             [](const FittedGam& f) { return f.model.observations; })
      .def_property_readonly(
          "coefficients",
          [](const FittedGam& f) {
            return array_of(f.model.coefficients, {f.model.covariates, f.model.options.basis_size});
          })
      .def_property_readonly("lambda_",
                             [](const FittedGam& f) {
                               return array_of(f.model.lambda,
                                               {std::int64_t(f.model.lambda.size())});
                             })
      .def_property_readonly("df",
                             [](const FittedGam& f) {
                               return array_of(f.model.df, {std::int64_t(f.model.df.size())});
                             })
      .def_property_readonly(  // getattr(model, "lambda"): the name is a Python keyword
          "lambda",
          [](const FittedGam& f) {
            return array_of(f.model.lambda, {std::int64_t(f.model.lambda.size())});
          })
      .def_property_readonly("selected",
                             [](const FittedGam& f) {
                               return array_of(f.model.selected,
                                               {std::int64_t(f.model.selected.size())});
                             })
      .def_property_readonly("risk",
                             [](const FittedGam& f) {
                               return array_of(f.model.risk, {std::int64_t(f.model.risk.size())});
                             })
      .def_property_readonly("varimp",
                             [](const FittedGam& f) {
                               return array_of(f.model.varimp,
                                               {std::int64_t(f.model.varimp.size())});
                             })
      .def_property_readonly("boundary",
                             [](const FittedGam& f) {
                               std::vector<double> bounds;
                               for (const auto& mesh : f.model.meshes) {
                                 bounds.push_back(mesh.lower);
                                 bounds.push_back(mesh.upper);
                               }
                               return array_of(bounds, {f.model.covariates, 2});
                             })
      .def_property_readonly("cv_risk",
                             [](const FittedGam& f) -> py::object {
                               if (f.cv_folds == 0) return py::none();
                               return array_of(f.cv_risk, {f.cv_folds, f.cv_mstop_range + 1});
                             })
      .def_property_readonly("options", [](const FittedGam& f) { return options_of(f.model); })
      .def_property_readonly("timings",
                             [](const FittedGam& f) {
                               py::dict timings;
                               timings["basis_seconds"] = f.timings.basis_seconds;
                               timings["penalty_seconds"] = f.timings.penalty_seconds;
                               timings["boosting_seconds"] = f.timings.boosting_seconds;
                               timings["device_bytes"] = f.timings.device_bytes;
                               return timings;
                             })
      .def("predict", &predict_binding, "X"_a, py::kw_only(), "partial_effects"_a = false,
           "Predictions on the link scale for X [n, p] (float32 or float64; computed in "
           "float64): offset + sum_j f_j(X[:, j]); with partial_effects=True the pair "
           "(prediction [n], partial effects [n, p]). Outside a covariate's training range f_j "
           "continues linearly. Errors as kpl.gam.fit's (ValueError, kpl.InputError).");
}

}  // namespace

void bind_gam(py::module_& module) {
  using namespace pybind11::literals;
  bind_model(module);
  module.def(
      "gam_fit",
      [](const py::array& X, const py::array& y, int basis_size, int degree,
         const std::string& penalty, int differences, double df, const std::string& df_definition,
         double nu, int mstop, const std::string& family, std::optional<int> cv,
         std::uint64_t cv_seed, const std::string& mode, const std::string& basis,
         std::optional<std::string> gemv, int gram_refresh) {
        return fit_binding(X, y,
                           {basis_size, degree, differences, mstop, gram_refresh, penalty,
                            df_definition, family, mode, basis, gemv, df, nu, cv},
                           cv_seed);
      },
      "X"_a.noconvert(), "y"_a.noconvert(), py::kw_only(), "basis_size"_a, "degree"_a, "penalty"_a,
      "differences"_a, "df"_a, "df_definition"_a, "nu"_a, "mstop"_a, "family"_a, "cv"_a,
      "cv_seed"_a, "mode"_a, "basis"_a, "gemv"_a, "gram_refresh"_a,
      "kpl::fit_gam on NumPy arrays; see kpl.gam.fit.");
  module.def(
      "gam_load",
      [](const std::string& path) {
        return on_kokkos_thread([&] { return FittedGam{read_gam_model(path), {}, 0, 0, {}}; });
      },
      "path"_a, "kpl::read_gam_model; see kpl.gam.load.");
}

}  // namespace kpl::python
