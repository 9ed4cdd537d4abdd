// The execution spaces this build of Kokkos enables, as one type list, so that
// tests, benchmarks and the self-check loop over every backend from one
// definition: enabling a backend in Kokkos adds it everywhere, with no new code.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <tuple>
#include <type_traits>

namespace kpl {

// Names one type without constructing it: execution spaces may only be
// constructed while Kokkos is initialised, and benchmarks register earlier.
template <class T>
struct type_tag {
  using type = T;
};

namespace impl {
template <class... Lists>
struct concatenate;
template <>
struct concatenate<> {
  using type = std::tuple<>;
};
template <class... A>
struct concatenate<std::tuple<A...>> {
  using type = std::tuple<A...>;
};
template <class... A, class... B, class... Rest>
struct concatenate<std::tuple<A...>, std::tuple<B...>, Rest...> {
  using type = typename concatenate<std::tuple<A..., B...>, Rest...>::type;
};

template <class... Types, class Function>
void for_each_type(std::tuple<Types...>*, Function& function) {
  (function(type_tag<Types>{}), ...);
}

// Host memory a device copies from and to at the bus's speed: pinned where
// the backend has it (Kokkos 3 names CUDA's alone), else plain host memory.
#if KOKKOS_VERSION >= 40000
using PinnedHostSpace = Kokkos::SharedHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_CUDA)
using PinnedHostSpace = Kokkos::CudaHostPinnedSpace;
#else
using PinnedHostSpace = Kokkos::HostSpace;
#endif

}  // namespace impl

// std::tuple<Kokkos::Serial, Kokkos::OpenMP, Kokkos::Cuda> on a build with all
// three; host spaces first, so a failure shows on the simplest backend first.
using enabled_execution_spaces = typename impl::concatenate<
#ifdef KOKKOS_ENABLE_SERIAL
    std::tuple<Kokkos::Serial>,
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    std::tuple<Kokkos::OpenMP>,
#endif
#ifdef KOKKOS_ENABLE_THREADS
    std::tuple<Kokkos::Threads>,
#endif
#ifdef KOKKOS_ENABLE_CUDA
    std::tuple<Kokkos::Cuda>,
#endif
#ifdef KOKKOS_ENABLE_HIP
    std::tuple<Kokkos::HIP>,
#endif
    std::tuple<>>::type;

// Calls function(type_tag<ExecutionSpace>{}) for every enabled execution
// space, in the order of enabled_execution_spaces:
//   for_each_execution_space([](auto tag) { using Space = typename decltype(tag)::type; });
template <class Function>
void for_each_execution_space(Function&& function) {
  impl::for_each_type(static_cast<enabled_execution_spaces*>(nullptr), function);
}

}  // namespace kpl
