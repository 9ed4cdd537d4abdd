// kpl::hdf5: round trips of every supported element type and rank, attributes,
// every error the reader reports, and the all-or-nothing output file.
#include "execution_space_test.hpp"

#include <kpl/hdf5_io.hpp>

#include <hdf5.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using kpl::hdf5::HostArray;
using kpl::hdf5::InputFile;
using kpl::hdf5::OutputFile;
using kpl::hdf5::ReadRequirements;

namespace {

// A fresh directory per test, removed afterwards.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // Typed suites are named "Suite/0": keep the name one path component.
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name) c = (c == '/') ? '_' : c;
    path_ = fs::temp_directory_path() / ("kpl_hdf5_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path_)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }

 private:
  fs::path path_;
};

// Runs `action`, which must throw Exception with every fragment in its message.
template <class Exception, class Action>
void expect_error(Action&& action, const std::vector<std::string>& fragments) {
  try {
    action();
    FAIL() << "no exception; expected one mentioning '" << fragments.front() << "'";
  } catch (const Exception& error) {
    const std::string message = error.what();
    for (const auto& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "message '" << message << "' does not mention '" << fragment << "'";
    }
  }
}

// Files the writer cannot make (strings, compounds, unsigned data, fixed-length
// string attributes) are built directly with the C API, as h5py would.
void write_with_c_api(const std::string& path, const std::function<void(hid_t)>& body) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  body(file);
  H5Fclose(file);
}

template <class T>
T random_value(std::mt19937_64& generator) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::uniform_real_distribution<T>(-1e3, 1e3)(generator);
  } else {
    return std::uniform_int_distribution<T>(std::numeric_limits<T>::min(),
                                            std::numeric_limits<T>::max())(generator);
  }
}

template <class T>
class ElementType : public ::testing::Test {};
using ElementTypes = ::testing::Types<double, float, std::int64_t, std::int32_t>;
TYPED_TEST_SUITE(ElementType, ElementTypes);

}  // namespace

TYPED_TEST(ElementType, RoundTripsRanksOneToThree) {
  using T = TypeParam;
  ScratchDirectory directory;
  std::mt19937_64 generator(20261122);
  HostArray<T, 1> vector("vector", 7);
  HostArray<T, 2> matrix("matrix", 5, 3);
  HostArray<T, 3> cube("cube", 2, 3, 4);
  for (std::size_t i = 0; i < vector.size(); ++i) vector.data()[i] = random_value<T>(generator);
  for (std::size_t i = 0; i < matrix.size(); ++i) matrix.data()[i] = random_value<T>(generator);
  for (std::size_t i = 0; i < cube.size(); ++i) cube.data()[i] = random_value<T>(generator);

  const auto path = directory.file("round_trip.h5");
  {
    OutputFile output(path);
    output.write("vector", vector);
    output.write("/group/nested/matrix", matrix);
    output.write("cube", cube);
    output.commit();
  }
  const InputFile input(path);
  EXPECT_EQ(input.shape("/group/nested/matrix"), (std::vector<std::size_t>{5, 3}));
  const auto vector_read = input.read<T, 1>("vector");
  const auto matrix_read = input.read<T, 2>("group/nested/matrix");
  const auto cube_read = input.read<T, 3>("/cube");
  ASSERT_EQ(vector_read.extent(0), 7u);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(vector_read(i), vector(i));
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(matrix_read(i, j), matrix(i, j));
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(cube_read(i, j, k), cube(i, j, k));
}

