// A banded basis stored compactly: p blocks (one per covariate: a GAM's
// base-learners B_j, each n x k) whose rows have at most `width` consecutive
// non-zeros, as B-spline bases of degree width - 1 do. Per block and row kpl
// keeps the index of the first non-zero column and the width values, so
// memory and the work of each product drop by k / width against the dense
// n x (p k) matrix.
//
//   build_bspline_basis(space, X, meshes, basis)      B_j from covariate j
//   transpose_product(space, basis, u, c)             c_j = B_j^T u, all j
//   apply(space, basis, coefficients, y)              y = sum_j B_j gamma_j
//   cross_products(space, basis, w, partner, out)     B_j^T W B_partner, all j
//   cross_product_parts(space, basis, w, partner, grid, parts)
//                                                     the same, in exact parts
//                                                     that add across processes
//
// Layout: first [p, n] and values [p, width, n], rows fastest, so that
// consecutive GPU threads (rows) read consecutive addresses.
//
// Products over rows are deterministic: the same inputs give the same bits
// on every run (a GAM's selections depend on them). Each team sums one chunk
// of rows of one block; chunks are then added in a fixed order
// (impl/compact_basis_chunks.hpp). A CPU team is one thread, summing B^T u
// in row order into four interleaved sets; a GPU team sums B^T u with one
// owner per entry (impl/compact_basis_transpose_product.hpp) and B^T W B in
// exact fixed point (impl/compact_basis_fixed_point.hpp). Their bits still depend on how
// the rows are cut into chunks (the thread count) and processes;
// cross_product_parts' do not (impl/compact_basis_exact_parts.hpp).
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/impl/compact_basis_apply.hpp>
#include <kpl/impl/compact_basis_build_bspline.hpp>
#include <kpl/impl/compact_basis_cross_products.hpp>
#include <kpl/impl/compact_basis_exact_parts.hpp>
#include <kpl/impl/compact_basis_transpose_product.hpp>
#include <kpl/impl/power_of_two.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

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

// Memory the products keep between calls: each chunk's partial sums (and
// on GPUs the cross products' chunks in fixed point).
template <class MemorySpace>
struct CompactProductWorkspace {
  Kokkos::View<double*, MemorySpace> partials;
  Kokkos::View<unsigned long long*, MemorySpace> fixed_point_partials;
  Kokkos::View<double*, MemorySpace> reserve(std::int64_t count) {
    if (std::int64_t(partials.extent(0)) < count)
      partials = Kokkos::View<double*, MemorySpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::compact_basis::partials"), count);
    return partials;
  }
  Kokkos::View<unsigned long long*, MemorySpace> reserve_fixed_point(std::int64_t count) {
    if (std::int64_t(fixed_point_partials.extent(0)) < count)
      fixed_point_partials = Kokkos::View<unsigned long long*, MemorySpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing,
                             "kpl::compact_basis::fixed_point_partials"),
          count);
    return fixed_point_partials;
  }
};

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
  impl::build_compact_bspline_basis(space, X, meshes, basis);
}

// c[j k + a] = sum_i B_j(i, a) u(i) for every block j (c: p k values),
// accumulated in double, the same bits on every run. Weighted products pass
// w * u as u. A workspace keeps the chunks' partial sums between calls.
template <class ExecutionSpace, class T, class MemorySpace, class UView, class CView>
void transpose_product(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
                       const UView& u, const CView& c,
                       CompactProductWorkspace<MemorySpace>* workspace = nullptr) {
  if (basis.rows() == 0 || basis.blocks() == 0) {
    Kokkos::deep_copy(space, c, typename CView::non_const_value_type(0));
    return;
  }
  CompactProductWorkspace<MemorySpace> local_workspace;
  impl::compact_transpose_product(space, basis, u, c, workspace ? *workspace : local_workspace);
}

// y(i) = sum_j sum_a B_j(i, a) coefficients[j k + a] (y overwritten).
template <class ExecutionSpace, class T, class MemorySpace, class CoefficientView, class YView>
void apply(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
           const CoefficientView& coefficients, const YView& y) {
  impl::apply_compact_basis(space, basis, coefficients, y);
}

// out[(j k + a) k + b] = sum_i w(i) B_j(i, a) B_partner(i, b) for every block
// j, with partner = j when `partner` < 0 (the blocks' own B_j^T W B_j) and
// the block `partner` otherwise. An empty w means weights of one. out: p k k
// values; the same bits on every run.
template <class ExecutionSpace, class T, class MemorySpace, class WView, class OutView>
void cross_products(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
                    const WView& w, std::int64_t partner, const OutView& out,
                    CompactProductWorkspace<MemorySpace>* workspace = nullptr) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  if (partner >= blocks)
    throw std::invalid_argument("kpl::cross_products: partner block " + std::to_string(partner) +
                                " of " + std::to_string(blocks));
  if (w.extent(0) != 0 && static_cast<std::int64_t>(w.extent(0)) != rows)
    throw std::invalid_argument("kpl::cross_products: " + std::to_string(w.extent(0)) +
                                " weights for " + std::to_string(rows) + " rows");
  if (rows == 0 || blocks == 0) {
    Kokkos::deep_copy(space, out, typename OutView::non_const_value_type(0));
    return;
  }
  CompactProductWorkspace<MemorySpace> local_workspace;
  impl::compact_cross_products(space, basis, w, partner, out,
                               workspace ? *workspace : local_workspace);
}

