// HDF5 C API behind kpl/hdf5_io.hpp. Every HDF5 call runs with HDF5's
// automatic error printing switched off (restored afterwards), and every
// failure becomes an exception whose message names the file and object.
#include <kpl/hdf5_io.hpp>
#include <kpl/resources.hpp>

#include <hdf5.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

static_assert(std::is_same_v<hid_t, std::int64_t>, "kpl stores hid_t as int64_t (HDF5 >= 1.10)");

namespace kpl::hdf5 {
namespace {

// Switches HDF5's automatic error-stack printing off for one scope and puts
// back whatever the application had, so kpl changes no global HDF5 setting.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &function_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, function_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t function_ = nullptr;
  void* data_ = nullptr;
};

// Owns one HDF5 identifier and closes it with the matching H5*close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  // Moved out of functions only; never reassigned.
  Handle& operator=(Handle&&) = delete;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

std::string in_quotes(const std::string& text) { return "'" + text + "'"; }

// What a path names, for messages: "regular file", "directory", ...;
// "missing" when nothing is there. follow: stat (symbolic links resolved)
// or lstat.
std::string file_kind(const std::string& path, bool follow = true) {
  struct stat information {};
  if ((follow ? ::stat(path.c_str(), &information) : ::lstat(path.c_str(), &information)) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "missing" : "path that cannot be examined";
  const auto mode = information.st_mode;
  if (S_ISREG(mode)) return "regular file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symbolic link";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "special file";
}

// "/A" for "A" and "/A": messages and lookups use absolute names.
std::string absolute(const std::string& name) {
  if (name.empty() || name.front() != '/') return "/" + name;
  return name;
}

std::string shape_text(const std::vector<std::size_t>& extents) {
  std::string text = "[";
  for (std::size_t d = 0; d < extents.size(); ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(extents[d]);
  }
  return text + "]";
}

const char* element_type_name(element_type type) {
  switch (type) {
    case element_type::float64:
      return "float64";
    case element_type::float32:
      return "float32";
    case element_type::int64:
      return "int64";
    case element_type::int32:
      return "int32";
  }
  return "unknown";
}

hid_t memory_type(element_type type) {
  switch (type) {
    case element_type::float64:
      return H5T_NATIVE_DOUBLE;
    case element_type::float32:
      return H5T_NATIVE_FLOAT;
    case element_type::int64:
      return H5T_NATIVE_INT64;
    case element_type::int32:
      return H5T_NATIVE_INT32;
  }
  return H5I_INVALID_HID;
}

// Little-endian IEEE and two's-complement types, as h5py writes on x86 and Arm.
hid_t file_type(element_type type) {
  switch (type) {
    case element_type::float64:
      return H5T_IEEE_F64LE;
    case element_type::float32:
      return H5T_IEEE_F32LE;
    case element_type::int64:
      return H5T_STD_I64LE;
    case element_type::int32:
      return H5T_STD_I32LE;
  }
  return H5I_INVALID_HID;
}

// Link access that refuses to follow external links: an input file may name
// only data it holds itself (an external link could open any file on the
// machine).
herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t,
                            void*) {
  return -1;
}
hid_t local_links_only() {
  static const hid_t properties = [] {
    const hid_t list = H5Pcreate(H5P_LINK_ACCESS);
    H5Pset_elink_cb(list, refuse_external_link, nullptr);
    return list;
  }();
  return properties;
}

// True when every link on the way to `name` exists (H5Lexists needs that).
// Throws input_error when one of them is an external link.
bool link_exists(hid_t location, const std::string& name, const std::string& file_path = {}) {
  const std::string path = absolute(name);
  if (path == "/") return true;
  std::size_t position = 0;
  while (true) {
    position = path.find('/', position + 1);
    const std::string prefix = path.substr(0, position);
    if (H5Lexists(location, prefix.c_str(), local_links_only()) <= 0) return false;
    H5L_info_t link{};
    if (H5Lget_info(location, prefix.c_str(), &link, local_links_only()) >= 0 &&
        link.type != H5L_TYPE_HARD && link.type != H5L_TYPE_SOFT)
      throw input_error(in_quotes(file_path) + ": " + prefix +
                        " is an external link to another file; kpl reads only data held in "
                        "the input file itself");
    if (position == std::string::npos) return true;
  }
}

// Whether an existing link names a dataset (rather than a group or type).
// H5Iget_type on the opened object keeps this independent of the H5O_info_t
// layout, which changed between HDF5 1.10 and 1.12.
bool is_dataset(hid_t location, const std::string& name) {
  Handle object(H5Oopen(location, absolute(name).c_str(), local_links_only()), H5Oclose);
  return object.valid() && H5Iget_type(object.get()) == H5I_DATASET;
}

// The dataset's type, described for messages: "a string", "float64", ...
std::string describe_type(hid_t type) {
  const auto type_class = H5Tget_class(type);
  const auto size = H5Tget_size(type);
  switch (type_class) {
    case H5T_FLOAT:
      return "float" + std::to_string(8 * size);
    case H5T_INTEGER:
      return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * size);
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ENUM:
      return "enum";
    case H5T_ARRAY:
      return "array";
    case H5T_VLEN:
      return "variable-length";
    default:
      return "non-numeric";
  }
}

