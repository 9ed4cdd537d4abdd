// The templates of kpl::hdf5::OutputFile (kpl/hdf5_io.hpp): a View's extents
// and row-major data handed to the HDF5 calls in core/src/hdf5_write.cpp.
#pragma once

#include <kpl/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <type_traits>
#include <vector>

namespace kpl::hdf5 {

namespace impl {
// The HDF5 calls behind OutputFile's templates, on the open file `file` (a
// hid_t) written for `path`; in core/src/hdf5_write.cpp. create_raw returns
// the new dataset, open (a hid_t).
std::int64_t create_raw(const std::string& path, std::int64_t file, bool committed,
                        const std::string& dataset, element_type type,
                        const std::vector<std::size_t>& extents, const Storage& storage);
// Creates the dataset and closes it again: an open dataset handle would keep
// the file open past commit()'s H5Fclose, so its data could reach the disk
// only after the file was renamed into place.
void create_empty_raw(const std::string& path, std::int64_t file, bool committed,
                      const std::string& dataset, element_type type,
                      const std::vector<std::size_t>& extents, const Storage& storage);
// data == nullptr: creates the dataset only (a shared file's other processes).
void write_raw(const std::string& path, std::int64_t file, bool committed,
               const std::string& dataset, element_type type, const void* data,
               const std::vector<std::size_t>& extents, const Storage& storage);
// One chunk to compress: its rows (fewer than chunk_rows: the dataset's
// last, padded with zeros), shuffled by element and deflated at `level` (0:
// stored as they are) into *stored.
struct ChunkTask {
  const unsigned char* source;
  std::size_t rows, chunk_rows, row_bytes, element_size;
  int level;
  std::vector<unsigned char>* stored;
};
// The tasks on `threads` threads at most; in core/src/hdf5_compress.cpp.
void compress_tasks(const std::vector<ChunkTask>& tasks, int threads);
// The tasks of the stored form of row-major rows (rows x row_elements
// elements of element_size bytes, the first at a chunk boundary), one per
// element of `chunks`; compress_chunks runs them.
void add_chunk_tasks(const unsigned char* data, std::size_t rows, std::size_t row_elements,
                     std::size_t element_size, const Storage& storage,
                     std::vector<std::vector<unsigned char>>& chunks, std::vector<ChunkTask>& tasks);
void compress_chunks(const unsigned char* data, std::size_t rows, std::size_t row_elements,
                     std::size_t element_size, const Storage& storage,
                     std::vector<std::vector<unsigned char>>& chunks, int threads);
void write_raw_rows(const std::string& path, std::int64_t file, bool committed,
                    const std::string& dataset, element_type type, const void* data,
                    std::size_t first_row, const std::vector<std::size_t>& extents,
                    std::int64_t transfer);

template <class View>
std::vector<std::size_t> extents_of(const View& view) {
  std::vector<std::size_t> extents;
  for (int d = 0; d < static_cast<int>(View::rank); ++d) extents.push_back(view.extent(d));
  return extents;
}

// A row-major copy of a View in any layout. An element loop rather than
// Kokkos::deep_copy: deep_copy between layouts needs an execution space and
// would run a kernel for what is a host-side reshuffle of data that is about
// to be written to disk.
template <class View>
auto row_major_copy(const std::string& label, const View& source) {
  using RowMajor =
      Kokkos::View<typename View::non_const_data_type, Kokkos::LayoutRight, Kokkos::HostSpace>;
  const auto allocation = Kokkos::view_alloc(Kokkos::WithoutInitializing, label);
  if constexpr (View::rank == 1) {
    RowMajor destination(allocation, source.extent(0));
    for (std::size_t i = 0; i < source.extent(0); ++i) destination(i) = source(i);
    return destination;
  } else if constexpr (View::rank == 2) {
    RowMajor destination(allocation, source.extent(0), source.extent(1));
    for (std::size_t i = 0; i < source.extent(0); ++i)
      for (std::size_t j = 0; j < source.extent(1); ++j) destination(i, j) = source(i, j);
    return destination;
  } else {
    RowMajor destination(allocation, source.extent(0), source.extent(1), source.extent(2));
    for (std::size_t i = 0; i < source.extent(0); ++i)
      for (std::size_t j = 0; j < source.extent(1); ++j)
        for (std::size_t k = 0; k < source.extent(2); ++k) destination(i, j, k) = source(i, j, k);
    return destination;
  }
}
}  // namespace impl

// Rows of several datasets compressed together (see CompressedRows): the
// chunks of all of them are shared out over one pool of threads, so that
// none waits between one dataset and the next. add() each View (contiguous,
// row-major, on the host, alive until run()); run() fills the results.
class CompressionBatch {
 public:
  template <class View>
  CompressedRows& add(const View& rows, std::size_t first_row, const Storage& storage) {
    static_assert(Kokkos::is_view<View>::value, "compress_rows takes a Kokkos::View");
    static_assert(
        (View::rank == 1 || std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>) &&
            Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                       typename View::memory_space>::accessible,
        "compress_rows takes contiguous host Views, LayoutRight from rank 2");
    if (storage.chunk_rows == 0 || first_row % storage.chunk_rows != 0 ||
        !rows.span_is_contiguous())
      throw runtime_error("compress_rows: the rows must be contiguous and start a chunk of a "
                          "chunked dataset");
    std::size_t row_elements = 1;
    for (int d = 1; d < static_cast<int>(View::rank); ++d) row_elements *= rows.extent(d);
    CompressedRows& compressed = results_.emplace_back();
    compressed.first_row = first_row;
    compressed.rows = rows.extent(0);
    compressed.chunk_rows = storage.chunk_rows;
    compressed.chunks.resize((compressed.rows + storage.chunk_rows - 1) / storage.chunk_rows);
    impl::add_chunk_tasks(reinterpret_cast<const unsigned char*>(rows.data()), compressed.rows,
                          row_elements, sizeof(typename View::value_type), storage,
                          compressed.chunks, tasks_);
    return compressed;
  }
  void run(int threads) {
    impl::compress_tasks(tasks_, threads);
    tasks_.clear();
  }

