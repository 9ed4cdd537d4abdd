// kpl::hdf5::InputFile: opening, the checks behind every read (what the
// dataset is, where its data lives, its type, shape, size and values), the
// raw reads, and attributes.
#include "hdf5_internal.hpp"

#include <kpl/resources.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace kpl::hdf5 {

using impl::absolute;
using impl::describe_type;
using impl::file_kind;
using impl::Handle;
using impl::in_quotes;
using impl::is_dataset;
using impl::link_exists;
using impl::local_links_only;
using impl::QuietErrors;
using impl::shape_text;

// ---------------------------------------------------------------- InputFile

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  QuietErrors quiet;
  // Only regular files (symbolic links to them included): opening a FIFO
  // would wait for a writer, a device could be read forever.
  const std::string kind = file_kind(path_);
  if (kind == "missing") throw input_error("cannot open " + in_quotes(path_) + ": no such file");
  if (kind != "regular file")
    throw input_error("cannot open " + in_quotes(path_) + ": it is a " + kind +
                      ", not a regular HDF5 file");
  if (::access(path_.c_str(), R_OK) != 0) {
    throw input_error("cannot open " + in_quotes(path_) + ": " + std::strerror(errno));
  }
  if (H5Fis_hdf5(path_.c_str()) <= 0) {
    throw input_error("cannot open " + in_quotes(path_) + ": not an HDF5 file");
  }
  file_ = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) {
    throw input_error("cannot open " + in_quotes(path_) +
                      ": HDF5 could not read it (truncated or damaged?)");
  }
}

InputFile::~InputFile() {
  if (file_ >= 0) {
    QuietErrors quiet;
    H5Fclose(file_);
  }
}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)), file_(std::exchange(other.file_, -1)) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (file_ >= 0) {
      QuietErrors quiet;
      H5Fclose(file_);
    }
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, -1);
  }
  return *this;
}

bool InputFile::has_dataset(const std::string& dataset) const {
  QuietErrors quiet;
  return link_exists(file_, dataset, path_) && is_dataset(file_, dataset);
}

bool InputFile::holds_integers(const std::string& dataset) const {
  impl::dataset_shape(path_, file_, dataset);  // says what is wrong with it
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle stored(H5Dget_type(set.get()), H5Tclose);
  return stored.valid() && H5Tget_class(stored.get()) == H5T_INTEGER;
}

std::vector<std::size_t> InputFile::shape(const std::string& dataset) const {
  return impl::dataset_shape(path_, file_, dataset);
}

std::int64_t InputFile::bytes(const std::string& dataset, std::size_t element_size) const {
  const auto extents = shape(dataset);
  std::int64_t total = std::int64_t(element_size);
  for (const std::size_t extent : extents) {
    total = checked_bytes({std::uint64_t(total)}, extent);
    if (total < 0)
      throw input_error(in_quotes(path_) + ": dataset " + absolute(dataset) + " of shape " +
                        shape_text(extents) + " would take more than 2^63 bytes");
  }
  return total;
}

// -------------------------------------------------- what a dataset may be

