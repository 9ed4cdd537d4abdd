// What kpl's team-level functions (kpl/team.hpp) need to know about the team
// member a user's TeamPolicy kernel hands them: the execution space it runs
// in, and how many vector lanes each of its threads has. Users need not read
// this.
#pragma once

#include <kpl/execution_spaces.hpp>

#include <Kokkos_Core.hpp>

#include <tuple>
#include <type_traits>

namespace kpl::impl {

// The enabled execution space whose TeamPolicy hands out Member (not every
// Kokkos version names it inside the member type).
template <class Member, class Spaces>
struct member_space_in;
template <class Member>
struct member_space_in<Member, std::tuple<>> {
  using type = void;
};
template <class Member, class Space, class... Rest>
struct member_space_in<Member, std::tuple<Space, Rest...>> {
  using type =
      std::conditional_t<std::is_same_v<typename Kokkos::TeamPolicy<Space>::member_type, Member>,
                         Space, typename member_space_in<Member, std::tuple<Rest...>>::type>;
};
template <class Member>
using member_execution_space_t =
    typename member_space_in<std::remove_cv_t<Member>, enabled_execution_spaces>::type;

// The vector lanes of each thread of the calling team: the TeamPolicy's
// vector length. Kokkos maps the lanes to threadIdx.x on CUDA and HIP; on
// CPUs a thread's lanes are one sequential loop.
template <class Member>
KOKKOS_INLINE_FUNCTION int vector_length(const Member&) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return static_cast<int>(blockDim.x);
#else
  return 1;
#endif
}

}  // namespace kpl::impl