 private:
  std::deque<CompressedRows> results_;  // stable: add() hands out references
  std::vector<impl::ChunkTask> tasks_;
};

// Rows [first_row, first_row + rows.extent(0)) of a dataset stored as
// `storage` (chunked), compressed on up to `threads` threads; see
// CompressedRows. A contiguous row-major host View.
template <class View>
CompressedRows compress_rows(const View& rows, std::size_t first_row, const Storage& storage,
                             int threads = 1) {
  CompressionBatch batch;
  CompressedRows& compressed = batch.add(rows, first_row, storage);
  batch.run(threads);
  return std::move(compressed);
}

template <class View>
void OutputFile::write(const std::string& dataset, const View& view, const Storage& storage) {
  static_assert(Kokkos::is_view<View>::value, "OutputFile::write takes a Kokkos::View");
  static_assert(View::rank >= 1 && View::rank <= 3, "kpl::hdf5 writes datasets of rank 1 to 3");
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible,
      "OutputFile::write takes host Views: copy device data with "
      "Kokkos::create_mirror_view_and_copy first");
  constexpr element_type type = impl::element_type_of<typename View::non_const_value_type>();
  const auto extents = impl::extents_of(view);
  if constexpr (std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>) {
    if (view.span_is_contiguous()) {
      impl::write_raw(path_, file_, committed_, dataset, type, leader_ ? view.data() : nullptr,
                      extents, storage);
      return;
    }
  }
  if (!leader_) {
    impl::write_raw(path_, file_, committed_, dataset, type, nullptr, extents, storage);
    return;
  }
  const auto row_major = impl::row_major_copy(dataset, view);
  impl::write_raw(path_, file_, committed_, dataset, type, row_major.data(), extents, storage);
}

template <class View>
void OutputFile::write_rows(const std::string& dataset, std::size_t first_row, const View& view) {
  static_assert(Kokkos::is_view<View>::value, "OutputFile::write_rows takes a Kokkos::View");
  static_assert(View::rank >= 1 && View::rank <= 3, "kpl::hdf5 writes datasets of rank 1 to 3");
  static_assert(
      (View::rank == 1 || std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>) &&
          Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible,
      "OutputFile::write_rows takes contiguous host Views, LayoutRight from rank 2");
  if (!view.span_is_contiguous())
    throw runtime_error("OutputFile::write_rows: the View is not contiguous");
  impl::write_raw_rows(path_, file_, committed_, dataset,
                       impl::element_type_of<typename View::non_const_value_type>(), view.data(),
                       first_row, impl::extents_of(view), row_transfer_);
}

template <class View>
void OutputFile::append_rows(const std::string& dataset, const View& view) {
  const std::size_t first = rows(dataset);
  resize_rows(dataset, first + view.extent(0));
  write_rows(dataset, first, view);
}

template <class T>
void OutputFile::create_dataset(const std::string& dataset, const std::vector<std::size_t>& extents,
                                const Storage& storage) {
  impl::create_empty_raw(path_, file_, committed_, dataset, impl::element_type_of<T>(), extents,
                         storage);
}

}  // namespace kpl::hdf5
