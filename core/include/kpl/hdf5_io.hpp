// HDF5 input and output for host Views, through HDF5's C API.
//
// Datasets are row-major in the file, as h5py and NumPy write them, and are
// read into LayoutRight host Views of rank 1 to 3. Every failure is reported
// as kpl::input_error (the file is wrong) or kpl::runtime_error (the system
// failed) whose message names the file and the dataset; HDF5's own error
// stack is never printed. Output goes to a temporary file beside the target
// and is renamed over it only by OutputFile::commit(), so a failure at any
// point leaves no half-written output behind.
#pragma once

#include <kpl/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kpl::hdf5 {

// Element types kpl reads and writes.
enum class element_type { float64, float32, int64, int32 };

template <class T>
constexpr element_type element_type_of() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_same_v<U, double> || std::is_same_v<U, float> ||
                    std::is_same_v<U, std::int64_t> || std::is_same_v<U, std::int32_t>,
                "kpl::hdf5 reads and writes double, float, int64_t and int32_t");
  if constexpr (std::is_same_v<U, double>) return element_type::float64;
  if constexpr (std::is_same_v<U, float>) return element_type::float32;
  if constexpr (std::is_same_v<U, std::int64_t>) return element_type::int64;
  return element_type::int32;
}

namespace impl {
template <class T, int Rank>
struct add_rank {
  using type = typename add_rank<T*, Rank - 1>::type;
};
template <class T>
struct add_rank<T, 0> {
  using type = T;
};
}  // namespace impl

// The View type a dataset of rank Rank is read into: row-major, on the host.
template <class T, int Rank>
using HostArray =
    Kokkos::View<typename impl::add_rank<T, Rank>::type, Kokkos::LayoutRight, Kokkos::HostSpace>;

// What a read requires of the values, beyond type and rank.
struct ReadRequirements {
  bool finite = false;       // reject NaN and +-Inf (floating types only)
  bool allow_empty = false;  // accept a dataset with zero elements
  // The values were checked by an earlier read of the same rows (finite,
  // within float's range): skip those checks.
  bool already_checked = false;
};