TEST(Hdf5Output, WritesAnyLayoutRowMajor) {
  ScratchDirectory directory;
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> column_major("left", 4, 3);
  Kokkos::View<double***, Kokkos::LayoutLeft, Kokkos::HostSpace> cube("cube", 2, 3, 5);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) column_major(i, j) = 10 * i + j;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) cube(i, j, k) = 100 * i + 10 * j + k;
  // A strided, non-contiguous view: every other row of a LayoutRight matrix.
  HostArray<double, 2> wide("wide", 6, 2);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 2; ++j) wide(i, j) = 7 * i + j;
  Kokkos::View<double**, Kokkos::LayoutStride, Kokkos::HostSpace> every_other_row(
      wide.data(), Kokkos::LayoutStride(3, 4, 2, 1));
  const auto transposed_column = Kokkos::subview(column_major, 1, Kokkos::ALL);

  const auto path = directory.file("layouts.h5");
  {
    OutputFile output(path);
    output.write("left", column_major);
    output.write("cube", cube);
    output.write("strided", every_other_row);
    output.write("row", transposed_column);
    output.commit();
  }
  const InputFile input(path);
  const auto left = input.read<double, 2>("left");
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(left(i, j), 10 * i + j);
  const auto cube_read = input.read<double, 3>("cube");
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) EXPECT_EQ(cube_read(i, j, k), 100 * i + 10 * j + k);
  const auto strided = input.read<double, 2>("strided");
  ASSERT_EQ(input.shape("strided"), (std::vector<std::size_t>{3, 2}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(strided(i, j), 7 * (2 * i) + j);
  const auto row = input.read<double, 1>("row");
  for (int j = 0; j < 3; ++j) EXPECT_EQ(row(j), 10 + j);
}

TEST(Hdf5Output, WritesAndReadsEmptyDatasetsWhenAllowed) {
  ScratchDirectory directory;
  const auto path = directory.file("empty.h5");
  {
    OutputFile output(path);
    output.write("none", HostArray<double, 2>("none", 0, 4));
    output.commit();
  }
  const InputFile input(path);
  expect_error<kpl::input_error>([&] { input.read<double, 2>("none"); },
                                 {path, "/none", "empty", "[0, 4]"});
  const auto none = input.read<double, 2>("none", ReadRequirements{false, true});
  EXPECT_EQ(none.extent(0), 0u);
  EXPECT_EQ(none.extent(1), 4u);
}

TEST(Hdf5Input, ConvertsOnlyWithoutLoss) {
  ScratchDirectory directory;
  const auto path = directory.file("types.h5");
  HostArray<std::int32_t, 1> integers("integers", 3);
  HostArray<std::int64_t, 1> wide_integers("wide", 3);
  HostArray<double, 1> doubles("doubles", 3);
  for (int i = 0; i < 3; ++i) {
    integers(i) = i - 1;
    wide_integers(i) = (std::int64_t(1) << 40) + i;
    doubles(i) = 0.25 * i;
  }
  {
    OutputFile output(path);
    output.write("integers", integers);
    output.write("wide", wide_integers);
    output.write("doubles", doubles);
    output.commit();
  }
  const InputFile input(path);
  const auto as_double = input.read<double, 1>("integers");
  EXPECT_EQ(as_double(0), -1.0);
  const auto as_int64 = input.read<std::int64_t, 1>("integers");
  EXPECT_EQ(as_int64(2), 1);
  const auto as_float = input.read<float, 1>("doubles");  // the caller chose float precision
  EXPECT_EQ(as_float(1), 0.25f);
  expect_error<kpl::input_error>([&] { input.read<std::int32_t, 1>("doubles"); },
                                 {path, "/doubles", "wrong type", "float64", "int32"});
  expect_error<kpl::input_error>([&] { input.read<std::int32_t, 1>("wide"); },
                                 {path, "/wide", "wrong type", "int64", "int32"});
}

TEST(Hdf5Input, ReportsMissingAndForeignFiles) {
  ScratchDirectory directory;
  const auto missing = directory.file("missing.h5");
  expect_error<kpl::input_error>([&] { InputFile file(missing); }, {missing, "no such file"});
  const auto text = directory.file("notes.h5");
  std::ofstream(text) << "this is not HDF5\n";
  expect_error<kpl::input_error>([&] { InputFile file(text); }, {text, "not an HDF5 file"});
  const auto empty = directory.file("zero_bytes.h5");
  std::ofstream{empty};
  expect_error<kpl::input_error>([&] { InputFile file(empty); }, {empty, "not an HDF5 file"});
  expect_error<kpl::input_error>([&] { InputFile file(directory.file("")); }, {"directory"});
}

TEST(Hdf5Input, ReportsMissingDatasetsWrongRankAndGroups) {
  ScratchDirectory directory;
  const auto path = directory.file("shapes.h5");
  {
    OutputFile output(path);
    output.write("group/matrix", HostArray<double, 2>("m", 2, 3));
    output.commit();
  }
  const InputFile input(path);
  EXPECT_TRUE(input.has_dataset("/group/matrix"));
  EXPECT_FALSE(input.has_dataset("/group"));
  EXPECT_FALSE(input.has_dataset("/nowhere/matrix"));
  expect_error<kpl::input_error>([&] { input.read<double, 1>("b"); }, {path, "/b", "missing"});
  expect_error<kpl::input_error>([&] { input.read<double, 2>("/nowhere/matrix"); },
                                 {path, "/nowhere/matrix", "missing"});
  expect_error<kpl::input_error>([&] { input.read<double, 1>("group"); },
                                 {path, "/group", "not a dataset"});
  expect_error<kpl::input_error>([&] { input.read<double, 1>("group/matrix"); },
                                 {path, "/group/matrix", "rank 2", "[2, 3]", "expected rank 1"});
  expect_error<kpl::input_error>([&] { input.read<double, 3>("group/matrix"); },
                                 {"expected rank 3"});
}

TEST(Hdf5Input, ReportsUnsupportedTypes) {
  ScratchDirectory directory;
  const auto path = directory.file("foreign.h5");
  write_with_c_api(path, [](hid_t file) {
    const hsize_t two = 2;
    const hid_t space = H5Screate_simple(1, &two, nullptr);
    const hid_t text = H5Tcopy(H5T_C_S1);
    H5Tset_size(text, 4);
    const char words[8] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    const hid_t strings =
        H5Dcreate2(file, "words", text, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(strings, text, H5S_ALL, H5S_ALL, H5P_DEFAULT, words);
    H5Dclose(strings);
    const hid_t pair = H5Tcreate(H5T_COMPOUND, 16);
    H5Tinsert(pair, "re", 0, H5T_NATIVE_DOUBLE);
    H5Tinsert(pair, "im", 8, H5T_NATIVE_DOUBLE);
    const double values[4] = {1, 2, 3, 4};
    const hid_t complex =
        H5Dcreate2(file, "complex", pair, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(complex, pair, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
    H5Dclose(complex);
    const std::uint64_t big[2] = {1, 2};
    const hid_t unsigned_set =
        H5Dcreate2(file, "unsigned", H5T_STD_U64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(unsigned_set, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, big);
    H5Dclose(unsigned_set);
    H5Tclose(pair);
    H5Tclose(text);
    H5Sclose(space);
  });
  const InputFile input(path);
  expect_error<kpl::input_error>([&] { input.read<double, 1>("words"); },
                                 {path, "/words", "unsupported type", "string"});
  expect_error<kpl::input_error>([&] { input.read<float, 1>("complex"); },
                                 {path, "/complex", "unsupported type", "compound"});
  expect_error<kpl::input_error>([&] { input.read<std::int64_t, 1>("unsigned"); },
                                 {path, "/unsigned", "uint64", "int64"});
  EXPECT_EQ((input.read<double, 1>("unsigned")(1)), 2.0);
}

TEST(Hdf5Input, RejectsNanAndInfOnlyWhereFiniteValuesAreRequired) {
  ScratchDirectory directory;
  const auto path = directory.file("finite.h5");
  HostArray<double, 2> with_nan("with_nan", 3, 4);
  HostArray<float, 1> with_inf("with_inf", 5);
  Kokkos::deep_copy(with_nan, 1.0);
  Kokkos::deep_copy(with_inf, 2.0f);
  with_nan(2, 1) = std::numeric_limits<double>::quiet_NaN();
  with_inf(4) = -std::numeric_limits<float>::infinity();
  {
    OutputFile output(path);
    output.write("with_nan", with_nan);
    output.write("with_inf", with_inf);
    output.commit();
  }
  const InputFile input(path);
  const ReadRequirements finite{true, false};
  expect_error<kpl::input_error>([&] { input.read<double, 2>("with_nan", finite); },
                                 {path, "/with_nan", "NaN or Inf", "[2, 1]"});
  expect_error<kpl::input_error>([&] { input.read<float, 1>("with_inf", finite); },
                                 {path, "/with_inf", "[4]"});
  expect_error<kpl::input_error>([&] { input.read<double, 1>("with_inf", finite); },
                                 {"/with_inf", "[4]"});
  EXPECT_TRUE(std::isnan(input.read<double, 2>("with_nan")(2, 1)));
}

// The finite check tests blocks of values at once: a NaN or Inf is found at
// either end of a block and of the data, and the extreme finite values
// (the largest, the smallest denormal, -0) pass.
template <class T>
void check_non_finite_found_anywhere() {
  ScratchDirectory directory;
  using limits = std::numeric_limits<T>;
  constexpr std::size_t count = 10000;
  HostArray<T, 1> extremes("extremes", count);
  for (std::size_t i = 0; i < count; ++i) extremes(i) = T(i % 7) - T(3);
  const T finite_edges[] = {limits::max(), limits::lowest(), limits::denorm_min(),
                            -limits::denorm_min(), limits::min(), T(-0.0)};
  for (std::size_t e = 0; e < std::size(finite_edges); ++e) extremes(4090 + e) = finite_edges[e];
  const auto clean_path = directory.file("clean.h5");
  {
    OutputFile output(clean_path);
    output.write("/values", extremes);
    output.commit();
  }
  const ReadRequirements finite{true, false};
  const auto read = InputFile(clean_path).read<T, 1>("/values", finite);
  EXPECT_EQ(read(4090), limits::max());
  for (const std::size_t at : {std::size_t(0), std::size_t(4095), std::size_t(4096),
                               std::size_t(8191), count - 1})
    for (const T bad : {limits::quiet_NaN(), limits::infinity(), -limits::infinity()}) {
      HostArray<T, 1> values("values", count);
      Kokkos::deep_copy(values, extremes);
      values(at) = bad;
      const auto path = directory.file("bad_" + std::to_string(at) + ".h5");
      {
        OutputFile output(path);
        output.write("/values", values);
        output.commit();
      }
      expect_error<kpl::input_error>([&] { InputFile(path).read<T, 1>("/values", finite); },
                                     {"NaN or Inf", "[" + std::to_string(at) + "]"});
    }
}

TEST(Hdf5Input, FindsNanAndInfAnywhereInDoubles) { check_non_finite_found_anywhere<double>(); }
TEST(Hdf5Input, FindsNanAndInfAnywhereInFloats) { check_non_finite_found_anywhere<float>(); }

// Large reads: a contiguous little-endian float64 dataset is read from the
// file's bytes, in shares on several threads where the machine has them;
// the same values stored big-endian, in chunks, or not yet written go
// through HDF5's own read. All must agree with the values written.
TEST(Hdf5Input, LargeReadsAgreeWhateverTheStorage) {
  ScratchDirectory directory;
  const auto path = directory.file("large.h5");
  constexpr hsize_t rows = 150000, columns = 8;  // 9.6 MB
  const auto value = [](std::size_t i) { return double(i) * 0.5 - 7.0; };
  std::vector<double> values(rows * columns);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = value(i);
  write_with_c_api(path, [&](hid_t file) {
    const hsize_t extents[2] = {rows, columns}, chunk[2] = {4096, columns};
    const hid_t space = H5Screate_simple(2, extents, nullptr);
    const hid_t chunked = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(chunked, 2, chunk);
    const hid_t late = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_alloc_time(late, H5D_ALLOC_TIME_LATE);
    const auto write_as = [&](const char* name, hid_t stored, hid_t creation) {
      const hid_t set = H5Dcreate2(file, name, stored, space, H5P_DEFAULT, creation, H5P_DEFAULT);
      H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
      H5Dclose(set);
    };
    write_as("little", H5T_IEEE_F64LE, H5P_DEFAULT);
    write_as("big", H5T_IEEE_F64BE, H5P_DEFAULT);
    write_as("chunked", H5T_IEEE_F64LE, chunked);
    H5Dclose(H5Dcreate2(file, "unwritten", H5T_IEEE_F64LE, space, H5P_DEFAULT, late, H5P_DEFAULT));
    auto holed = values;  // NaNs in the last share and an earlier one: the earlier is named
    holed[rows * columns - 1] = holed[75000 * columns + 3] = std::nan("");
    const hid_t set =
        H5Dcreate2(file, "holed", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, holed.data());
    H5Dclose(set);
    H5Pclose(late);
    H5Pclose(chunked);
    H5Sclose(space);
  });
  const InputFile input(path);
  const ReadRequirements finite{true, false};
  for (const char* name : {"little", "big", "chunked"}) {
    SCOPED_TRACE(name);
    const auto whole = input.read<double, 2>(name, finite);
    for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(whole.data()[i], value(i)) << i;
    const auto middle = input.read_rows<double, 2>(name, 70001, 65000, finite);
    for (std::size_t i = 0; i < middle.size(); ++i)
      ASSERT_EQ(middle.data()[i], value(70001 * columns + i)) << i;
  }
  const auto unwritten = input.read<double, 2>("unwritten");
  for (std::size_t i = 0; i < unwritten.size(); ++i) ASSERT_EQ(unwritten.data()[i], 0.0) << i;
  expect_error<kpl::input_error>([&] { input.read<double, 2>("holed", finite); },
                                 {"/holed", "NaN or Inf", "[75000, 3]"});
}

// Rows written and read in blocks land where a plain formula of their
// coordinate says, and errors name the coordinate in the whole dataset.
double cell(std::size_t i, std::size_t j, std::size_t k) { return 100.0 * i + 10.0 * j + k; }

HostArray<double, 3> rows_of_cube(std::size_t first, std::size_t count) {
  HostArray<double, 3> rows("rows", count, 2, 3);
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t j = 0; j < 2; ++j)
      for (std::size_t k = 0; k < 3; ++k) rows(i, j, k) = cell(first + i, j, k);
  return rows;
}

TEST(Hdf5Rows, StreamsBlocksOfRowsBothWays) {
  ScratchDirectory directory;
  const auto path = directory.file("rows.h5");
  {
    OutputFile output(path);
    output.create_dataset<double>("/cube", {7, 2, 3});
    output.create_dataset<std::int32_t>("/index", {7});
    output.write_rows("/cube", 3, rows_of_cube(3, 4));  // out of order on purpose
    output.write_rows("/cube", 0, rows_of_cube(0, 3));
    for (std::size_t first = 0; first < 7; first += 3) {
      HostArray<std::int32_t, 1> block("block", std::min<std::size_t>(3, 7 - first));
      for (std::size_t i = 0; i < block.extent(0); ++i) block(i) = std::int32_t(first + i);
      output.write_rows("/index", first, block);
    }
    expect_error<kpl::runtime_error>([&] { output.write_rows("/cube", 6, rows_of_cube(6, 2)); },
                                     {"/cube", "rows 6", "do not fit", "[7, 2, 3]"});
    output.commit();
  }
  // commit() closed the file for good: no dataset, group or file handle of
  // kpl's is left open (one would keep the file open after its rename).
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
  const InputFile input(path);
  const auto whole = input.read<double, 3>("/cube");
  for (std::size_t i = 0; i < 7; ++i)
    for (std::size_t j = 0; j < 2; ++j)
      for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(whole(i, j, k), cell(i, j, k));
  const auto index = input.read<std::int32_t, 1>("/index");
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(index(i), std::int32_t(i));
  const auto middle = input.read_rows<double, 3>("/cube", 2, 4);
  ASSERT_EQ(middle.extent(0), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 2; ++j)
      for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(middle(i, j, k), cell(2 + i, j, k));
  const auto tail = input.read_rows<float, 3>("/cube", 5, 2);
  for (std::size_t j = 0; j < 2; ++j)
    for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(tail(1, j, k), float(cell(6, j, k)));
  const auto last_index = input.read_rows<std::int32_t, 1>("/index", 6, 1);
  EXPECT_EQ(last_index(0), 6);
  expect_error<kpl::input_error>([&] { input.read_rows<double, 3>("/cube", 5, 4); },
                                 {path, "/cube", "has 7 rows", "rows 5 to 9"});
}

TEST(Hdf5Rows, ErrorsNameTheCoordinateInTheWholeDataset) {
  ScratchDirectory directory;
  const auto path = directory.file("bad_rows.h5");
  {
    auto values = rows_of_cube(0, 7);
    values(5, 1, 2) = std::numeric_limits<double>::quiet_NaN();
    values(6, 0, 1) = 1e39;
    OutputFile output(path);
    output.write("/cube", values);
    output.commit();
  }
  const InputFile input(path);
  const ReadRequirements finite{true, false};
  expect_error<kpl::input_error>([&] { input.read_rows<double, 3>("/cube", 4, 2, finite); },
                                 {path, "/cube", "NaN or Inf", "[5, 1, 2]"});
  expect_error<kpl::input_error>([&] { input.read_rows<float, 3>("/cube", 6, 1); },
                                 {path, "/cube", "1e+39", "[6, 0, 1]", "beyond the range of float"});
  // Rows before the bad ones read fine.
  const auto clean = input.read_rows<double, 3>("/cube", 1, 3, finite);
  EXPECT_EQ(clean(2, 1, 2), cell(3, 1, 2));
}

TEST(Hdf5Input, ReportsDimensionMismatchNamingBothDatasets) {
  ScratchDirectory directory;
  const auto path = directory.file("system.h5");
  {
    OutputFile output(path);
    output.write("A", HostArray<double, 2>("A", 80, 25));
    output.write("b", HostArray<double, 2>("b", 3, 79));
    output.write("b_ok", HostArray<double, 1>("b_ok", 80));
    output.commit();
  }
  const InputFile input(path);
  kpl::hdf5::require_matching_extent(input, "A", 0, "b_ok", 0);
  expect_error<kpl::input_error>(
      [&] { kpl::hdf5::require_matching_extent(input, "A", 0, "b", 1); },
      {path, "dimension mismatch", "/A", "[80, 25]", "80", "/b", "[3, 79]", "79"});
  expect_error<kpl::input_error>(
      [&] { kpl::hdf5::require_matching_extent(input, "b_ok", 1, "A", 0); },
      {path, "/b_ok", "dimension 1"});
}

TEST(Hdf5Attributes, RoundTripStringsAndNumbers) {
  ScratchDirectory directory;
  const auto path = directory.file("attributes.h5");
  {
    OutputFile output(path);
    output.write("x", HostArray<double, 1>("x", 2));
    output.write_attribute("/", "precision", "double");
    output.write_attribute("/", "tolerance", 1.5e-10);
    output.write_attribute("x", "iterations", std::int64_t{42});
    output.write_attribute("x", "note", std::string("unicode: \xce\xbb = 0.1"));
    output.write_attribute("x", "note", std::string("rewritten"));
    output.commit();
  }
  const InputFile input(path);
  EXPECT_EQ(input.read_string_attribute("/", "precision"), "double");
  EXPECT_EQ(input.read_number_attribute("/", "tolerance"), 1.5e-10);
  EXPECT_EQ(input.read_integer_attribute("/x", "iterations"), 42);
  EXPECT_EQ(input.read_number_attribute("/x", "iterations"), 42.0);
  EXPECT_EQ(input.read_string_attribute("x", "note"), "rewritten");
  EXPECT_TRUE(input.has_attribute("/", "tolerance"));
  EXPECT_FALSE(input.has_attribute("/", "absent"));
  EXPECT_FALSE(input.has_attribute("/absent", "tolerance"));
  expect_error<kpl::input_error>([&] { input.read_number_attribute("/", "absent"); },
                                 {path, "'absent'", "missing"});
  expect_error<kpl::input_error>([&] { input.read_number_attribute("/", "precision"); },
                                 {path, "'precision'", "wrong type", "string"});
  expect_error<kpl::input_error>([&] { input.read_integer_attribute("/", "tolerance"); },
                                 {"'tolerance'", "integer"});
  expect_error<kpl::input_error>([&] { input.read_string_attribute("/x", "iterations"); },
                                 {"'iterations'", "string"});
  expect_error<kpl::input_error>([&] { input.read_string_attribute("/y", "note"); },
                                 {"/y", "missing"});
}

TEST(Hdf5Attributes, ReadsFixedLengthStringsAsH5pyAndNumpyWriteThem) {
  ScratchDirectory directory;
  const auto path = directory.file("fixed.h5");
  write_with_c_api(path, [](hid_t file) {
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t padded = H5Tcopy(H5T_C_S1);
    H5Tset_size(padded, 8);
    H5Tset_strpad(padded, H5T_STR_NULLPAD);
    const char name[8] = {'m', 'b', 'o', 'o', 's', 't', 0, 0};
    const hid_t attribute = H5Acreate2(file, "program", padded, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attribute, padded, name);
    H5Aclose(attribute);
    const hid_t spaced = H5Tcopy(H5T_C_S1);
    H5Tset_size(spaced, 6);
    H5Tset_strpad(spaced, H5T_STR_SPACEPAD);
    const char version[6] = {'2', '.', '9', ' ', ' ', ' '};
    const hid_t second = H5Acreate2(file, "version", spaced, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(second, spaced, version);
    H5Aclose(second);
    const float one_value[1] = {0.5f};
    const hsize_t one = 1;
    const hid_t vector_space = H5Screate_simple(1, &one, nullptr);
    const hid_t third =
        H5Acreate2(file, "nu", H5T_IEEE_F32LE, vector_space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(third, H5T_NATIVE_FLOAT, one_value);
    H5Aclose(third);
    H5Sclose(vector_space);
    H5Tclose(spaced);
    H5Tclose(padded);
    H5Sclose(scalar);
  });
  const InputFile input(path);
  EXPECT_EQ(input.read_string_attribute("/", "program"), "mboost");
  EXPECT_EQ(input.read_string_attribute("/", "version"), "2.9");
  EXPECT_EQ(input.read_number_attribute("/", "nu"), 0.5);
}

TEST(Hdf5Output, LeavesNothingBehindUnlessCommitted) {
  ScratchDirectory directory;
  const auto path = directory.file("result.h5");
  {
    OutputFile output(path);
    output.write("x", HostArray<double, 1>("x", 3));
    EXPECT_FALSE(fs::exists(path)) << "output visible before commit";
  }
  EXPECT_TRUE(directory.entries().empty()) << "an uncommitted output left files behind";

  // A failure half-way (the same dataset twice) leaves a previous result intact.
  {
    OutputFile output(path);
    output.write("x", HostArray<double, 1>("x", 3));
    output.write_attribute("/", "generation", std::int64_t{1});
    output.commit();
  }
  try {
    OutputFile output(path);
    output.write_attribute("/", "generation", std::int64_t{2});
    output.write("x", HostArray<double, 1>("x", 4));
    output.write("x", HostArray<double, 1>("x", 4));
    FAIL() << "writing a dataset twice must fail";
  } catch (const kpl::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/x"), std::string::npos);
  }
  EXPECT_EQ(directory.entries(), std::vector<std::string>{"result.h5"});
  const InputFile previous(path);
  EXPECT_EQ(previous.read_integer_attribute("/", "generation"), 1);
  EXPECT_EQ(previous.shape("x"), std::vector<std::size_t>{3});
}

TEST(Hdf5Output, ReportsUnwritableDestinations) {
  ScratchDirectory directory;
  const auto nowhere = directory.file("no/such/dir/out.h5");
  expect_error<kpl::input_error>([&] { OutputFile output(nowhere); }, {nowhere, "does not exist"});
  expect_error<kpl::input_error>([&] { OutputFile output(directory.file("")); }, {"directory"});
  OutputFile output(directory.file("attributes_first.h5"));
  expect_error<kpl::runtime_error>([&] { output.write_attribute("/x", "a", 1.0); },
                                   {"/x", "before its attributes"});
}

// --------------------------------------------------------- on every backend

namespace {
// Data read from a file, moved to the backend, transformed there and written
// back out: the path every kpl command takes.
template <class ExecutionSpace>
void check_device_round_trip() {
  ScratchDirectory directory;
  const auto path = directory.file("device.h5");
  HostArray<double, 2> matrix("matrix", 17, 33);
  std::mt19937_64 generator(7);
  for (std::size_t i = 0; i < matrix.size(); ++i)
    matrix.data()[i] = random_value<double>(generator);
  {
    OutputFile output(path);
    output.write("matrix", matrix);
    output.commit();
  }
  const InputFile input(path);
  const auto read = input.read<double, 2>("matrix", ReadRequirements{true, false});
  const auto device =
      Kokkos::create_mirror_view_and_copy(typename ExecutionSpace::memory_space{}, read);
  Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecutionSpace::memory_space> doubled(
      "doubled", device.extent(0), device.extent(1));
  Kokkos::parallel_for(
      "kpl::test::double_matrix",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>({0, 0}, {17, 33}),
      KOKKOS_LAMBDA(const int i, const int j) { doubled(i, j) = 2 * device(i, j); });
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, doubled);
  const auto out_path = directory.file("device_out.h5");
  {
    OutputFile output(out_path);
    output.write("doubled", host);
    output.commit();
  }
  const auto result = InputFile(out_path).read<double, 2>("doubled");
  for (int i = 0; i < 17; ++i)
    for (int j = 0; j < 33; ++j) ASSERT_EQ(result(i, j), 2 * matrix(i, j)) << i << "," << j;
}

// Every element of `device` (rows of a dataset from first_row) against
// `expected`, the whole dataset as written, back on the host.
template <class View, class Expected>
void expect_rows(const View& device, const Expected& expected, std::size_t first_row) {
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, device);
  const std::size_t row_elements = host.size() / std::max<std::size_t>(1, host.extent(0));
  const std::size_t offset = first_row * row_elements;
  for (std::size_t e = 0; e < host.size(); ++e)
    ASSERT_EQ(host.data()[e], expected.data()[offset + e]) << "element " << e;
}

// read_rows_to: blocks through the pinned buffers straight into the space's
// memory, a short last block among them; the destination starts as garbage
// so that a block never copied fails.
template <class ExecutionSpace>
void check_rows_read_to_space() {
  using Memory = typename ExecutionSpace::memory_space;
  ScratchDirectory directory;
  const auto path = directory.file("rows_to.h5");
  HostArray<double, 2> matrix("matrix", 23, 5);
  HostArray<double, 3> cube("cube", 9, 2, 3);
  HostArray<double, 1> vector("vector", 11);
  std::mt19937_64 generator(3);
  const auto fill = [&](double* values, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) values[i] = random_value<double>(generator);
  };
  fill(matrix.data(), matrix.size());
  fill(cube.data(), cube.size());
  fill(vector.data(), vector.size());
  HostArray<double, 2> holed("holed", 23, 5);
  Kokkos::deep_copy(holed, matrix);
  holed(17, 2) = std::numeric_limits<double>::quiet_NaN();
  {
    OutputFile output(path);
    output.write("/matrix", matrix);
    output.write("/cube", cube);
    output.write("/vector", vector);
    output.write("/holed", holed);
    output.commit();
  }
  const InputFile input(path);
  const ExecutionSpace space;
  const ReadRequirements finite{true, false};
  // 17 rows from row 3 in blocks of 3 rows (120 bytes): five full, one of 2.
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> rows("rows", 17, 5);
  Kokkos::deep_copy(rows, -12345.0);
  input.read_rows_to(space, "/matrix", 3, rows, finite, 3 * 5 * sizeof(double));
  expect_rows(rows, matrix, 3);
  // The default block (all rows in one), rank 3 and rank 1 in blocks of 2 values.
  Kokkos::View<double***, Kokkos::LayoutRight, Memory> slab("slab", 9, 2, 3);
  Kokkos::deep_copy(slab, -12345.0);
  input.read_rows_to(space, "/cube", 0, slab);
  expect_rows(slab, cube, 0);
  Kokkos::View<double*, Memory> tail("tail", 6);
  Kokkos::deep_copy(tail, -12345.0);
  input.read_rows_to(space, "/vector", 5, tail, finite, 2 * sizeof(double));
  expect_rows(tail, vector, 5);
  // The NaN at row 17 (the sixth block) is named in the whole dataset's coordinates;
  // the rows before it are in place.
  expect_error<kpl::input_error>(
      [&] { input.read_rows_to(space, "/holed", 2, rows, finite, 3 * 5 * sizeof(double)); },
      {path, "/holed", "NaN or Inf", "[17, 2]"});
  const auto partial = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rows);
  EXPECT_EQ(partial(14, 4), matrix(16, 4));
  // Checked before any block is read: rows past the end (the first block
  // would fit), a wrong row length.
  Kokkos::deep_copy(rows, -12345.0);
  expect_error<kpl::input_error>(
      [&] { input.read_rows_to(space, "/matrix", 7, rows, finite, 3 * 5 * sizeof(double)); },
      {path, "/matrix", "has 23 rows", "rows 7 to 24"});
  EXPECT_EQ(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rows)(0, 0), -12345.0);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> narrow("narrow", 4, 3);
  expect_error<kpl::runtime_error>([&] { input.read_rows_to(space, "/matrix", 0, narrow); },
                                   {"/matrix", "do not fit the buffer"});
  // No rows: the dataset is still checked.
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> none("none", 0, 5);
  input.read_rows_to(space, "/matrix", 23, none);
  expect_error<kpl::input_error>([&] { input.read_rows_to(space, "/absent", 0, none); },
                                 {path, "/absent"});
}
}  // namespace

KPL_EXECUTION_SPACE_SUITE(Hdf5Backend);

KPL_EXECUTION_SPACE_TEST(Hdf5Backend, FileToDeviceToFile) { check_device_round_trip<TypeParam>(); }

KPL_EXECUTION_SPACE_TEST(Hdf5Backend, ReadsRowsInBlocksIntoTheSpacesMemory) {
  check_rows_read_to_space<TypeParam>();
}

// ------------------------------------------------- chunked, compressed storage

namespace {
// The chunk rows and filters of a dataset as HDF5 itself reports them.
struct StoredAs {
  std::vector<hsize_t> chunk;
  bool shuffle = false, deflate = false;
};
StoredAs stored_as(const std::string& path, const std::string& dataset) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t set = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  const hid_t creation = H5Dget_create_plist(set);
  StoredAs stored;
  if (H5Pget_layout(creation) == H5D_CHUNKED) {
    stored.chunk.resize(3);
    stored.chunk.resize(std::size_t(H5Pget_chunk(creation, 3, stored.chunk.data())));
  }
  for (int f = 0; f < H5Pget_nfilters(creation); ++f) {
    unsigned flags = 0, values[8] = {};
    std::size_t count = 8;
    const H5Z_filter_t filter =
        H5Pget_filter2(creation, unsigned(f), &flags, &count, values, 0, nullptr, nullptr);
    stored.shuffle = stored.shuffle || filter == H5Z_FILTER_SHUFFLE;
    stored.deflate = stored.deflate || filter == H5Z_FILTER_DEFLATE;
  }
  H5Pclose(creation);
  H5Dclose(set);
  H5Fclose(file);
  return stored;
}
}  // namespace

