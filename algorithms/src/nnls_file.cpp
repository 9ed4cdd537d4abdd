#include <kpl/config.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/nnls_file.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <string>

namespace kpl {
namespace nnls_file_detail {

// The batch's shape, from the datasets' shapes alone.
struct NnlsShape {
  std::int64_t systems, rows, columns;
  bool per_system;
};

NnlsShape check_shapes(const hdf5::InputFile& input, const NnlsFileOptions& options) {
  const auto a_shape = input.shape("/A");
  const auto b_shape = input.shape("/b");
  const std::string where = "'" + input.path() + "': ";
  if (a_shape.size() != 2 && a_shape.size() != 3)
    throw input_error(where + "dataset /A must be [m, n] or [B, m, n], not of rank " +
                      std::to_string(a_shape.size()));
  if (b_shape.size() != 1 && b_shape.size() != 2)
    throw input_error(where + "dataset /b must be [B, m] or [m], not of rank " +
                      std::to_string(b_shape.size()));
  const bool per_system = a_shape.size() == 3;
  const NnlsShape shape{b_shape.size() == 2 ? std::int64_t(b_shape[0]) : 1,
                        std::int64_t(a_shape[per_system ? 1 : 0]),
                        std::int64_t(a_shape[per_system ? 2 : 1]), per_system};
  if (std::int64_t(b_shape.back()) != shape.rows)
    hdf5::require_matching_extent(input, "/A", per_system ? 1 : 0, "/b", b_shape.size() - 1);
  if (per_system && std::int64_t(a_shape[0]) != shape.systems)
    hdf5::require_matching_extent(input, "/A", 0, "/b", 0);
  if (per_system && options.nnls.gradient == NnlsGradient::from_cross_products)
    throw input_error(where +
                      "the gradient from cross products needs one /A [m, n] shared by all "
                      "systems; this /A is [B, m, n]");
  return shape;
}

// Memory on the host and the device and disk for the output, counted
// before anything is read.
template <class T>
ResourceNeeds nnls_needs(const hdf5::InputFile& input, const NnlsShape& shape,
                         const NnlsFileOptions& options, const std::string& output_path) {
  const std::int64_t a = input.bytes("/A", sizeof(T)), b = input.bytes("/b", sizeof(T));
  const std::int64_t m = shape.rows, n = shape.columns, systems = shape.systems;
  const std::int64_t cap = options.nnls.max_passive > 0
                               ? std::min<std::int64_t>(options.nnls.max_passive, std::min(m, n))
                               : std::min(m, n);
  const std::int64_t results = checked_bytes({std::uint64_t(systems), std::uint64_t(n)}, sizeof(T));
  const std::int64_t per_system_results =
      checked_bytes({std::uint64_t(systems)}, 2 * sizeof(T) + 4 * sizeof(int));
  const std::int64_t workspace = checked_bytes(
      {std::uint64_t(systems)},
      std::uint64_t(std::max<std::int64_t>(nnls_workspace_bytes_per_system<T>(m, n, cap), 0)));
  const std::int64_t a_stored = shape.per_system ? a : checked_sum({a, a});  // + A at unit scale
  const std::int64_t cross = checked_bytes({std::uint64_t(n), std::uint64_t(n)}, sizeof(T));
  ResourceNeeds needs;
  needs.host_bytes = checked_sum({a, a, b, b, results, per_system_results});
  needs.device_bytes = checked_sum(
      {a_stored, b, results, per_system_results, workspace, shape.per_system ? 0 : cross});
  needs.disk_bytes = checked_sum({results, per_system_results, std::int64_t(1) << 16});
  needs.disk_directory = hdf5::directory_of(output_path);
  return needs;
}

// /b as [B, m] whatever its rank in the file: one system is a batch of one.
template <class T>
hdf5::HostArray<T, 2> read_right_hand_sides(const hdf5::InputFile& input) {
  const hdf5::ReadRequirements finite{true, false};
  if (input.shape("/b").size() != 1) return input.read<T, 2>("/b", finite);
  const auto vector = input.read<T, 1>("/b", finite);
  hdf5::HostArray<T, 2> b("b", 1, vector.extent(0));
  for (std::size_t i = 0; i < vector.extent(0); ++i) b(0, i) = vector(i);
  return b;
}

// /A on the device column by column (each system's A^T row-major), so that
// a column's rows are contiguous and the solver's loads coalesce.
template <class T>
Kokkos::View<T***, Kokkos::LayoutRight, Kokkos::DefaultExecutionSpace::memory_space>
read_transposed_matrices(const hdf5::InputFile& input, const NnlsShape& shape) {
  const hdf5::ReadRequirements finite{true, false};
  const std::int64_t m = shape.rows, n = shape.columns;
  Kokkos::View<T***, Kokkos::LayoutRight, Kokkos::DefaultExecutionSpace::memory_space> transposed(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls_file::A"),
      shape.per_system ? shape.systems : 1, n, m);
  auto host = Kokkos::create_mirror_view(transposed);
  if (shape.per_system) {
    const auto a = input.read<T, 3>("/A", finite);
    for (std::int64_t s = 0; s < shape.systems; ++s)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) host(s, j, i) = a(s, i, j);
  } else {
    const auto a = input.read<T, 2>("/A", finite);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) host(0, j, i) = a(i, j);
  }
  Kokkos::deep_copy(transposed, host);
  return transposed;
}

