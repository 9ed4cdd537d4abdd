# kpl_kokkos_sources(<target>): compile every C++ source of <target> in the
# language Kokkos was built for. For CXX (nvcc_wrapper, Serial, OpenMP) this
# changes nothing; for Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE builds it marks
# the sources as CUDA, as Kokkos requires.
function(kpl_kokkos_sources target)
  if(kpl_kokkos_language STREQUAL "CXX")
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
endfunction()
