#include <kpl/config.hpp>
#include <kpl/error.hpp>
#include <kpl/hdf5_io.hpp>
#include <kpl/impl/nnls_file_matrices.hpp>
#include <kpl/nnls_file.hpp>
#include <kpl/process_group.hpp>
#include <kpl/resources.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>

namespace kpl {
namespace nnls_file_detail {

// The batch's shape, from the datasets' shapes alone.
struct NnlsShape {
  std::int64_t systems, rows, columns;
  bool per_system;
};

NnlsShape check_shapes(const hdf5::InputFile& input, const NnlsFileOptions& options) {
  const auto a_shape = input.shape("/A");
  const auto b_shape = input.shape("/b");
  const std::string where = "'" + input.path() + "': ";
  if (a_shape.size() != 2 && a_shape.size() != 3)
    throw input_error(where + "dataset /A must be [m, n] or [B, m, n], not of rank " +
                      std::to_string(a_shape.size()));
  if (b_shape.size() != 1 && b_shape.size() != 2)
    throw input_error(where + "dataset /b must be [B, m] or [m], not of rank " +
                      std::to_string(b_shape.size()));
  const bool per_system = a_shape.size() == 3;
  const NnlsShape shape{b_shape.size() == 2 ? std::int64_t(b_shape[0]) : 1,
                        std::int64_t(a_shape[per_system ? 1 : 0]),
                        std::int64_t(a_shape[per_system ? 2 : 1]), per_system};
  if (std::int64_t(b_shape.back()) != shape.rows)
    hdf5::require_matching_extent(input, "/A", per_system ? 1 : 0, "/b", b_shape.size() - 1);
  if (per_system && std::int64_t(a_shape[0]) != shape.systems)
    hdf5::require_matching_extent(input, "/A", 0, "/b", 0);
  if (per_system && options.nnls.gradient == NnlsGradient::from_cross_products)
    throw input_error(where +
                      "the gradient from cross products needs one /A [m, n] shared by all "
                      "systems; this /A is [B, m, n]");
  return shape;
}

// The shape as text, for require_same_input.
std::string describe(const NnlsShape& shape) {
  return "/A " + std::string(shape.per_system ? "[B, m, n]" : "[m, n]") +
         ", B = " + std::to_string(shape.systems) + ", m = " + std::to_string(shape.rows) +
         ", n = " + std::to_string(shape.columns);
}

// Memory on the host and the device for one process's chunks of `chunk`
// systems, and disk for the whole output, counted before anything is read.
template <class T>
ResourceNeeds nnls_needs(const hdf5::InputFile& input, const NnlsShape& shape, std::int64_t chunk,
                         const NnlsFileOptions& options, const std::string& output_path) {
  const auto bytes = [](std::int64_t a, std::int64_t b, std::size_t element) {
    return checked_bytes({std::uint64_t(a), std::uint64_t(b)}, element);
  };
  const std::int64_t whole_a = input.bytes("/A", sizeof(T)), whole_b = input.bytes("/b", sizeof(T));
  const std::int64_t m = shape.rows, n = shape.columns, systems = shape.systems;
  const std::int64_t cap = options.nnls.max_passive > 0
                               ? std::min<std::int64_t>(options.nnls.max_passive, std::min(m, n))
                               : std::min(m, n);
  // A chunk's share of /A (all of a shared one) and of /b: the whole for one chunk.
  const std::int64_t a =
      !shape.per_system || chunk == systems
          ? whole_a
          : checked_bytes({std::uint64_t(chunk), std::uint64_t(m), std::uint64_t(n)}, sizeof(T));
  const std::int64_t b = chunk == systems ? whole_b : bytes(chunk, m, sizeof(T));
  const std::int64_t results = bytes(chunk, n, sizeof(T));
  const std::int64_t per_system_results = bytes(chunk, 1, 2 * sizeof(T) + 4 * sizeof(int));
  const std::int64_t workspace = bytes(
      chunk, 1,
      std::uint64_t(std::max<std::int64_t>(nnls_workspace_bytes_per_system<T>(m, n, cap), 0)));
  const std::int64_t a_stored = shape.per_system ? a : checked_sum({a, a});  // + A at unit scale
  const std::int64_t cross = bytes(n, n, sizeof(T));
  ResourceNeeds needs;
  needs.host_bytes = checked_sum({a, a, b, b, results, per_system_results});
  needs.device_bytes = checked_sum(
      {a_stored, b, results, per_system_results, workspace, shape.per_system ? 0 : cross});
  needs.disk_bytes =
      checked_sum({bytes(systems, n, sizeof(T)), bytes(systems, 1, 2 * sizeof(T) + 4 * sizeof(int)),
                   std::int64_t(1) << 16});
  needs.disk_directory = hdf5::directory_of(output_path);
  return needs;
}

// /b rows [first, first + count) as [count, m] whatever its rank in the
// file: one system ([m]) is a batch of one.
template <class T>
hdf5::HostArray<T, 2> read_right_hand_sides(const hdf5::InputFile& input, std::int64_t first,
                                            std::int64_t count,
                                            hdf5::ReadRequirements requirements) {
  if (input.shape("/b").size() != 1) return input.read_rows<T, 2>("/b", first, count, requirements);
  const auto vector = input.read<T, 1>("/b", requirements);
  hdf5::HostArray<T, 2> b("b", 1, vector.extent(0));
  for (std::size_t i = 0; i < vector.extent(0); ++i) b(0, i) = vector(i);
  return b;
}

// The gradient every chunk uses: automatic resolved once for the whole batch
// (use_cross_products looks at the number of systems in a call), so that a
// chunk solves its systems exactly as the one call of a single process does.
NnlsOptions resolved_for_batch(const NnlsShape& shape, NnlsOptions options) {
  if (shape.per_system) return options;
  const bool cross = impl::use_cross_products<Kokkos::DefaultExecutionSpace>(
      options, shape.systems, shape.rows, shape.columns);
  options.gradient = cross ? NnlsGradient::from_cross_products : NnlsGradient::from_residual;
  return options;
}

// One run of `kpl nnls` on one process of the group: the input, its shape
// and what every chunk needs (the shared /A on the device, options resolved).
template <class T>
struct NnlsRun {
  using Space = Kokkos::DefaultExecutionSpace;
  const hdf5::InputFile& input;
  NnlsShape shape;
  std::int64_t chunk;
  NnlsOptions resolved;
  bool checked_in_advance;  // every value known finite before the first chunk
  impl::SharedNnlsMatrix<T> shared;
  NnlsWorkspace<Space, T> workspace;
  impl::ProcessTally tally;

