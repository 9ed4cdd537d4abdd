# cmake -DMODE=list|configure -DSOURCE_DIR=... -P presets.cmake
#   list:      `cmake --list-presets=all` in SOURCE_DIR succeeds and lists the
#              configure, build, test and workflow presets serial, openmp, cuda.
#   configure: `cmake --preset PRESET` (build tree moved to WORK_DIR) configures
#              kpl PROJECT_VERSION against the Kokkos at KOKKOS_DIR (the
#              preset's environment variable is set by the test) with BACKEND,
#              in Release with Ninja. EXTRA_ARGS: more arguments, |-separated.
cmake_minimum_required(VERSION 3.25)

function(fail message)
  message(FATAL_ERROR "${message}\n--- stdout:\n${out}\n--- stderr:\n${err}")
endfunction()

if(MODE STREQUAL "list")
  execute_process(COMMAND ${CMAKE_COMMAND} --list-presets=all WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    fail("cmake --list-presets=all exited ${status}")
  endif()
  foreach(kind configure build test workflow)
    if(NOT out MATCHES "Available ${kind} presets:\n\n([^\n]+\n)+")
      fail("no ${kind} presets listed")
    endif()
    set(block "${CMAKE_MATCH_0}")
    foreach(preset serial openmp cuda)
      if(NOT block MATCHES "\n +\"${preset}\"")
        fail("${kind} preset ${preset} not listed")
      endif()
    endforeach()
  endforeach()
  message(STATUS "configure, build, test and workflow presets: serial, openmp, cuda")
elseif(MODE STREQUAL "configure")
  file(REMOVE_RECURSE ${WORK_DIR})
  string(REPLACE "|" ";" extra_args "${EXTRA_ARGS}")
  execute_process(COMMAND ${CMAKE_COMMAND} --preset ${PRESET} -B ${WORK_DIR} ${extra_args}
                  WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    fail("cmake --preset ${PRESET} exited ${status}")
  endif()
  if(NOT out MATCHES "kpl ${PROJECT_VERSION}: Kokkos [^ ]+ \\([^)]*${BACKEND}")
    fail("the configure summary does not name kpl ${PROJECT_VERSION} on ${BACKEND}")
  endif()
  file(STRINGS ${WORK_DIR}/CMakeCache.txt cache)
  foreach(entry "Kokkos_DIR:PATH=${KOKKOS_DIR}" "CMAKE_BUILD_TYPE:STRING=Release"
                "CMAKE_GENERATOR:INTERNAL=Ninja")
    if(NOT entry IN_LIST cache)
      string(REGEX MATCH "^[^:]+" name "${entry}")
      list(FILTER cache INCLUDE REGEX "^${name}:")
      fail("preset ${PRESET}: expected ${entry} in CMakeCache.txt, found '${cache}'")
    endif()
  endforeach()
  file(REMOVE_RECURSE ${WORK_DIR})
  message(STATUS "preset ${PRESET}: kpl ${PROJECT_VERSION} on ${BACKEND}, Kokkos at ${KOKKOS_DIR}")
else()
  message(FATAL_ERROR "MODE must be list or configure")
endif()
