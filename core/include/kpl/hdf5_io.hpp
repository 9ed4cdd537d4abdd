// HDF5 input and output for host Views of rank 1 to 3, row-major in the file
// as h5py and NumPy write them. Every failure is a kpl::input_error (the file
// is wrong) or kpl::runtime_error (the system failed) naming the file and the
// dataset; HDF5's own error stack is never printed. Output goes to a partial
// file beside the target, renamed over it only by OutputFile::commit(): a
// failure at any point leaves no half-written output behind.
#pragma once

#include <kpl/error.hpp>
#include <kpl/impl/hdf5_types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kpl::hdf5 {

// element_type { float64, float32, int64, int32 }: impl/hdf5_types.hpp.
// The View type a dataset of rank Rank is read into: row-major, on the host.
template <class T, int Rank>
using HostArray =
    Kokkos::View<typename impl::add_rank<T, Rank>::type, Kokkos::LayoutRight, Kokkos::HostSpace>;

// For programs, first thing in main(): HDF5 then leaves open files to the
// operating system at exit instead of closing them. kpl's outputs need no
// closing at exit (commit() closes, checks and renames them; an abandoned one
// is deleted), and HDF5 1.10 crashes at exit closing a file whose close
// already failed (a disk that filled up). Not for libraries: a program's own
// files left open would no longer be flushed at exit.
void leave_files_to_the_system_at_exit();

// What a read requires of the values, beyond type and rank.
struct ReadRequirements {
  bool finite = false;       // reject NaN and +-Inf (floating types only)
  bool allow_empty = false;  // accept a dataset with zero elements
  bool already_checked = false;  // an earlier read of these rows checked them
};

// An HDF5 file opened for reading: input_error unless the path is a regular,
// readable HDF5 file (a directory, FIFO or device is refused at once).
// Datasets reached through external links, kept in external raw files or
// virtual are refused: an input file may name only data it holds. Reads check
// their byte count before allocating (input_error on overflow, resource_error
// past the free memory).
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
  // Whether a dataset's elements are integers (which are always finite).
  bool holds_integers(const std::string& dataset) const;
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
  HostArray<T, Rank> read(const std::string& dataset, ReadRequirements requirements = {}) const;

  // Reads rows [first_row, first_row + row_count) of a dataset (slices along
  // its first dimension), so that datasets larger than memory can be
  // streamed. The whole dataset's type and rank are checked as by read().
  template <class T, int Rank>
  HostArray<T, Rank> read_rows(const std::string& dataset, std::size_t first_row,
                               std::size_t row_count, ReadRequirements requirements = {}) const;

  // read_rows into `rows`, a contiguous row-major host View whose extents
  // give the rows (rows.extent(0) of them, from first_row) and must match
  // the dataset's others: streaming into buffers allocated once (pinned
  // memory for a GPU, say).
  template <class View>
  void read_rows_into(const std::string& dataset, std::size_t first_row, const View& rows,
                      ReadRequirements requirements = {}) const;

  // read_rows_into for `rows` in any memory space `space` reaches (a GPU's,
  // say), LayoutRight from rank 2: blocks of about block_bytes go through two
  // pinned host buffers in turn, and each block's copy to `rows` runs on
  // `space` while the next block is read. No host copy of the whole is made:
  // on a GPU its first touch costs more than the read. The dataset, the row
  // range and rows' shape are checked before any block is read, the values
  // (read_rows_into's checks) block by block, naming coordinates in the
  // whole dataset; on an error no copy is left running. Returns once `rows`
  // holds the rows.
  template <class ExecutionSpace, class View>
  void read_rows_to(const ExecutionSpace& space, const std::string& dataset, std::size_t first_row,
                    const View& rows, ReadRequirements requirements = {},
                    std::size_t block_bytes = std::size_t(8) << 20) const;

  // Attributes of the file ("/") or of a dataset or group.
  bool has_attribute(const std::string& object, const std::string& name) const;
  std::string read_string_attribute(const std::string& object, const std::string& name) const;
  double read_number_attribute(const std::string& object, const std::string& name) const;
  std::int64_t read_integer_attribute(const std::string& object, const std::string& name) const;

 private:
  friend class OutputFile;  // copy_dataset
  std::string path_;
  std::int64_t file_ = -1;  // hid_t
};

