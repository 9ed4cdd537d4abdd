// kpl._kpl.nnls and kpl._kpl.deconvolve: kpl::nnls and kpl::deconvolve on the
// default execution space, solved as `kpl nnls` and `kpl deconv` solve them
// (A stored column by column, the gradient chosen for the whole batch).
#include "arrays.hpp"
#include "bindings.hpp"
#include "kokkos_thread.hpp"

#include <kpl/deconvolution.hpp>
#include <kpl/nnls.hpp>

#include <pybind11/stl.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace kpl::python {
namespace {

using Space = Kokkos::DefaultExecutionSpace;
template <class T>
using DeviceMatrix = Kokkos::View<T**, Kokkos::LayoutRight, Space::memory_space>;

// The enumerated option whose to_string is `name`, else ValueError.
template <class Enum>
Enum choose(const char* function, const char* option, const std::string& name,
            std::initializer_list<Enum> values) {
  std::string allowed;
  for (const Enum value : values) {
    if (to_string(value) == name) return value;
    allowed += (allowed.empty() ? "'" : ", '") + std::string(to_string(value)) + "'";
  }
  throw std::invalid_argument(std::string(function) + ": " + option + " must be one of " + allowed +
                              ", not '" + name + "'");
}

// The command line's ranges (options.cpp); None leaves kpl's default.
struct SolverArguments {
  std::optional<int> max_iterations, max_passive;
  std::optional<double> tolerance, kkt_tolerance;
  std::string orthogonalization;
};

NnlsOptions solver_options(const char* function, const SolverArguments& arguments) {
  NnlsOptions options;
  const auto count = [&](const char* name, const std::optional<int>& value, int& target) {
    if (!value) return;
    if (*value < 1 || *value > (1 << 30))
      throw std::invalid_argument(std::string(function) + ": " + name + " " +
                                  std::to_string(*value) + " is outside [1, 1073741824]");
    target = *value;
  };
  const auto tolerance = [&](const char* name, const std::optional<double>& value, double& target) {
    if (!value) return;
    if (!(*value >= 0 && *value <= 1))
      throw std::invalid_argument(std::string(function) + ": " + name + " " +
                                  format_number(*value) + " is outside [0, 1]");
    target = *value;
  };
  count("max_iterations", arguments.max_iterations, options.max_iterations);
  count("max_passive", arguments.max_passive, options.max_passive);
  tolerance("tolerance", arguments.tolerance, options.tolerance);
  tolerance("kkt_tolerance", arguments.kkt_tolerance, options.kkt_tolerance);
  options.orthogonalization =
      choose(function, "orthogonalization", arguments.orthogonalization,
             {NnlsOrthogonalization::automatic, NnlsOrthogonalization::classical_twice,
              NnlsOrthogonalization::modified_gram_schmidt});
  return options;
}

// A NumPy [rows, columns] array (or [columns]) on the device.
template <class T>
DeviceMatrix<T> to_device(const HostData<T>& array, const char* label) {
  const auto host = as_matrix(array);
  DeviceMatrix<T> device(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                         host.extent(0), host.extent(1));
  Kokkos::deep_copy(device, host);
  return device;
}

// The per-system results as NumPy arrays ([systems, columns] for x), and
// the copy of a solution into them.
template <class T>
struct NnlsArrays {
  py::array_t<T> x, rnorm, kkt_residual;
  py::array_t<std::int32_t> iterations, status;
  NnlsArrays(std::int64_t systems, std::int64_t columns)
      : x(new_array<T>({systems, columns})),
        rnorm(new_array<T>({systems})),
        kkt_residual(new_array<T>({systems})),
        iterations(new_array<std::int32_t>({systems})),
        status(new_array<std::int32_t>({systems})) {}
  py::dict dict() const {
    py::dict results;
    results["x"] = x;
    results["rnorm"] = rnorm;
    results["iterations"] = iterations;
    results["status"] = status;
    results["kkt_residual"] = kkt_residual;
    return results;
  }
};

// Host Views over the arrays' memory, made with the GIL held.
template <class T>
struct NnlsOutputs {
  HostMatrix<T> x;
  HostVector<T> rnorm, kkt_residual;
  HostVector<std::int32_t> iterations, status;
  explicit NnlsOutputs(NnlsArrays<T>& arrays)
      : x(arrays.x.mutable_data(), arrays.x.shape(0), arrays.x.shape(1)),
        rnorm(arrays.rnorm.mutable_data(), arrays.rnorm.shape(0)),
        kkt_residual(arrays.kkt_residual.mutable_data(), arrays.kkt_residual.shape(0)),
        iterations(arrays.iterations.mutable_data(), arrays.iterations.shape(0)),
        status(arrays.status.mutable_data(), arrays.status.shape(0)) {}
  void copy(const NnlsSolution<Space, T>& solution) const {
    Kokkos::deep_copy(x, solution.x);
    Kokkos::deep_copy(rnorm, solution.residual_norm);
    Kokkos::deep_copy(kkt_residual, solution.kkt_residual);
    Kokkos::deep_copy(iterations, solution.iterations);
    Kokkos::deep_copy(status, solution.status);
  }
};

// A shared A [m, n] as `kpl nnls` stores it: column by column.
template <class T>
Kokkos::View<T**, Kokkos::LayoutLeft, Space::memory_space> shared_matrix(const HostData<T>& A) {
  const auto host = as_matrix(A);
  Kokkos::View<T**, Kokkos::LayoutLeft, Space::memory_space> device(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::python::A"), host.extent(0),
      host.extent(1));
  auto mirror = Kokkos::create_mirror_view(device);
  for (std::size_t i = 0; i < host.extent(0); ++i)
    for (std::size_t j = 0; j < host.extent(1); ++j) mirror(i, j) = host(i, j);
  Kokkos::deep_copy(device, mirror);
  return device;
}

// Per-system A [systems, m, n] as `kpl nnls` stores it: each A^T row-major.
template <class T>
Kokkos::View<T***, Kokkos::LayoutRight, Space::memory_space> transposed_matrices(
    const HostData<T>& A) {
  const std::int64_t systems = A.shape[0], m = A.shape[1], n = A.shape[2];
  Kokkos::View<T***, Kokkos::LayoutRight, Space::memory_space> device(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::python::A"), systems, n, m);
  auto mirror = Kokkos::create_mirror_view(device);
  for (std::int64_t s = 0; s < systems; ++s)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) mirror(s, j, i) = A.data[(s * m + i) * n + j];
  Kokkos::deep_copy(device, mirror);
  return device;
}

template <class T>
py::dict nnls_typed(const py::array& A_array, const py::array& b_array, NnlsOptions options) {
  const Argument a_argument{"kpl.nnls", "A"}, b_argument{"kpl.nnls", "b"};
  const auto A = contiguous<T>(A_array);
  const auto b = contiguous<T>(b_array);
  const bool per_system = A.ndim() == 3;
  require_matching_extent(A, a_argument, per_system ? 1 : 0, b, b_argument, b.ndim() - 1);
  if (per_system) require_matching_extent(A, a_argument, 0, b, b_argument, 0);
  if (per_system && options.gradient == NnlsGradient::from_cross_products)
    throw input_error(
        "kpl.nnls: the gradient from cross products needs one A [m, n] shared by "
        "all systems; this A is [systems, m, n]");
  require_not_empty(b, b_argument);
  require_not_empty(A, a_argument);
  const std::int64_t systems = b.ndim() == 2 ? b.shape(0) : 1, m = b.shape(b.ndim() - 1),
                     n = A.shape(A.ndim() - 1);
  NnlsArrays<T> arrays(systems, n);
  const NnlsOutputs<T> outputs(arrays);
  const HostData<T> a_data = host_data(A), b_data = host_data(b);
  on_kokkos_thread([&] {
    require_finite(b_data, b_argument);
    require_finite(a_data, a_argument);
    const Space space;
    const auto device_b = to_device(b_data, "kpl::python::b");
    NnlsSolution<Space, T> solution(systems, n);
    if (per_system) {
      const auto transposed = transposed_matrices(a_data);
      nnls_columns(space, DenseColumns<T>{transposed.data(), n * m, 1, m, m}, m, n, device_b,
                   solution, options);
    } else {
      nnls(space, shared_matrix(a_data), device_b, solution, options);
    }
    outputs.copy(solution);
    return 0;
  });
  return arrays.dict();
}

py::dict nnls_binding(const py::array& A, const py::array& b, const SolverArguments& arguments,
                      const std::string& gradient) {
  const Argument a_argument{"kpl.nnls", "A"}, b_argument{"kpl.nnls", "b"};
  require_rank(A, {2, 3}, a_argument, "[m, n] (shared) or [systems, m, n]");
  require_rank(b, {1, 2}, b_argument, "[systems, m] or [m] (one system)");
  const bool single = is_single(A, a_argument);
  if (single != is_single(b, b_argument))
    throw py::type_error("kpl.nnls: A and b must have the same dtype (A is " +
                         std::string(py::str(A.dtype())) + ", b " +
                         std::string(py::str(b.dtype())) + ")");
  NnlsOptions options = solver_options("kpl.nnls", arguments);
  options.gradient = choose(
      "kpl.nnls", "gradient", gradient,
      {NnlsGradient::automatic, NnlsGradient::from_residual, NnlsGradient::from_cross_products});
  return single ? nnls_typed<float>(A, b, options) : nnls_typed<double>(A, b, options);
}

template <class T>
py::dict deconvolve_typed(const py::array& pulse_array, const py::array& waveforms_array,
                          const DeconvolutionOptions& options) {
  const Argument pulse_argument{"kpl.deconvolve", "pulse"},
      waveforms_argument{"kpl.deconvolve", "waveforms"};
  const auto pulse = contiguous<T>(pulse_array);
  const auto waveforms = contiguous<T>(waveforms_array);
  require_not_empty(waveforms, waveforms_argument);
  require_not_empty(pulse, pulse_argument);
  const std::int64_t count = waveforms.ndim() == 2 ? waveforms.shape(0) : 1,
                     m = waveforms.shape(waveforms.ndim() - 1), L = pulse.shape(pulse.ndim() - 1);
  if (pulse.ndim() == 2)
    require_matching_extent(pulse, pulse_argument, 0, waveforms, waveforms_argument, 0);
  if (L > m)
    throw input_error("kpl.deconvolve: the pulse (" + std::to_string(L) +
                      " samples) is longer than the waveforms (" + std::to_string(m) + " samples)");
  NnlsArrays<T> arrays(count, m);
  const NnlsOutputs<T> outputs(arrays);
  auto fit = new_array<T>({count, m});
  const HostMatrix<T> fit_host(fit.mutable_data(), count, m);
  const HostData<T> pulse_data = host_data(pulse), waveform_data = host_data(waveforms);
  on_kokkos_thread([&] {
    require_finite(pulse_data, pulse_argument);
    require_finite(waveform_data, waveforms_argument);
    const auto device_pulses = to_device(pulse_data, "kpl::python::pulse");
    const auto device_waveforms = to_device(waveform_data, "kpl::python::waveforms");
    NnlsSolution<Space, T> solution(count, m);
    DeviceMatrix<T> device_fit(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::python::fit"),
                               count, m);
    deconvolve<Space, T>(Space{}, device_pulses, device_waveforms, solution, device_fit, options);
    outputs.copy(solution);
    Kokkos::deep_copy(fit_host, device_fit);
    return 0;
  });
  py::dict results = arrays.dict();
  results["fit"] = fit;
  return results;
}

py::dict deconvolve_binding(const py::array& pulse, const py::array& waveforms,
                            const SolverArguments& arguments, const std::string& pulse_origin) {
  const Argument pulse_argument{"kpl.deconvolve", "pulse"},
      waveforms_argument{"kpl.deconvolve", "waveforms"};
  require_rank(pulse, {1, 2}, pulse_argument, "[L] (shared) or [waveforms, L]");
  require_rank(waveforms, {1, 2}, waveforms_argument, "[waveforms, samples] or [samples]");
  const bool single = is_single(waveforms, waveforms_argument);
  if (single != is_single(pulse, pulse_argument))
    throw py::type_error("kpl.deconvolve: pulse and waveforms must have the same dtype (pulse is " +
                         std::string(py::str(pulse.dtype())) + ", waveforms " +
                         std::string(py::str(waveforms.dtype())) + ")");
  DeconvolutionOptions options;
  options.nnls = solver_options("kpl.deconvolve", arguments);
  options.origin = choose("kpl.deconvolve", "pulse_origin", pulse_origin,
                          {PulseOrigin::start, PulseOrigin::center});
  return single ? deconvolve_typed<float>(pulse, waveforms, options)
                : deconvolve_typed<double>(pulse, waveforms, options);
}

}  // namespace

