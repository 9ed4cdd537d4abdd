// A banded basis stored compactly: p blocks (one per covariate: a GAM's
// base-learners B_j, each n x k) whose rows have at most `width` consecutive
// non-zeros, as B-spline bases of degree width - 1 do. Per block and row kpl
// keeps the index of the first non-zero column and the width values, so
// memory and the work of each product drop by k / width against the dense
// n x (p k) matrix (at n = 1e6, p = 100, k = 32, d = 3: 1.6 GB of doubles
// and 0.4 GB of indices instead of 25.6 GB).
//
//   build_bspline_basis(space, X, meshes, basis)      B_j from covariate j
//   transpose_product(space, basis, u, c)             c_j = B_j^T u, all j
//   apply(space, basis, coefficients, y)              y = sum_j B_j gamma_j
//   cross_products(space, basis, w, partner, out)     B_j^T W B_partner, all j
//
// Layout: first [p, n] and values [p, width, n], rows fastest, so that
// consecutive GPU threads (rows) read consecutive addresses.
//
// Products over rows are deterministic: the same inputs give the same bits
// on every run (a GAM's selections depend on them). Each team sums one chunk
// of rows of one block into scratch memory (k or k x k values); chunks are
// then added in a fixed order. A CPU team is one thread, summing in row
// order; a GPU team's threads add exact fixed-point (int64) terms, scaled
// per team by a power of two that keeps the largest sum below 2^62, so the
// order of their atomics cannot change the sum (integer addition is
// associative): each term is rounded once, to 2^-50 of the chunk's largest.
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/kokkos_compat.hpp>
#include <kpl/impl/power_of_two.hpp>
#include <kpl/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace kpl {

template <class T, class MemorySpace>
struct CompactBasis {
  Kokkos::View<int**, Kokkos::LayoutRight, MemorySpace> first;  // [p, n]
  Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace> values;  // [p, width, n]
  int basis_size = 0;                                           // k: columns per block
  // The largest |value| (build_bspline_basis sets it); < 0: not known, and
  // products on GPUs measure it first.
  double value_bound = -1;

  CompactBasis() = default;
  CompactBasis(const std::string& label, std::int64_t blocks, std::int64_t rows, int width,
               int basis_size_)
      : first(Kokkos::view_alloc(Kokkos::WithoutInitializing, label + "::first"), blocks, rows),
        values(Kokkos::view_alloc(Kokkos::WithoutInitializing, label + "::values"), blocks, width,
               rows),
        basis_size(basis_size_) {}

  KOKKOS_INLINE_FUNCTION std::int64_t blocks() const { return first.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return first.extent(1); }
  KOKKOS_INLINE_FUNCTION int width() const { return static_cast<int>(values.extent(1)); }
  // Bytes one pass over the basis reads.
  std::int64_t bytes() const {
    return static_cast<std::int64_t>(first.size() * sizeof(int) + values.size() * sizeof(T));
  }
};

// Memory the products keep between calls: each chunk's partial sums.
template <class MemorySpace>
struct CompactProductWorkspace {
  Kokkos::View<double*, MemorySpace> partials;
  Kokkos::View<double*, MemorySpace> reserve(std::int64_t count) {
    if (std::int64_t(partials.extent(0)) < count)
      partials = Kokkos::View<double*, MemorySpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::compact_basis::partials"), count);
    return partials;
  }
};