// Whether a dataset of file type `type` can be read as `wanted` without
// losing what the caller asked for (see InputFile::read).
bool readable_as(hid_t type, element_type wanted) {
  const auto type_class = H5Tget_class(type);
  const auto size = H5Tget_size(type);
  const bool is_unsigned = type_class == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE;
  switch (wanted) {
    case element_type::float64:
    case element_type::float32:
      return type_class == H5T_FLOAT || type_class == H5T_INTEGER;
    case element_type::int64:
      return type_class == H5T_INTEGER && (size < 8 || (size == 8 && !is_unsigned));
    case element_type::int32:
      return type_class == H5T_INTEGER && (size < 4 || (size == 4 && !is_unsigned));
  }
  return false;
}

}  // namespace

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

std::vector<std::size_t> InputFile::shape(const std::string& dataset) const {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = in_quotes(path_) + ": dataset " + name;
  if (!link_exists(file_, name, path_)) {
    throw input_error(in_quotes(path_) + ": dataset " + name + " is missing");
  }
  if (!is_dataset(file_, name)) {
    Handle object(H5Oopen(file_, name.c_str(), local_links_only()), H5Oclose);
    const bool group = object.valid() && H5Iget_type(object.get()) == H5I_GROUP;
    throw input_error(in_quotes(path_) + ": " + name +
                      (group            ? " is a group, not a dataset"
                       : object.valid() ? " is not a dataset"
                                        : " is a link that leads to no object (dangling, or a "
                                          "loop of soft links)"));
  }
  Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.valid()) throw input_error(where + " cannot be opened");
  // Data stored outside the file (external raw files, virtual datasets that
  // map other files) is refused: it could read any file on the machine.
  Handle creation(H5Dget_create_plist(set.get()), H5Pclose);
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
  Handle space(H5Dget_space(set.get()), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) throw input_error(where + " has no readable shape");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<std::size_t>(dims.begin(), dims.end());
}

