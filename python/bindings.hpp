// The parts of the extension kpl._kpl (module.cpp puts them together).
#pragma once

#include <pybind11/pybind11.h>

namespace kpl::python {
void bind_solvers(pybind11::module_& module);  // nnls, deconvolve (solvers.cpp)
void bind_gam(pybind11::module_& module);      // gam_fit, gam_load, GamModel (gam.cpp)
}  // namespace kpl::python
