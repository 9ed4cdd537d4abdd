// The element types kpl::hdf5 reads and writes, and the View data type of a
// given rank (T, T*, T**, T***).
#pragma once

#include <cstdint>
#include <type_traits>

namespace kpl::hdf5 {

enum class element_type { float64, float32, int64, int32 };

namespace impl {

template <class T>
constexpr element_type element_type_of() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_same_v<U, double> || std::is_same_v<U, float> ||
                    std::is_same_v<U, std::int64_t> || std::is_same_v<U, std::int32_t>,
                "kpl::hdf5 reads and writes double, float, int64_t and int32_t");
  if constexpr (std::is_same_v<U, double>) return element_type::float64;
  if constexpr (std::is_same_v<U, float>) return element_type::float32;
  if constexpr (std::is_same_v<U, std::int64_t>) return element_type::int64;
  return element_type::int32;
}

template <class T, int Rank>
struct add_rank {
  using type = typename add_rank<T*, Rank - 1>::type;
};
template <class T>
struct add_rank<T, 0> {
  using type = T;
};

}  // namespace impl
}  // namespace kpl::hdf5
