// The templates of kpl::hdf5::InputFile (kpl/hdf5_io.hpp): check the
// dataset, allocate the View, read, check the values. The checks and the
// HDF5 calls are in core/src/hdf5_read.cpp.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace kpl::hdf5 {

namespace impl {
// The checks and raw reads behind InputFile, on the open file `file` (a
// hid_t) at `path` (for messages); in core/src/hdf5_read.cpp.
std::vector<std::size_t> dataset_shape(const std::string& path, std::int64_t file,
                                       const std::string& dataset);
// The shape, after checking rank, type (readable as `type`) and emptiness.
std::vector<std::size_t> checked_shape(const std::string& path, std::int64_t file,
                                       const std::string& dataset, int rank, element_type type,
                                       bool allow_empty);
// Throws input_error when a float64 dataset read as float holds a finite
// value that float cannot hold at full precision: it would turn into Inf or
// 0, or lose its digits, silently.
void check_float_range(const std::string& path, std::int64_t file, const std::string& dataset,
                       std::size_t first_row, const std::vector<std::size_t>& extents);
// input_error when extents x element_size overflows, resource_error when the
// host has too little memory for it.
void require_memory(const std::string& path, const std::string& dataset,
                    const std::vector<std::size_t>& extents, std::size_t element_size);
void check_row_range(const std::string& path, const std::string& dataset, std::size_t first_row,
                     std::size_t row_count, std::size_t rows);
void read_raw(const std::string& path, std::int64_t file, const std::string& dataset,
              element_type type, void* data, std::size_t count);
void read_raw_rows(const std::string& path, std::int64_t file, const std::string& dataset,
                   element_type type, void* data, std::size_t first_row,
                   const std::vector<std::size_t>& extents);
// runtime_error: a buffer whose extents do not match the rows it is for.
[[noreturn]] void fail_buffer_shape(const std::string& path, const std::string& dataset,
                                    const std::vector<std::size_t>& extents);
[[noreturn]] void fail_not_finite(const std::string& path, const std::string& dataset,
                                  const std::vector<std::size_t>& extents, std::size_t flat_index,
                                  std::size_t first_row);

// Throws input_error at the first NaN or Inf, naming its coordinate.
template <class T>
void check_finite(const std::string& path, const std::string& dataset, const T* data,
                  const std::vector<std::size_t>& extents, std::size_t first_row = 0) {
  std::size_t count = 1;
  for (auto extent : extents) count *= extent;
  for (std::size_t i = 0; i < count; ++i) {
    // x - x is 0 for every finite x and NaN for NaN and +-Inf.
    if (!(data[i] - data[i] == T(0))) fail_not_finite(path, dataset, extents, i, first_row);
  }
}

// An uninitialized row-major host View of the given extents, labelled.
template <class T, int Rank>
HostArray<T, Rank> allocate(const std::string& label, const std::vector<std::size_t>& extents) {
  const auto allocation = Kokkos::view_alloc(Kokkos::WithoutInitializing, label);
  if constexpr (Rank == 1) {
    return HostArray<T, Rank>(allocation, extents[0]);
  } else if constexpr (Rank == 2) {
    return HostArray<T, Rank>(allocation, extents[0], extents[1]);
  } else {
    return HostArray<T, Rank>(allocation, extents[0], extents[1], extents[2]);
  }
}
}  // namespace impl

template <class T, int Rank>
HostArray<T, Rank> InputFile::read(const std::string& dataset,
                                   ReadRequirements requirements) const {
  static_assert(Rank >= 1 && Rank <= 3, "kpl::hdf5 reads datasets of rank 1 to 3");
  const auto extents = impl::checked_shape(path_, file_, dataset, Rank,
                                           impl::element_type_of<T>(), requirements.allow_empty);
  impl::require_memory(path_, dataset, extents, sizeof(T));
  auto array = impl::allocate<T, Rank>(dataset, extents);
  if constexpr (std::is_same_v<T, float>) impl::check_float_range(path_, file_, dataset, 0, extents);
  impl::read_raw(path_, file_, dataset, impl::element_type_of<T>(), array.data(), array.size());
  if constexpr (std::is_floating_point_v<T>) {
    if (requirements.finite) impl::check_finite(path_, dataset, array.data(), extents);
  }
  return array;
}

template <class T, int Rank>
HostArray<T, Rank> InputFile::read_rows(const std::string& dataset, std::size_t first_row,
                                        std::size_t row_count,
                                        ReadRequirements requirements) const {
  static_assert(Rank >= 1 && Rank <= 3, "kpl::hdf5 reads datasets of rank 1 to 3");
  auto extents = impl::checked_shape(path_, file_, dataset, Rank, impl::element_type_of<T>(),
                                     requirements.allow_empty);
  impl::check_row_range(path_, dataset, first_row, row_count, extents[0]);
  extents[0] = row_count;
  impl::require_memory(path_, dataset, extents, sizeof(T));
  auto array = impl::allocate<T, Rank>(dataset, extents);
  read_rows_into(dataset, first_row, array, requirements);
  return array;
}

template <class View>
void InputFile::read_rows_into(const std::string& dataset, std::size_t first_row,
                               const View& rows, ReadRequirements requirements) const {
  static_assert(Kokkos::is_view<View>::value, "read_rows_into takes a Kokkos::View");
  using T = typename View::non_const_value_type;
  constexpr int Rank = static_cast<int>(View::rank);
  static_assert(Rank >= 1 && Rank <= 3, "kpl::hdf5 reads datasets of rank 1 to 3");
  static_assert(
      (Rank == 1 || std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>) &&
          Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible,
      "read_rows_into takes contiguous host Views, LayoutRight from rank 2");
  auto extents = impl::checked_shape(path_, file_, dataset, Rank, impl::element_type_of<T>(),
                                     requirements.allow_empty);
  impl::check_row_range(path_, dataset, first_row, rows.extent(0), extents[0]);
  extents[0] = rows.extent(0);
  for (int d = 1; d < Rank; ++d)
    if (extents[d] != rows.extent(d)) impl::fail_buffer_shape(path_, dataset, extents);
  if (!rows.span_is_contiguous()) impl::fail_buffer_shape(path_, dataset, extents);
  if constexpr (std::is_same_v<T, float>) {
    if (!requirements.already_checked)
      impl::check_float_range(path_, file_, dataset, first_row, extents);
  }
  impl::read_raw_rows(path_, file_, dataset, impl::element_type_of<T>(), rows.data(), first_row,
                      extents);
  if constexpr (std::is_floating_point_v<T>) {
    if (requirements.finite && !requirements.already_checked)
      impl::check_finite(path_, dataset, rows.data(), extents, first_row);
  }
}

}  // namespace kpl::hdf5
