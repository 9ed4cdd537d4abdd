// The pieces of kpl::hdf5 that reading and writing share (hdf5_internal.hpp):
// type mappings, link checks, message text.
#include "hdf5_internal.hpp"

#include <sys/stat.h>

#include <cerrno>

namespace kpl::hdf5::impl {

std::string in_quotes(const std::string& text) { return "'" + text + "'"; }

// What a path names, for messages: "regular file", "directory", ...;
// "missing" when nothing is there. follow: stat (symbolic links resolved)
// or lstat.
std::string file_kind(const std::string& path, bool follow) {
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
namespace {
herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t,
                            void*) {
  return -1;
}
}  // namespace

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
bool link_exists(hid_t location, const std::string& name, const std::string& file_path) {
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


std::size_t element_count(const std::vector<std::size_t>& extents) {
  std::size_t count = 1;
  for (auto extent : extents) count *= extent;
  return count;
}

}  // namespace kpl::hdf5::impl

namespace kpl::hdf5 {

void leave_files_to_the_system_at_exit() { H5dont_atexit(); }

}  // namespace kpl::hdf5