std::vector<std::size_t> InputFile::checked_shape(const std::string& dataset, int rank,
                                                  element_type type, bool allow_empty) const {
  const std::string name = absolute(dataset);
  const std::string where = in_quotes(path_) + ": dataset " + name;
  auto extents = shape(name);
  QuietErrors quiet;
  if (static_cast<int>(extents.size()) != rank) {
    throw input_error(where + " has rank " + std::to_string(extents.size()) + " (shape " +
                      shape_text(extents) + "), expected rank " + std::to_string(rank));
  }
  Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
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

void InputFile::require_memory(const std::string& dataset, const std::vector<std::size_t>& extents,
                               std::size_t element_size) const {
  std::int64_t bytes = std::int64_t(element_size);
  for (const std::size_t extent : extents) {
    bytes = checked_bytes({std::uint64_t(bytes)}, extent);
    if (bytes < 0) break;
  }
  const std::string where = in_quotes(path_) + ": dataset " + absolute(dataset);
  if (bytes < 0)
    throw input_error(where + " of shape " + shape_text(extents) +
                      " would take more than 2^63 bytes");
  const std::int64_t available = host_memory_available();
  if (bytes > available)
    throw resource_error(where + " of shape " + shape_text(extents) + " needs " +
                         describe_bytes(bytes) + " of memory to read; " +
                         describe_bytes(available) + " are available");
}

void InputFile::read_raw(const std::string& dataset, element_type type, void* data,
                         std::size_t count) const {
  if (count == 0) return;
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!set.valid() ||
      H5Dread(set.get(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw input_error(in_quotes(path_) + ": dataset " + name +
                      " could not be read (damaged file?)");
  }
}

void InputFile::check_float_range(const std::string& dataset, std::size_t first_row,
                                  const std::vector<std::size_t>& extents) const {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  {
    Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
    Handle stored(H5Dget_type(set.get()), H5Tclose);
    if (!stored.valid() || H5Tget_class(stored.get()) != H5T_FLOAT ||
        H5Tget_size(stored.get()) <= sizeof(float))
      return;
  }
  std::size_t row_elements = 1;
  for (std::size_t d = 1; d < extents.size(); ++d) row_elements *= extents[d];
  if (row_elements == 0 || extents.empty()) return;
  const std::size_t block_rows = std::max<std::size_t>(1, (std::size_t(1) << 20) / row_elements);
  // An overflow is refused at once; an underflow (a non-zero value float
  // holds only as a denormal or 0) only if it mattered: if it is above float's
  // rounding of the dataset's largest value (a Gaussian's 1e-40 tails next to
  // 1 round away as they would anyway; data all at 1e-150 would become 0).
  const auto coordinate_of = [&](std::size_t row, std::size_t e) {
    std::vector<std::size_t> coordinate(extents.size());
    for (std::size_t d = extents.size(); d-- > 1;) {
      coordinate[d] = e % extents[d];
      e /= extents[d];
    }
    coordinate[0] = first_row + row + e;
    return coordinate;
  };
  const auto refuse = [&](double value, const std::vector<std::size_t>& coordinate,
                          const std::string& why) {
    throw input_error(in_quotes(path_) + ": dataset " + name + " holds " + format_number(value) +
                      " at " + shape_text(coordinate) + ", " + why +
                      ": solve in double precision, or rescale the data");
  };
  double largest_value = 0, largest_underflow = 0;
  std::vector<std::size_t> underflow_at;
  std::vector<double> values;
  for (std::size_t done = 0; done < extents[0]; done += block_rows) {
    std::vector<std::size_t> block = extents;
    block[0] = std::min(block_rows, extents[0] - done);
    values.resize(block[0] * row_elements);
    read_raw_rows(dataset, element_type::float64, values.data(), first_row + done, block);
    for (std::size_t e = 0; e < values.size(); ++e) {
      const double magnitude = std::fabs(values[e]);
      if (!std::isfinite(magnitude) || magnitude == 0) continue;  // the finite check's business
      if (magnitude > double(std::numeric_limits<float>::max()))
        refuse(values[e], coordinate_of(done, e), "beyond the range of float (3.4e+38)");
      largest_value = std::max(largest_value, magnitude);
      if (magnitude < double(std::numeric_limits<float>::min()) && magnitude > largest_underflow) {
        largest_underflow = magnitude;
        underflow_at = coordinate_of(done, e);
      }
    }
  }
  if (largest_underflow > largest_value * double(std::numeric_limits<float>::epsilon()))
    refuse(largest_underflow, underflow_at,
           "below the normal range of float (1.2e-38) and not negligible beside the dataset's "
           "largest value (" +
               format_number(largest_value) + ")");
}

void InputFile::check_row_range(const std::string& dataset, std::size_t first_row,
                                std::size_t row_count, std::size_t rows) const {
  if (first_row > rows || row_count > rows - first_row) {
    throw input_error(in_quotes(path_) + ": dataset " + absolute(dataset) + " has " +
                      std::to_string(rows) + " rows; rows " + std::to_string(first_row) + " to " +
                      std::to_string(first_row + row_count) + " were asked for");
  }
}

void InputFile::read_raw_rows(const std::string& dataset, element_type type, void* data,
                              std::size_t first_row,
                              const std::vector<std::size_t>& extents) const {
  std::size_t count = 1;
  for (auto extent : extents) count *= extent;
  if (count == 0) return;
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  const std::string failure =
      in_quotes(path_) + ": dataset " + name + " could not be read (damaged file?)";
  if (!set.valid()) throw input_error(failure);
  Handle file_space(H5Dget_space(set.get()), H5Sclose);
  std::vector<hsize_t> start(extents.size(), 0), block(extents.begin(), extents.end());
  start[0] = first_row;
  Handle memory_space(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr),
                      H5Sclose);
  if (!file_space.valid() || !memory_space.valid() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(),
                          nullptr) < 0 ||
      H5Dread(set.get(), memory_type(type), memory_space.get(), file_space.get(), H5P_DEFAULT,
              data) < 0) {
    throw input_error(failure);
  }
}

