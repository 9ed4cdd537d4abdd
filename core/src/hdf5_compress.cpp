// Chunks compressed ahead of writing (kpl::hdf5::compress_rows): the stored
// form HDF5's own shuffle and deflate filters read (a zlib stream, from
// libdeflate where kpl was built with it, else zlib), made here so that
// it runs on several threads and away from the HDF5 calls, which the library
// serialises; OutputFile::write_compressed_rows stores the result with
// HDF5's direct chunk write, and readers decompress it as any HDF5 data.
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>

#if KPL_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace kpl::hdf5::impl {
namespace {

// HDF5's shuffle filter: byte b of element i goes to b * elements + i, so
// that the slowly varying high bytes of neighbouring values sit together.
void shuffle(const unsigned char* source, std::size_t elements, std::size_t element_size,
             unsigned char* destination) {
  for (std::size_t i = 0; i < elements; ++i)
    for (std::size_t b = 0; b < element_size; ++b)
      destination[b * elements + i] = source[i * element_size + b];
}

// A zlib stream (what HDF5's deflate filter writes and reads) of `bytes`
// bytes, at `level`: by libdeflate where kpl was built with it, else zlib.
// One Deflater per thread.
class Deflater {
 public:
  explicit Deflater(int level) {
#if KPL_HAVE_LIBDEFLATE
    compressor_ = libdeflate_alloc_compressor(level);
    if (compressor_ == nullptr) throw std::bad_alloc();
#endif
    level_ = level;
  }
  ~Deflater() {
#if KPL_HAVE_LIBDEFLATE
    libdeflate_free_compressor(compressor_);
#endif
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  std::vector<unsigned char> operator()(const unsigned char* data, std::size_t bytes) {
#if KPL_HAVE_LIBDEFLATE
    std::vector<unsigned char> deflated(libdeflate_zlib_compress_bound(compressor_, bytes));
    const std::size_t size =
        libdeflate_zlib_compress(compressor_, data, bytes, deflated.data(), deflated.size());
    const bool done = size > 0;
#else
    uLongf size = compressBound(uLong(bytes));
    std::vector<unsigned char> deflated(size);
    const bool done = compress2(deflated.data(), &size, data, uLong(bytes), level_) == Z_OK;
#endif
    if (!done)
      throw runtime_error("could not deflate a chunk of " + std::to_string(bytes) + " bytes");
    deflated.resize(size);
    return deflated;
  }

 private:
#if KPL_HAVE_LIBDEFLATE
  libdeflate_compressor* compressor_ = nullptr;
#endif
  int level_ = 1;
};

// What one thread keeps between chunks: a Deflater per level, and the
// buffers a chunk is padded and shuffled in (no allocation per chunk).
struct Worker {
  std::vector<std::unique_ptr<Deflater>> deflaters = std::vector<std::unique_ptr<Deflater>>(10);
  std::vector<unsigned char> padded, shuffled;

  void compress(const ChunkTask& task) {
    const std::size_t bytes = task.chunk_rows * task.row_bytes;
    const unsigned char* whole = task.source;
    if (task.rows < task.chunk_rows) {  // the dataset's last chunk, padded with zeros
      padded.assign(bytes, 0);
      std::memcpy(padded.data(), task.source, task.rows * task.row_bytes);
      whole = padded.data();
    }
    if (task.level == 0) {
      task.stored->assign(whole, whole + bytes);
      return;
    }
    shuffled.resize(bytes);
    shuffle(whole, bytes / task.element_size, task.element_size, shuffled.data());
    auto& deflate = deflaters[std::size_t(task.level)];
    if (!deflate) deflate = std::make_unique<Deflater>(task.level);
    *task.stored = (*deflate)(shuffled.data(), bytes);
  }
};

}  // namespace

void compress_tasks(const std::vector<ChunkTask>& tasks, int threads) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto work = [&] {
    try {
      Worker worker;
      for (std::size_t t = next++; t < tasks.size(); t = next++) worker.compress(tasks[t]);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_lock);
      if (!failure) failure = std::current_exception();
      next = tasks.size();
    }
  };
  const std::size_t helpers =
      tasks.empty() ? 0 : std::min<std::size_t>(tasks.size(), std::size_t(std::max(threads, 1))) - 1;
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (std::size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

void add_chunk_tasks(const unsigned char* data, std::size_t rows, std::size_t row_elements,
                     std::size_t element_size, const Storage& storage,
                     std::vector<std::vector<unsigned char>>& chunks, std::vector<ChunkTask>& tasks) {
  const std::size_t row_bytes = row_elements * element_size;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const std::size_t first = c * storage.chunk_rows;
    tasks.push_back({data + first * row_bytes, std::min(storage.chunk_rows, rows - first),
                     storage.chunk_rows, row_bytes, element_size, storage.deflate_level,
                     &chunks[c]});
  }
}

void compress_chunks(const unsigned char* data, std::size_t rows, std::size_t row_elements,
                     std::size_t element_size, const Storage& storage,
                     std::vector<std::vector<unsigned char>>& chunks, int threads) {
  std::vector<ChunkTask> tasks;
  add_chunk_tasks(data, rows, row_elements, element_size, storage, chunks, tasks);
  compress_tasks(tasks, threads);
}

}  // namespace kpl::hdf5::impl
