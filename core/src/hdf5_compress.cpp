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

// One chunk: rows [0, rows) of `source`, padded with zeros to chunk_rows.
std::vector<unsigned char> stored_chunk(const unsigned char* source, std::size_t rows,
                                        std::size_t chunk_rows, std::size_t row_bytes,
                                        std::size_t element_size, Deflater* deflate) {
  const std::size_t bytes = chunk_rows * row_bytes;
  std::vector<unsigned char> padded(bytes, 0);
  std::memcpy(padded.data(), source, rows * row_bytes);
  if (deflate == nullptr) return padded;
  std::vector<unsigned char> shuffled(bytes);
  shuffle(padded.data(), bytes / element_size, element_size, shuffled.data());
  return (*deflate)(shuffled.data(), bytes);
}

}  // namespace

void compress_chunks(const unsigned char* data, std::size_t rows, std::size_t row_elements,
                     std::size_t element_size, const Storage& storage,
                     std::vector<std::vector<unsigned char>>& chunks, int threads) {
  const std::size_t row_bytes = row_elements * element_size;
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto work = [&] {
    try {
      std::unique_ptr<Deflater> deflate;
      if (storage.deflate_level > 0) deflate = std::make_unique<Deflater>(storage.deflate_level);
      for (std::size_t c = next++; c < chunks.size(); c = next++) {
        const std::size_t first = c * storage.chunk_rows;
        chunks[c] =
            stored_chunk(data + first * row_bytes, std::min(storage.chunk_rows, rows - first),
                         storage.chunk_rows, row_bytes, element_size, deflate.get());
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_lock);
      if (!failure) failure = std::current_exception();
      next = chunks.size();
    }
  };
  const std::size_t helpers =
      std::min<std::size_t>(chunks.size(), std::size_t(std::max(threads, 1))) -
      (chunks.empty() ? 0 : 1);
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (std::size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kpl::hdf5::impl