// The grids of cross_product_parts (impl/compact_basis_exact_parts.hpp):
// for sums of at most `terms` terms, each of magnitude at most `term_bound`,
// over every row that will ever be added together (all processes' rows).
struct ExactSumGrid {
  static constexpr int parts = 3;
  double scale = 1;              // 2^s bringing term_bound into [1, 2): exact
  double extractor[parts] = {};  // 1.5 x 2^52 x grid l's spacing

  // Grid 0's spacing is 2^-49 of the scaled bound of the whole sum (so no
  // partial sum reaches 2^53 spacings); each next grid is 2^(51 - bits of
  // terms) finer: sums of 10^8 terms keep 72 bits below their bound. A bound
  // that is not finite gives NaN parts (a NaN or infinite weight).
  static ExactSumGrid covering(double term_bound, std::int64_t terms) {
    if (terms < 0 || terms >= (std::int64_t(1) << 50))
      throw std::invalid_argument("kpl::ExactSumGrid: " + std::to_string(terms) +
                                  " terms is outside [0, 2^50)");
    ExactSumGrid grid;
    if (!(term_bound <= std::numeric_limits<double>::max())) {
      grid.scale = std::numeric_limits<double>::quiet_NaN();
      return grid;
    }
    const int term_bits = terms <= 1 ? 1 : impl::binary_exponent(double(terms)) + 1;
    grid.scale = impl::power_of_two<double>(-impl::unit_scale_exponent(term_bound));
    const double scaled_bound = term_bound * grid.scale;  // below 2^bound_bits
    const int bound_bits = scaled_bound > 0 ? impl::binary_exponent(scaled_bound) + 1 : 1;
    const int step = 51 - term_bits;
    int exponent = term_bits + bound_bits + 2 - 52;  // grid 0's spacing: 2^exponent
    for (int l = 0; l < parts; ++l, exponent -= step)
      grid.extractor[l] = 1.5 * impl::power_of_two<double>(52 + exponent);
    return grid;
  }

  // The value the parts stand for: entry e of parts [parts][entries].
  template <class Parts>
  double value(const Parts& parts_of_all, std::int64_t entries, std::int64_t e) const {
    double entry_parts[parts];
    for (int l = 0; l < parts; ++l) entry_parts[l] = parts_of_all[l * entries + e];
    return value_of(entry_parts);
  }
  // One entry's parts added, grid 0 first: the same bits on the host and a
  // device.
  KOKKOS_INLINE_FUNCTION double value_of(const double (&entry_parts)[parts]) const {
    double sum = 0;
    for (int l = 0; l < parts; ++l) sum += entry_parts[l];
    return sum / scale;
  }
};

// The largest |w(i)| and |basis value| over a basis' rows (0 without rows).
// ExactSumGrid's term bound is weight x value^2 with each factor's largest
// over all rows ever added together: over several processes, take each
// factor's maximum first (the product of one process's two need not be the
// others'), so that the grid is the one a single process would use.
struct CrossProductBounds {
  double weight = 0;
  double value = 0;
  double term() const { return weight * value * value; }
};

template <class ExecutionSpace, class T, class MemorySpace, class WView>
CrossProductBounds cross_product_bounds(const ExecutionSpace& space,
                                        const CompactBasis<T, MemorySpace>& basis, const WView& w) {
  if (basis.rows() == 0 || basis.blocks() == 0) return {};
  return {impl::largest_weight(space, w), impl::value_bound(space, basis)};
}

namespace impl {

// cross_product_parts of a compact or evaluated basis, its arguments checked.
template <class ExecutionSpace, class Basis, class WView, class PartsView>
void checked_cross_product_parts(const ExecutionSpace& space, const Basis& basis, const WView& w,
                                 std::int64_t partner, const ExactSumGrid& grid,
                                 const PartsView& parts) {
  const std::int64_t rows = basis.rows(), blocks = basis.blocks();
  const std::int64_t entries = std::int64_t(basis.basis_size) * basis.basis_size;
  if (partner >= blocks)
    throw std::invalid_argument("kpl::cross_product_parts: partner block " +
                                std::to_string(partner) + " of " + std::to_string(blocks));
  if (w.extent(0) != 0 && static_cast<std::int64_t>(w.extent(0)) != rows)
    throw std::invalid_argument("kpl::cross_product_parts: " + std::to_string(w.extent(0)) +
                                " weights for " + std::to_string(rows) + " rows");
  if (static_cast<std::int64_t>(parts.extent(0)) != ExactSumGrid::parts * blocks * entries)
    throw std::invalid_argument("kpl::cross_product_parts: parts holds " +
                                std::to_string(parts.extent(0)) + " values, not " +
                                std::to_string(ExactSumGrid::parts * blocks * entries));
  Kokkos::deep_copy(space, parts, typename PartsView::non_const_value_type(0));
  if (rows == 0 || blocks == 0) return;
  basis_cross_product_parts(space, basis, w, partner, grid, parts);
}

}  // namespace impl

// cross_products' sums as ExactSumGrid::parts exact parts: parts[l p k k + e]
// is part l of entry e of out. Parts of disjoint sets of rows (other
// processes', on the same grid) add elementwise without rounding, so
// grid.value(parts, p k k, e) has the same bits however the rows were split,
// chunked or ordered. grid must cover all rows ever added together.
template <class ExecutionSpace, class T, class MemorySpace, class WView, class PartsView>
void cross_product_parts(const ExecutionSpace& space, const CompactBasis<T, MemorySpace>& basis,
                         const WView& w, std::int64_t partner, const ExactSumGrid& grid,
                         const PartsView& parts) {
  impl::checked_cross_product_parts(space, basis, w, partner, grid, parts);
}

}  // namespace kpl
