#include <kpl/config.hpp>
#include <kpl/execution_spaces.hpp>
#include <kpl/hdf5_io.hpp>
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

template <class ExecutionSpace>
void check_backend(const ExecutionSpace& space, const hdf5::HostArray<double, 1>& vector,
                   const hdf5::HostArray<double, 2>& matrix, double vector_sum,
                   double matrix_squared_norm, std::vector<SelfCheckResult>& results) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const auto device_vector = Kokkos::create_mirror_view_and_copy(MemorySpace{}, vector);
  const auto device_matrix = Kokkos::create_mirror_view_and_copy(MemorySpace{}, matrix);

  double sum = 0;
  Kokkos::parallel_reduce(
      "kpl::self_check::vector_sum",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, device_vector.extent(0)),
      KOKKOS_LAMBDA(const int i, double& partial) { partial += device_vector(i); }, sum);

  double squared_norm = 0;
  Kokkos::parallel_reduce(
      "kpl::self_check::matrix_squared_norm",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(
          space, {0, 0}, {device_matrix.extent(0), device_matrix.extent(1)}),
      KOKKOS_LAMBDA(const int i, const int j, double& partial) {
        partial += device_matrix(i, j) * device_matrix(i, j);
      },
      squared_norm);
  space.fence();

  // Summation order differs between backends; 1e-12 relative is far above
  // double rounding for these sizes and far below any indexing error.
  const double tolerance = 1e-12;
  const std::string backend = ExecutionSpace::name();
  results.push_back({backend, "vector sum", sum, vector_sum,
                     relative_error(sum, vector_sum), tolerance});
  results.push_back({backend, "matrix squared Frobenius norm", squared_norm,
                     matrix_squared_norm, relative_error(squared_norm, matrix_squared_norm),
                     tolerance});
}

}  // namespace self_check_detail

std::vector<SelfCheckResult> run_self_check(const std::string& input_path) {
  const hdf5::InputFile input(input_path);
  const hdf5::ReadRequirements finite{true, false};
  const auto vector = input.read<double, 1>("/vector", finite);
  const auto matrix = input.read<double, 2>("/matrix", finite);
  const double vector_sum = input.read_number_attribute("/vector", "sum");
  const double matrix_squared_norm =
      input.read_number_attribute("/matrix", "squared_frobenius_norm");

  std::vector<SelfCheckResult> results;
  for_each_execution_space([&](auto tag) {
    using ExecutionSpace = typename decltype(tag)::type;
    self_check_detail::check_backend(ExecutionSpace{}, vector, matrix, vector_sum, matrix_squared_norm, results);
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
