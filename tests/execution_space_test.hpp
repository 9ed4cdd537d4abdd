// One test definition for every enabled execution space.
//
//   template <class ExecutionSpace> void check_something() { ...kernels... }
//   KPL_EXECUTION_SPACE_TEST(Suite, Name) { check_something<TypeParam>(); }
//
// The suite is instantiated for kpl::enabled_execution_spaces, and CTest lists
// each instance under the backend's name (Suite/Serial.Name, Suite/Cuda.Name).
// Kernels go in free function templates, not in the test body: nvcc rejects
// device lambdas inside GoogleTest's private TestBody().
#pragma once

#include <kpl/execution_spaces.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <string>
#include <tuple>

namespace kpl::testing {

template <class Tuple>
struct as_gtest_types;
template <class... Spaces>
struct as_gtest_types<std::tuple<Spaces...>> {
  using type = ::testing::Types<Spaces...>;
};

using ExecutionSpaces = typename as_gtest_types<kpl::enabled_execution_spaces>::type;

struct ExecutionSpaceName {
  template <class ExecutionSpace>
  static std::string GetName(int) {
    return ExecutionSpace::name();
  }
};

template <class ExecutionSpace>
class ExecutionSpaceTest : public ::testing::Test {};

}  // namespace kpl::testing

#define KPL_EXECUTION_SPACE_SUITE(Suite)                                      \
  template <class ExecutionSpace>                                             \
  class Suite : public ::kpl::testing::ExecutionSpaceTest<ExecutionSpace> {}; \
  TYPED_TEST_SUITE(Suite, ::kpl::testing::ExecutionSpaces, ::kpl::testing::ExecutionSpaceName)

#define KPL_EXECUTION_SPACE_TEST(Suite, Name) TYPED_TEST(Suite, Name)
