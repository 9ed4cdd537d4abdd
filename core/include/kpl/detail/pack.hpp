// A group of consecutive elements moved as one aligned memory access: 16
// bytes (4 floats, 2 doubles) per load or store instead of one element. On
// the H100 this is what takes a streaming kernel from ~2050 to ~2900 GB/s
// (perf/RESULTS.md, broadcast): fewer memory instructions for the same bytes
// in flight.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kpl::detail {

// Elements of T in a 16-byte pack (1 when T does not divide 16 bytes).
template <class T>
constexpr int pack_elements() {
  return sizeof(T) < 16 && 16 % sizeof(T) == 0 ? int(16 / sizeof(T)) : 1;
}

template <class T, int Width>
struct alignas(sizeof(T) * Width) Pack {
  T value[Width];
};

// The Width elements at data[0 .. Width-1]; data must be aligned to the pack
// for Width > 1 (callers check on the host, see is_pack_aligned).
template <int Width, class T>
KOKKOS_INLINE_FUNCTION Pack<T, Width> load_pack(const T* data) {
  if constexpr (Width == 1) {
    return Pack<T, Width>{{*data}};
  } else {
    return *reinterpret_cast<const Pack<T, Width>*>(data);
  }
}

// True when a pack of Width elements may be loaded at data + stride * i for
// every integer i: the base pointer aligned and the stride a multiple.
template <int Width, class T>
bool is_pack_aligned(const T* data, std::int64_t stride) {
  return reinterpret_cast<std::uintptr_t>(data) % (sizeof(T) * Width) == 0 && stride % Width == 0;
}

}  // namespace kpl::detail