namespace {

// Throws input_error unless the existing link `name` leads to a dataset.
void require_dataset(const std::string& path, hid_t file, const std::string& name) {
  if (!link_exists(file, name, path)) {
    throw input_error(in_quotes(path) + ": dataset " + name + " is missing");
  }
  if (is_dataset(file, name)) return;
  Handle object(H5Oopen(file, name.c_str(), local_links_only()), H5Oclose);
  const bool group = object.valid() && H5Iget_type(object.get()) == H5I_GROUP;
  throw input_error(in_quotes(path) + ": " + name +
                    (group            ? " is a group, not a dataset"
                     : object.valid() ? " is not a dataset"
                                      : " is a link that leads to no object (dangling, or a "
                                        "loop of soft links)"));
}

// Data stored outside the file (external raw files, virtual datasets that
// map other files) is refused: it could read any file on the machine. So is
// data compressed with a filter this HDF5 library lacks.
void require_local_storage(hid_t set, const std::string& where) {
  Handle creation(H5Dget_create_plist(set), H5Pclose);
  if (!creation.valid()) throw input_error(where + " has unreadable storage properties");
  if (H5Pget_layout(creation.get()) == H5D_VIRTUAL)
    throw input_error(where +
                      " is a virtual dataset (it maps data of other files); kpl reads only data "
                      "held in the input file itself");
  if (H5Pget_external_count(creation.get()) != 0)
    throw input_error(where +
                      " keeps its data in external raw files; kpl reads only data held in the "
                      "input file itself");
  const int filters = H5Pget_nfilters(creation.get());
  for (int f = 0; f < filters; ++f) {
    unsigned flags = 0, configuration = 0;
    std::size_t values = 0;
    char filter_name[64] = {0};
    const H5Z_filter_t filter =
        H5Pget_filter2(creation.get(), unsigned(f), &flags, &values, nullptr, sizeof filter_name,
                       filter_name, &configuration);
    if (filter >= 0 && H5Zfilter_avail(filter) <= 0)
      throw input_error(where + " is compressed with the HDF5 filter '" + filter_name + "' (id " +
                        std::to_string(filter) + "), which this HDF5 library does not have");
  }
}

// Work on [0, size) in contiguous shares, on several threads where the
// shares are large (copies out of the page cache and scans of memory run
// faster on a few cores than on one): work(begin, end) for each share;
// true when every share returned true.
template <class Work>
bool in_shares(std::size_t size, std::size_t element_bytes, const Work& work) {
  constexpr std::size_t share_bytes = std::size_t(1) << 20, most_threads = 8;
  const std::size_t threads = std::min<std::size_t>(
      {std::max(1u, std::thread::hardware_concurrency()), most_threads,
       size * element_bytes / share_bytes});
  if (threads <= 1) return work(std::size_t(0), size);
  const std::size_t share = (size + threads - 1) / threads;
  std::atomic<bool> all{true};
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  const auto run = [&](std::size_t t) {
    if (!work(t * share, std::min(size, (t + 1) * share))) all = false;
  };
  std::size_t t = 1;
  try {
    for (; t < threads; ++t) workers.emplace_back(run, t);
  } catch (const std::system_error&) {  // no more threads: this one does the rest
    for (; t < threads; ++t) run(t);
  }
  run(0);
  for (auto& worker : workers) worker.join();
  return all;
}

// Where a dataset's elements lie in the file as the memory type holds them:
// contiguous storage, allocated, stored in that very type, in a file HDF5
// opened with its POSIX driver (whose descriptor pread may share) and that
// nothing in this process has open for writing (HDF5 may hold written data
// it has not flushed). false where anything differs; the read then goes
// through H5Dread.
bool raw_location(hid_t file, hid_t set, element_type type, int& descriptor,
                  std::uint64_t& offset) {
  unsigned intent = 0;
  if (H5Fget_intent(file, &intent) < 0 || (intent & H5F_ACC_RDWR) != 0) return false;
  Handle creation(H5Dget_create_plist(set), H5Pclose);
  if (!creation.valid() || H5Pget_layout(creation.get()) != H5D_CONTIGUOUS) return false;
  Handle stored(H5Dget_type(set), H5Tclose);
  if (!stored.valid() || H5Tequal(stored.get(), impl::memory_type(type)) <= 0) return false;
  const haddr_t address = H5Dget_offset(set);
  if (address == HADDR_UNDEF) return false;
  Handle access(H5Fget_access_plist(file), H5Pclose);
  if (!access.valid() || H5Pget_driver(access.get()) != H5FD_SEC2) return false;
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file, access.get(), &handle) < 0 || handle == nullptr) return false;
  descriptor = *static_cast<int*>(handle);
  offset = address;
  return true;
}

// bytes at offset of the file into data, in shares on several threads;
// false on an error. Past the file's end the bytes are zeros, as HDF5's
// POSIX driver reads them.
bool read_file_bytes(int descriptor, std::uint64_t offset, void* data, std::size_t bytes) {
  return in_shares(bytes, 1, [&](std::size_t begin, std::size_t end) {
    char* const target = static_cast<char*>(data);
    while (begin < end) {
      const ssize_t got =
          ::pread(descriptor, target + begin, end - begin, static_cast<off_t>(offset + begin));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return false;
      if (got == 0) {
        std::memset(target + begin, 0, end - begin);
        return true;
      }
      begin += static_cast<std::size_t>(got);
    }
    return true;
  });
}

