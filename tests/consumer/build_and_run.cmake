# Configures, builds and runs tests/consumer as a user would, by ROUTE:
#   package       installs the kpl build tree into a scratch prefix and finds
#                 that *installed* package
#   subdirectory  add_subdirectory(SOURCE_DIR) inside the consumer
#   fetchcontent  FetchContent from SOURCE_DIR
#   cmake -DROUTE=... -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#         -DCMAKE_ARGS=<arguments separated by |> -P build_and_run.cmake
string(REPLACE "|" ";" CMAKE_ARGS "${CMAKE_ARGS}")
set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

if(ROUTE STREQUAL "package")
  run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
  if(NOT EXISTS "${prefix}/share/doc/kpl/LICENSE")
    message(FATAL_ERROR "the package installs no LICENSE")
  endif()
  set(route_arguments "-DCMAKE_PREFIX_PATH=${prefix}")
else()
  set(route_arguments "-DKPL_CONSUMER_ROUTE=${ROUTE}" "-DKPL_CONSUMER_SOURCE=${SOURCE_DIR}")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${consumer_build}" -G "${GENERATOR}"
    ${route_arguments} ${CMAKE_ARGS})
run(${CMAKE_COMMAND} --build "${consumer_build}" --target kpl_consumer)
run("${consumer_build}/kpl_consumer" "${WORK_DIR}/consumer.h5")
