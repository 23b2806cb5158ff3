// kiln._ffi: the extension module of the Python package. The library's errors become Python
// exceptions carrying the library's message: kiln::runtime::Error -> kiln.KilnError (a
// RuntimeError), InternalError -> kiln.InternalError (a KilnError).
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"
#include "runtime/error.h"
#include "runtime/version.h"

namespace py = pybind11;

PYBIND11_MODULE(_ffi, m) {
  m.doc() = "kiln's C++ library (runtime and compiler) as a Python extension; use the kiln package.";
  m.attr("__version__") = kiln::runtime::Version();
  // Translators are tried last-registered first, so the subclass comes second.
  py::exception<kiln::runtime::Error>& error =
      py::register_exception<kiln::runtime::Error>(m, "KilnError", PyExc_RuntimeError);
  py::register_exception<kiln::runtime::InternalError>(m, "InternalError", error.ptr());
  kiln::python::RegisterRuntime(m);
  kiln::python::RegisterCompiler(m);
}