// Rows compressed by kpl (shuffle + deflate made outside HDF5, on several
// threads) and stored by direct chunk writes read back through HDF5's own
// filters as the values written, a padded last chunk included, and equal to
// the same rows written through HDF5's filter pipeline.
TEST(Hdf5Storage, RowsCompressedAheadReadBackThroughHdf5sFilters) {
  ScratchDirectory directory;
  const std::size_t rows = 23, columns = 5;
  HostArray<double, 2> values("values", rows, columns);
  HostArray<std::int32_t, 1> counts("counts", rows);
  std::mt19937_64 random(7);
  std::normal_distribution<double> normal;
  for (std::size_t i = 0; i < rows; ++i) {
    counts(i) = std::int32_t(i * i) - 40;
    for (std::size_t j = 0; j < columns; ++j) values(i, j) = i % 3 == 0 ? 0.0 : normal(random);
  }
  const kpl::hdf5::Storage matrix{4, 6}, vector{8, 1};
  {
    OutputFile output(directory.file("ahead.h5"));
    output.create_dataset<double>("/values", {rows, columns}, matrix);
    output.create_dataset<std::int32_t>("/counts", {rows}, vector);
    // Two blocks: rows [0, 12) (whole chunks), then [12, 23) to the end.
    const auto first = Kokkos::subview(values, std::make_pair(0, 12), Kokkos::ALL);
    const auto rest = Kokkos::subview(values, std::make_pair(12, 23), Kokkos::ALL);
    output.write_compressed_rows("/values", kpl::hdf5::compress_rows(first, 0, matrix, 3));
    output.write_compressed_rows("/values", kpl::hdf5::compress_rows(rest, 12, matrix, 2));
    output.write_compressed_rows("/counts", kpl::hdf5::compress_rows(counts, 0, vector));
    output.commit();
  }
  {
    OutputFile output(directory.file("pipeline.h5"));
    output.create_dataset<double>("/values", {rows, columns}, matrix);
    output.write_rows("/values", 0, values);
    output.commit();
  }
  const InputFile ahead(directory.file("ahead.h5")), pipeline(directory.file("pipeline.h5"));
  const auto a = ahead.read<double, 2>("/values"), b = pipeline.read<double, 2>("/values");
  const auto c = ahead.read<std::int32_t, 1>("/counts");
  for (std::size_t i = 0; i < rows; ++i) {
    EXPECT_EQ(c(i), counts(i));
    for (std::size_t j = 0; j < columns; ++j) {
      EXPECT_EQ(a(i, j), values(i, j));
      EXPECT_EQ(b(i, j), values(i, j));
    }
  }
  const auto stored = stored_as(directory.file("ahead.h5"), "/values");
  EXPECT_EQ(stored.chunk, (std::vector<hsize_t>{4, columns}));
  EXPECT_TRUE(stored.shuffle && stored.deflate);
  // Rows that do not start a chunk, or stop inside one before the end.
  OutputFile output(directory.file("wrong.h5"));
  output.create_dataset<double>("/values", {rows, columns}, matrix);
  const auto middle = Kokkos::subview(values, std::make_pair(4, 10), Kokkos::ALL);
  expect_error<kpl::runtime_error>(
      [&] { kpl::hdf5::compress_rows(middle, 2, matrix); }, {"start a chunk"});
  expect_error<kpl::runtime_error>(
      [&] {
        output.write_compressed_rows("/values", kpl::hdf5::compress_rows(middle, 4, matrix));
      },
      {"/values", "do not match its storage"});
}

