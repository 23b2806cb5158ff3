// kiln._ffi: the extension module of the Python package. The library's errors become Python
// exceptions carrying the library's message: kiln::runtime::Error -> kiln.KilnError (a
// RuntimeError), InternalError -> kiln.InternalError (a KilnError), with the error's location as
// attributes: message (without the location), file, node, argument (None when unknown).
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"
#include "runtime/error.h"
#include "runtime/text.h"
#include "runtime/version.h"

namespace py = pybind11;

namespace {

// Messages quote names from models, which need not be UTF-8: invalid bytes become \xNN.
py::str Text(const std::string& text) { return py::str(kiln::runtime::ValidUtf8(text)); }

py::object OrNone(const std::string& text) { return text.empty() ? py::none() : py::object(Text(text)); }

void Raise(PyObject* type, const kiln::runtime::Error& e) {
  py::object instance = py::reinterpret_borrow<py::object>(type)(Text(e.what()));
  instance.attr("message") = Text(e.message());
  instance.attr("file") = OrNone(e.location().file);
  instance.attr("node") = OrNone(e.location().node);
  instance.attr("argument") = OrNone(e.location().argument);
  PyErr_SetObject(type, instance.ptr());
}

}  // namespace

PYBIND11_MODULE(_ffi, m) {
  m.doc() = "kiln's C++ library (runtime and compiler) as a Python extension; use the kiln package.";
  m.attr("__version__") = kiln::runtime::Version();
  // The types live as long as the interpreter (the references are kept on purpose).
  static PyObject* const error = py::exception<kiln::runtime::Error>(m, "KilnError", PyExc_RuntimeError).inc_ref().ptr();
  static PyObject* const internal =
      py::exception<kiln::runtime::InternalError>(m, "InternalError", error).inc_ref().ptr();
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const kiln::runtime::InternalError& e) {
      Raise(internal, e);
    } catch (const kiln::runtime::Error& e) {
      Raise(error, e);
    }
  });
  kiln::python::RegisterRuntime(m);
  kiln::python::RegisterCompiler(m);
}