// Throws input_error unless extent `dimension_a` of dataset a equals extent
// `dimension_b` of dataset b, naming both (e.g. /A's rows and /b's length).
void require_matching_extent(const InputFile& file, const std::string& dataset_a, int dimension_a,
                             const std::string& dataset_b, int dimension_b);

// The directory a path's file is in ("." for a bare name).
std::string directory_of(const std::string& path);

// Throws input_error unless `output` is absent or a regular file (kpl never
// replaces anything else) in an existing directory this process may write to.
void require_writable_target(const std::string& output);

// Throws input_error when `output` is one of `inputs`: the same path, or a
// symbolic or hard link to the same file.
void require_distinct(const std::string& output, const std::vector<std::string>& inputs);

// The "<output>.partial-<pid>" files whose process no longer runs (left by a
// run that was killed or interrupted), and a function that removes them and
// returns their paths.
std::vector<std::string> stale_partials(const std::string& output);
std::vector<std::string> remove_stale_partials(const std::string& output);

// Unlinks every partial file of this process that was not committed, but
// those opened to be kept when interrupted (OutputFile::Options), whose
// names it writes to file descriptor `report_fd` (-1: none), one line each.
// Async-signal-safe: for a program's SIGINT/SIGTERM/SIGHUP handler.
void remove_uncommitted_outputs(int report_fd = -1) noexcept;

// How a dataset is stored: contiguous (chunk_rows 0), or in chunks of
// chunk_rows rows along its first dimension (whole in the others), each
// shuffled and deflated at deflate_level (1 fastest .. 9 smallest; 0: not
// compressed). Readers need nothing but HDF5's built-in filters.
struct Storage {
  std::size_t chunk_rows = 0;
  int deflate_level = 0;
  // Rows may be added (OutputFile::append_rows): created with its first
  // extent as given (0, say), unlimited; chunked (chunk_rows > 0).
  bool extendible = false;
};

// Rows of a chunked dataset made into its stored chunks before they are
// written (compress_rows, kpl/impl/hdf5_write.hpp): no HDF5 call, so that
// compressing runs on other threads than the HDF5 calls, on several at once.
// OutputFile::write_compressed_rows stores the chunks as they are (HDF5's
// direct chunk write). first_row is a multiple of the chunk rows, and the
// rows end on a chunk boundary or at the dataset's end (the last chunk is
// padded).
struct CompressedRows {
  std::size_t first_row = 0;
  std::size_t rows = 0;
  std::size_t chunk_rows = 0;
  std::vector<std::vector<unsigned char>> chunks;
  std::size_t stored_bytes() const;
};

// How several processes open one OutputFile together (kpl's MPI layer,
// kpl/process_group.hpp; core/ itself knows no MPI): an HDF5 file-access
// property list (an hid_t, MPI-IO) that the caller made and keeps open, the
// partial file's name every process agreed on, and whether this process is
// the one that writes whole datasets and renames the file (rank 0).
struct SharedOutput {
  std::int64_t file_access = -1;
  std::string partial_path;
  bool leader = false;
  // The transfer property list of write_rows() (an hid_t, copied); -1: the
  // default, independent. With a collective one every process calls
  // write_rows() for the same datasets in the same order, those without rows
  // with an empty View (its other extents the dataset's).
  std::int64_t row_transfer = -1;
};

// An HDF5 file being written: its target checked (require_writable_target),
// everything goes to "<path>.partial-<pid>", which commit() closes and renames
// to <path>; destruction before commit() removes it, as does
// remove_uncommitted_outputs().
//
// Shared by several processes (SharedOutput): every call is collective
// (same order, same arguments) except write_rows(), each process writing its
// own rows; write() stores the leader's data. commit() closes on all and
// renames on the leader. Destroyed uncommitted, every process unlinks the
// partial file but leaves the HDF5 file to be closed at MPI_Finalize (a
// collective close here could wait forever for a process that failed alone).
struct OutputOptions {
  // Interrupted by a signal (remove_uncommitted_outputs), the partial file
  // stays, for a later run to resume (OutputFile::resume_partial). HDF5 then
  // keeps the file's metadata in memory between flush() calls, so that the
  // file on disk is always as the last flush() left it, also after a crash.
  bool keep_when_interrupted = false;
};

