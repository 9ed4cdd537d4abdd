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
using impl::describe_type;
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
  bool keep = false;          // kept when interrupted (OutputFile::Options)
  char path[partial_path_capacity];
};
PartialSlot partial_registry[partial_slots];

int register_partial(const std::string& path, bool keep = false) {
  if (path.size() >= partial_path_capacity) return -1;
  for (int slot = 0; slot < partial_slots; ++slot) {
    int expected = 0;
    if (partial_registry[slot].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(partial_registry[slot].path, path.c_str(), path.size() + 1);
      partial_registry[slot].keep = keep;
      partial_registry[slot].state.store(2);
      return slot;
    }
  }
  return -1;
}

void unregister_partial(int slot) {
  if (slot >= 0) partial_registry[slot].state.store(0);
}

// write(2) of a whole text, for a signal handler.
void write_all(int fd, const char* text, std::size_t size) noexcept {
  while (size > 0) {
    const ssize_t written = ::write(fd, text, size);
    if (written <= 0) return;
    text += written;
    size -= std::size_t(written);
  }
}

// The file-access list of an output kept when interrupted: no metadata
// leaves HDF5's cache but by flush(), so that the file on disk is always as
// the last flush left it (HDF5 1.10 has no journal).
Handle keepable_file_access() {
  Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5AC_cache_config_t cache{};
  cache.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  if (!access.valid() || H5Pget_mdc_config(access.get(), &cache) < 0)
    throw runtime_error("cannot set up HDF5's metadata cache");
  cache.evictions_enabled = false;
  cache.incr_mode = H5C_incr__off;
  cache.flash_incr_mode = H5C_flash_incr__off;
  cache.decr_mode = H5C_decr__off;
  if (H5Pset_mdc_config(access.get(), &cache) < 0)
    throw runtime_error("cannot set up HDF5's metadata cache");
  return access;
}

}  // namespace

void remove_uncommitted_outputs(int report_fd) noexcept {
  static const char kept[] = "kpl: interrupted; the partial output is kept as '";
  static const char resume[] = "' (--resume goes on from it; a run without --resume removes it)\n";
  for (auto& slot : partial_registry) {
    if (slot.state.load() != 2) continue;
    if (!slot.keep) {
      ::unlink(slot.path);
    } else if (report_fd >= 0) {
      write_all(report_fd, kept, sizeof kept - 1);
      write_all(report_fd, slot.path, std::strlen(slot.path));
      write_all(report_fd, resume, sizeof resume - 1);
    }
  }
}

std::size_t CompressedRows::stored_bytes() const {
  std::size_t bytes = 0;
  for (const auto& chunk : chunks) bytes += chunk.size();
  return bytes;
}

// ------------------------------------------------------------ OutputFile

