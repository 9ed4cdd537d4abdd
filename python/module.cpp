// The extension kpl._kpl: kpl's errors as Python exceptions, Kokkos started
// on first use on its own thread (kokkos_thread.hpp) and finalised at exit,
// and the bindings of solvers.cpp and gam.cpp. The package python/kpl wraps
// it with keyword defaults and documentation.
#include "bindings.hpp"
#include "kokkos_thread.hpp"

#include <kpl/config.hpp>
#include <kpl/error.hpp>
#include <kpl/resources.hpp>

#include <pybind11/stl.h>

#include <Kokkos_Core.hpp>

#include <optional>
#include <stdexcept>

namespace py = pybind11;

PYBIND11_MODULE(_kpl, module) {
  using namespace pybind11::literals;
  // kpl::input_error (bad data; `kpl` exits 2) is a ValueError;
  // std::invalid_argument (impossible options; exit 1) is pybind11's
  // ValueError; kpl::resource_error (too little memory) a MemoryError.
  py::register_exception<kpl::input_error>(module, "InputError", PyExc_ValueError);
  py::register_exception<kpl::resource_error>(module, "ResourceError", PyExc_MemoryError);

  module.def(
      "initialize",
      [](std::optional<int> threads) {
        if (kpl::python::kokkos_thread_started())
          throw std::runtime_error("kpl.initialize: Kokkos is already initialised");
        if (threads && *threads < 1)
          throw std::invalid_argument("kpl.initialize: threads must be at least 1");
        kpl::python::start_kokkos_thread(threads);
      },
      py::kw_only(), "threads"_a = py::none(),
      "Initialises Kokkos (the first call of any kpl function does so with Kokkos' defaults: "
      "OMP_NUM_THREADS host threads); threads: host threads. RuntimeError if already done.");
  module.def("initialized", &kpl::python::kokkos_thread_started,
             "Whether Kokkos has been initialised (and not yet finalised).");
  module.def(
      "info",
      [] {
        py::dict info;
        info["version"] = KPL_VERSION_STRING;
        info["kokkos_version"] = KPL_KOKKOS_VERSION_STRING;
        info["execution_space"] = Kokkos::DefaultExecutionSpace::name();
        info["concurrency"] = kpl::python::on_kokkos_thread(
            [] { return int(Kokkos::DefaultExecutionSpace().concurrency()); });
        return info;
      },
      "kpl's and Kokkos' versions, the default execution space and its concurrency.");
  kpl::python::bind_solvers(module);
  kpl::python::bind_gam(module);
  // Before the interpreter tears down its modules; nothing if never started.
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { kpl::python::stop_kokkos_thread(); }));
}
