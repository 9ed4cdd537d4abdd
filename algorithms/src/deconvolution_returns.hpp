// The returns of `kpl deconv` (kpl/waveform_returns.hpp) on their way to
// the output (private to kpl_algorithms): found per chunk from its
// solutions; on one process appended in shot order as the chunks are
// written, on several gathered at the end.
#pragma once

#include "deconvolution_context.hpp"

#include <iterator>

namespace kpl::deconvolution_detail {

// The returns of a chunk's shots, from their solutions (host buffers).
template <class T>
WaveformReturns chunk_returns(const ChunkContext<T>& context, const ChunkBuffers<T>& buffers) {
  WaveformReturns returns;
  for (std::int64_t s = 0; s < buffers.count; ++s) {
    const PulseShape& shape =
        context.layout.pulse_per_shot ? buffers.shapes[s] : context.shared_shape;
    find_returns(&buffers.x(s, 0), context.layout.samples, double(buffers.rnorm(s)), shape,
                 buffers.spans.empty() ? nullptr : &buffers.spans[s], context.options.returns,
                 returns);
  }
  return returns;
}

// The returns' datasets' chunks: for the returns a run expects, from 1024 up
// to a mebibyte of doubles.
inline hdf5::Storage returns_storage(const WaveformFileLayout& layout,
                                     const OutputStorage& storage) {
  const std::size_t expected = std::size_t(layout.shots * expected_returns_per_shot);
  const std::size_t rows = std::size_t(power_of_two_at_most(
      std::int64_t(std::clamp<std::size_t>(expected, 1024, returns_chunk_rows))));
  return {rows, storage.vectors.deflate_level, true};
}

// One process appends each chunk's returns (append_returns).
inline void create_returns(hdf5::OutputFile& output, const WaveformFileLayout& layout,
                           const OutputStorage& storage) {
  output.create_dataset<std::int64_t>("/returns/offsets", {std::size_t(layout.shots) + 1},
                                      offsets_storage(layout, storage));
  const hdf5::Storage appended = returns_storage(layout, storage);
  output.create_dataset<double>("/returns/sample", {0}, appended);
  if (layout.has_elevations()) output.create_dataset<double>("/returns/elevation", {0}, appended);
  output.create_dataset<double>("/returns/energy", {0}, appended);
}

// The pending returns that fill whole chunks of the returns' datasets (all
// of them at the end) stored, at the datasets' end, and dropped.
template <class T>
void store_pending_returns(ChunkContext<T>& context, bool all) {
  const std::size_t chunk_rows = context.returns_storage.chunk_rows;
  const std::size_t pending = context.pending.sample.size();
  const std::size_t count = all ? pending : pending - pending % chunk_rows;
  if (count == 0) return;
  const std::size_t first = std::size_t(context.returns_stored);
  const bool elevations = context.layout.has_elevations();
  auto& returns = context.pending;
  for (auto [name, values] :
       {std::pair{"/returns/sample", &returns.sample},
        std::pair{"/returns/elevation", elevations ? &returns.elevation : nullptr},
        std::pair{"/returns/energy", &returns.energy}}) {
    if (values == nullptr) continue;
    context.output->resize_rows(name, first + count);
    store_rows(context, name, first, host_vector(*values, count), context.returns_storage);
    values->erase(values->begin(), values->begin() + std::ptrdiff_t(count));
  }
  context.returns_stored += std::int64_t(count);
}

// One process, in order: a chunk's rows of /returns/offsets (where each of
// its shots' returns start, and after the last shot the returns in all) and
// its returns after the others'. Nothing on disk is written twice, so that a
// crash cannot spoil what an earlier flush() left: offsets go whole chunk by
// whole chunk, the returns themselves once they fill a chunk of theirs.
template <class T>
void append_returns(ChunkContext<T>& context, std::int64_t first, const WaveformReturns& returns) {
  const bool last = first + std::int64_t(returns.counts.size()) == context.layout.shots;
  std::vector<std::int64_t> offsets(returns.counts.size() + (last ? 1 : 0));
  std::int64_t next = context.returns_written;
  for (std::size_t s = 0; s < offsets.size(); ++s) {
    offsets[s] = next;
    if (s < returns.counts.size()) next += returns.counts[s];
  }
  store_rows(context, "/returns/offsets", std::size_t(first), host_vector(offsets),
             offsets_storage(context.layout, context.storage));
  auto& pending = context.pending;
  pending.sample.insert(pending.sample.end(), returns.sample.begin(), returns.sample.end());
  if (context.layout.has_elevations())
    pending.elevation.insert(pending.elevation.end(), returns.elevation.begin(),
                             returns.elevation.end());
  pending.energy.insert(pending.energy.end(), returns.energy.begin(), returns.energy.end());
  context.returns_written = next;
  store_pending_returns(context, last);
}

// Every process's returns in shot order on every process (sums in which the
// other processes add zeros, so the values are exact).
struct GatheredReturns {
  std::vector<std::int64_t> offsets;  // [W + 1]
  std::vector<double> sample, elevation, energy;
};

template <class T>
GatheredReturns gather_returns(const ProcessGroup& group, const ChunkContext<T>& context) {
  const std::int64_t W = context.layout.shots;
  GatheredReturns gathered;
  gathered.offsets.assign(std::size_t(W + 1), 0);
  for (const auto& [first, returns] : context.returns)
    std::copy(returns.counts.begin(), returns.counts.end(), gathered.offsets.begin() + first + 1);
  group.sum(gathered.offsets.data() + 1, W);
  for (std::int64_t w = 0; w < W; ++w) gathered.offsets[w + 1] += gathered.offsets[w];
  const std::size_t total = std::size_t(gathered.offsets[W]);
  for (auto* values : {&gathered.sample, &gathered.elevation, &gathered.energy})
    values->assign(total, 0.0);
  for (const auto& [first, returns] : context.returns) {
    const std::size_t at = std::size_t(gathered.offsets[first]);
    std::copy(returns.sample.begin(), returns.sample.end(), gathered.sample.begin() + at);
    std::copy(returns.elevation.begin(), returns.elevation.end(), gathered.elevation.begin() + at);
    std::copy(returns.energy.begin(), returns.energy.end(), gathered.energy.begin() + at);
  }
  for (auto* values : {&gathered.sample, &gathered.elevation, &gathered.energy})
    group.sum(values->data(), std::int64_t(total));
  return gathered;
}

inline void write_returns(hdf5::OutputFile& output, const GatheredReturns& returns, bool elevations,
                          const OutputStorage& storage) {
  const auto stored = [&](std::size_t rows) {
    return hdf5::Storage{std::min(rows, returns_chunk_rows), storage.vectors.deflate_level};
  };
  output.write("/returns/offsets", host_vector(returns.offsets), stored(returns.offsets.size()));
  output.write("/returns/sample", host_vector(returns.sample), stored(returns.sample.size()));
  if (elevations)
    output.write("/returns/elevation", host_vector(returns.elevation),
                 stored(returns.sample.size()));
  output.write("/returns/energy", host_vector(returns.energy), stored(returns.sample.size()));
}

// What the returns' datasets mean, beside them.
inline void describe_returns(hdf5::OutputFile& output, bool elevations) {
  output.write_attribute("/returns/offsets", "meaning",
                         "shot w's returns are rows offsets[w] .. offsets[w + 1] - 1 of sample, "
                         "elevation and energy");
  output.write_attribute("/returns/sample", "meaning",
                         "where the return's echo peaks in the received waveform: the centroid "
                         "of a run of x > 0 plus the pulse's peak less its origin (0-based, in "
                         "samples)");
  output.write_attribute("/returns/energy", "meaning",
                         "sum of x over the run (with a unit-area pulse, as for LVIS: the echo's "
                         "area, counts x samples)");
  if (elevations)
    output.write_attribute("/returns/elevation", "meaning",
                           "linear between the elevations of the waveform's sample 0 and its "
                           "last elevation sample, at the return's sample (metres)");
}

// One process: the attributes only a resume needs removed.
inline void finish_returns(hdf5::OutputFile& output) {
  for (const char* name : {"resume_signature", chunks_written_attribute, returns_written_attribute,
                           returns_stored_attribute})
    output.remove_attribute("/", name);
}

}  // namespace kpl::deconvolution_detail