// Elements [first, first + count) of a dataset: from the file's bytes where
// raw_location allows, else by H5Dread of `file_space`'s selection. false on
// a failure.
bool read_elements(hid_t file, hid_t set, element_type type, void* data, std::size_t first,
                   std::size_t count, hid_t memory_space, hid_t file_space) {
  int descriptor = -1;
  std::uint64_t offset = 0;
  const std::size_t size = H5Tget_size(impl::memory_type(type));
  if (raw_location(file, set, type, descriptor, offset))
    return read_file_bytes(descriptor, offset + first * size, data, count * size);
  return H5Dread(set, impl::memory_type(type), memory_space, file_space, H5P_DEFAULT, data) >= 0;
}

}  // namespace

namespace impl {

bool any_not_finite_in(const float* data, std::size_t count) {
  return !in_shares(count, sizeof(float), [&](std::size_t begin, std::size_t end) {
    return !any_not_finite(data + begin, end - begin);
  });
}

bool any_not_finite_in(const double* data, std::size_t count) {
  return !in_shares(count, sizeof(double), [&](std::size_t begin, std::size_t end) {
    return !any_not_finite(data + begin, end - begin);
  });
}

std::vector<std::size_t> dataset_shape(const std::string& path, std::int64_t file,
                                       const std::string& dataset) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = in_quotes(path) + ": dataset " + name;
  require_dataset(path, file, name);
  Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.valid()) throw input_error(where + " cannot be opened");
  require_local_storage(set.get(), where);
  Handle space(H5Dget_space(set.get()), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) throw input_error(where + " has no readable shape");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<std::size_t>(dims.begin(), dims.end());
}

std::vector<std::size_t> checked_shape(const std::string& path, std::int64_t file,
                                       const std::string& dataset, int rank, element_type type,
                                       bool allow_empty) {
  const std::string name = absolute(dataset);
  const std::string where = in_quotes(path) + ": dataset " + name;
  auto extents = dataset_shape(path, file, name);
  QuietErrors quiet;
  if (static_cast<int>(extents.size()) != rank) {
    throw input_error(where + " has rank " + std::to_string(extents.size()) + " (shape " +
                      shape_text(extents) + "), expected rank " + std::to_string(rank));
  }
  Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle stored_type(H5Dget_type(set.get()), H5Tclose);
  if (!stored_type.valid()) throw input_error(where + " has an unreadable type");
  if (!readable_as(stored_type.get(), type)) {
    const auto type_class = H5Tget_class(stored_type.get());
    const bool numeric = type_class == H5T_FLOAT || type_class == H5T_INTEGER;
    throw input_error(where + (numeric ? " has the wrong type: " : " has an unsupported type: ") +
                      describe_type(stored_type.get()) + " cannot be read as " +
                      element_type_name(type));
  }
  std::size_t count = 1;
  for (auto extent : extents) count = extent == 0 ? 0 : count;
  if (count == 0 && !allow_empty) {
    throw input_error(where + " is empty (shape " + shape_text(extents) + ")");
  }
  return extents;
}

void require_memory(const std::string& path, const std::string& dataset,
                    const std::vector<std::size_t>& extents, std::size_t element_size) {
  std::int64_t bytes = std::int64_t(element_size);
  for (const std::size_t extent : extents) {
    bytes = checked_bytes({std::uint64_t(bytes)}, extent);
    if (bytes < 0) break;
  }
  const std::string where = in_quotes(path) + ": dataset " + absolute(dataset);
  if (bytes < 0)
    throw input_error(where + " of shape " + shape_text(extents) +
                      " would take more than 2^63 bytes");
  const std::int64_t available = host_memory_available();
  if (bytes > available)
    throw resource_error(where + " of shape " + shape_text(extents) + " needs " +
                         describe_bytes(bytes) + " of memory to read; " +
                         describe_bytes(available) + " are available");
}

void check_row_range(const std::string& path, const std::string& dataset, std::size_t first_row,
                     std::size_t row_count, std::size_t rows) {
  if (first_row > rows || row_count > rows - first_row) {
    throw input_error(in_quotes(path) + ": dataset " + absolute(dataset) + " has " +
                      std::to_string(rows) + " rows; rows " + std::to_string(first_row) + " to " +
                      std::to_string(first_row + row_count) + " were asked for");
  }
}