// An HDF5 file opened for reading. Opening fails with input_error when the path
// is not a regular file (a directory, FIFO or device is refused at once), cannot
// be read or is not an HDF5 file. Datasets reached through external links, kept
// in external raw files or virtual (mapping other files) are refused: an input
// file may name only data it holds. Reads check their byte count before
// allocating (input_error on overflow, resource_error past the free memory).
class InputFile {
 public:
  explicit InputFile(std::string path);
  ~InputFile();
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }

  bool has_dataset(const std::string& dataset) const;
  // Extents of a dataset, slowest-varying first (as h5py's .shape).
  std::vector<std::size_t> shape(const std::string& dataset) const;
  // Its size in memory as elements of element_size bytes; input_error when
  // that overflows (a crafted shape such as 2^61 x 2^61).
  std::int64_t bytes(const std::string& dataset, std::size_t element_size) const;

  // Reads a whole dataset of exactly rank Rank. Integer datasets may be read
  // into floating-point Views and float64 into float32 (the caller asked for
  // that precision); floating-point data is never read into an integer View
  // and integers are never narrowed.
  template <class T, int Rank>
  HostArray<T, Rank> read(const std::string& dataset, ReadRequirements requirements = {}) const {
    static_assert(Rank >= 1 && Rank <= 3, "kpl::hdf5 reads datasets of rank 1 to 3");
    const auto extents =
        checked_shape(dataset, Rank, element_type_of<T>(), requirements.allow_empty);
    require_memory(dataset, extents, sizeof(T));
    HostArray<T, Rank> array;
    if constexpr (Rank == 1) {
      array =
          HostArray<T, Rank>(Kokkos::view_alloc(Kokkos::WithoutInitializing, dataset), extents[0]);
    } else if constexpr (Rank == 2) {
      array = HostArray<T, Rank>(Kokkos::view_alloc(Kokkos::WithoutInitializing, dataset),
                                 extents[0], extents[1]);
    } else {
      array = HostArray<T, Rank>(Kokkos::view_alloc(Kokkos::WithoutInitializing, dataset),
                                 extents[0], extents[1], extents[2]);
    }
    if constexpr (std::is_same_v<T, float>) check_float_range(dataset, 0, extents);
    read_raw(dataset, element_type_of<T>(), array.data(), array.size());
    if constexpr (std::is_floating_point_v<T>) {
      if (requirements.finite) check_finite(dataset, array.data(), extents);
    }
    return array;
  }

  // Reads rows [first_row, first_row + row_count) of a dataset (slices along
  // its first dimension), so that datasets larger than memory can be
  // streamed. The whole dataset's type and rank are checked as by read().
  template <class T, int Rank>
  HostArray<T, Rank> read_rows(const std::string& dataset, std::size_t first_row,
                               std::size_t row_count, ReadRequirements requirements = {}) const {
    static_assert(Rank >= 1 && Rank <= 3, "kpl::hdf5 reads datasets of rank 1 to 3");
    auto extents = checked_shape(dataset, Rank, element_type_of<T>(), requirements.allow_empty);
    check_row_range(dataset, first_row, row_count, extents[0]);
    extents[0] = row_count;
    require_memory(dataset, extents, sizeof(T));
    const auto allocation = Kokkos::view_alloc(Kokkos::WithoutInitializing, dataset);
    HostArray<T, Rank> array;
    if constexpr (Rank == 1) {
      array = HostArray<T, Rank>(allocation, extents[0]);
    } else if constexpr (Rank == 2) {
      array = HostArray<T, Rank>(allocation, extents[0], extents[1]);
    } else {
      array = HostArray<T, Rank>(allocation, extents[0], extents[1], extents[2]);
    }
    if constexpr (std::is_same_v<T, float>) {
      if (!requirements.already_checked) check_float_range(dataset, first_row, extents);
    }
    read_raw_rows(dataset, element_type_of<T>(), array.data(), first_row, extents);
    if constexpr (std::is_floating_point_v<T>) {
      if (requirements.finite && !requirements.already_checked)
        check_finite(dataset, array.data(), extents, first_row);
    }
    return array;
  }

  // Attributes of the file ("/") or of a dataset or group.
  bool has_attribute(const std::string& object, const std::string& name) const;
  std::string read_string_attribute(const std::string& object, const std::string& name) const;
  double read_number_attribute(const std::string& object, const std::string& name) const;
  std::int64_t read_integer_attribute(const std::string& object, const std::string& name) const;

 private:
  std::vector<std::size_t> checked_shape(const std::string& dataset, int rank, element_type type,
                                         bool allow_empty) const;
  // Throws input_error when a float64 dataset read as float holds a finite
  // value that float cannot hold at full precision (beyond 3.4e38, or
  // non-zero below 1.2e-38 in magnitude): it would turn into Inf or 0, or
  // lose its digits, silently. Reads the rows as double in blocks.
  void check_float_range(const std::string& dataset, std::size_t first_row,
                         const std::vector<std::size_t>& extents) const;
  // Throws input_error when extents x element_size overflows, resource_error
  // when the host has too little memory for it.
  void require_memory(const std::string& dataset, const std::vector<std::size_t>& extents,
                      std::size_t element_size) const;
  void read_raw(const std::string& dataset, element_type type, void* data, std::size_t count) const;
  void read_raw_rows(const std::string& dataset, element_type type, void* data,
                     std::size_t first_row, const std::vector<std::size_t>& extents) const;
  void check_row_range(const std::string& dataset, std::size_t first_row, std::size_t row_count,
                       std::size_t rows) const;
  template <class T>
  void check_finite(const std::string& dataset, const T* data,
                    const std::vector<std::size_t>& extents, std::size_t first_row = 0) const;
  [[noreturn]] void fail_not_finite(const std::string& dataset,
                                    const std::vector<std::size_t>& extents, std::size_t flat_index,
                                    std::size_t first_row) const;

  std::string path_;
  std::int64_t file_ = -1;  // hid_t
};

// Throws input_error unless extent `dimension_a` of dataset a equals extent
// `dimension_b` of dataset b, naming both (e.g. /A's rows and /b's length).
void require_matching_extent(const InputFile& file, const std::string& dataset_a, int dimension_a,
                             const std::string& dataset_b, int dimension_b);

// The directory a path's file is in ("." for a bare name).
std::string directory_of(const std::string& path);

// Throws input_error unless `output` can be written: absent or a regular file
// (a symbolic link, directory, device, FIFO or socket is refused: kpl never
// replaces one), in an existing directory this process may write to.
void require_writable_target(const std::string& output);

// Throws input_error when `output` is one of `inputs`: the same path, or a
// symbolic or hard link to the same file.
void require_distinct(const std::string& output, const std::vector<std::string>& inputs);

// Removes "<output>.partial-<pid>" files whose process no longer runs (left
// by a run that was killed) and returns their paths.
std::vector<std::string> remove_stale_partials(const std::string& output);

// Unlinks every partial file of this process that was not committed.
// Async-signal-safe: for a program's SIGINT/SIGTERM/SIGHUP handler.
void remove_uncommitted_outputs() noexcept;