namespace impl {

template <class ExecutionSpace>
inline constexpr bool compact_basis_on_host =
    std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>;

// Rows each team of a product takes: enough per GPU team that its atomics
// are few against its reads; on CPUs a few chunks per thread.
template <class ExecutionSpace>
std::int64_t compact_rows_per_team(const ExecutionSpace& space, std::int64_t rows,
                                   std::int64_t blocks) {
  if constexpr (compact_basis_on_host<ExecutionSpace>) {
    const std::int64_t threads = space.concurrency();
    const std::int64_t chunks =
        std::max<std::int64_t>(1, (4 * threads + blocks - 1) / std::max<std::int64_t>(blocks, 1));
    return std::max<std::int64_t>(1024, (rows + chunks - 1) / chunks);
  } else {
    (void)space;
    (void)blocks;
    return 4096;
  }
}

template <class ExecutionSpace>
constexpr int compact_team_size() {
  return compact_basis_on_host<ExecutionSpace> ? 1 : 256;
}

// Chunks of rows for the k x k cross products: at most 16 per block, so
// that their partial sums (p k^2 values per chunk) stay small.
template <class ExecutionSpace>
std::int64_t cross_rows_per_team(const ExecutionSpace& space, std::int64_t rows,
                                 std::int64_t blocks) {
  const std::int64_t rows_per_team = compact_rows_per_team(space, rows, blocks);
  return std::max<std::int64_t>(rows_per_team, (rows + 15) / 16);
}

// The power of two S a GPU team multiplies its terms by: any sum of them
// stays below 2^62 in magnitude when bound bounds the sum of their
// magnitudes. (Clamped to the normal range: bounds below 2^-960 lose
// precision, not correctness.)
KOKKOS_INLINE_FUNCTION double fixed_point_scale(double bound) {
  if (!(bound > 0)) return 1;
  int exponent = 61 - binary_exponent(bound);
  const int limit = power_of_two_limit<double>();
  exponent = exponent > limit ? limit : exponent < -limit ? -limit : exponent;
  return power_of_two<double>(exponent);
}

// value x scale rounded to an integer, as the two's-complement bits that
// unsigned 64-bit addition (the atomic GPUs have natively; a signed one
// would be a compare-and-swap loop) adds exactly as signed addition would.
KOKKOS_INLINE_FUNCTION unsigned long long to_fixed_point(double value, double scale) {
  const double scaled = value * scale;
  const long long rounded =
      scaled >= 0 ? static_cast<long long>(scaled + 0.5) : -static_cast<long long>(0.5 - scaled);
  return static_cast<unsigned long long>(rounded);
}

// A GPU team's sum as the double it stands for (the scale removed exactly).
template <class Accumulator>
KOKKOS_INLINE_FUNCTION double team_sum_value(Accumulator sum, double inverse_scale) {
  if constexpr (std::is_same_v<Accumulator, unsigned long long>)
    return double(static_cast<long long>(sum)) * inverse_scale;
  else
    return double(sum);
}

// max |value| over the basis (a separate pass, for bases whose bound is not
// known).
template <class ExecutionSpace, class T, class MemorySpace>
double measured_value_bound(const ExecutionSpace& space,
                            const CompactBasis<T, MemorySpace>& basis) {
  const auto values = basis.values;
  double bound = 0;
  Kokkos::parallel_reduce(
      "kpl::compact_basis::value_bound",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, std::int64_t(values.span())),
      KOKKOS_LAMBDA(const std::int64_t e, double& largest_so_far) {
        const double magnitude = compat::math::fabs(double(values.data()[e]));
        // NaN or Inf: no finite bound (the sums then come out NaN).
        const double counted = compat::math::isfinite(magnitude) ? magnitude : largest<double>();
        if (counted > largest_so_far) largest_so_far = counted;
      },
      Kokkos::Max<double>(bound));
  return bound;
}

template <class ExecutionSpace, class T, class MemorySpace>
double value_bound(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis) {
  return basis.value_bound >= 0 ? basis.value_bound : measured_value_bound(space, basis);
}

// out[j entries + e] = sum over chunks c, in order, of
// partials[(j chunks + c) entries + e].
template <class ExecutionSpace, class OutView>
void add_chunks_in_order(const ExecutionSpace& space,
                         const Kokkos::View<double*, typename OutView::memory_space>& partials,
                         std::int64_t blocks, std::int64_t chunks, std::int64_t entries,
                         const OutView& out) {
  using Sum = typename OutView::non_const_value_type;
  Kokkos::parallel_for(
      "kpl::compact_basis::add_chunks_in_order",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, blocks * entries),
      KOKKOS_LAMBDA(const std::int64_t index) {
        const std::int64_t j = index / entries, e = index - j * entries;
        double total = 0;
        for (std::int64_t c = 0; c < chunks; ++c) total += partials((j * chunks + c) * entries + e);
        out(index) = Sum(total);
      });
}

