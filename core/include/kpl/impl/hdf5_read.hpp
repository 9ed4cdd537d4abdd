// The templates of kpl::hdf5::InputFile (kpl/hdf5_io.hpp): check the
// dataset, allocate the View, read, check the values. The checks and the
// HDF5 calls are in core/src/hdf5_read.cpp.
#pragma once

#include <kpl/execution_spaces.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
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

// Whether any of data[0, count) is NaN or +-Inf (float or double). Their
// exponent bits are all ones, and only theirs carry into the sign bit when
// one is added below the exponent: integer additions and ors the compiler
// runs several values at a time, without a branch per value.
template <class T>
bool any_not_finite(const T* data, std::size_t count) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  constexpr int mantissa_bits = std::numeric_limits<T>::digits - 1;
  constexpr Bits exponent = (~Bits(0) >> 1) & ~((Bits(1) << mantissa_bits) - 1);
  Bits carries = 0;
  for (std::size_t i = 0; i < count; ++i) {
    Bits bits;
    std::memcpy(&bits, data + i, sizeof bits);
    carries |= (bits & exponent) + (Bits(1) << mantissa_bits);
  }
  return (carries >> (8 * sizeof(Bits) - 1)) != 0;
}

// any_not_finite on several threads for large arrays (core/src/hdf5_read.cpp).
bool any_not_finite_in(const float* data, std::size_t count);
bool any_not_finite_in(const double* data, std::size_t count);

// Throws input_error at the first NaN or Inf, naming its coordinate. Blocks
// of values are tested at once, and only a block that holds one is searched.
template <class T>
void check_finite(const std::string& path, const std::string& dataset, const T* data,
                  const std::vector<std::size_t>& extents, std::size_t first_row = 0) {
  std::size_t count = 1;
  for (auto extent : extents) count *= extent;
  if (!any_not_finite_in(data, count)) return;
  constexpr std::size_t block = 4096;
  for (std::size_t start = 0; start < count; start += block) {
    const std::size_t end = std::min(count, start + block);
    if (!any_not_finite(data + start, end - start)) continue;
    for (std::size_t i = start; i < end; ++i) {
      // x - x is 0 for every finite x and NaN for NaN and +-Inf.
      if (!(data[i] - data[i] == T(0))) fail_not_finite(path, dataset, extents, i, first_row);
    }
  }
}

// The extents of rows [first_row, first_row + rows.extent(0)) of a dataset,
// after checking its rank and type against rows', the rows against its
// length, and rows' other extents against its own.
template <class View>
std::vector<std::size_t> checked_row_extents(const std::string& path, std::int64_t file,
                                             const std::string& dataset, std::size_t first_row,
                                             const View& rows, bool allow_empty) {
  constexpr int Rank = static_cast<int>(View::rank);
  auto extents = checked_shape(path, file, dataset, Rank,
                               element_type_of<typename View::non_const_value_type>(), allow_empty);
  check_row_range(path, dataset, first_row, rows.extent(0), extents[0]);
  extents[0] = rows.extent(0);
  for (int d = 1; d < Rank; ++d)
    if (extents[d] != rows.extent(d)) fail_buffer_shape(path, dataset, extents);
  return extents;
}

// Rows [first, first + count) of a View of rank 1 to 3.
template <class View>
auto leading_rows(const View& view, std::size_t first, std::size_t count) {
  const std::pair<std::size_t, std::size_t> rows(first, first + count);
  if constexpr (View::rank == 1) {
    return Kokkos::subview(view, rows);
  } else if constexpr (View::rank == 2) {
    return Kokkos::subview(view, rows, Kokkos::ALL);
  } else {
    return Kokkos::subview(view, rows, Kokkos::ALL, Kokkos::ALL);
  }
}

// Asks the system to back the large array at data with 2 MiB pages: read
// into fresh memory, an array's first touch of its 4 KiB pages (one fault
// each) takes several times as long as the read itself.
void prefer_huge_pages(void* data, std::size_t bytes);

// An uninitialized row-major View of the given extents, labelled (on the
// host unless Memory says otherwise), in huge pages where it is large.
template <class T, int Rank, class Memory = Kokkos::HostSpace>
auto allocate(const std::string& label, const std::vector<std::size_t>& extents) {
  using Array = Kokkos::View<typename add_rank<T, Rank>::type, Kokkos::LayoutRight, Memory>;
  const auto allocation = Kokkos::view_alloc(Kokkos::WithoutInitializing, label);
  const auto array = [&] {
    if constexpr (Rank == 1) {
      return Array(allocation, extents[0]);
    } else if constexpr (Rank == 2) {
      return Array(allocation, extents[0], extents[1]);
    } else {
      return Array(allocation, extents[0], extents[1], extents[2]);
    }
  }();
  if constexpr (std::is_same_v<Memory, Kokkos::HostSpace>)
    prefer_huge_pages(array.data(), array.size() * sizeof(T));
  return array;
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
  const auto extents =
      impl::checked_row_extents(path_, file_, dataset, first_row, rows, requirements.allow_empty);
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

template <class ExecutionSpace, class View>
void InputFile::read_rows_to(const ExecutionSpace& space, const std::string& dataset,
                             std::size_t first_row, const View& rows,
                             ReadRequirements requirements, std::size_t block_bytes) const {
  static_assert(Kokkos::is_view<View>::value, "read_rows_to takes a Kokkos::View");
  using T = typename View::non_const_value_type;
  constexpr int Rank = static_cast<int>(View::rank);
  static_assert(Rank >= 1 && Rank <= 3, "kpl::hdf5 reads datasets of rank 1 to 3");
  static_assert(
      (Rank == 1 || std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>) &&
          Kokkos::SpaceAccessibility<ExecutionSpace, typename View::memory_space>::accessible,
      "read_rows_to takes Views `space` can reach, LayoutRight from rank 2");
  // The whole range is checked before any block is read.
  auto extents =
      impl::checked_row_extents(path_, file_, dataset, first_row, rows, requirements.allow_empty);
  std::size_t row_bytes = sizeof(T);
  for (int d = 1; d < Rank; ++d) row_bytes *= std::max<std::size_t>(1, extents[d]);
  const std::size_t total = extents[0];
  const std::size_t block_rows =
      std::max<std::size_t>(1, std::min(total, block_bytes / row_bytes));
  extents[0] = std::min(block_rows, total);
  const std::string label = "kpl::hdf5::staging " + dataset;
  // A second buffer only where there is a second block: pinning memory is slow.
  decltype(impl::allocate<T, Rank, kpl::impl::PinnedHostSpace>(label, extents)) buffers[2];
  for (int b = 0; b < (total > block_rows ? 2 : 1); ++b)
    buffers[b] = impl::allocate<T, Rank, kpl::impl::PinnedHostSpace>(label, extents);
  try {
    for (std::size_t done = 0, block = 0; done < total; done += block_rows, ++block) {
      const std::size_t count = std::min(block_rows, total - done);
      const auto staged = impl::leading_rows(buffers[block % 2], 0, count);
      read_rows_into(dataset, first_row + done, staged, requirements);
      space.fence();  // the previous block's copy, which ran during this read, is done
      Kokkos::deep_copy(space, impl::leading_rows(rows, done, count), staged);
    }
    space.fence();
  } catch (...) {
    space.fence();  // no copy may still read a buffer that is about to be freed
    throw;
  }
}

}  // namespace kpl::hdf5
