// kpl::hdf5::OutputFile: everything is written to "<path>.partial-<pid>"
// and renamed to <path> by commit(); a partial file is removed when its
// OutputFile dies uncommitted, or by remove_uncommitted_outputs() from a
// signal handler, through a registry that needs no locks.
#include "hdf5_internal.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

namespace kpl::hdf5 {

using impl::absolute;
using impl::file_kind;
using impl::Handle;
using impl::in_quotes;
using impl::is_dataset;
using impl::link_exists;
using impl::QuietErrors;
using impl::shape_text;

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

void remove_uncommitted_outputs() noexcept {
  for (auto& slot : partial_registry)
    if (slot.state.load() == 2) ::unlink(slot.path);
}

// ------------------------------------------------------------ OutputFile

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

OutputFile::OutputFile(std::string path, const SharedOutput& shared)
    : path_(std::move(path)), shared_(true), leader_(shared.leader) {
  QuietErrors quiet;
  require_writable_target(path_);
  // A process left with the default (independent) list would skip the
  // others' collective calls: fail here instead.
  if (shared.row_transfer >= 0 && (row_transfer_ = H5Pcopy(shared.row_transfer)) < 0)
    throw runtime_error("cannot write " + in_quotes(path_) + ": cannot copy its transfer list");
  partial_path_ = shared.partial_path;
  registration_ = register_partial(partial_path_);
  file_ = H5Fcreate(partial_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, shared.file_access);
  if (file_ < 0) {
    unregister_partial(registration_);
    registration_ = -1;
    if (row_transfer_ >= 0) H5Pclose(row_transfer_);
    throw input_error("cannot write " + in_quotes(path_) + ": cannot create " +
                      in_quotes(partial_path_) + " (" + std::strerror(errno) + ")");
  }
}

OutputFile::~OutputFile() {
  if (!committed_) close_and_remove();
  if (row_transfer_ >= 0) H5Pclose(row_transfer_);
}

void OutputFile::close_and_remove() noexcept {
  QuietErrors quiet;
  if (file_ >= 0 && !shared_) H5Fclose(file_);  // shared: see the class comment
  file_ = -1;
  std::error_code ignored;
  if (!partial_path_.empty()) std::filesystem::remove(partial_path_, ignored);
  unregister_partial(registration_);
  registration_ = -1;
}

namespace impl {

std::int64_t create_raw(const std::string& path, std::int64_t file, bool committed,
                        const std::string& dataset, element_type type,
                        const std::vector<std::size_t>& extents) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path) + ": dataset " + name;
  if (committed) throw runtime_error(where + ": the file was already committed");
  if (link_exists(file, name)) throw runtime_error(where + " was already written");
  std::vector<hsize_t> dims(extents.begin(), extents.end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle link_properties(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(link_properties.get(), 1);
  const hid_t set = H5Dcreate2(file, name.c_str(), file_type(type), space.get(),
                               link_properties.get(), H5P_DEFAULT, H5P_DEFAULT);
  if (set < 0) throw runtime_error(where + " could not be created");
  return set;
}

void create_empty_raw(const std::string& path, std::int64_t file, bool committed,
                      const std::string& dataset, element_type type,
                      const std::vector<std::size_t>& extents) {
  Handle set(create_raw(path, file, committed, dataset, type, extents), H5Dclose);
}

void write_raw(const std::string& path, std::int64_t file, bool committed,
               const std::string& dataset, element_type type, const void* data,
               const std::vector<std::size_t>& extents) {
  QuietErrors quiet;
  const std::string where = "cannot write " + in_quotes(path) + ": dataset " + absolute(dataset);
  Handle set(create_raw(path, file, committed, dataset, type, extents), H5Dclose);
  if (data != nullptr && element_count(extents) > 0 &&
      H5Dwrite(set.get(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw runtime_error(where + " could not be written (disk full?)");
  }
}

}  // namespace impl

namespace {

// The extents of a dataset already created in the file.
std::vector<std::size_t> extents_in_file(hid_t file_space) {
  const int rank = H5Sget_simple_extent_ndims(file_space);
  std::vector<hsize_t> dims(rank > 0 ? std::size_t(rank) : 0);
  H5Sget_simple_extent_dims(file_space, dims.data(), nullptr);
  return std::vector<std::size_t>(dims.begin(), dims.end());
}

// Throws runtime_error unless rows [first_row, first_row + extents[0]) of
// shape `extents` lie inside a dataset of extents `dims`.
void require_rows_fit(const std::string& where, const std::vector<std::size_t>& dims,
                      std::size_t first_row, const std::vector<std::size_t>& extents) {
  bool fits = dims.size() == extents.size() && first_row <= dims[0] &&
              extents[0] <= dims[0] - first_row;
  for (std::size_t d = 1; fits && d < extents.size(); ++d) fits = dims[d] == extents[d];
  if (!fits) {
    throw runtime_error(where + ": rows " + std::to_string(first_row) + " + " +
                        shape_text(extents) + " do not fit its extents " + shape_text(dims));
  }
}

}  // namespace

namespace impl {

// Rows [first_row, first_row + extents[0]) through a hyperslab of the
// dataset's file dataspace.
void write_raw_rows(const std::string& path, std::int64_t file, bool committed,
                    const std::string& dataset, element_type type, const void* data,
                    std::size_t first_row, const std::vector<std::size_t>& extents,
                    std::int64_t transfer) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path) + ": dataset " + name;
  if (committed) throw runtime_error(where + ": the file was already committed");
  if (!is_dataset(file, name)) throw runtime_error(where + ": create_dataset() it first");
  Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle file_space(H5Dget_space(set.get()), H5Sclose);
  require_rows_fit(where, extents_in_file(file_space.get()), first_row, extents);
  const hid_t transfer_list = transfer >= 0 ? transfer : H5P_DEFAULT;
  if (element_count(extents) == 0) {
    if (transfer < 0) return;
    // A collective transfer: this process takes part with nothing selected.
    const hsize_t one = 1;
    const char unused = 0;
    Handle memory_space(H5Screate_simple(1, &one, nullptr), H5Sclose);
    if (H5Sselect_none(memory_space.get()) < 0 || H5Sselect_none(file_space.get()) < 0 ||
        H5Dwrite(set.get(), memory_type(type), memory_space.get(), file_space.get(),
                 transfer_list, data ? data : &unused) < 0)
      throw runtime_error(where + " could not be written (its collective transfer failed)");
    return;
  }
  std::vector<hsize_t> start(extents.size(), 0), block(extents.begin(), extents.end());
  start[0] = first_row;
  Handle memory_space(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr),
                      H5Sclose);
  if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(),
                          nullptr) < 0 ||
      H5Dwrite(set.get(), memory_type(type), memory_space.get(), file_space.get(), transfer_list,
               data) < 0) {
    throw runtime_error(where + " could not be written (disk full?)");
  }
}

}  // namespace impl