// ------------------------------------------------------------- raw reads

void prefer_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // The 2 MiB pages wholly inside the array; what lies outside them keeps
  // small pages. Where the system allows none the call changes nothing.
  constexpr std::uintptr_t huge = std::uintptr_t(1) << 21;
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + huge - 1) & ~(huge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(huge - 1);
  if (bytes >= 2 * huge && end > begin)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

void read_raw(const std::string& path, std::int64_t file, const std::string& dataset,
              element_type type, void* data, std::size_t count) {
  if (count == 0) return;
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.valid() || !read_elements(file, set.get(), type, data, 0, count, H5S_ALL, H5S_ALL)) {
    throw input_error(in_quotes(path) + ": dataset " + name +
                      " could not be read (damaged file?)");
  }
}

// Rows [first_row, first_row + extents[0]) through a hyperslab of the file's
// dataspace.
void read_raw_rows(const std::string& path, std::int64_t file, const std::string& dataset,
                   element_type type, void* data, std::size_t first_row,
                   const std::vector<std::size_t>& extents) {
  if (element_count(extents) == 0) return;
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  const std::string failure =
      in_quotes(path) + ": dataset " + name + " could not be read (damaged file?)";
  if (!set.valid()) throw input_error(failure);
  Handle file_space(H5Dget_space(set.get()), H5Sclose);
  std::vector<hsize_t> start(extents.size(), 0), block(extents.begin(), extents.end());
  start[0] = first_row;
  Handle memory_space(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr),
                      H5Sclose);
  if (!file_space.valid() || !memory_space.valid() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(),
                          nullptr) < 0 ||
      !read_elements(file, set.get(), type, data, first_row * (element_count(extents) / block[0]),
                     element_count(extents), memory_space.get(), file_space.get())) {
    throw input_error(failure);
  }
}

// ------------------------------------------------------ checks of values

void fail_buffer_shape(const std::string& path, const std::string& dataset,
                       const std::vector<std::size_t>& extents) {
  throw runtime_error("reading " + in_quotes(path) + ": dataset " + absolute(dataset) + " rows " +
                      shape_text(extents) + " do not fit the buffer given for them");
}

void fail_not_finite(const std::string& path, const std::string& dataset,
                     const std::vector<std::size_t>& extents, std::size_t flat_index,
                     std::size_t first_row) {
  // Turn the row-major flat index back into the coordinate a user would type.
  std::vector<std::size_t> coordinate(extents.size());
  for (std::size_t d = extents.size(); d-- > 0;) {
    coordinate[d] = flat_index % extents[d];
    flat_index /= extents[d];
  }
  coordinate[0] += first_row;
  throw input_error(in_quotes(path) + ": dataset " + absolute(dataset) + " holds NaN or Inf at " +
                    shape_text(coordinate) + "; finite values are required");
}

}  // namespace impl

namespace {

// Whether a dataset is stored wider than float (float64): only then can a
// read as float overflow, underflow or lose digits.
bool stored_wider_than_float(hid_t file, const std::string& name) {
  Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle stored(H5Dget_type(set.get()), H5Tclose);
  return stored.valid() && H5Tget_class(stored.get()) == H5T_FLOAT &&
         H5Tget_size(stored.get()) > sizeof(float);
}

// The coordinate of element e of a block of rows that starts at row
// first_row of the dataset.
std::vector<std::size_t> coordinate_in_rows(const std::vector<std::size_t>& extents,
                                            std::size_t first_row, std::size_t e) {
  std::vector<std::size_t> coordinate(extents.size());
  for (std::size_t d = extents.size(); d-- > 1;) {
    coordinate[d] = e % extents[d];
    e /= extents[d];
  }
  coordinate[0] = first_row + e;
  return coordinate;
}

// What float would do to a dataset's values, scanned block by block: a value
// beyond float's range is refused at once; the largest magnitude, and the
// largest non-zero magnitude below float's normal range with where it is,
// are kept for the verdict on underflow.
struct FloatRangeScan {
  std::string path, name;
  double largest_value = 0, largest_underflow = 0;
  std::vector<std::size_t> underflow_at;

