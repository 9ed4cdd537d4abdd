// What every kpl benchmark reports: the fewest bytes the kernel must move per
// iteration (inputs read once, outputs written once) as bytes/s and as a GB/s
// counter, and the backend as the label.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

namespace kpl::perf {

inline void report_bytes(benchmark::State& state, double bytes_per_iteration, const char* backend) {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes_per_iteration) * state.iterations());
  state.counters["GB/s"] =
      benchmark::Counter(bytes_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string("backend=") + backend);
}

}  // namespace kpl::perf
