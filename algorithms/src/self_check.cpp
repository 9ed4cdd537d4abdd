#include <kpl/config.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/reduce.hpp>
#include <kpl/self_check.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>

namespace kpl {
// A named namespace, not an anonymous one: nvcc does not allow extended
// (device) lambdas inside functions with internal linkage.
namespace self_check_detail {

double relative_error(double value, double reference) {
  const double scale = std::max(std::abs(reference), 1e-300);
  return std::abs(value - reference) / scale;
}

struct References {
  hdf5::HostArray<double, 1> vector;
  hdf5::HostArray<double, 2> matrix;
  double vector_sum, vector_min, vector_max;
  hdf5::HostArray<double, 1> row_sums, column_sums;
};

// The largest relative error of a computed vector against its reference.
template <class Computed>
double worst_relative_error(const Computed& computed, const hdf5::HostArray<double, 1>& reference) {
  double worst = 0;
  for (std::size_t i = 0; i < reference.extent(0); ++i) {
    worst = std::max(worst, relative_error(computed(i), reference(i)));
  }
  return worst;
}

template <class ExecutionSpace>
void check_backend(const ExecutionSpace& space, const References& references,
                   std::vector<SelfCheckResult>& results) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const auto vector = Kokkos::create_mirror_view_and_copy(MemorySpace{}, references.vector);
  const auto matrix = Kokkos::create_mirror_view_and_copy(MemorySpace{}, references.matrix);

  // One pass, three reductions (kpl::reduce with several operations).
  const auto [sum, smallest, largest] =
      reduce(space, vector, Sum<double>{}, Min<double>{}, Max<double>{});

  Kokkos::View<double*, MemorySpace> row_sums("row_sums", matrix.extent(0));
  Kokkos::View<double*, MemorySpace> column_sums("column_sums", matrix.extent(1));
  reduce_rows(space, matrix, Sum<double>{}, row_sums);
  reduce_columns(space, matrix, Sum<double>{}, column_sums);
  const auto row_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, row_sums);
  const auto column_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, column_sums);

  // Summation order differs between backends; 1e-12 relative is far above
  // double rounding for these sizes and far below any indexing error.
  // Minimum and maximum are exact.
  const double tolerance = 1e-12;
  const std::string backend = ExecutionSpace::name();
  results.push_back({backend, "reduce: vector sum", sum, references.vector_sum,
                     relative_error(sum, references.vector_sum), tolerance});
  results.push_back({backend, "reduce: vector min", smallest, references.vector_min,
                     relative_error(smallest, references.vector_min), 0.0});
  results.push_back({backend, "reduce: vector max", largest, references.vector_max,
                     relative_error(largest, references.vector_max), 0.0});
  const double row_error = worst_relative_error(row_host, references.row_sums);
  results.push_back(
      {backend, "reduce_rows: matrix row sums", row_error, 0.0, row_error, tolerance});
  const double column_error = worst_relative_error(column_host, references.column_sums);
  results.push_back(
      {backend, "reduce_columns: matrix column sums", column_error, 0.0, column_error, tolerance});
}

}  // namespace self_check_detail

std::vector<SelfCheckResult> run_self_check(const std::string& input_path) {
  const hdf5::InputFile input(input_path);
  const hdf5::ReadRequirements finite{true, false};
  self_check_detail::References references{input.read<double, 1>("/vector", finite),
                                           input.read<double, 2>("/matrix", finite),
                                           input.read_number_attribute("/vector", "sum"),
                                           input.read_number_attribute("/vector", "min"),
                                           input.read_number_attribute("/vector", "max"),
                                           input.read<double, 1>("/matrix_row_sums", finite),
                                           input.read<double, 1>("/matrix_column_sums", finite)};
  hdf5::require_matching_extent(input, "/matrix", 0, "/matrix_row_sums", 0);
  hdf5::require_matching_extent(input, "/matrix", 1, "/matrix_column_sums", 0);

  std::vector<SelfCheckResult> results;
  for_each_execution_space([&](auto tag) {
    using ExecutionSpace = typename decltype(tag)::type;
    self_check_detail::check_backend(ExecutionSpace{}, references, results);
  });
  return results;
}

void write_self_check_report(const std::vector<SelfCheckResult>& results,
                             const std::string& input_path, const std::string& output_path) {
  const std::size_t count = results.size();
  hdf5::HostArray<double, 2> numbers("numbers", count, 4);
  hdf5::HostArray<std::int32_t, 1> passed("passed", count);
  std::string names;
  for (std::size_t i = 0; i < count; ++i) {
    numbers(i, 0) = results[i].value;
    numbers(i, 1) = results[i].reference;
    numbers(i, 2) = results[i].relative_error;
    numbers(i, 3) = results[i].tolerance;
    passed(i) = results[i].passed() ? 1 : 0;
    names += (i > 0 ? "\n" : "") + results[i].backend + ": " + results[i].check;
  }
  hdf5::OutputFile output(output_path);
  output.write("/results", numbers);
  output.write("/passed", passed);
  output.write_attribute("/results", "columns", "value, reference, relative_error, tolerance");
  output.write_attribute("/results", "rows", names);
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "input", input_path);
  output.commit();
}

}  // namespace kpl