// The int a width argument stands for: a run-time int, or a compile-time
// std::integral_constant (so the loop it bounds unrolls). Not the constant's
// own conversion operator: that is a host function, which nvcc refuses in
// the host-device kernels (warning #20013).
KOKKOS_INLINE_FUNCTION constexpr int width_value(int width) { return width; }
template <int Width>
KOKKOS_INLINE_FUNCTION constexpr int width_value(std::integral_constant<int, Width>) {
  return Width;
}

}  // namespace impl

// B_j(i, :) = the B-spline basis of meshes(j) at X(i, j), for every row i
// and covariate j. X: [n, p] in any layout; meshes: [p] BsplineMesh, both
// accessible from the execution space; every mesh must have the basis' k and
// degree width - 1.
template <class ExecutionSpace, class XView, class MeshView, class T, class MemorySpace>
void build_bspline_basis(const ExecutionSpace& space, const XView& X, const MeshView& meshes,
                         CompactBasis<T, MemorySpace>& basis) {
  const std::int64_t rows = X.extent(0), blocks = X.extent(1);
  if (basis.rows() != rows || basis.blocks() != blocks || meshes.extent(0) != X.extent(1))
    throw std::invalid_argument("kpl::build_bspline_basis: X is " + std::to_string(rows) + " x " +
                                std::to_string(blocks) + ", the basis holds " +
                                std::to_string(basis.blocks()) + " blocks of " +
                                std::to_string(basis.rows()) + " rows");
  if (basis.width() > bspline_max_degree + 1)
    throw std::invalid_argument("kpl::build_bspline_basis: width above the largest degree + 1");
  const auto first = basis.first;
  const auto values = basis.values;
  Kokkos::parallel_for(
      "kpl::compact_basis::build_bspline",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(space, {0, 0}, {blocks, rows}),
      KOKKOS_LAMBDA(const std::int64_t j, const std::int64_t i) {
        double row[bspline_max_degree + 1];
        const BsplineMesh mesh = meshes(j);
        first(j, i) = bspline_row(mesh, static_cast<double>(X(i, j)), row);
        for (int q = 0; q <= mesh.degree; ++q) values(j, q, i) = static_cast<T>(row[q]);
      });
  basis.value_bound = impl::measured_value_bound(space, basis);
}

namespace impl {

// Where a team's sums go: straight into the result when a block has one
// chunk, else into the chunk's partials (added in order afterwards).
template <class OutView>
struct ChunkSums {
  OutView out;
  Kokkos::View<double*, typename OutView::memory_space> partials;
  std::int64_t chunks, entries;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t block, std::int64_t chunk, std::int64_t entry,
                                    double total) const {
    using Sum = typename OutView::non_const_value_type;
    if (chunks == 1)
      out(block * entries + entry) = Sum(total);
    else
      partials((block * chunks + chunk) * entries + entry) = total;
  }
};

// CPU: one thread per team sums the chunk's rows in row order, through raw
// streams the compiler keeps in registers (cubic splines unrolled).
template <class ExecutionSpace, class T, class MemorySpace, class UView, class Output>
void transpose_product_in_row_order(const ExecutionSpace& space,
                                    const CompactBasis<T, MemorySpace>& basis, const UView& u,
                                    std::int64_t rows_per_team, const Output& output) {
  using Sum = double;
  const std::int64_t rows = basis.rows(), chunks = output.chunks;
  const int k = basis.basis_size, width = basis.width();
  const auto first = basis.first;
  const auto values = basis.values;
  Kokkos::parallel_for(
      "kpl::compact_basis::transpose_product",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.blocks() * chunks),
      [=](const std::int64_t team) {
        const std::int64_t j = team / chunks, chunk = team % chunks;
        const std::int64_t begin = chunk * rows_per_team;
        const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
        std::vector<Sum> sums(std::size_t(k), Sum(0));
        const int* columns = &first(j, 0);
        const T* row_values = &values(j, 0, 0);
        const std::int64_t stride = values.stride(1);
        const auto rows_of = [&](auto width_constant) {
          const int w = width_value(width_constant);
          for (std::int64_t i = begin; i < end; ++i) {
            const Sum weight = u(i);
            Sum* target = sums.data() + columns[i];
            for (int q = 0; q < w; ++q) target[q] += Sum(row_values[q * stride + i]) * weight;
          }
        };
        if (width == 4) {
          rows_of(std::integral_constant<int, 4>());
        } else {
          rows_of(width);
        }
        for (int a = 0; a < k; ++a) output.store(j, chunk, a, sums[a]);
      });
}