// ------------------------------------------------------------ attributes

namespace {
// Opens an object of the file being written for its attributes (an hid_t).
hid_t open_object(hid_t file, const std::string& path, const std::string& object) {
  const std::string name = absolute(object);
  if (!link_exists(file, name)) {
    throw runtime_error("cannot write " + in_quotes(path) + ": object " + name +
                        " must be written before its attributes");
  }
  return H5Oopen(file, name.c_str(), H5P_DEFAULT);
}
}  // namespace

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
  write_attribute_value(open_object(file_, path_, object),
                        "cannot write " + in_quotes(path_) + ": " + absolute(object), name,
                        type.get(), &text);
}

void OutputFile::write_attribute(const std::string& object, const std::string& name, double value) {
  QuietErrors quiet;
  write_attribute_value(open_object(file_, path_, object),
                        "cannot write " + in_quotes(path_) + ": " + absolute(object), name,
                        H5T_NATIVE_DOUBLE, &value);
}

void OutputFile::write_attribute(const std::string& object, const std::string& name,
                                 std::int64_t value) {
  QuietErrors quiet;
  write_attribute_value(open_object(file_, path_, object),
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
  if (!leader_) {  // the leader renames; kpl's MPI layer agrees on the outcome
    unregister_partial(registration_);
    registration_ = -1;
    committed_ = true;
    return;
  }
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