// An HDF5 file being written. Its target is checked first
// (require_writable_target); everything goes to "<path>.partial-<pid>" in the
// same directory; commit() closes it and renames it to <path>. Destroying an
// OutputFile that was not committed removes the partial file, as does
// remove_uncommitted_outputs().
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }

  // Writes a host View of rank 1 to 3, in any layout, row-major into the file.
  // Intermediate groups in the dataset's path are created.
  template <class View>
  void write(const std::string& dataset, const View& view) {
    static_assert(Kokkos::is_view<View>::value, "OutputFile::write takes a Kokkos::View");
    static_assert(View::rank >= 1 && View::rank <= 3, "kpl::hdf5 writes datasets of rank 1 to 3");
    static_assert(
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible,
        "OutputFile::write takes host Views: copy device data with "
        "Kokkos::create_mirror_view_and_copy first");
    using value_type = typename View::non_const_value_type;
    std::vector<std::size_t> extents;
    for (int d = 0; d < static_cast<int>(View::rank); ++d) extents.push_back(view.extent(d));
    using RowMajor =
        Kokkos::View<typename View::non_const_data_type, Kokkos::LayoutRight, Kokkos::HostSpace>;
    if constexpr (std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>) {
      if (view.span_is_contiguous()) {
        write_raw(dataset, element_type_of<value_type>(), view.data(), extents);
        return;
      }
    }
    RowMajor row_major;
    const auto allocation = Kokkos::view_alloc(Kokkos::WithoutInitializing, dataset);
    if constexpr (View::rank == 1) {
      row_major = RowMajor(allocation, extents[0]);
    } else if constexpr (View::rank == 2) {
      row_major = RowMajor(allocation, extents[0], extents[1]);
    } else {
      row_major = RowMajor(allocation, extents[0], extents[1], extents[2]);
    }
    copy_to_row_major(view, row_major);
    write_raw(dataset, element_type_of<value_type>(), row_major.data(), extents);
  }

  // A dataset written in slices: create it with its full extents, then
  // write_rows() each block of rows (along the first dimension) once.
  template <class T>
  void create_dataset(const std::string& dataset, const std::vector<std::size_t>& extents) {
    create_raw(dataset, element_type_of<T>(), extents);
  }
  template <class View>
  void write_rows(const std::string& dataset, std::size_t first_row, const View& view) {
    static_assert(Kokkos::is_view<View>::value, "OutputFile::write_rows takes a Kokkos::View");
    static_assert(View::rank >= 1 && View::rank <= 3, "kpl::hdf5 writes datasets of rank 1 to 3");
    static_assert(
        (View::rank == 1 ||
         std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>)&&Kokkos::
            SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible,
        "OutputFile::write_rows takes contiguous host Views, LayoutRight from rank 2");
    if (!view.span_is_contiguous())
      throw runtime_error("OutputFile::write_rows: the View is not contiguous");
    std::vector<std::size_t> extents;
    for (int d = 0; d < static_cast<int>(View::rank); ++d) extents.push_back(view.extent(d));
    write_raw_rows(dataset, element_type_of<typename View::non_const_value_type>(), view.data(),
                   first_row, extents);
  }

  void write_attribute(const std::string& object, const std::string& name,
                       const std::string& value);
  void write_attribute(const std::string& object, const std::string& name, const char* value) {
    write_attribute(object, name, std::string(value));
  }
  void write_attribute(const std::string& object, const std::string& name, double value);
  void write_attribute(const std::string& object, const std::string& name, std::int64_t value);

  // Makes the output visible under its final name. Nothing written before is
  // visible until this returns.
  void commit();

 private:
  template <class Source, class Destination>
  static void copy_to_row_major(const Source& source, const Destination& destination) {
    // An element loop rather than Kokkos::deep_copy: deep_copy between
    // layouts needs an execution space and would run a kernel for what is a
    // host-side reshuffle of data that is about to be written to disk.
    if constexpr (Source::rank == 1) {
      for (std::size_t i = 0; i < source.extent(0); ++i) destination(i) = source(i);
    } else if constexpr (Source::rank == 2) {
      for (std::size_t i = 0; i < source.extent(0); ++i)
        for (std::size_t j = 0; j < source.extent(1); ++j) destination(i, j) = source(i, j);
    } else {
      for (std::size_t i = 0; i < source.extent(0); ++i)
        for (std::size_t j = 0; j < source.extent(1); ++j)
          for (std::size_t k = 0; k < source.extent(2); ++k) destination(i, j, k) = source(i, j, k);
    }
  }
  void write_raw(const std::string& dataset, element_type type, const void* data,
                 const std::vector<std::size_t>& extents);
  std::int64_t create_raw(const std::string& dataset, element_type type,
                          const std::vector<std::size_t>& extents);  // returns an open hid_t
  void write_raw_rows(const std::string& dataset, element_type type, const void* data,
                      std::size_t first_row, const std::vector<std::size_t>& extents);
  std::int64_t open_object(const std::string& object) const;
  void close_and_remove() noexcept;

  std::string path_;
  std::string partial_path_;
  std::int64_t file_ = -1;  // hid_t
  int registration_ = -1;   // slot in the list remove_uncommitted_outputs() clears
  bool committed_ = false;
};

// Implementation of the finiteness check, kept here because it is a template.
template <class T>
void InputFile::check_finite(const std::string& dataset, const T* data,
                             const std::vector<std::size_t>& extents, std::size_t first_row) const {
  std::size_t count = 1;
  for (auto extent : extents) count *= extent;
  for (std::size_t i = 0; i < count; ++i) {
    // x - x is 0 for every finite x and NaN for NaN and +-Inf.
    if (!(data[i] - data[i] == T(0))) fail_not_finite(dataset, extents, i, first_row);
  }
}

}  // namespace kpl::hdf5
