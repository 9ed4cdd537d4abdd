// A B-spline basis kept as its covariates and evaluated where it is read
// ("matrix-free"): p blocks B_j (n x k, the B-spline basis of mesh j at
// covariate j, as build_bspline_basis stores them in kpl/compact_basis.hpp),
// of which only x_j(i) is kept: 8 bytes per row and block instead of the
// compact basis' index and d + 1 values (36 bytes for cubic splines in
// double). A product then moves a quarter of the bytes and spends a few
// flops per row on de Boor's recursion (kpl/bspline.hpp), which a GPU has
// to spare and a CPU core does not.
//
//   auto basis = evaluated_bspline_basis<T>(space, label, X, meshes)   keeps x
//   transpose_product(space, basis, u, c)                c_j = B_j^T u, all j
//   cross_product_bounds(space, basis, w)                as kpl/compact_basis.hpp's,
//   cross_product_parts(space, basis, w, partner, grid, parts)   the same bits
//
// T is the precision of the values the products use: each is rounded to T
// after its evaluation in double, so that the products equal those of the
// compact basis stored in T (same operations on the same values).
//
// Products are deterministic (the same inputs give the same bits on every
// run): on CPUs one thread per chunk of rows sums in row order into four
// interleaved sets, the compact basis' own sums; on GPUs each thread of a
// team sums its rows into its own column of k sums, the columns are added in
// a fixed order and the chunks in chunk order
// (impl/evaluated_basis_transpose_product.hpp).
#pragma once

#include <kpl/bspline.hpp>
#include <kpl/compact_basis.hpp>
#include <kpl/impl/basis_rows.hpp>
#include <kpl/impl/compact_basis_fixed_point.hpp>
#include <kpl/impl/evaluated_basis_transpose_product.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace kpl {

template <class T, class MemorySpace>
struct EvaluatedBasis {
  using value_type = T;
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> covariates;  // [p, n], rows fastest
  Kokkos::View<BsplineMesh*, MemorySpace> meshes;                       // [p]
  int basis_size = 0;                                                   // k
  int degree = 3;

  EvaluatedBasis() = default;

  KOKKOS_INLINE_FUNCTION std::int64_t blocks() const { return covariates.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return covariates.extent(1); }
  KOKKOS_INLINE_FUNCTION int width() const { return degree + 1; }
  // Bytes one pass over the basis reads.
  std::int64_t bytes() const {
    return static_cast<std::int64_t>(covariates.size() * sizeof(double));
  }
};

// The basis of X [n, p] (any layout, accessible from the execution space) on
// host_meshes [p] (every mesh with the same k and degree, checked): X copied
// transposed, rows fastest, so that consecutive GPU threads (rows) read
// consecutive addresses.
template <class T, class ExecutionSpace, class XView>
EvaluatedBasis<T, typename ExecutionSpace::memory_space> evaluated_bspline_basis(
    const ExecutionSpace& space, const std::string& label, const XView& X,
    const std::vector<BsplineMesh>& host_meshes) {
  using Memory = typename ExecutionSpace::memory_space;
  const std::int64_t rows = X.extent(0), blocks = X.extent(1);
  if (static_cast<std::int64_t>(host_meshes.size()) != blocks || blocks == 0)
    throw std::invalid_argument("kpl::evaluated_bspline_basis: X has " + std::to_string(blocks) +
                                " columns, " + std::to_string(host_meshes.size()) + " meshes");
  for (const auto& mesh : host_meshes) {
    check_bspline_mesh(mesh);
    if (mesh.basis_size != host_meshes[0].basis_size || mesh.degree != host_meshes[0].degree)
      throw std::invalid_argument(
          "kpl::evaluated_bspline_basis: the meshes differ in basis size or degree");
  }
  EvaluatedBasis<T, Memory> basis;
  basis.basis_size = host_meshes[0].basis_size;
  basis.degree = host_meshes[0].degree;
  basis.covariates = decltype(basis.covariates)(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label + "::covariates"), blocks, rows);
  basis.meshes = decltype(basis.meshes)(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label + "::meshes"), blocks);
  Kokkos::deep_copy(space, basis.meshes,
                    Kokkos::View<const BsplineMesh*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        host_meshes.data(), host_meshes.size()));
  impl::transpose_covariates(space, X, basis.covariates);
  return basis;
}