  hdf5::ReadRequirements reads() const { return {!checked_in_advance, false, checked_in_advance}; }

  // The shared /A on the device, and its cross products where the gradient
  // comes from them (solving time: kpl::nnls counts them in its solve).
  void load_shared() {
    shared.load(input, reads());
    if (resolved.gradient != NnlsGradient::from_cross_products) return;
    Kokkos::Timer timer;
    shared.form_cross_products(Space{});
    Space{}.fence();
    tally.busy_seconds += timer.seconds();
  }
};

// With several processes, every value finite before any is solved: each
// process checks its static block of systems (a chunk at a time) and reads
// the shared /A. One process reads and checks as it solves (one chunk).
template <class T>
void check_in_advance(const ProcessGroup& group, NnlsRun<T>& run) {
  const hdf5::ReadRequirements finite{true, false, false};
  const RowBlock block = row_block(group, run.shape.systems);
  for (std::int64_t first = block.first; first < block.first + block.count; first += run.chunk) {
    const std::int64_t count = std::min(run.chunk, block.first + block.count - first);
    read_right_hand_sides<T>(run.input, first, count, finite);
    if (run.shape.per_system) run.input.template read_rows<T, 3>("/A", first, count, finite);
  }
  if (!run.shape.per_system) run.load_shared();
}

template <class T>
void create_outputs(hdf5::OutputFile& output, const NnlsShape& shape) {
  const std::size_t B = shape.systems, n = shape.columns;
  output.create_dataset<T>("/x", {B, n});
  output.create_dataset<T>("/rnorm", {B});
  output.create_dataset<std::int32_t>("/iterations", {B});
  output.create_dataset<std::int32_t>("/status", {B});
  output.create_dataset<T>("/kkt_residual", {B});
}

// Writes one chunk's solution at rows [first, ...) and counts its statuses.
template <class T>
void write_chunk(hdf5::OutputFile& output, std::int64_t first,
                 const NnlsSolution<Kokkos::DefaultExecutionSpace, T>& solution,
                 impl::ProcessTally& tally) {
  const auto host = [](const auto& view) {
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, view);
  };
  const auto status = host(solution.status);
  for (std::size_t s = 0; s < status.extent(0); ++s) ++tally.status_counts[status(s)];
  output.write_rows("/x", first, host(solution.x));
  output.write_rows("/rnorm", first, host(solution.residual_norm));
  output.write_rows("/iterations", first, host(solution.iterations));
  output.write_rows("/status", first, status);
  output.write_rows("/kkt_residual", first, host(solution.kkt_residual));
  tally.items += solution.systems();
}

// Reads systems [first, first + count) (/b, then /A: the shared one at the
// first chunk, each system's own), solves and writes them.
template <class T>
void solve_chunk(NnlsRun<T>& run, hdf5::OutputFile& output, std::int64_t first,
                 std::int64_t count) {
  using Space = Kokkos::DefaultExecutionSpace;
  const std::int64_t m = run.shape.rows, n = run.shape.columns;
  const auto b_rows = read_right_hand_sides<T>(run.input, first, count, run.reads());
  if (run.checked_in_advance) impl::require_finite_rows(run.input, "/b", b_rows, first);
  const auto b = Kokkos::create_mirror_view_and_copy(Space::memory_space{}, b_rows);
  impl::NnlsFileMatrices<T> own;
  if (run.shape.per_system) {
    const auto a = run.input.template read_rows<T, 3>("/A", first, count, run.reads());
    if (run.checked_in_advance) impl::require_finite_rows(run.input, "/A", a, first);
    own = impl::transposed_on_device<T>(a);
  } else if (!run.shared.loaded()) {
    run.load_shared();
  }
  const Space space;
  NnlsSolution<Space, T> solution(count, n);
  Kokkos::Timer timer;
  if (run.shape.per_system)
    nnls_columns(space, DenseColumns<T>{own.data(), n * m, 1, m, m}, m, n, b, solution,
                 run.resolved, &run.workspace);
  else
    run.shared.solve(space, b, solution, run.resolved, run.workspace);
  space.fence();
  run.tally.busy_seconds += timer.seconds();
  write_chunk<T>(output, first, solution, run.tally);
  ++run.tally.chunks;
}

// Checks, pre-flight and (several processes) the finite check, each agreed
// by the group before the next.
template <class T>
NnlsRun<T> prepare(const ProcessGroup& group, const hdf5::InputFile& input,
                   const std::string& output_path, const NnlsFileOptions& options) {
  const NnlsShape shape = agreed(group, [&] { return check_shapes(input, options); });
  agreed(group, [&] { impl::require_same_input(group, input.path(), describe(shape)); });
  // One process solves the batch in one call, as before there were groups.
  const std::int64_t chunk = impl::group_chunk(group, shape.systems, shape.systems);
  agreed(group, [&] {
    hdf5::require_distinct(output_path, {input.path()});
    hdf5::require_writable_target(output_path);
    impl::require_process_resources(group, "kpl nnls on '" + input.path() + "'",
                                    nnls_needs<T>(input, shape, chunk, options, output_path));
  });
  return NnlsRun<T>{
      input, shape, chunk, resolved_for_batch(shape, options.nnls), !group.is_single(), {}, {}, {}};
}

template <class T>
NnlsFileSummary solve(const ProcessGroup& group, const hdf5::InputFile& input,
                      const std::string& output_path, const NnlsFileOptions& options) {
  NnlsRun<T> run = prepare<T>(group, input, output_path, options);
  if (run.checked_in_advance) agreed(group, [&] { check_in_advance<T>(group, run); });
  const auto output = group.create_output(output_path, options.row_writes);  // writable target
  agreed(group, [&] { create_outputs<T>(*output, run.shape); });
  // At least one chunk: its read of an empty batch says what is empty.
  const std::int64_t chunks =
      std::max<std::int64_t>(1, (run.shape.systems + run.chunk - 1) / run.chunk);
  const auto write_nothing = [&] {
    write_chunk<T>(*output, 0, NnlsSolution<Kokkos::DefaultExecutionSpace, T>(0, run.shape.columns),
                   run.tally);
  };
  impl::share_chunks(
      group, options.row_writes, chunks,
      [&](std::int64_t c) {
        const std::int64_t first = c * run.chunk;
        solve_chunk<T>(run, *output, first, std::min(run.chunk, run.shape.systems - first));
      },
      write_nothing);
  NnlsFileSummary summary;
  summary.balance = impl::reduce_tallies(group, run.tally);
  std::copy(std::begin(run.tally.status_counts), std::end(run.tally.status_counts),
            std::begin(summary.status_counts));
  summary.seconds = summary.balance.busy_seconds_max;
  summary.systems = run.shape.systems;
  summary.rows = run.shape.rows;
  summary.columns = run.shape.columns;
  agreed(group, [&] {
    std::string input_path = input.path();  // rank 0's: the attributes are the same on all
    group.broadcast(input_path);
    impl::write_solver_settings(*output, input_path, options.nnls, options.single_precision,
                                3 * run.shape.columns, std::min(run.shape.rows, run.shape.columns));
  });
  agreed(group, [&] { output->commit(); });
  return summary;
}

}  // namespace nnls_file_detail

