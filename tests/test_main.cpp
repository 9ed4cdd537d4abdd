// Test driver: Kokkos lives for the whole run, so every test can use every
// enabled execution space. Arguments starting with --kokkos- go to Kokkos.
#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <cstring>

int main(int argc, char** argv) {
  // CTest discovers the tests by running --gtest_list_tests and parsing its
  // stdout. Listing needs no Kokkos, and Kokkos' start-up warnings on stdout
  // (Kokkos 3.4 prints some there) would be read as test names.
  bool listing_only = false;
  for (int i = 1; i < argc; ++i) listing_only |= std::strcmp(argv[i], "--gtest_list_tests") == 0;
  ::testing::InitGoogleTest(&argc, argv);
  if (listing_only) return RUN_ALL_TESTS();

  Kokkos::initialize(argc, argv);
  const int status = RUN_ALL_TESTS();
  Kokkos::finalize();
  return status;
}