// Extendible datasets grow by appended rows and can be cut back (a resumed
// run); copies keep the source's element type, unsigned and big-endian ones
// too, through blocks of rows.
TEST(Hdf5Storage, AppendsResizesAndCopiesKeepingTypes) {
  ScratchDirectory directory;
  const std::string source = directory.file("source.h5");
  {
    const hid_t file = H5Fcreate(source.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t count = 5;
    const hid_t space = H5Screate_simple(1, &count, nullptr);
    const std::uint64_t shots[5] = {1ull << 40, 2, 3, 4, std::uint64_t(-1)};
    const std::uint16_t counts[5] = {0, 1, 65535, 7, 9};
    const hid_t a = H5Dcreate2(file, "/SHOTNUMBER", H5T_STD_U64LE, space, H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(a, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, shots);
    const hid_t b = H5Dcreate2(file, "/COUNTS", H5T_STD_U16BE, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    H5Dwrite(b, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, counts);
    H5Dclose(a), H5Dclose(b), H5Sclose(space), H5Fclose(file);
  }
  const std::string target = directory.file("target.h5");
  {
    const InputFile input(source);
    EXPECT_TRUE(input.holds_integers("/SHOTNUMBER"));
    OutputFile output(target);
    output.copy_dataset(input, "/SHOTNUMBER");               // contiguous
    output.copy_dataset(input, "/COUNTS", {2, 1, false}, 3);  // compressed here, big-endian
    output.create_dataset<double>("/grown", {0}, {4, 0, true});
    const std::vector<double> first = {1, 2, 3}, second = {4, 5, 6, 7, 8};
    using Unmanaged = Kokkos::View<const double*, Kokkos::HostSpace,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    output.append_rows("/grown", Unmanaged(first.data(), first.size()));
    output.append_rows("/grown", Unmanaged(second.data(), second.size()));
    EXPECT_EQ(output.rows("/grown"), 8u);
    output.resize_rows("/grown", 6);
    output.commit();
  }
  const hid_t file = H5Fopen(target.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t shots = H5Dopen2(file, "/SHOTNUMBER", H5P_DEFAULT);
  const hid_t counts = H5Dopen2(file, "/COUNTS", H5P_DEFAULT);
  const hid_t shot_type = H5Dget_type(shots), count_type = H5Dget_type(counts);
  EXPECT_GT(H5Tequal(shot_type, H5T_STD_U64LE), 0);
  EXPECT_GT(H5Tequal(count_type, H5T_STD_U16BE), 0);
  std::uint64_t shot_values[5] = {};
  std::uint16_t count_values[5] = {};
  H5Dread(shots, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, shot_values);
  H5Dread(counts, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, count_values);
  EXPECT_EQ(shot_values[0], 1ull << 40);
  EXPECT_EQ(shot_values[4], std::uint64_t(-1));
  EXPECT_EQ(count_values[2], 65535);
  H5Tclose(shot_type), H5Tclose(count_type), H5Dclose(shots), H5Dclose(counts), H5Fclose(file);
  EXPECT_EQ(stored_as(target, "/COUNTS").chunk, (std::vector<hsize_t>{2}));
  EXPECT_TRUE(stored_as(target, "/COUNTS").deflate);
  const auto grown = InputFile(target).read<double, 1>("/grown");
  ASSERT_EQ(grown.extent(0), 6u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(grown(i), double(i + 1));
}

// An output kept when interrupted is resumed under this process's partial
// name with what it held; a file HDF5 cannot open is refused by name.
TEST(Hdf5Storage, PartialOutputsAreResumed) {
  ScratchDirectory directory;
  const std::string target = directory.file("out.h5"), kept = directory.file("out.h5.partial-1");
  {
    OutputFile output(target, kpl::hdf5::OutputOptions{true});
    output.create_dataset<double>("/grown", {0}, {4, 0, true});
    output.write_attribute("/", "step", std::int64_t(1));
    output.write_attribute("/", "step", std::int64_t(2));  // rewritten where it is
    output.flush();
    fs::copy_file(output.partial_path(), kept);
  }
  EXPECT_FALSE(fs::exists(target));
  {
    auto output = OutputFile::resume_partial(target, kept, kpl::hdf5::OutputOptions{true});
    EXPECT_FALSE(fs::exists(kept));
    EXPECT_TRUE(output->has_dataset("/grown"));
    output->commit();
  }
  EXPECT_EQ(InputFile(target).read_integer_attribute("/", "step"), 2);
  std::ofstream(kept) << "not HDF5";
  expect_error<kpl::input_error>(
      [&] { OutputFile::resume_partial(target, kept, {}); }, {"out.h5.partial-1", "not an HDF5"});
}
