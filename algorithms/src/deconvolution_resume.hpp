// `kpl deconv --resume` (private to kpl_algorithms): what a resumed run must
// share with the one it goes on from, the partial file it chooses, and what
// it takes over from it (statuses, returns: those stored and those found
// again from the written solutions).
#pragma once

#include "deconvolution_stages.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <sstream>

namespace kpl::deconvolution_detail {

// What a resumed run must share with the run it goes on from: the input
// (path, size, modification time, layout) and every option that shapes the
// output.
template <class T>
std::string run_signature(const hdf5::InputFile& input, const WaveformFileLayout& layout,
                          const DeconvolutionFileOptions& options, std::int64_t chunk,
                          const OutputStorage& storage) {
  struct stat about {};
  ::stat(input.path().c_str(), &about);
  std::error_code ignored;
  const auto& nnls = options.deconvolution.nnls;
  std::ostringstream text;
  text.precision(17);
  text << std::filesystem::absolute(input.path(), ignored).string() << "|" << about.st_size << "|"
       << about.st_mtim.tv_sec << "." << about.st_mtim.tv_nsec << "|" << layout.describe() << "|"
       << sizeof(T) << "|" << to_string(options.deconvolution.origin) << "|"
       << options.deconvolution.first_passive_cap << "|" << nnls.max_iterations << "|"
       << nnls.max_passive << "|" << nnls.tolerance << "|" << int(nnls.orthogonalization) << "|"
       << int(nnls.gradient) << "|" << options.returns.threshold << "|" << chunk << "|"
       << storage.matrices.chunk_rows << "|" << storage.vectors.chunk_rows << "|"
       << storage.matrices.deflate_level;
  return text.str();
}

// The returns of shots [.., shots) past the first returns_stored, found
// again: from the shot whose returns the stored ones stop in.
template <class T>
void recover_pending_returns(ChunkContext<T>& context, const hdf5::InputFile& written,
                             std::int64_t shots) {
  const auto offsets = written.read_rows<std::int64_t, 1>("/returns/offsets", 0, shots);
  std::int64_t shot = 0;
  while (shot + 1 < shots && offsets(shot + 1) <= context.returns_stored) ++shot;
  ChunkBuffers<T> buffers(context.chunk, context.layout);
  auto& pending = context.pending;
  for (std::int64_t first = shot; first < shots; first += context.chunk) {
    read_shots(context, buffers, first, std::min(context.chunk, shots - first));
    written.read_rows_into("/x", first, buffers.rows(buffers.x));
    written.read_rows_into("/rnorm", first, buffers.rows(buffers.rnorm));
    const WaveformReturns found = chunk_returns(context, buffers);
    pending.sample.insert(pending.sample.end(), found.sample.begin(), found.sample.end());
    if (context.layout.has_elevations())
      pending.elevation.insert(pending.elevation.end(), found.elevation.begin(),
                               found.elevation.end());
    pending.energy.insert(pending.energy.end(), found.energy.begin(), found.energy.end());
  }
  // Less the first shot's returns that were stored; what is left must be as
  // many as were found then.
  const std::ptrdiff_t stored = std::ptrdiff_t(context.returns_stored - offsets(shot));
  for (auto* values : {&pending.sample, &pending.elevation, &pending.energy})
    if (!values->empty()) values->erase(values->begin(), values->begin() + stored);
  if (std::int64_t(pending.sample.size()) != context.returns_written - context.returns_stored)
    throw input_error("'" + written.path() + "': its returns (" +
                      std::to_string(context.returns_written) +
                      ") are not those of its solutions; run without --resume to start again");
}

struct ResumePoint {
  std::string partial;      // empty: nothing to resume
  std::int64_t chunks = 0;  // complete chunks in it
};

// The partial file of an interrupted run with this signature and the most
// chunks written; the others are removed, and said so through `note`.
inline ResumePoint find_resume_point(const std::string& output_path, const std::string& signature,
                                     const DeconvolutionFileOptions& options) {
  ResumePoint best;
  const auto discard = [&](const std::string& partial, const std::string& why) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    if (options.note) options.note("--resume: '" + partial + "' " + why + "; removed it");
  };
  for (const auto& partial : hdf5::stale_partials(output_path)) {
    std::int64_t chunks = 0;
    try {
      const hdf5::InputFile file(partial);
      if (!file.has_attribute("/", "resume_signature") ||
          file.read_string_attribute("/", "resume_signature") != signature) {
        discard(partial, "was made by another input or other options");
        continue;
      }
      chunks = file.read_integer_attribute("/", chunks_written_attribute);
    } catch (const std::exception& error) {
      discard(partial, std::string("cannot be read (") + error.what() + ")");
      continue;
    }
    if (best.partial.empty() || chunks > best.chunks) {
      if (!best.partial.empty()) discard(best.partial, "holds fewer chunks than another");
      best = {partial, chunks};
    } else {
      discard(partial, "holds fewer chunks than another");
    }
  }
  if (options.note)
    options.note(best.partial.empty() ? "--resume: no interrupted run of '" + output_path +
                                            "' to go on from; starting again"
                                      : "--resume: going on from '" + best.partial + "', " +
                                            std::to_string(best.chunks) + " chunk(s) written");
  return best;
}

// The statuses of the chunks an interrupted run wrote, and its returns: the
// count, those in the returns' datasets, and the others (pending) found
// again, as write_chunk found them, from the partial file's x and rnorm and
// the input's pulses and elevations.
template <class T>
void recover_chunks(ChunkContext<T>& context, const std::string& partial, std::int64_t chunks) {
  const hdf5::InputFile written(partial);
  const std::int64_t shots = std::min(chunks * context.chunk, context.layout.shots);
  for (std::int64_t first = 0; first < shots; first += context.chunk) {
    const std::int64_t count = std::min(context.chunk, shots - first);
    const auto status = written.read_rows<std::int32_t, 1>("/status", first, count);
    for (std::int64_t s = 0; s < count; ++s) {
      if (status(s) < 0 || status(s) >= nnls_status_count)
        throw input_error("'" + partial + "': dataset /status row " + std::to_string(first + s) +
                          " holds " + std::to_string(status(s)) +
                          ", no status; run without --resume to start again");
      ++context.tally.status_counts[status(s)];
    }
    context.tally.items += count;
  }
  context.returns_written = written.read_integer_attribute("/", returns_written_attribute);
  context.returns_stored = written.read_integer_attribute("/", returns_stored_attribute);
  if (context.returns_written > context.returns_stored)
    recover_pending_returns(context, written, shots);
}

// The returns' datasets cut back to what the last complete chunk had
// stored (a later chunk may have added rows before the interruption).
inline void cut_returns(hdf5::OutputFile& output, bool elevations, std::int64_t returns) {
  for (const char* name : {"/returns/sample", "/returns/elevation", "/returns/energy"})
    if (elevations || std::string(name) != "/returns/elevation")
      output.resize_rows(name, std::size_t(returns));
}

}  // namespace kpl::deconvolution_detail
