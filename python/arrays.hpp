// NumPy arrays in and out of the bindings: the checks that name the function
// and the argument, and the host Views over an array's memory. Dtypes are
// never converted (float32 and float64 select the precision; anything else
// is a TypeError); an array that is not C-contiguous is copied.
#pragma once

#include <kpl/error.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace kpl::python {

namespace py = pybind11;

// An argument of a function, for messages: "kpl.nnls: A".
struct Argument {
  const char* function;
  const char* name;
  std::string prefix() const { return std::string(function) + ": " + name; }
};

inline std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

inline std::vector<std::int64_t> shape_of(const py::array& array) {
  return std::vector<std::int64_t>(array.shape(), array.shape() + array.ndim());
}

// true for float32, false for float64; TypeError for any other dtype.
inline bool is_single(const py::array& array, const Argument& argument) {
  if (array.dtype().equal(py::dtype::of<float>())) return true;
  if (array.dtype().equal(py::dtype::of<double>())) return false;
  throw py::type_error(argument.prefix() + " must be a float32 or float64 array, not " +
                       std::string(py::str(array.dtype())) +
                       " (convert it, e.g. with .astype(numpy.float64))");
}

// kpl::input_error (as the command line's for a dataset of the wrong rank)
// unless the array has one of the ranks; `shapes` says which.
inline void require_rank(const py::array& array, std::initializer_list<int> ranks,
                         const Argument& argument, const std::string& shapes) {
  for (const int rank : ranks)
    if (array.ndim() == rank) return;
  throw input_error(argument.prefix() + " must be " + shapes + ", not of rank " +
                    std::to_string(array.ndim()) + " (shape " + shape_text(shape_of(array)) + ")");
}

// kpl::input_error, as the command line's reads: an empty array.
inline void require_not_empty(const py::array& array, const Argument& argument) {
  if (array.size() == 0)
    throw input_error(argument.prefix() + " is empty (shape " + shape_text(shape_of(array)) + ")");
}

// kpl::input_error unless extent a of `first` equals extent b of `second`.
inline void require_matching_extent(const py::array& first, const Argument& first_argument, int a,
                                    const py::array& second, const Argument& second_argument,
                                    int b) {
  if (first.shape(a) == second.shape(b)) return;
  const auto describe = [](const py::array& array, const Argument& argument, int dimension) {
    return "dimension " + std::to_string(dimension) + " of " + argument.name + " (shape " +
           shape_text(shape_of(array)) + ") is " + std::to_string(array.shape(dimension));
  };
  throw input_error(std::string(first_argument.function) +
                    ": dimension mismatch: " + describe(first, first_argument, a) + " but " +
                    describe(second, second_argument, b));
}

// The array as C-contiguous T (a copy if it is not); is_single chose T.
template <class T>
py::array_t<T, py::array::c_style> contiguous(const py::array& array) {
  return py::array_t<T, py::array::c_style>::ensure(array);
}

// A C-contiguous array's memory, readable without the GIL.
template <class T>
struct HostData {
  const T* data;
  std::vector<std::int64_t> shape;
  std::int64_t size() const {
    std::int64_t count = 1;
    for (const auto extent : shape) count *= extent;
    return count;
  }
};
template <class T>
HostData<T> host_data(const py::array_t<T, py::array::c_style>& array) {
  return {array.data(), shape_of(array)};
}

// kpl::input_error at the first NaN or Inf, naming its index as the command
// line does for a dataset.
template <class T>
void require_finite(const HostData<T>& array, const Argument& argument) {
  const std::int64_t count = array.size();
  for (std::int64_t i = 0; i < count; ++i) {
    if (array.data[i] - array.data[i] == T(0)) continue;  // NaN and +-Inf give NaN
    std::vector<std::int64_t> index(array.shape.size());
    std::int64_t rest = i;
    for (std::size_t d = index.size(); d-- > 0;) {
      index[d] = rest % array.shape[d];
      rest /= array.shape[d];
    }
    throw input_error(argument.prefix() + " holds NaN or Inf at " + shape_text(index) +
                      "; finite values are required");
  }
}

template <class T, class Layout = Kokkos::LayoutRight>
using HostMatrix = Kokkos::View<T**, Layout, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
template <class T>
using HostVector = Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

// A [rows, columns] view of a C-contiguous array (rank 1: one row).
template <class T>
HostMatrix<const T> as_matrix(const HostData<T>& array) {
  const std::int64_t columns = array.shape.back();
  return HostMatrix<const T>(array.data, array.shape.size() == 1 ? 1 : array.shape[0], columns);
}

// A new NumPy array of the given shape; its memory is written on the Kokkos
// thread.
template <class T>
py::array_t<T> new_array(std::vector<std::int64_t> shape) {
  return py::array_t<T>(std::vector<py::ssize_t>(shape.begin(), shape.end()));
}

}  // namespace kpl::python
