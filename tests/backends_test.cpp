// The execution spaces themselves: every enabled backend runs kernels, and
// the OpenMP tests really run on several threads.
#include "execution_space_test.hpp"

#include <kpl/impl/kokkos_compat.hpp>

#include <cstdint>
#include <random>

namespace {

// Fills a View on the backend, reduces it there, and checks both against the
// host: catches a backend that is enabled but does not execute, or computes
// on stale memory.
template <class ExecutionSpace>
void check_kernels_run(std::size_t length) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  const ExecutionSpace space;
  Kokkos::View<double*, MemorySpace> values("values", length);
  Kokkos::parallel_for(
      "kpl::test::fill", Kokkos::RangePolicy<ExecutionSpace>(space, 0, length),
      KOKKOS_LAMBDA(const std::size_t i) { values(i) = 0.5 * static_cast<double>(i) + 1.0; });
  double sum = 0;
  Kokkos::parallel_reduce(
      "kpl::test::sum", Kokkos::RangePolicy<ExecutionSpace>(space, 0, length),
      KOKKOS_LAMBDA(const std::size_t i, double& partial) {
        partial += kpl::compat::math::sqrt(values(i) * values(i));
      },
      sum);
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, values);
  double expected = 0;
  for (std::size_t i = 0; i < length; ++i) {
    ASSERT_EQ(host(i), 0.5 * static_cast<double>(i) + 1.0) << "element " << i;
    expected += host(i);
  }
  EXPECT_NEAR(sum, expected, 1e-12 * (expected + 1));
}

}  // namespace

KPL_EXECUTION_SPACE_SUITE(Backend);

KPL_EXECUTION_SPACE_TEST(Backend, KernelsRunOnEveryLength) {
  for (std::size_t length : {0, 1, 2, 31, 33, 1000, 100003}) {
    SCOPED_TRACE(length);
    check_kernels_run<TypeParam>(length);
  }
}

KPL_EXECUTION_SPACE_TEST(Backend, HostBackendsOtherThanSerialUseSeveralThreads) {
  const TypeParam space;
  const bool is_serial = std::string(TypeParam::name()) == "Serial";
  const bool is_host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename TypeParam::memory_space>::accessible;
  if (is_serial) {
    EXPECT_EQ(space.concurrency(), 1);
  } else if (is_host) {
    // CTest sets OMP_NUM_THREADS (KPL_TEST_OPENMP_THREADS, default 2): a race
    // cannot show on one thread.
    EXPECT_GE(space.concurrency(), 2) << TypeParam::name() << " runs on one thread";
  } else {
    EXPECT_GT(space.concurrency(), 1000) << TypeParam::name();
  }
}
