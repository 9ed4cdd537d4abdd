# The Python module (`import kpl`, python/) through pybind11. It targets the
# first of Debian's /usr/bin/python3 and the python3 on the PATH that has
# NumPy (a pyenv or conda python3 earlier on the PATH often has none); pass
# -DPython_EXECUTABLE=... to choose another. KPL_ENABLE_PYTHON defaults to ON
# when that Python's headers and pybind11 are found and kpl is the top-level
# project. Never with KPL_SANITIZERS: an extension instrumented with
# AddressSanitizer cannot be loaded into an uninstrumented python (the
# runtime must come first in the process), so the sanitizer build skips it.
# kpl_find_python_with(<variable> <module>...): the first of Debian's
# /usr/bin/python3 and python3 on the PATH that imports every module, or ""
# (a python3 earlier on the PATH, pyenv or conda, often lacks Debian's).
function(kpl_find_python_with variable)
  list(JOIN ARGN ", " modules)
  foreach(candidate /usr/bin/python3 python3)
    find_program(kpl_python_candidate NAMES ${candidate} NO_CACHE)
    if(kpl_python_candidate)
      execute_process(COMMAND ${kpl_python_candidate} -c "import ${modules}"
                      RESULT_VARIABLE imported OUTPUT_QUIET ERROR_QUIET)
      if(imported EQUAL 0)
        set(${variable} ${kpl_python_candidate} PARENT_SCOPE)
        return()
      endif()
    endif()
    unset(kpl_python_candidate)
  endforeach()
  set(${variable} "" PARENT_SCOPE)
endfunction()

set(kpl_python_default OFF)
if(KPL_ENABLE_PYTHON OR (NOT DEFINED KPL_ENABLE_PYTHON AND PROJECT_IS_TOP_LEVEL
                         AND NOT KPL_SANITIZERS))
  if(NOT Python_EXECUTABLE)
    kpl_find_python_with(kpl_numpy_python numpy)
    if(kpl_numpy_python)
      set(Python_EXECUTABLE ${kpl_numpy_python} CACHE FILEPATH
          "The Python the kpl module is built for")
    endif()
  endif()
  if(Python_EXECUTABLE)
    # Found first, so that pybind11 uses FindPython with this interpreter.
    find_package(Python 3.7 COMPONENTS Interpreter Development.Module QUIET)
    if(Python_FOUND)
      find_package(pybind11 2.6 CONFIG QUIET)
    endif()
  endif()
  if(Python_FOUND AND pybind11_FOUND)
    set(kpl_python_default ON)
  endif()
endif()
option(KPL_ENABLE_PYTHON "Build the Python module `kpl` (needs pybind11 and Python headers)"
       ${kpl_python_default})
if(KPL_ENABLE_PYTHON)
  if(KPL_SANITIZERS)
    message(FATAL_ERROR
      "kpl: KPL_ENABLE_PYTHON=ON with KPL_SANITIZERS=${KPL_SANITIZERS}: an instrumented "
      "extension cannot be loaded into an uninstrumented python; build one without the other")
  endif()
  if(NOT (Python_FOUND AND pybind11_FOUND))
    message(FATAL_ERROR
      "kpl: KPL_ENABLE_PYTHON=ON needs a Python 3 with NumPy and its headers, and pybind11 "
      "(Debian: python3-dev python3-numpy pybind11-dev), or -DPython_EXECUTABLE=...")
  endif()
endif()