// GPU: no atomics. Thread t owns entry a = t mod L (L: k rounded up to a
// warp, at most the team) of one slice of the chunk's rows and sums, in row
// order, the rows whose band holds a (first <= a < first + width); the
// slices are then added in order. Every warp reads one row at a time (its
// first index and u are one broadcast load each).
template <class ExecutionSpace, class T, class MemorySpace, class UView, class Output>
void transpose_product_by_owners(const ExecutionSpace& space,
                                 const CompactBasis<T, MemorySpace>& basis, const UView& u,
                                 std::int64_t rows_per_team, const Output& output) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  using Scratch = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  constexpr int team_size = compact_team_size<ExecutionSpace>();
  const std::int64_t rows = basis.rows(), chunks = output.chunks;
  const int k = basis.basis_size, width = basis.width();
  const int lanes = std::min(team_size, (k + 31) / 32 * 32);  // threads per slice
  const int slices = team_size / lanes;
  const int entries_per_thread = (k + lanes - 1) / lanes;
  const auto first = basis.first;
  const auto values = basis.values;
  Kokkos::parallel_for(
      "kpl::compact_basis::transpose_product",
      Policy(space, static_cast<int>(basis.blocks() * chunks), team_size)
          .set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(std::int64_t(slices) * k))),
      KOKKOS_LAMBDA(const Member& member) {
        const std::int64_t j = member.league_rank() / chunks;
        const std::int64_t chunk = member.league_rank() % chunks;
        const std::int64_t begin = chunk * rows_per_team;
        const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
        const int lane = member.team_rank() % lanes, slice = member.team_rank() / lanes;
        const std::int64_t per_slice = (end - begin + slices - 1) / slices;
        const std::int64_t slice_begin = begin + slice * per_slice;
        const std::int64_t slice_end = slice_begin + per_slice < end ? slice_begin + per_slice : end;
        Scratch sums(member.team_scratch(0), std::int64_t(slices) * k);
        for (int e = 0; e < entries_per_thread; ++e) {
          const int a = lane + e * lanes;
          if (a >= k) break;
          double sum = 0;
          for (std::int64_t i = slice_begin; i < slice_end; ++i) {
            const int q = a - first(j, i);
            if (q >= 0 && q < width) sum += double(values(j, q, i)) * double(u(i));
          }
          sums(std::int64_t(slice) * k + a) = sum;
        }
        member.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k), [&](int a) {
          double total = 0;
          for (int s = 0; s < slices; ++s) total += sums(std::int64_t(s) * k + a);
          output.store(j, chunk, a, total);
        });
      });
}

}  // namespace impl

// c[j k + a] = sum_i B_j(i, a) u(i) for every block j (c: p k values),
// accumulated in double, the same bits on every run (see the top of this
// file). Weighted products pass w * u as u. A workspace keeps the chunks'
// partial sums between calls.
template <class ExecutionSpace, class T, class MemorySpace, class UView, class CView>
void transpose_product(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
                       const UView& u, const CView& c,
                       CompactProductWorkspace<MemorySpace>* workspace = nullptr) {
  using Sum = typename CView::non_const_value_type;
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const int k = basis.basis_size;
  if (rows == 0 || blocks == 0) {
    Kokkos::deep_copy(space, c, Sum(0));
    return;
  }
  const std::int64_t rows_per_team = impl::compact_rows_per_team(space, rows, blocks);
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  CompactProductWorkspace<MemorySpace> local_workspace;
  const impl::ChunkSums<CView> output{
      c, (workspace ? *workspace : local_workspace).reserve(chunks > 1 ? blocks * chunks * k : 0),
      chunks, k};
  if constexpr (impl::compact_basis_on_host<ExecutionSpace>) {
    impl::transpose_product_in_row_order(space, basis, u, rows_per_team, output);
  } else {
    impl::transpose_product_by_owners(space, basis, u, rows_per_team, output);
  }
  if (chunks > 1) impl::add_chunks_in_order(space, output.partials, blocks, chunks, k, c);
}

