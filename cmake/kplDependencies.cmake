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
# Seen by kpl_kokkos_sources() in a project that pulled kpl in as a subproject.
set_property(GLOBAL PROPERTY kpl_kokkos_language ${kpl_kokkos_language})

# MPI (kpl/mpi.hpp, `mpirun kpl ...`) needs MPI and a parallel HDF5 built on
# it. Debian installs the parallel HDF5 (libhdf5-openmpi-dev) beside the
# serial one, so the choice is explicit: the MPI build links the parallel
# library through its h5pcc wrapper, the other build the serial one through
# h5cc. KPL_ENABLE_MPI defaults to ON when both are found.
find_package(MPI COMPONENTS C CXX QUIET)
find_program(kpl_h5pcc NAMES h5pcc h5pcc.openmpi h5pcc.mpich NO_CACHE)
if(MPI_C_FOUND AND MPI_CXX_FOUND AND kpl_h5pcc)
  set(kpl_mpi_default ON)
else()
  set(kpl_mpi_default OFF)
endif()
# A wrapper the user names (-DHDF5_C_COMPILER_EXECUTABLE=... at the first
# configure) wins; otherwise the one matching KPL_ENABLE_MPI. FindHDF5 caches
# the libraries it found: switching KPL_ENABLE_MPI needs a fresh build tree.
# An HDF5_ROOT the user gives is followed as FindHDF5 follows it.
if(DEFINED CACHE{HDF5_C_COMPILER_EXECUTABLE} AND NOT DEFINED CACHE{kpl_hdf5_wrapper_seen})
  set(kpl_user_hdf5_wrapper ${HDF5_C_COMPILER_EXECUTABLE} CACHE INTERNAL "")
elseif(HDF5_ROOT OR DEFINED ENV{HDF5_ROOT})
  set(kpl_user_hdf5_wrapper "HDF5_ROOT")
endif()
set(kpl_hdf5_wrapper_seen ON CACHE INTERNAL "")
option(KPL_ENABLE_MPI "Build kpl's MPI layer (needs MPI and parallel HDF5)" ${kpl_mpi_default})
if(KPL_ENABLE_MPI)
  if(NOT (MPI_C_FOUND AND MPI_CXX_FOUND))
    message(FATAL_ERROR "kpl: KPL_ENABLE_MPI=ON but no MPI was found (Debian: libopenmpi-dev)")
  endif()
  if(NOT kpl_user_hdf5_wrapper AND kpl_h5pcc)
    set(HDF5_C_COMPILER_EXECUTABLE ${kpl_h5pcc})
  endif()
  set(HDF5_PREFER_PARALLEL TRUE)
else()
  find_program(kpl_h5cc NAMES h5cc h5cc.serial NO_CACHE)
  if(NOT kpl_user_hdf5_wrapper AND kpl_h5cc)
    set(HDF5_C_COMPILER_EXECUTABLE ${kpl_h5cc})
  endif()
endif()
find_package(HDF5 REQUIRED COMPONENTS C)
# kpl compresses output chunks itself, as HDF5's deflate filter would (zlib)
find_package(ZLIB REQUIRED)
if(KPL_ENABLE_MPI AND NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "kpl: KPL_ENABLE_MPI=ON needs a parallel HDF5, but ${HDF5_C_COMPILER_EXECUTABLE} is "
    "serial (Debian: libhdf5-openmpi-dev; or pass -DHDF5_C_COMPILER_EXECUTABLE=.../h5pcc)")
endif()
# A parallel HDF5's header includes mpi.h: whatever includes hdf5.h (core's
# I/O, which calls no MPI itself) compiles and links against that MPI.
if(KPL_ENABLE_MPI)
  set_property(TARGET hdf5::hdf5 APPEND PROPERTY INTERFACE_LINK_LIBRARIES MPI::MPI_C)
endif()
if(NOT KPL_ENABLE_MPI AND HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "kpl: this HDF5 (${HDF5_C_COMPILER_EXECUTABLE}) is parallel, which needs MPI: pass "
    "-DKPL_ENABLE_MPI=ON, or point -DHDF5_C_COMPILER_EXECUTABLE at a serial h5cc")
endif()
find_package(CLI11 REQUIRED)
if(KPL_ENABLE_TESTS)
  find_package(GTest REQUIRED)
endif()
if(KPL_ENABLE_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
