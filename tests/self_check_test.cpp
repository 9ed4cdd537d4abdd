// `kpl self-check` passes on the shipped input and fails when a reference is
// wrong: a self-check that cannot fail would check nothing.
#include <kpl/hdf5_io.hpp>
#include <kpl/info.hpp>
#include <kpl/self_check.hpp>

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>

#ifndef KPL_SOURCE_DIR
#error "KPL_SOURCE_DIR must point at the source tree (set by tests/CMakeLists.txt)"
#endif

namespace {
const std::string shipped_input = std::string(KPL_SOURCE_DIR) + "/inputs/self_check.h5";

std::string scratch_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("kpl_self_check_" + std::to_string(::getpid()) + "_" + name))
      .string();
}
}  // namespace

TEST(SelfCheck, PassesOnTheShippedInputOnEveryBackend) {
  const auto results = kpl::run_self_check(shipped_input);
  const auto info = kpl::collect_info();
  ASSERT_EQ(results.size(), 5 * info.enabled_backends.size());
  for (const auto& result : results) {
    EXPECT_TRUE(result.passed()) << result.backend << " " << result.check << ": " << result.value
                                 << " vs " << result.reference;
  }
}

TEST(SelfCheck, FailsWhenAReferenceIsWrong) {
  const kpl::hdf5::InputFile shipped(shipped_input);
  const auto vector = shipped.read<double, 1>("vector");
  const auto matrix = shipped.read<double, 2>("matrix");
  auto column_sums = shipped.read<double, 1>("matrix_column_sums");
  column_sums(5) *= 1 + 1e-9;
  const auto path = scratch_file("wrong_reference.h5");
  {
    kpl::hdf5::OutputFile output(path);
    output.write("vector", vector);
    output.write("matrix", matrix);
    output.write("matrix_row_sums", shipped.read<double, 1>("matrix_row_sums"));
    output.write("matrix_column_sums", column_sums);
    output.write_attribute("vector", "sum",
                           shipped.read_number_attribute("vector", "sum") * (1 + 1e-9));
    output.write_attribute("vector", "min", shipped.read_number_attribute("vector", "min"));
    output.write_attribute("vector", "max",
                           std::nextafter(shipped.read_number_attribute("vector", "max"), 0.0));
    output.commit();
  }
  const auto results = kpl::run_self_check(path);
  std::filesystem::remove(path);
  for (const auto& result : results) {
    const bool tampered = result.check == "reduce: vector sum" ||
                          result.check == "reduce: vector max" ||
                          result.check == "reduce_columns: matrix column sums";
    EXPECT_EQ(result.passed(), !tampered) << result.backend << " " << result.check;
  }
}

TEST(SelfCheck, ReportIsWrittenAndReadable) {
  const auto results = kpl::run_self_check(shipped_input);
  const auto path = scratch_file("report.h5");
  kpl::write_self_check_report(results, shipped_input, path);
  const kpl::hdf5::InputFile report(path);
  const auto numbers = report.read<double, 2>("results");
  const auto passed = report.read<std::int32_t, 1>("passed");
  ASSERT_EQ(numbers.extent(0), results.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(numbers(i, 0), results[i].value);
    EXPECT_EQ(passed(i), 1);
  }
  EXPECT_EQ(report.read_string_attribute("/", "input"), shipped_input);
  std::filesystem::remove(path);
}
