# Whether the Python package can be built here: a Python interpreter with its headers (the one in
# KILN_PYTHON when given, which is what the tests run with) and pybind11. Sets
# KILN_PYTHON_BINDINGS_DEFAULT; under sanitizers and fuzzing the package is not built by default.
if(KILN_PYTHON AND NOT Python_EXECUTABLE)
  set(Python_EXECUTABLE ${KILN_PYTHON})
endif()
find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
if(Python_FOUND)
  find_package(pybind11 CONFIG QUIET)
endif()
set(KILN_PYTHON_BINDINGS_DEFAULT OFF)
if(Python_FOUND AND pybind11_FOUND AND NOT KILN_SANITIZE AND NOT KILN_FUZZ)
  set(KILN_PYTHON_BINDINGS_DEFAULT ON)
endif()
if(SKBUILD AND NOT KILN_PYTHON_BINDINGS_DEFAULT)
  message(FATAL_ERROR "pip install needs pybind11 (Debian: pybind11-dev, installed by `make deps`) and the "
                      "headers of ${Python_EXECUTABLE}")
endif()