OutputFile::OutputFile(std::string path, OutputOptions options) : path_(std::move(path)) {
  QuietErrors quiet;
  require_writable_target(path_);
  partial_path_ = path_ + ".partial-" + std::to_string(::getpid());
  const Handle access = options.keep_when_interrupted ? keepable_file_access()
                                                      : Handle(H5P_DEFAULT, nullptr);
  registration_ = register_partial(partial_path_, options.keep_when_interrupted);
  file_ = H5Fcreate(partial_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
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

OutputFile::OutputFile(std::string path, const std::string& partial, OutputOptions options, Reopen)
    : path_(std::move(path)) {
  QuietErrors quiet;
  require_writable_target(path_);
  partial_path_ = path_ + ".partial-" + std::to_string(::getpid());
  const std::string where = "cannot resume " + in_quotes(path_) + " from " + in_quotes(partial);
  if (file_kind(partial, /*follow=*/false) != "regular file" || H5Fis_hdf5(partial.c_str()) <= 0)
    throw input_error(where + ": it is not an HDF5 file");
  std::error_code error;
  std::filesystem::rename(partial, partial_path_, error);
  if (error) throw input_error(where + ": " + error.message());
  const Handle access = options.keep_when_interrupted ? keepable_file_access()
                                                      : Handle(H5P_DEFAULT, nullptr);
  registration_ = register_partial(partial_path_, options.keep_when_interrupted);
  file_ = H5Fopen(partial_path_.c_str(), H5F_ACC_RDWR, access.get());
  if (file_ < 0) {
    // Left under this process's partial name: removed like any partial file
    // when this run ends, but kept when it is interrupted.
    if (!options.keep_when_interrupted) std::filesystem::remove(partial_path_, error);
    unregister_partial(registration_);
    registration_ = -1;
    throw input_error(where + ": HDF5 cannot open it for writing (damaged?); run without "
                      "--resume to start again");
  }
}

std::unique_ptr<OutputFile> OutputFile::resume_partial(std::string path, const std::string& partial,
                                                       OutputOptions options) {
  return std::unique_ptr<OutputFile>(new OutputFile(std::move(path), partial, options, Reopen{}));
}

bool OutputFile::has_dataset(const std::string& dataset) const {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  return link_exists(file_, name) && is_dataset(file_, name);
}

void OutputFile::flush() {
  QuietErrors quiet;
  if (committed_ || H5Fflush(file_, H5F_SCOPE_LOCAL) < 0)
    throw runtime_error("cannot write " + in_quotes(path_) + ": flushing it failed (disk full?)");
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

namespace {

// The creation list of a dataset stored as `storage` says (HDF5's default
// for a contiguous one, and for an empty one, which cannot be chunked).
Handle dataset_creation(const std::string& where, const std::vector<std::size_t>& extents,
                        const Storage& storage) {
  std::vector<std::size_t> others(extents.begin() + (extents.empty() ? 0 : 1), extents.end());
  if (storage.extendible && (storage.chunk_rows == 0 || impl::element_count(others) == 0))
    throw runtime_error(where + ": an extendible dataset needs chunks of whole rows");
  if (storage.chunk_rows == 0 || (!storage.extendible && impl::element_count(extents) == 0))
    return Handle(H5P_DEFAULT, nullptr);
  if ((!storage.extendible && storage.chunk_rows > extents[0]) || storage.deflate_level < 0 ||
      storage.deflate_level > 9)
    throw runtime_error(where + ": chunks of " + std::to_string(storage.chunk_rows) +
                        " rows (deflate level " + std::to_string(storage.deflate_level) +
                        ") do not suit its " + std::to_string(extents[0]) + " rows");
  std::vector<hsize_t> chunk(extents.begin(), extents.end());
  chunk[0] = storage.chunk_rows;
  Handle creation(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (!creation.valid() ||
      H5Pset_chunk(creation.get(), static_cast<int>(chunk.size()), chunk.data()) < 0 ||
      (storage.deflate_level > 0 && (H5Pset_shuffle(creation.get()) < 0 ||
                                     H5Pset_deflate(creation.get(), storage.deflate_level) < 0)))
    throw runtime_error(where + ": its chunked, compressed storage could not be set up");
  // Chunks are allocated as they are written, never filled in advance.
  H5Pset_fill_time(creation.get(), H5D_FILL_TIME_NEVER);
  return creation;
}

// A new dataset of file type `stored` (an hid_t), open.
hid_t create_typed(const std::string& path, hid_t file, bool committed, const std::string& dataset,
                   hid_t stored, const std::vector<std::size_t>& extents, const Storage& storage) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path) + ": dataset " + name;
  if (committed) throw runtime_error(where + ": the file was already committed");
  if (link_exists(file, name)) throw runtime_error(where + " was already written");
  std::vector<hsize_t> dims(extents.begin(), extents.end()), most = dims;
  if (storage.extendible && !most.empty()) most[0] = H5S_UNLIMITED;
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), most.data()),
               H5Sclose);
  Handle link_properties(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(link_properties.get(), 1);
  const Handle creation = dataset_creation(where, extents, storage);
  const hid_t set = H5Dcreate2(file, name.c_str(), stored, space.get(), link_properties.get(),
                               creation.get(), H5P_DEFAULT);
  if (set < 0) throw runtime_error(where + " could not be created");
  return set;
}

}  // namespace