  [[noreturn]] void refuse(double value, const std::vector<std::size_t>& coordinate,
                           const std::string& why) const {
    throw input_error(in_quotes(path) + ": dataset " + name + " holds " + format_number(value) +
                      " at " + shape_text(coordinate) + ", " + why +
                      ": solve in double precision, or rescale the data");
  }
  void scan(const std::vector<double>& values, const std::vector<std::size_t>& extents,
            std::size_t first_row) {
    for (std::size_t e = 0; e < values.size(); ++e) {
      const double magnitude = std::fabs(values[e]);
      if (!std::isfinite(magnitude) || magnitude == 0) continue;  // the finite check's business
      if (magnitude > double(std::numeric_limits<float>::max()))
        refuse(values[e], coordinate_in_rows(extents, first_row, e),
               "beyond the range of float (3.4e+38)");
      largest_value = std::max(largest_value, magnitude);
      if (magnitude < double(std::numeric_limits<float>::min()) && magnitude > largest_underflow) {
        largest_underflow = magnitude;
        underflow_at = coordinate_in_rows(extents, first_row, e);
      }
    }
  }
  // An underflow (a non-zero value float holds only as a denormal or 0) is
  // refused only if it matters: if it is above float's rounding of the
  // dataset's largest value (a Gaussian's 1e-40 tails next to 1 round away as
  // they would anyway; data all at 1e-150 would become 0).
  void verdict() const {
    if (largest_underflow > largest_value * double(std::numeric_limits<float>::epsilon()))
      refuse(largest_underflow, underflow_at,
             "below the normal range of float (1.2e-38) and not negligible beside the dataset's "
             "largest value (" +
                 format_number(largest_value) + ")");
  }
};

}  // namespace

namespace impl {

void check_float_range(const std::string& path, std::int64_t file, const std::string& dataset,
                       std::size_t first_row, const std::vector<std::size_t>& extents) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  if (!stored_wider_than_float(file, name)) return;
  std::size_t row_elements = 1;
  for (std::size_t d = 1; d < extents.size(); ++d) row_elements *= extents[d];
  if (row_elements == 0 || extents.empty()) return;
  const std::size_t block_rows = std::max<std::size_t>(1, (std::size_t(1) << 20) / row_elements);
  FloatRangeScan scan;
  scan.path = path;
  scan.name = name;
  std::vector<double> values;
  for (std::size_t done = 0; done < extents[0]; done += block_rows) {
    std::vector<std::size_t> block = extents;
    block[0] = std::min(block_rows, extents[0] - done);
    values.resize(block[0] * row_elements);
    read_raw_rows(path, file, dataset, element_type::float64, values.data(), first_row + done,
                  block);
    scan.scan(values, block, first_row + done);
  }
  scan.verdict();
}

}  // namespace impl

// ------------------------------------------------------------- attributes

namespace {
// Opens a file-level object ("/" or a dataset or group path) for attributes.
Handle open_attribute_owner(hid_t file, const std::string& file_path, const std::string& object) {
  const std::string name = absolute(object);
  if (!link_exists(file, name, file_path)) {
    throw input_error(in_quotes(file_path) + ": object " + name + " is missing");
  }
  Handle owner(H5Oopen(file, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!owner.valid())
    throw input_error(in_quotes(file_path) + ": object " + name + " cannot be opened");
  return owner;
}

Handle open_attribute(hid_t file, const std::string& file_path, const std::string& object,
                      const std::string& attribute) {
  Handle owner = open_attribute_owner(file, file_path, object);
  if (H5Aexists(owner.get(), attribute.c_str()) <= 0) {
    throw input_error(in_quotes(file_path) + ": attribute '" + attribute + "' of " +
                      absolute(object) + " is missing");
  }
  return Handle(H5Aopen(owner.get(), attribute.c_str(), H5P_DEFAULT), H5Aclose);
}

std::string attribute_where(const std::string& file_path, const std::string& object,
                            const std::string& attribute) {
  return in_quotes(file_path) + ": attribute '" + attribute + "' of " + absolute(object);
}

// Reads a numeric attribute holding exactly one value (scalar or [1]).
template <class T>
T read_single_number(hid_t file, const std::string& file_path, const std::string& object,
                     const std::string& attribute, hid_t memory, bool integers_only) {
  QuietErrors quiet;
  const std::string where = attribute_where(file_path, object, attribute);
  Handle attr = open_attribute(file, file_path, object, attribute);
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  const auto type_class = H5Tget_class(type.get());
  if (type_class != H5T_INTEGER && !(type_class == H5T_FLOAT && !integers_only)) {
    throw input_error(where + " has the wrong type: " + describe_type(type.get()) +
                      (integers_only ? ", an integer is expected" : ", a number is expected"));
  }
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    throw input_error(where + " must hold exactly one value");
  }
  T value{};
  if (H5Aread(attr.get(), memory, &value) < 0) throw input_error(where + " could not be read");
  return value;
}
}  // namespace