class OutputFile {
 public:
  explicit OutputFile(std::string path) : OutputFile(std::move(path), OutputOptions{}) {}
  OutputFile(std::string path, OutputOptions options);
  OutputFile(std::string path, const SharedOutput& shared);
  // Goes on writing `partial`, a partial file of `path` kept by an earlier
  // run (see OutputOptions), renamed to this process's partial name first:
  // input_error if it is not a file HDF5 can open for writing.
  static std::unique_ptr<OutputFile> resume_partial(std::string path, const std::string& partial,
                                                    OutputOptions options);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& partial_path() const { return partial_path_; }
  // The transfer property list write_rows() uses (an hid_t; -1: HDF5's
  // default): after a collective write, H5Pget_mpio_actual_io_mode on it says
  // how MPI-IO did it.
  std::int64_t row_transfer() const { return row_transfer_; }

  // Writes a host View of rank 1 to 3, in any layout, row-major into the file.
  // Intermediate groups in the dataset's path are created.
  template <class View>
  void write(const std::string& dataset, const View& view, const Storage& storage = {});

  // A dataset written in slices: create it with its full extents, then
  // write_rows() each block of rows (along the first dimension) once.
  template <class T>
  void create_dataset(const std::string& dataset, const std::vector<std::size_t>& extents,
                      const Storage& storage = {});
  template <class View>
  void write_rows(const std::string& dataset, std::size_t first_row, const View& view);
  // Rows compressed ahead (CompressedRows) into a dataset created with the
  // same chunk rows and deflate level. One process only (not shared).
  void write_compressed_rows(const std::string& dataset, const CompressedRows& rows);

  // An extendible dataset (Storage::extendible): rows added at its end, or
  // its rows cut to `rows` (what a resumed run had written). One process.
  template <class View>
  void append_rows(const std::string& dataset, const View& view);
  void resize_rows(const std::string& dataset, std::size_t rows);
  std::size_t rows(const std::string& dataset) const;

  // A dataset of `input` copied whole, its element type kept (any numeric
  // type: shot numbers stay unsigned, big-endian stays big-endian), stored as
  // `storage` says (chunks compressed on up to `threads` threads).
  void copy_dataset(const InputFile& input, const std::string& dataset,
                    const Storage& storage = {}, int threads = 1);

  bool has_dataset(const std::string& dataset) const;

  // Writes what HDF5 holds in memory to the file (metadata included).
  void flush();

  void write_attribute(const std::string& object, const std::string& name,
                       const std::string& value);
  void write_attribute(const std::string& object, const std::string& name, const char* value) {
    write_attribute(object, name, std::string(value));
  }
  void write_attribute(const std::string& object, const std::string& name, double value);
  void write_attribute(const std::string& object, const std::string& name, std::int64_t value);
  void remove_attribute(const std::string& object, const std::string& name);

  // Makes the output visible under its final name; nothing is before.
  void commit();

 private:
  struct Reopen {};
  OutputFile(std::string path, const std::string& partial, OutputOptions options, Reopen);
  void close_and_remove() noexcept;

  std::string path_;
  std::string partial_path_;
  std::int64_t file_ = -1;  // hid_t
  int registration_ = -1;   // slot in the list remove_uncommitted_outputs() clears
  bool committed_ = false;
  bool shared_ = false;     // opened by several processes (SharedOutput)
  bool leader_ = true;      // writes whole datasets and renames
  std::int64_t row_transfer_ = -1;  // hid_t of write_rows()' transfers; -1: default
};

}  // namespace kpl::hdf5

#include <kpl/impl/hdf5_read.hpp>
#include <kpl/impl/hdf5_write.hpp>
