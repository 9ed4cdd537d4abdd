// A group of consecutive elements moved as one aligned memory access: 16
// bytes (4 floats, 2 doubles) per load or store instead of one element. On
// a GPU a streaming kernel is limited by memory instructions in flight long
// before bytes in flight: wider accesses move the same bytes with a quarter
// or half of the instructions (the broadcast and gemv rows of
// perf/RESULTS.md compare both).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kpl::impl {

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
// for Width > 1 (callers check first, see is_pack_aligned).
template <int Width, class T>
KOKKOS_INLINE_FUNCTION Pack<T, Width> load_pack(const T* data) {
  if constexpr (Width == 1) {
    return Pack<T, Width>{{*data}};
  } else {
    return *reinterpret_cast<const Pack<T, Width>*>(data);
  }
}

// load_pack for data that is read once, such as a matrix streamed by a
// gemv: on CUDA an evict-first load (ld.global.cs), so the stream does not
// push out of L2 what other teams read again (x, read by every block of
// rows). The row-block gemv kernel gains from it; the outputs-contiguous
// kernel keeps load_pack, where it measured no gain on square matrices.
// Elsewhere a plain load.
template <int Width, class T>
KOKKOS_INLINE_FUNCTION Pack<T, Width> load_pack_read_once(const T* data) {
#if defined(__CUDA_ARCH__)
  if constexpr (Width == 4 && std::is_same_v<T, float>) {
    const float4 v = __ldcs(reinterpret_cast<const float4*>(data));
    return Pack<T, Width>{{v.x, v.y, v.z, v.w}};
  } else if constexpr (Width == 2 && std::is_same_v<T, double>) {
    const double2 v = __ldcs(reinterpret_cast<const double2*>(data));
    return Pack<T, Width>{{v.x, v.y}};
  } else {
    return load_pack<Width>(data);
  }
#else
  return load_pack<Width>(data);
#endif
}

// True when a pack of Width elements may be loaded at data + stride * i for
// every integer i: the base pointer aligned and the stride a multiple.
template <int Width, class T>
KOKKOS_INLINE_FUNCTION bool is_pack_aligned(const T* data, std::int64_t stride) {
  return reinterpret_cast<std::uintptr_t>(data) % (sizeof(T) * Width) == 0 && stride % Width == 0;
}

}  // namespace kpl::impl