void InputFile::fail_not_finite(const std::string& dataset, const std::vector<std::size_t>& extents,
                                std::size_t flat_index, std::size_t first_row) const {
  // Turn the row-major flat index back into the coordinate a user would type.
  std::vector<std::size_t> coordinate(extents.size());
  for (std::size_t d = extents.size(); d-- > 0;) {
    coordinate[d] = flat_index % extents[d];
    flat_index /= extents[d];
  }
  coordinate[0] += first_row;
  throw input_error(in_quotes(path_) + ": dataset " + absolute(dataset) + " holds NaN or Inf at " +
                    shape_text(coordinate) + "; finite values are required");
}

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

// --------------------------------------------------------------- OutputFile

namespace {
// The partial files of this process not yet committed, for a signal
// handler: fixed slots, claimed and released with atomics only.
constexpr int partial_slots = 64;
constexpr std::size_t partial_path_capacity = 4096;
struct PartialSlot {
  std::atomic<int> state{0};  // 0 free, 1 being written, 2 holds a path
  char path[partial_path_capacity];
};
PartialSlot partial_registry[partial_slots];

int register_partial(const std::string& path) {
  if (path.size() >= partial_path_capacity) return -1;
  for (int slot = 0; slot < partial_slots; ++slot) {
    int expected = 0;
    if (partial_registry[slot].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(partial_registry[slot].path, path.c_str(), path.size() + 1);
      partial_registry[slot].state.store(2);
      return slot;
    }
  }
  return -1;
}

void unregister_partial(int slot) {
  if (slot >= 0) partial_registry[slot].state.store(0);
}

}  // namespace

std::string directory_of(const std::string& path) {
  const std::filesystem::path target(path);
  return target.has_parent_path() ? target.parent_path().string() : std::string(".");
}

void remove_uncommitted_outputs() noexcept {
  for (auto& slot : partial_registry)
    if (slot.state.load() == 2) ::unlink(slot.path);
}

void require_writable_target(const std::string& output) {
  const std::string directory = directory_of(output);
  const std::string directory_kind = file_kind(directory);
  if (directory_kind == "missing")
    throw input_error("cannot write " + in_quotes(output) + ": directory " + in_quotes(directory) +
                      " does not exist");
  if (directory_kind != "directory")
    throw input_error("cannot write " + in_quotes(output) + ": " + in_quotes(directory) +
                      " is not a directory");
  if (::access(directory.c_str(), W_OK | X_OK) != 0)
    throw input_error("cannot write " + in_quotes(output) + ": directory " + in_quotes(directory) +
                      " is not writable (" + std::strerror(errno) + ")");
  const std::string kind = file_kind(output, /*follow=*/false);
  if (kind != "missing" && kind != "regular file")
    throw input_error("cannot write " + in_quotes(output) + ": it is a " + kind +
                      "; kpl replaces only regular files");
}