namespace impl {

std::int64_t create_raw(const std::string& path, std::int64_t file, bool committed,
                        const std::string& dataset, element_type type,
                        const std::vector<std::size_t>& extents, const Storage& storage) {
  return create_typed(path, file, committed, dataset, file_type(type), extents, storage);
}

void create_empty_raw(const std::string& path, std::int64_t file, bool committed,
                      const std::string& dataset, element_type type,
                      const std::vector<std::size_t>& extents, const Storage& storage) {
  Handle set(create_raw(path, file, committed, dataset, type, extents, storage), H5Dclose);
}

void write_raw(const std::string& path, std::int64_t file, bool committed,
               const std::string& dataset, element_type type, const void* data,
               const std::vector<std::size_t>& extents, const Storage& storage) {
  QuietErrors quiet;
  const std::string where = "cannot write " + in_quotes(path) + ": dataset " + absolute(dataset);
  Handle set(create_raw(path, file, committed, dataset, type, extents, storage), H5Dclose);
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

namespace {
// A dataset of an uncommitted file that one process alone writes (what
// `change` does to it, for the message), open.
Handle open_to_change(const std::string& where, hid_t file, const std::string& name,
                      bool committed, bool shared, const char* change) {
  if (committed) throw runtime_error(where + ": the file was already committed");
  if (shared) throw runtime_error(where + ": " + change + " by one process only");
  if (!is_dataset(file, name)) throw runtime_error(where + ": create_dataset() it first");
  return Handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
}
}  // namespace

void OutputFile::write_compressed_rows(const std::string& dataset, const CompressedRows& rows) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path_) + ": dataset " + name;
  const Handle set =
      open_to_change(where, file_, name, committed_, shared_, "compressed rows are written");
  Handle creation(H5Dget_create_plist(set.get()), H5Pclose);
  Handle file_space(H5Dget_space(set.get()), H5Sclose);
  const auto dims = extents_in_file(file_space.get());
  std::vector<hsize_t> chunk(dims.size(), 0);
  if (!creation.valid() || H5Pget_layout(creation.get()) != H5D_CHUNKED ||
      H5Pget_chunk(creation.get(), static_cast<int>(chunk.size()), chunk.data()) < 0 ||
      chunk[0] != rows.chunk_rows || rows.first_row % rows.chunk_rows != 0 ||
      rows.first_row + rows.rows > dims[0] ||
      rows.chunks.size() != (rows.rows + rows.chunk_rows - 1) / rows.chunk_rows ||
      (rows.rows % rows.chunk_rows != 0 && rows.first_row + rows.rows != dims[0]))
    throw runtime_error(where + ": rows " + std::to_string(rows.first_row) + " + " +
                        std::to_string(rows.rows) + " in chunks of " +
                        std::to_string(rows.chunk_rows) + " do not match its storage");
  std::vector<hsize_t> offset(dims.size(), 0);
  for (std::size_t c = 0; c < rows.chunks.size(); ++c) {
    offset[0] = rows.first_row + c * rows.chunk_rows;
    if (H5Dwrite_chunk(set.get(), H5P_DEFAULT, 0, offset.data(), rows.chunks[c].size(),
                       rows.chunks[c].data()) < 0)
      throw runtime_error(where + " could not be written (disk full?)");
  }
}

std::size_t OutputFile::rows(const std::string& dataset) const {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  if (!is_dataset(file_, name))
    throw runtime_error("cannot write " + in_quotes(path_) + ": dataset " + name +
                        ": create_dataset() it first");
  Handle set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle space(H5Dget_space(set.get()), H5Sclose);
  const auto dims = extents_in_file(space.get());
  return dims.empty() ? 0 : dims[0];
}

void OutputFile::resize_rows(const std::string& dataset, std::size_t rows) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = "cannot write " + in_quotes(path_) + ": dataset " + name;
  const Handle set = open_to_change(where, file_, name, committed_, shared_, "rows are added");
  Handle space(H5Dget_space(set.get()), H5Sclose);
  auto dims = extents_in_file(space.get());
  if (dims.empty()) throw runtime_error(where + " has no rows to add to");
  std::vector<hsize_t> extents(dims.begin(), dims.end());
  extents[0] = rows;
  if (H5Dset_extent(set.get(), extents.data()) < 0)
    throw runtime_error(where + ": its rows cannot be resized (not extendible?)");
}

