#include <kpl/config.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/nnls_file.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <string>

namespace kpl {
namespace nnls_file_detail {

std::string gradient_name(NnlsGradient gradient) {
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

std::string orthogonalization_name(NnlsOrthogonalization orthogonalization) {
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

template <class T>
NnlsFileSummary solve(const hdf5::InputFile& input, const std::string& output_path,
                      const NnlsFileOptions& options) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Memory = Space::memory_space;
  const auto a_shape = input.shape("/A");
  const auto b_shape = input.shape("/b");
  const std::string where = "'" + input.path() + "': ";
  if (a_shape.size() != 2 && a_shape.size() != 3)
    throw input_error(where + "dataset /A must be [m, n] or [B, m, n], not of rank " +
                      std::to_string(a_shape.size()));
  if (b_shape.size() != 1 && b_shape.size() != 2)
    throw input_error(where + "dataset /b must be [B, m] or [m], not of rank " +
                      std::to_string(b_shape.size()));
  const hdf5::ReadRequirements finite{true, false};
  // Read as rank 2 / 3 whatever /b's rank: one system is a batch of one.
  hdf5::HostArray<T, 2> b;
  if (b_shape.size() == 1) {
    const auto vector = input.read<T, 1>("/b", finite);
    b = hdf5::HostArray<T, 2>("b", 1, vector.extent(0));
    for (std::size_t i = 0; i < vector.extent(0); ++i) b(0, i) = vector(i);
  } else {
    b = input.read<T, 2>("/b", finite);
  }
  const bool per_system = a_shape.size() == 3;
  const std::int64_t systems = b.extent(0);
  const std::int64_t m = a_shape[per_system ? 1 : 0], n = a_shape[per_system ? 2 : 1];
  if (std::int64_t(b.extent(1)) != m)
    hdf5::require_matching_extent(input, "/A", per_system ? 1 : 0, "/b", b_shape.size() - 1);
  if (per_system && std::int64_t(a_shape[0]) != systems)
    hdf5::require_matching_extent(input, "/A", 0, "/b", 0);
  if (per_system && options.nnls.gradient == NnlsGradient::from_cross_products)
    throw input_error(where +
                      "the gradient from cross products needs one /A [m, n] shared by all "
                      "systems; this /A is [B, m, n]");

  // On the device A is stored column by column (each system's A^T row-major),
  // so a column's rows are contiguous and the solver's loads coalesce.
  const std::int64_t stored_systems = per_system ? systems : 1;
  Kokkos::View<T***, Kokkos::LayoutRight, Memory> transposed(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls_file::A"), stored_systems, n, m);
  {
    auto host = Kokkos::create_mirror_view(transposed);
    if (per_system) {
      const auto a = input.read<T, 3>("/A", finite);
      for (std::int64_t s = 0; s < systems; ++s)
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) host(s, j, i) = a(s, i, j);
    } else {
      const auto a = input.read<T, 2>("/A", finite);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) host(0, j, i) = a(i, j);
    }
    Kokkos::deep_copy(transposed, host);
  }
  const auto b_device = Kokkos::create_mirror_view_and_copy(Memory{}, b);
  const DenseColumns<T> columns{transposed.data(), per_system ? n * m : 0, 1, m, m};

  const Space space;
  NnlsSolution<Space, T> solution(systems, n);
  Kokkos::Timer timer;
  if (per_system) {
    nnls_columns(space, columns, m, n, b_device, solution, options.nnls);
  } else {
    // Through kpl::nnls, which forms A^T A for the gradient where that pays.
    const Kokkos::View<const T**, Kokkos::LayoutLeft, Memory,
                       Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        shared(transposed.data(), m, n);
    nnls(space, shared, b_device, solution, options.nnls);
  }
  space.fence();
  NnlsFileSummary summary;
  summary.seconds = timer.seconds();
  summary.systems = systems;
  summary.rows = m;
  summary.columns = n;

  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.x);
  const auto residual_norm =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.residual_norm);
  const auto iterations =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.iterations);
  const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, solution.status);
  for (std::int64_t s = 0; s < systems; ++s) ++summary.status_counts[status(s)];

  hdf5::OutputFile output(output_path);
  output.write("/x", x);
  output.write("/rnorm", residual_norm);
  output.write("/iterations", iterations);
  output.write("/status", status);
  detail::write_solver_settings(output, input.path(), options.nnls, options.single_precision, 3 * n,
                                std::min(m, n));
  output.commit();
  return summary;
}

}  // namespace nnls_file_detail

namespace detail {
void write_solver_settings(hdf5::OutputFile& output, const std::string& input_path,
                           const NnlsOptions& options, bool single_precision,
                           std::int64_t default_max_iterations, std::int64_t default_max_passive) {
  output.write_attribute("/status", "meaning",
                         "0 converged, 1 max_iterations, 2 numerical_issue, 3 passive_set_full");
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "input", input_path);
  output.write_attribute("/", "precision", single_precision ? "float" : "double");
  output.write_attribute(
      "/", "max_iterations",
      std::int64_t(options.max_iterations > 0 ? options.max_iterations : default_max_iterations));
  output.write_attribute("/", "tolerance", options.tolerance);
  output.write_attribute("/", "tolerance_meaning",
                         options.tolerance < 0 ? "default: 10 eps ||A||_1 max(m, n)" : "as given");
  output.write_attribute(
      "/", "max_passive",
      std::int64_t(options.max_passive > 0 ? options.max_passive : default_max_passive));
  output.write_attribute("/", "orthogonalization",
                         nnls_file_detail::orthogonalization_name(options.orthogonalization));
  output.write_attribute("/", "gradient", nnls_file_detail::gradient_name(options.gradient));
  output.write_attribute("/", "execution_space", Kokkos::DefaultExecutionSpace::name());
}
}  // namespace detail

NnlsFileSummary solve_nnls_file(const std::string& input_path, const std::string& output_path,
                                const NnlsFileOptions& options) {
  const hdf5::InputFile input(input_path);
  for (const char* name : {"/A", "/b"})
    if (!input.has_dataset(name))
      throw input_error("'" + input_path + "': dataset " + name + " is missing");
  return options.single_precision ? nnls_file_detail::solve<float>(input, output_path, options)
                                  : nnls_file_detail::solve<double>(input, output_path, options);
}

}  // namespace kpl