std::string describe(const WorkBalance& balance, const std::string& items) {
  char text[200];
  std::snprintf(text, sizeof text,
                "%d processes: solving %.3g s max, %.3g s mean per process (imbalance %.1f%%); ",
                balance.ranks, balance.busy_seconds_max, balance.busy_seconds_mean,
                100 * balance.imbalance());
  return text + std::to_string(balance.items_min) + "-" + std::to_string(balance.items_max) + " " +
         items + " each";
}

namespace impl {

WorkBalance reduce_tallies(const ProcessGroup& group, ProcessTally& tally) {
  group.sum(tally.status_counts, nnls_status_count);
  group.sum(&tally.chunks, 1);
  WorkBalance balance;
  balance.ranks = group.size();
  double most[2] = {tally.busy_seconds, double(tally.items)};
  double least = double(tally.items), busy_total = tally.busy_seconds;
  group.max(most, 2);
  group.min(&least, 1);
  group.sum(&busy_total, 1);
  balance.busy_seconds_max = most[0];
  balance.busy_seconds_mean = busy_total / group.size();
  balance.items_max = std::int64_t(most[1]);
  balance.items_min = std::int64_t(least);
  return balance;
}

// Several chunks per process when there are several processes: chunks are
// handed out first come, first served, and systems differ widely in their
// cost (iterations), so a process that drew slow ones takes fewer chunks.
// With one chunk per process the split would be a static one, and the
// process with the slowest block would set the time. Four per process keep
// the tail (the last chunk that runs alone) a small share of the run.
std::int64_t group_chunk(const ProcessGroup& group, std::int64_t total, std::int64_t chunk) {
  const std::int64_t parts = 4 * std::int64_t(group.size());
  if (!group.is_single()) chunk = std::min(chunk, (total + parts - 1) / parts);
  return std::max<std::int64_t>(chunk, 1);
}

void require_same_input(const ProcessGroup& group, const std::string& path,
                        const std::string& shape) {
  if (group.is_single()) return;
  std::string first = shape;
  group.broadcast(first);
  double differs = first == shape ? 0 : 1;
  group.max(&differs, 1);
  if (differs != 0)
    throw input_error("'" + path +
                      "': the processes do not all see the same input (process 0 "
                      "sees " +
                      first + "); give every process the same file");
}

void require_process_resources(const ProcessGroup& group, const std::string& what,
                               ResourceNeeds needs) {
  if (group.rank() != 0) {  // the output is one file: its disk is counted once
    needs.disk_bytes = 0;
    needs.disk_directory.clear();
  }
  require_resources(what, needs);
}

void write_solver_settings(hdf5::OutputFile& output, const std::string& input_path,
                           const NnlsOptions& options, bool single_precision,
                           std::int64_t default_max_iterations, std::int64_t default_max_passive) {
  output.write_attribute("/status", "meaning", nnls_status_legend());
  output.write_attribute("/kkt_residual", "meaning",
                         "largest KKT violation of column j, w_j (x_j = 0) or |w_j| (x_j > 0) "
                         "with w = A^T (b - A x), over ||a_j|| ||b||; converged systems are at "
                         "most kkt_tolerance");
  output.write_attribute("/", "kpl_version", KPL_VERSION_STRING);
  output.write_attribute("/", "input", input_path);
  output.write_attribute("/", "precision", single_precision ? "float" : "double");
  output.write_attribute(
      "/", "max_iterations",
      std::int64_t(options.max_iterations > 0 ? options.max_iterations : default_max_iterations));
  output.write_attribute("/", "tolerance", options.tolerance);
  output.write_attribute(
      "/", "tolerance_meaning",
      std::string(options.tolerance < 0 ? "default: 10 eps max(m, n)" : "as given") +
          ", relative: a zero-set column enters while w_j > tolerance "
          "||a_j|| ||b||");
  output.write_attribute("/", "kkt_tolerance", options.kkt_tolerance);
  output.write_attribute(
      "/", "max_passive",
      std::int64_t(options.max_passive > 0 ? options.max_passive : default_max_passive));
  output.write_attribute("/", "orthogonalization", to_string(options.orthogonalization));
  output.write_attribute("/", "gradient", to_string(options.gradient));
  output.write_attribute("/", "execution_space", Kokkos::DefaultExecutionSpace::name());
}
}  // namespace impl

NnlsFileSummary solve_nnls_file(const ProcessGroup& group, const std::string& input_path,
                                const std::string& output_path, const NnlsFileOptions& options) {
  const auto input = agreed(group, [&] { return std::make_unique<hdf5::InputFile>(input_path); });
  return options.single_precision
             ? nnls_file_detail::solve<float>(group, *input, output_path, options)
             : nnls_file_detail::solve<double>(group, *input, output_path, options);
}

NnlsFileSummary solve_nnls_file(const std::string& input_path, const std::string& output_path,
                                const NnlsFileOptions& options) {
  return solve_nnls_file(single_process(), input_path, output_path, options);
}

}  // namespace kpl
