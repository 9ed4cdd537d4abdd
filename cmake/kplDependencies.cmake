# Finds everything kpl builds against. Users point at their own installs with
# Kokkos_ROOT / KokkosKernels_ROOT (and the usual <Package>_ROOT for the rest).

find_package(Kokkos 3.4 REQUIRED)
find_package(KokkosKernels REQUIRED)

# Kokkos' CUDA backend needs 4.6 or newer for CUDA 12/13 and for the API kpl
# uses; Kokkos 3.4 (Debian 12) is supported for Serial and OpenMP only.
kokkos_check(DEVICES CUDA RETURN_VALUE kpl_kokkos_has_cuda)
if(kpl_kokkos_has_cuda AND Kokkos_VERSION VERSION_LESS 4.6)
  message(FATAL_ERROR
    "kpl: Kokkos ${Kokkos_VERSION} at ${Kokkos_DIR} has the CUDA backend, but kpl "
    "needs Kokkos >= 4.6 for CUDA. Point Kokkos_ROOT at a newer install.")
endif()

set(kpl_kokkos_backends "")
foreach(backend IN ITEMS SERIAL OPENMP THREADS CUDA HIP SYCL)
  kokkos_check(DEVICES ${backend} RETURN_VALUE has_backend)
  if(has_backend)
    list(APPEND kpl_kokkos_backends ${backend})
  endif()
endforeach()

# With Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE, Kokkos expects every source
# that includes it to be compiled in that language (CUDA) rather than through
# nvcc_wrapper; kpl_kokkos_sources() (kplKokkosSources.cmake) does that.
if(DEFINED Kokkos_COMPILE_LANGUAGE AND NOT Kokkos_COMPILE_LANGUAGE STREQUAL "CXX"
   AND NOT Kokkos_COMPILE_LANGUAGE STREQUAL "")
  set(kpl_kokkos_language ${Kokkos_COMPILE_LANGUAGE})
  if(kpl_kokkos_language STREQUAL "CUDA" AND NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    message(FATAL_ERROR
      "kpl: Kokkos was built with Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE; "
      "pass the same -DCMAKE_CUDA_ARCHITECTURES (e.g. 90 for H100) to kpl.")
  endif()
  enable_language(${kpl_kokkos_language})
  set(CMAKE_${kpl_kokkos_language}_STANDARD 17)
  set(CMAKE_${kpl_kokkos_language}_STANDARD_REQUIRED ON)
else()
  set(kpl_kokkos_language CXX)
endif()

find_package(HDF5 REQUIRED COMPONENTS C)
find_package(CLI11 REQUIRED)
if(KPL_ENABLE_TESTS)
  find_package(GTest REQUIRED)
endif()
if(KPL_ENABLE_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