// Writes the solution and the settings, and counts the statuses.
template <class T>
void write_solution(hdf5::OutputFile& output, const hdf5::InputFile& input, const NnlsShape& shape,
                    const NnlsSolution<Kokkos::DefaultExecutionSpace, T>& solution,
                    const NnlsFileOptions& options, NnlsFileSummary& summary) {
  const auto host = [](const auto& view) {
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, view);
  };
  const auto status = host(solution.status);
  for (std::int64_t s = 0; s < shape.systems; ++s) ++summary.status_counts[status(s)];
  output.write("/x", host(solution.x));
  output.write("/rnorm", host(solution.residual_norm));
  output.write("/iterations", host(solution.iterations));
  output.write("/status", status);
  output.write("/kkt_residual", host(solution.kkt_residual));
  impl::write_solver_settings(output, input.path(), options.nnls, options.single_precision,
                              3 * shape.columns, std::min(shape.rows, shape.columns));
}

template <class T>
NnlsFileSummary solve(const hdf5::InputFile& input, const std::string& output_path,
                      const NnlsFileOptions& options) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Memory = Space::memory_space;
  const NnlsShape shape = check_shapes(input, options);
  hdf5::require_distinct(output_path, {input.path()});
  hdf5::require_writable_target(output_path);
  require_resources("kpl nnls on '" + input.path() + "'",
                    nnls_needs<T>(input, shape, options, output_path));
  hdf5::OutputFile output(output_path);  // before any work: the target is writable
  const auto b_device = Kokkos::create_mirror_view_and_copy(Memory{}, read_right_hand_sides<T>(input));
  const auto transposed = read_transposed_matrices<T>(input, shape);
  const std::int64_t m = shape.rows, n = shape.columns;
  const Space space;
  NnlsSolution<Space, T> solution(shape.systems, n);
  Kokkos::Timer timer;
  if (shape.per_system) {
    const DenseColumns<T> columns{transposed.data(), n * m, 1, m, m};
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
  summary.systems = shape.systems;
  summary.rows = m;
  summary.columns = n;
  write_solution<T>(output, input, shape, solution, options, summary);
  output.commit();
  return summary;
}

}  // namespace nnls_file_detail

namespace impl {
void write_solver_settings(hdf5::OutputFile& output, const std::string& input_path,
                           const NnlsOptions& options, bool single_precision,
                           std::int64_t default_max_iterations, std::int64_t default_max_passive) {
  output.write_attribute("/status", "meaning", nnls_status_legend());
  output.write_attribute("/kkt_residual", "meaning",
                         "largest KKT violation of column j, w_j (x_j = 0) or |w_j| (x_j > 0) "
                         "with w = A^T (b - A x), over ||a_j|| ||b||; converged systems are at "
                         "most kkt_tolerance");
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "input", input_path);
  output.write_attribute("/", "precision", single_precision ? "float" : "double");
  output.write_attribute(
      "/", "max_iterations",
      std::int64_t(options.max_iterations > 0 ? options.max_iterations : default_max_iterations));
  output.write_attribute("/", "tolerance", options.tolerance);
  output.write_attribute(
      "/", "tolerance_meaning",
      std::string(options.tolerance < 0 ? "default: 10 eps max(m, n)" : "as given") +
          ", relative: a zero-set column enters while w_j > tolerance "
          "||a_j|| ||b||");
  output.write_attribute("/", "kkt_tolerance", options.kkt_tolerance);
  output.write_attribute(
      "/", "max_passive",
      std::int64_t(options.max_passive > 0 ? options.max_passive : default_max_passive));
  output.write_attribute("/", "orthogonalization", to_string(options.orthogonalization));
  output.write_attribute("/", "gradient", to_string(options.gradient));
  output.write_attribute("/", "execution_space", Kokkos::DefaultExecutionSpace::name());
}
}  // namespace impl

NnlsFileSummary solve_nnls_file(const std::string& input_path, const std::string& output_path,
                                const NnlsFileOptions& options) {
  const hdf5::InputFile input(input_path);
  return options.single_precision ? nnls_file_detail::solve<float>(input, output_path, options)
                                  : nnls_file_detail::solve<double>(input, output_path, options);
}

}  // namespace kpl