bool InputFile::has_attribute(const std::string& object, const std::string& name) const {
  QuietErrors quiet;
  if (!link_exists(file_, object, path_)) return false;
  return H5Aexists_by_name(file_, absolute(object).c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

std::string InputFile::read_string_attribute(const std::string& object,
                                             const std::string& name) const {
  QuietErrors quiet;
  const std::string where = attribute_where(path_, object, name);
  Handle attr = open_attribute(file_, path_, object, name);
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING) {
    throw input_error(where + " has the wrong type: " + describe_type(type.get()) +
                      ", a string is expected");
  }
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    throw input_error(where + " must hold exactly one string");
  }
  if (H5Tis_variable_str(type.get()) > 0) {
    // h5py's default for str attributes: variable length, UTF-8.
    Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory.get(), H5T_VARIABLE);
    H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
    char* text = nullptr;
    if (H5Aread(attr.get(), memory.get(), &text) < 0)
      throw input_error(where + " could not be read");
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  const std::size_t size = H5Tget_size(type.get());
  std::string value(size, '\0');
  Handle memory(H5Tcopy(type.get()), H5Tclose);
  if (H5Aread(attr.get(), memory.get(), value.data()) < 0) {
    throw input_error(where + " could not be read");
  }
  // Fixed-length strings are padded with NULs or spaces.
  const auto end = value.find('\0');
  if (end != std::string::npos) value.resize(end);
  if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD) {
    value.erase(value.find_last_not_of(' ') + 1);
  }
  return value;
}

double InputFile::read_number_attribute(const std::string& object, const std::string& name) const {
  return read_single_number<double>(file_, path_, object, name, H5T_NATIVE_DOUBLE, false);
}

std::int64_t InputFile::read_integer_attribute(const std::string& object,
                                               const std::string& name) const {
  return read_single_number<std::int64_t>(file_, path_, object, name, H5T_NATIVE_INT64, true);
}

void require_matching_extent(const InputFile& file, const std::string& dataset_a, int dimension_a,
                             const std::string& dataset_b, int dimension_b) {
  const auto shape_a = file.shape(dataset_a);
  const auto shape_b = file.shape(dataset_b);
  const auto describe = [](const std::string& name, const std::vector<std::size_t>& shape,
                           int dimension) {
    return "dimension " + std::to_string(dimension) + " of " + absolute(name) + " (shape " +
           shape_text(shape) + ")";
  };
  if (dimension_a < 0 || dimension_a >= static_cast<int>(shape_a.size())) {
    throw input_error(in_quotes(file.path()) + ": " + absolute(dataset_a) + " has no " +
                      describe(dataset_a, shape_a, dimension_a));
  }
  if (dimension_b < 0 || dimension_b >= static_cast<int>(shape_b.size())) {
    throw input_error(in_quotes(file.path()) + ": " + absolute(dataset_b) + " has no " +
                      describe(dataset_b, shape_b, dimension_b));
  }
  if (shape_a[dimension_a] != shape_b[dimension_b]) {
    throw input_error(in_quotes(file.path()) +
                      ": dimension mismatch: " + describe(dataset_a, shape_a, dimension_a) +
                      " is " + std::to_string(shape_a[dimension_a]) + " but " +
                      describe(dataset_b, shape_b, dimension_b) + " is " +
                      std::to_string(shape_b[dimension_b]));
  }
}

}  // namespace kpl::hdf5
