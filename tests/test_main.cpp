// Test driver: Kokkos lives for the whole run, so every test can use every
// enabled execution space. Arguments starting with --kokkos- go to Kokkos.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    ::testing::InitGoogleTest(&argc, argv);
    status = RUN_ALL_TESTS();
  }
  Kokkos::finalize();
  return status;
}