void require_distinct(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat written {};
  if (::stat(output.c_str(), &written) != 0) return;  // does not exist yet
  for (const auto& input : inputs) {
    struct stat read {};
    if (::stat(input.c_str(), &read) == 0 && read.st_dev == written.st_dev &&
        read.st_ino == written.st_ino)
      throw input_error("cannot write " + in_quotes(output) + ": it is the input " +
                        in_quotes(input) + (output == input ? "" : " (a link to the same file)") +
                        "; choose another output");
  }
}

std::vector<std::string> remove_stale_partials(const std::string& output) {
  const std::filesystem::path target(output);
  const std::string prefix = target.filename().string() + ".partial-";
  const std::filesystem::path directory(directory_of(output));
  std::vector<std::string> removed;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // still running
    std::error_code ignored;
    if (entry.is_regular_file(ignored) && std::filesystem::remove(entry.path(), ignored))
      removed.push_back(entry.path().string());
  }
  return removed;
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  QuietErrors quiet;
  require_writable_target(path_);
  partial_path_ = path_ + ".partial-" + std::to_string(::getpid());
  registration_ = register_partial(partial_path_);
  file_ = H5Fcreate(partial_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file_ < 0) {
    unregister_partial(registration_);
    registration_ = -1;
    throw input_error("cannot write " + in_quotes(path_) + ": cannot create " +
                      in_quotes(partial_path_) + " (" + std::strerror(errno) + ")");
  }
}

OutputFile::~OutputFile() {
  if (!committed_) close_and_remove();
}

void OutputFile::close_and_remove() noexcept {
  QuietErrors quiet;
  if (file_ >= 0) H5Fclose(file_);
  file_ = -1;
  std::error_code ignored;
  if (!partial_path_.empty()) std::filesystem::remove(partial_path_, ignored);
  unregister_partial(registration_);
  registration_ = -1;
}

std::int64_t OutputFile::create_raw(const std::string& dataset, element_type type,
                                    const std::vector<std::size_t>& extents) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path_) + ": dataset " + name;
  if (committed_) throw runtime_error(where + ": the file was already committed");
  if (link_exists(file_, name)) throw runtime_error(where + " was already written");
  std::vector<hsize_t> dims(extents.begin(), extents.end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle link_properties(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(link_properties.get(), 1);
  const hid_t set = H5Dcreate2(file_, name.c_str(), file_type(type), space.get(),
                               link_properties.get(), H5P_DEFAULT, H5P_DEFAULT);
  if (set < 0) throw runtime_error(where + " could not be created");
  return set;
}

void OutputFile::write_raw_rows(const std::string& dataset, element_type type, const void* data,
                                std::size_t first_row, const std::vector<std::size_t>& extents) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path_) + ": dataset " + name;
  if (committed_) throw runtime_error(where + ": the file was already committed");
  if (!is_dataset(file_, name)) throw runtime_error(where + ": create_dataset() it first");
  Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle file_space(H5Dget_space(set.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(file_space.get());
  std::vector<hsize_t> dims(rank > 0 ? std::size_t(rank) : 0);
  H5Sget_simple_extent_dims(file_space.get(), dims.data(), nullptr);
  bool fits = rank == static_cast<int>(extents.size()) && first_row <= dims[0] &&
              extents[0] <= dims[0] - first_row;
  for (std::size_t d = 1; fits && d < extents.size(); ++d) fits = dims[d] == extents[d];
  if (!fits) {
    throw runtime_error(where + ": rows " + std::to_string(first_row) + " + " +
                        shape_text(extents) + " do not fit its extents " +
                        shape_text(std::vector<std::size_t>(dims.begin(), dims.end())));
  }
  std::size_t count = 1;
  for (auto extent : extents) count *= extent;
  if (count == 0) return;
  std::vector<hsize_t> start(extents.size(), 0), block(extents.begin(), extents.end());
  start[0] = first_row;
  Handle memory_space(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr),
                      H5Sclose);
  if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(),
                          nullptr) < 0 ||
      H5Dwrite(set.get(), memory_type(type), memory_space.get(), file_space.get(), H5P_DEFAULT,
               data) < 0) {
    throw runtime_error(where + " could not be written (disk full?)");
  }
}

