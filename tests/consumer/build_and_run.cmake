# Installs the kpl build tree into a scratch prefix, then configures, builds
# and runs tests/consumer against that *installed* package, as a user would.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
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

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${consumer_build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}" ${CMAKE_ARGS})
run(${CMAKE_COMMAND} --build "${consumer_build}")
run("${consumer_build}/kpl_consumer" "${WORK_DIR}/consumer.h5")