void bind_solvers(py::module_& module) {
  using namespace pybind11::literals;
  module.def(
      "nnls",
      [](const py::array& A, const py::array& b, std::optional<int> max_iterations,
         std::optional<double> tolerance, std::optional<double> kkt_tolerance,
         std::optional<int> max_passive, const std::string& orthogonalization,
         const std::string& gradient) {
        return nnls_binding(
            A, b, {max_iterations, max_passive, tolerance, kkt_tolerance, orthogonalization},
            gradient);
      },
      "A"_a.noconvert(), "b"_a.noconvert(), py::kw_only(), "max_iterations"_a, "tolerance"_a,
      "kkt_tolerance"_a, "max_passive"_a, "orthogonalization"_a, "gradient"_a,
      "kpl::nnls on NumPy arrays; see kpl.nnls.");
  module.def(
      "deconvolve",
      [](const py::array& pulse, const py::array& waveforms, std::optional<int> max_iterations,
         std::optional<double> tolerance, std::optional<double> kkt_tolerance,
         std::optional<int> max_passive, const std::string& orthogonalization,
         const std::string& pulse_origin) {
        return deconvolve_binding(
            pulse, waveforms,
            {max_iterations, max_passive, tolerance, kkt_tolerance, orthogonalization},
            pulse_origin);
      },
      "pulse"_a.noconvert(), "waveforms"_a.noconvert(), py::kw_only(), "max_iterations"_a,
      "tolerance"_a, "kkt_tolerance"_a, "max_passive"_a, "orthogonalization"_a, "pulse_origin"_a,
      "kpl::deconvolve on NumPy arrays; see kpl.deconvolve.");
}

}  // namespace kpl::python
