// The matrices of `kpl nnls` on the device, and the solve of one chunk of
// systems with them (kpl/nnls_file.hpp). /A is stored column by column (each
// system's A^T row-major), so that a column's rows are contiguous and the
// solver's loads coalesce. A shared /A is read once per process; its cross
// products A^T A, when the gradient comes from them, are formed once per
// process too, exactly as kpl::nnls forms them for a whole batch
// (impl/nnls_launch.hpp), so that every chunk solves as the whole batch would.
#pragma once

#include <kpl/hdf5_io.hpp>
#include <kpl/impl/nnls_launch.hpp>
#include <kpl/nnls.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl::impl {

template <class T>
using NnlsFileMatrices =
    Kokkos::View<T***, Kokkos::LayoutRight, Kokkos::DefaultExecutionSpace::memory_space>;

// Matrices [count, m, n] (count 1 for a shared /A read whole) transposed
// into [count, n, m] on the device.
template <class T, class HostMatrices>
NnlsFileMatrices<T> transposed_on_device(const HostMatrices& a) {
  const std::int64_t count = a.extent(0), m = a.extent(1), n = a.extent(2);
  NnlsFileMatrices<T> transposed(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls_file::A"), count, n, m);
  auto host = Kokkos::create_mirror_view(transposed);
  for (std::int64_t s = 0; s < count; ++s)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) host(s, j, i) = a(s, i, j);
  Kokkos::deep_copy(transposed, host);
  return transposed;
}

// The /A [m, n] all systems share.
template <class T>
class SharedNnlsMatrix {
 public:
  using Space = Kokkos::DefaultExecutionSpace;

  bool loaded() const { return transposed_.is_allocated(); }

  void load(const hdf5::InputFile& input, hdf5::ReadRequirements requirements) {
    const auto a = input.read<T, 2>("/A", requirements);
    const Kokkos::View<const T***, Kokkos::LayoutRight, Kokkos::HostSpace,
                       Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        one(a.data(), 1, a.extent(0), a.extent(1));
    transposed_ = transposed_on_device<T>(one);
  }

  // A^T A of A at unit column scale, as solve_nnls_with_cross_products forms
  // it; with a NaN or Inf in A (never, after the finite read) none is used.
  void form_cross_products(const Space& space) {
    using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft, Space::memory_space>;
    const std::int64_t m = rows(), n = columns();
    const Matrix a_unit(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::A_unit"), m, n);
    if (!unit_scaled_columns(space, matrix(), a_unit)) return;
    cross_products_ =
        Matrix(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpl::nnls::cross_products"), n, n);
    compat::kokkos_blas_gemm(space, "T", "N", T(1), a_unit, a_unit, T(0), cross_products_);
  }

  template <class BView>
  void solve(const Space& space, const BView& b, NnlsSolution<Space, T>& solution,
             const NnlsOptions& options, NnlsWorkspace<Space, T>& workspace) const {
    const std::int64_t m = rows(), n = columns();
    const DenseColumns<T> dense{transposed_.data(), 0, 1, m, m};
    const bool cross = cross_products_.is_allocated();
    solve_nnls(space, dense, m, n, b, solution, options, &workspace,
               cross ? cross_products_.data() : nullptr,
               cross ? static_cast<std::int64_t>(cross_products_.stride(1)) : 0);
  }

 private:
  std::int64_t rows() const { return transposed_.extent(2); }
  std::int64_t columns() const { return transposed_.extent(1); }
  using Matrix = Kokkos::View<const T**, Kokkos::LayoutLeft, Space::memory_space,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  // A [m, n], column j at j * m (the transposed storage).
  Matrix matrix() const { return Matrix(transposed_.data(), rows(), columns()); }

  NnlsFileMatrices<T> transposed_;
  Kokkos::View<T**, Kokkos::LayoutLeft, Space::memory_space> cross_products_;
};

}  // namespace kpl::impl