// c[j k + a] = sum_i B_j(i, a) u(i) for every block j (c: p k values),
// accumulated in double, the same bits on every run. A workspace keeps the
// chunks' partial sums between calls.
template <class ExecutionSpace, class T, class MemorySpace, class UView, class CView>
void transpose_product(const ExecutionSpace& space, const EvaluatedBasis<T, MemorySpace>& basis,
                       const UView& u, const CView& c,
                       CompactProductWorkspace<MemorySpace>* workspace = nullptr) {
  if (static_cast<std::int64_t>(u.extent(0)) != basis.rows() ||
      static_cast<std::int64_t>(c.extent(0)) != basis.blocks() * basis.basis_size)
    throw std::invalid_argument(
        "kpl::transpose_product: u has " + std::to_string(u.extent(0)) + " values and c " +
        std::to_string(c.extent(0)) + " for " + std::to_string(basis.rows()) + " rows and " +
        std::to_string(basis.blocks()) + " blocks of " + std::to_string(basis.basis_size));
  if (basis.rows() == 0) {
    Kokkos::deep_copy(space, c, typename CView::non_const_value_type(0));
    return;
  }
  CompactProductWorkspace<MemorySpace> local_workspace;
  impl::evaluated_transpose_product(space, basis, u, c, workspace ? *workspace : local_workspace);
}

namespace impl {

// max |value| (bound_term) over the rows of an evaluated basis, each value
// rounded to T: a team per (block, chunk of rows), thread t over rows
// begin + t, begin + t + T, ... (T threads), four of them loaded before the
// first is evaluated. One row at a time, each thread waited for its load
// and the kernel issued an instruction every other cycle (ncu; stop 52 in
// perf/RESULTS.md); the evaluated product loads its rows the same way.
template <class ExecutionSpace, class T, class Covariates, class Meshes, class Degree>
struct LargestEvaluatedValue {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  static constexpr int rows_in_flight = 4;
  Covariates covariates;
  Meshes meshes;
  Degree degree;
  std::int64_t rows, chunks;

  KOKKOS_INLINE_FUNCTION static void count_row(const BsplineRows& rows_of, double x, Degree degree,
                                               double& largest) {
    double row[bspline_max_degree + 1];
    rows_of.row(x, row, degree);
    for (int q = 0; q < bspline_degree_value(degree) + 1; ++q) {
      const double counted = bound_term(double(T(row[q])));
      if (counted > largest) largest = counted;
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member, double& largest_so_far) const {
    const std::int64_t j = member.league_rank() / chunks, chunk = member.league_rank() % chunks;
    const BsplineRows rows_of(meshes(j));
    const std::int64_t begin = rows * chunk / chunks, end = rows * (chunk + 1) / chunks;
    const double* x = &covariates(j, 0);
    const int threads = member.team_size();
    double largest = largest_so_far;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, threads), [&](const int t) {
      std::int64_t i = begin + t;
      for (; i + (rows_in_flight - 1) * threads < end; i += rows_in_flight * threads) {
        double loaded[rows_in_flight];
        for (int r = 0; r < rows_in_flight; ++r) loaded[r] = x[i + r * threads];
        for (int r = 0; r < rows_in_flight; ++r) count_row(rows_of, loaded[r], degree, largest);
      }
      for (; i < end; i += threads) count_row(rows_of, x[i], degree, largest);
    });
    if (largest > largest_so_far) largest_so_far = largest;
  }
};

}  // namespace impl

// The largest |w(i)| and |value| over the basis' rows: the compact basis'
// bounds of the same rows (kpl/compact_basis.hpp), the values measured in one
// pass over x.
template <class ExecutionSpace, class T, class MemorySpace, class WView>
CrossProductBounds cross_product_bounds(const ExecutionSpace& space,
                                        const EvaluatedBasis<T, MemorySpace>& basis,
                                        const WView& w) {
  if (basis.rows() == 0 || basis.blocks() == 0) return {};
  double bound = 0;
  const std::int64_t chunks = (basis.rows() + 4095) / 4096;
  impl::with_bspline_degree(basis.degree, [&](auto degree) {
    using Functor = impl::LargestEvaluatedValue<ExecutionSpace, T, decltype(basis.covariates),
                                                decltype(basis.meshes), decltype(degree)>;
    Kokkos::parallel_reduce("kpl::evaluated_basis::value_bound",
                            Kokkos::TeamPolicy<ExecutionSpace>(
                                space, static_cast<int>(basis.blocks() * chunks), Kokkos::AUTO),
                            Functor{basis.covariates, basis.meshes, degree, basis.rows(), chunks},
                            Kokkos::Max<double>(bound));
  });
  return {impl::largest_weight(space, w), bound};
}

// B_j^T W B_partner (partner < 0: B_j^T W B_j) for every block j in exact
// parts, as kpl/compact_basis.hpp's cross_product_parts, each row evaluated
// as it is read: the compact basis' parts of the same rows, bit for bit.
template <class ExecutionSpace, class T, class MemorySpace, class WView, class PartsView>
void cross_product_parts(const ExecutionSpace& space, const EvaluatedBasis<T, MemorySpace>& basis,
                         const WView& w, std::int64_t partner, const ExactSumGrid& grid,
                         const PartsView& parts) {
  impl::checked_cross_product_parts(space, basis, w, partner, grid, parts);
}

}  // namespace kpl