// y(i) = sum_j sum_a B_j(i, a) coefficients[j k + a] (y overwritten).
template <class ExecutionSpace, class T, class MemorySpace, class CoefficientView, class YView>
void apply(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
           const CoefficientView& coefficients, const YView& y) {
  const std::int64_t blocks = basis.blocks();
  const int k = basis.basis_size, width = basis.width();
  const auto first = basis.first;
  const auto values = basis.values;
  Kokkos::parallel_for(
      "kpl::compact_basis::apply", Kokkos::RangePolicy<ExecutionSpace>(space, 0, basis.rows()),
      KOKKOS_LAMBDA(const std::int64_t i) {
        typename YView::non_const_value_type sum = 0;
        for (std::int64_t j = 0; j < blocks; ++j) {
          const int column = first(j, i);
          for (int q = 0; q < width; ++q) sum += values(j, q, i) * coefficients(j * k + column + q);
        }
        y(i) = sum;
      });
}

// out[(j k + a) k + b] = sum_i w(i) B_j(i, a) B_partner(i, b) for every block
// j, with partner = j when `partner` < 0 (the blocks' own B_j^T W B_j) and
// the block `partner` otherwise. An empty w means weights of one. out: p k k
// values; the same bits on every run.
template <class ExecutionSpace, class T, class MemorySpace, class WView, class OutView>
void cross_products(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
                    const WView& w, std::int64_t partner, const OutView& out,
                    CompactProductWorkspace<MemorySpace>* workspace = nullptr) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  using Sum = typename OutView::non_const_value_type;
  constexpr bool host = impl::compact_basis_on_host<ExecutionSpace>;
  using Accumulator = std::conditional_t<host, Sum, unsigned long long>;
  using Scratch = Kokkos::View<Accumulator*, typename ExecutionSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const int k = basis.basis_size, width = basis.width();
  if (partner >= blocks)
    throw std::invalid_argument("kpl::cross_products: partner block " + std::to_string(partner) +
                                " of " + std::to_string(blocks));
  if (w.extent(0) != 0 && static_cast<std::int64_t>(w.extent(0)) != rows)
    throw std::invalid_argument("kpl::cross_products: " + std::to_string(w.extent(0)) +
                                " weights for " + std::to_string(rows) + " rows");
  if (rows == 0 || blocks == 0) {
    Kokkos::deep_copy(space, out, Sum(0));
    return;
  }
  const bool weighted = w.extent(0) != 0;
  const std::int64_t rows_per_team = impl::cross_rows_per_team(space, rows, blocks);
  const std::int64_t chunks = (rows + rows_per_team - 1) / rows_per_team;
  const std::int64_t entries = std::int64_t(k) * k;
  CompactProductWorkspace<MemorySpace> local_workspace;
  const auto partials = (workspace ? *workspace : local_workspace)
                            .reserve(chunks > 1 ? blocks * chunks * entries : 0);
  const double values_bound = host ? 1.0 : impl::value_bound(space, basis);
  const auto first = basis.first;
  const auto values = basis.values;
  constexpr int team_size = impl::compact_team_size<ExecutionSpace>();
  // k x k sums per team: in shared memory while they fit (k <= 78 on an
  // H100), else in the slower level-1 scratch.
  const std::size_t scratch_bytes = Scratch::shmem_size(entries);
  const int level = scratch_bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;
  Kokkos::parallel_for(
      "kpl::compact_basis::cross_products",
      Policy(space, static_cast<int>(blocks * chunks), team_size)
          .set_scratch_size(level, Kokkos::PerTeam(scratch_bytes)),
      KOKKOS_LAMBDA(const Member& member) {
        const std::int64_t j = member.league_rank() / chunks;
        const std::int64_t chunk = member.league_rank() % chunks;
        const std::int64_t other = partner < 0 ? j : partner;
        const std::int64_t begin = chunk * rows_per_team;
        const std::int64_t end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
        Scratch sums(member.team_scratch(level), entries);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, entries),
                             [&](int a) { sums(a) = Accumulator(0); });
        member.team_barrier();
        (void)first, (void)values, (void)w, (void)weighted, (void)width, (void)values_bound,
            (void)k;
        double inverse_scale = 1;  // GPU: 1 / S
        bool finite = true;
        if constexpr (impl::compact_basis_on_host<ExecutionSpace>) {
          // One thread per team: raw streams, the 4 x 4 outer product of
          // cubic splines unrolled (its rows are contiguous in `sums`).
          const int* row_columns = &first(j, 0);
          const int* partner_columns = &first(other, 0);
          const T* row_values = &values(j, 0, 0);
          const T* partner_values = &values(other, 0, 0);
          const std::int64_t stride = values.stride(1);
          Sum* local = sums.data();
          const auto rows_of = [&](auto width_constant) {
            const int width_ = impl::width_value(width_constant);
            for (std::int64_t i = begin; i < end; ++i) {
              const Sum weight = weighted ? Sum(w(i)) : Sum(1);
              if (weight == Sum(0)) continue;
              Sum right[bspline_max_degree + 1];
              for (int r = 0; r < width_; ++r) right[r] = Sum(partner_values[r * stride + i]);
              Sum* target = local + row_columns[i] * k + partner_columns[i];
              for (int q = 0; q < width_; ++q) {
                const Sum left = weight * Sum(row_values[q * stride + i]);
                for (int r = 0; r < width_; ++r) target[q * k + r] += left * right[r];
              }
            }
          };
          if (width == 4) {
            rows_of(std::integral_constant<int, 4>());
          } else {
            rows_of(width);
          }
        } else {
          // |sum| <= rows x max|w| x bound^2.
          double w_max = 1;
          if (weighted)
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(member, begin, end),
                [&](std::int64_t i, double& largest_so_far) {
                  const double magnitude = compat::math::fabs(double(w(i)));
                  const double counted =
                      compat::math::isfinite(magnitude) ? magnitude : largest<double>();
                  if (counted > largest_so_far) largest_so_far = counted;
                },
                Kokkos::Max<double>(w_max));
          const double bound = w_max * values_bound * values_bound * double(end - begin);
          finite = compat::math::isfinite(bound);
          const double scale = impl::fixed_point_scale(bound);
          inverse_scale = 1 / scale;
          if (finite)
            Kokkos::parallel_for(Kokkos::TeamThreadRange(member, begin, end), [&](std::int64_t i) {
              const double weight = weighted ? double(w(i)) : 1.0;
              if (weight == 0) return;
              const int row_column = first(j, i), column_column = first(other, i);
              for (int q = 0; q < width; ++q) {
                const double left = weight * double(values(j, q, i)) * scale;
                for (int r = 0; r < width; ++r)
                  Kokkos::atomic_add(&sums((row_column + q) * k + column_column + r),
                                     impl::to_fixed_point(double(values(other, r, i)), left));
              }
            });
        }
        member.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, entries), [&](int a) {
          const double total = finite ? impl::team_sum_value(sums(a), inverse_scale)
                                      : compat::math::sqrt(-1.0);  // NaN
          if (chunks == 1)
            out(j * entries + a) = Sum(total);
          else
            partials((j * chunks + chunk) * entries + a) = total;
        });
      });
  if (chunks > 1) impl::add_chunks_in_order(space, partials, blocks, chunks, entries, out);
}

}  // namespace kpl