void OutputFile::write_raw(const std::string& dataset, element_type type, const void* data,
                           const std::vector<std::size_t>& extents) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path_) + ": dataset " + name;
  Handle set(create_raw(dataset, type, extents), H5Dclose);
  std::size_t count = 1;
  for (auto extent : extents) count *= extent;
  if (count > 0 &&
      H5Dwrite(set.get(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw runtime_error(where + " could not be written (disk full?)");
  }
}

std::int64_t OutputFile::open_object(const std::string& object) const {
  const std::string name = absolute(object);
  if (!link_exists(file_, name)) {
    throw runtime_error("cannot write " + in_quotes(path_) + ": object " + name +
                        " must be written before its attributes");
  }
  return H5Oopen(file_, name.c_str(), H5P_DEFAULT);
}

namespace {
void write_attribute_value(hid_t owner_id, const std::string& where, const std::string& name,
                           hid_t type, const void* value) {
  Handle owner(owner_id, H5Oclose);
  if (!owner.valid()) throw runtime_error(where + " cannot be opened");
  if (H5Aexists(owner.get(), name.c_str()) > 0) H5Adelete(owner.get(), name.c_str());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(owner.get(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), type, value) < 0) {
    throw runtime_error(where + ": attribute '" + name + "' could not be written");
  }
}
}  // namespace

void OutputFile::write_attribute(const std::string& object, const std::string& name,
                                 const std::string& value) {
  QuietErrors quiet;
  // Variable-length UTF-8, which h5py returns as str.
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  const char* text = value.c_str();
  write_attribute_value(open_object(object),
                        "cannot write " + in_quotes(path_) + ": " + absolute(object), name,
                        type.get(), &text);
}

void OutputFile::write_attribute(const std::string& object, const std::string& name, double value) {
  QuietErrors quiet;
  write_attribute_value(open_object(object),
                        "cannot write " + in_quotes(path_) + ": " + absolute(object), name,
                        H5T_NATIVE_DOUBLE, &value);
}

void OutputFile::write_attribute(const std::string& object, const std::string& name,
                                 std::int64_t value) {
  QuietErrors quiet;
  write_attribute_value(open_object(object),
                        "cannot write " + in_quotes(path_) + ": " + absolute(object), name,
                        H5T_NATIVE_INT64, &value);
}

void OutputFile::commit() {
  QuietErrors quiet;
  if (committed_) return;
  if (H5Fclose(file_) < 0) {
    file_ = -1;
    close_and_remove();
    throw runtime_error("cannot write " + in_quotes(path_) + ": closing the HDF5 file failed");
  }
  file_ = -1;
  // The target may have changed since the run began: never replace anything
  // but a regular file.
  const std::string kind = file_kind(path_, /*follow=*/false);
  if (kind != "missing" && kind != "regular file") {
    close_and_remove();
    throw input_error("cannot write " + in_quotes(path_) + ": it is now a " + kind +
                      "; kpl replaces only regular files");
  }
  std::error_code error;
  std::filesystem::rename(partial_path_, path_, error);
  if (error) {
    close_and_remove();
    throw runtime_error("cannot write " + in_quotes(path_) + ": " + error.message());
  }
  unregister_partial(registration_);
  registration_ = -1;
  committed_ = true;
}

}  // namespace kpl::hdf5