void OutputFile::copy_dataset(const InputFile& input, const std::string& dataset,
                              const Storage& storage, int threads) {
  QuietErrors quiet;
  const std::string name = absolute(dataset);
  const std::string where = in_quotes(input.path()) + ": dataset " + name;
  const auto extents = impl::dataset_shape(input.path(), input.file_, name);  // checks storage
  Handle source(H5Dopen2(input.file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle stored(H5Dget_type(source.get()), H5Tclose);
  const auto type_class = stored.valid() ? H5Tget_class(stored.get()) : H5T_NO_CLASS;
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT)
    throw input_error(where + " has an unsupported type: " +
                      (stored.valid() ? describe_type(stored.get()) : std::string("unreadable")) +
                      " (numbers are copied)");
  // Read and written in the file's own type: the bytes as they are, byte
  // order included, with no conversion either way.
  const std::size_t element_size = H5Tget_size(stored.get());
  Handle set(create_typed(path_, file_, committed_, name, stored.get(), extents, storage),
             H5Dclose);
  if (!leader_ || impl::element_count(extents) == 0) return;
  // A block of rows at a time (whole chunks): memory stays bounded however
  // long the file.
  const std::size_t row_elements = impl::element_count(extents) / extents[0];
  const std::size_t row_bytes = row_elements * element_size;
  const std::size_t chunk = std::max<std::size_t>(storage.chunk_rows, 1);
  std::vector<std::size_t> block = extents;
  block[0] = std::min(extents[0],
                      std::max<std::size_t>(1, (std::size_t(1) << 24) / row_bytes / chunk) * chunk);
  impl::require_memory(input.path(), name, block, element_size);
  std::vector<unsigned char> data(impl::element_count(block) * element_size);
  Handle source_space(H5Dget_space(source.get()), H5Sclose);
  Handle target_space(H5Dget_space(set.get()), H5Sclose);
  const bool direct = storage.chunk_rows > 0 && !shared_;
  for (std::size_t first = 0; first < extents[0]; first += block[0]) {
    std::vector<hsize_t> start(extents.size(), 0), count(block.begin(), block.end());
    start[0] = first;
    count[0] = std::min(block[0], extents[0] - first);
    Handle memory(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                  H5Sclose);
    if (H5Sselect_hyperslab(source_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                            count.data(), nullptr) < 0 ||
        H5Dread(source.get(), stored.get(), memory.get(), source_space.get(), H5P_DEFAULT,
                data.data()) < 0)
      throw input_error(where + " could not be read (truncated or damaged file?)");
    bool written = true;
    if (direct) {  // compressed here, on `threads` threads
      std::vector<std::vector<unsigned char>> chunks((count[0] + chunk - 1) / chunk);
      impl::compress_chunks(data.data(), count[0], row_elements, element_size, storage, chunks,
                            threads);
      std::vector<hsize_t> offset(extents.size(), 0);
      for (std::size_t c = 0; written && c < chunks.size(); ++c) {
        offset[0] = first + c * chunk;
        written = H5Dwrite_chunk(set.get(), H5P_DEFAULT, 0, offset.data(), chunks[c].size(),
                                 chunks[c].data()) >= 0;
      }
    } else {
      written = H5Sselect_hyperslab(target_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                    count.data(), nullptr) >= 0 &&
                H5Dwrite(set.get(), stored.get(), memory.get(), target_space.get(), H5P_DEFAULT,
                         data.data()) >= 0;
    }
    if (!written)
      throw runtime_error("cannot write " + in_quotes(path_) + ": dataset " + name +
                          " could not be written (disk full?)");
  }
}

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
  if (H5Aexists(owner.get(), name.c_str()) > 0) {
    // A number of the same type is rewritten where it is (a counter updated
    // after every chunk moves nothing in the file); anything else replaced.
    Handle existing(H5Aopen(owner.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
    Handle stored(existing.valid() ? H5Aget_type(existing.get()) : -1, H5Tclose);
    if (stored.valid() && H5Tget_class(type) != H5T_STRING && H5Tequal(stored.get(), type) > 0) {
      if (H5Awrite(existing.get(), type, value) < 0)
        throw runtime_error(where + ": attribute '" + name + "' could not be written");
      return;
    }
    existing.reset();
    H5Adelete(owner.get(), name.c_str());
  }
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

void OutputFile::remove_attribute(const std::string& object, const std::string& name) {
  QuietErrors quiet;
  Handle owner(open_object(file_, path_, object), H5Oclose);
  if (!owner.valid() || (H5Aexists(owner.get(), name.c_str()) > 0 &&
                         H5Adelete(owner.get(), name.c_str()) < 0))
    throw runtime_error("cannot write " + in_quotes(path_) + ": " + absolute(object) +
                        ": attribute '" + name + "' could not be removed");
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
