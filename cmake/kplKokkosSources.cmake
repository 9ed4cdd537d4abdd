# kpl_kokkos_sources(<target>): compile every C++ source of <target> in the
# language Kokkos was built for. For CXX (nvcc_wrapper, Serial, OpenMP) this
# changes nothing; for Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE builds it marks
# the sources as CUDA, as Kokkos requires.
#
# The language comes from the kpl_kokkos_language variable (kplConfig.cmake
# sets it where find_package is called) or, where kpl is a subproject whose
# variables the caller does not see, from the global property of that name.
function(kpl_kokkos_sources target)
  if(NOT kpl_kokkos_language)
    get_property(kpl_kokkos_language GLOBAL PROPERTY kpl_kokkos_language)
  endif()
  if(NOT kpl_kokkos_language OR kpl_kokkos_language STREQUAL "CXX")
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(cxx_sources "")
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.(cpp|cc|cxx)$")
      list(APPEND cxx_sources ${source})
    endif()
  endforeach()
  if(cxx_sources)
    set_source_files_properties(${cxx_sources} TARGET_DIRECTORY ${target}
      PROPERTIES LANGUAGE ${kpl_kokkos_language})
  endif()
  # A host function called from device code is undefined behaviour that nvcc
  # only warns about; the optimiser then treats the path as unreachable (a
  # host-only helper in a kernel once turned team_size() into a constant 1
  # and planted traps in the team combine). Make it an error.
  if(kpl_kokkos_language STREQUAL "CUDA" AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--Werror=cross-execution-space-call>)
  endif()
endfunction()
