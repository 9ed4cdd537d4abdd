// What hdf5_read.cpp, hdf5_write.cpp and hdf5_target.cpp share: HDF5
// handles and quiet error scopes, type mappings, link checks, and the pieces
// of messages. Private to kpl_core (HDF5 stays out of the public headers).
#pragma once

#include <kpl/hdf5_io.hpp>

#include <hdf5.h>

#include <string>
#include <utility>
#include <vector>

static_assert(std::is_same_v<hid_t, std::int64_t>, "kpl stores hid_t as int64_t (HDF5 >= 1.10)");

namespace kpl::hdf5::impl {


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

std::string in_quotes(const std::string& text);
// What a path names, for messages: "regular file", "directory", ...;
// "missing" when nothing is there. follow: stat (symbolic links resolved)
// or lstat.
std::string file_kind(const std::string& path, bool follow = true);
// "/A" for "A" and "/A": messages and lookups use absolute names.
std::string absolute(const std::string& name);
std::string shape_text(const std::vector<std::size_t>& extents);
const char* element_type_name(element_type type);
hid_t memory_type(element_type type);
// Little-endian IEEE and two's-complement types, as h5py writes on x86 and Arm.
hid_t file_type(element_type type);
// Link access that refuses to follow external links: an input file may name
// only data it holds itself (an external link could open any file on the
// machine).
hid_t local_links_only();
// True when every link on the way to `name` exists (H5Lexists needs that).
// Throws input_error when one of them is an external link.
bool link_exists(hid_t location, const std::string& name, const std::string& file_path = {});
// Whether an existing link names a dataset (rather than a group or type).
bool is_dataset(hid_t location, const std::string& name);
// The dataset's type, described for messages: "a string", "float64", ...
std::string describe_type(hid_t type);
// Whether a dataset of file type `type` can be read as `wanted` without
// losing what the caller asked for (see InputFile::read).
bool readable_as(hid_t type, element_type wanted);
// The number of elements of a shape.
std::size_t element_count(const std::vector<std::size_t>& extents);

}  // namespace kpl::hdf5::impl
