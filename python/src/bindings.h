// Declarations shared by the binding files of the extension module kiln._ffi: one register
// function per library layer. Each binding calls the C++ library and converts values; none
// holds logic of its own.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::python {

// NDArray (numpy and DLPack exchange), Device, Module, PackedFunc, params files, benchmark and
// profile of graph executors.
void RegisterRuntime(pybind11::module_& m);
// The IR function, the ONNX frontend, PassContext, build and the executor factory.
void RegisterCompiler(pybind11::module_& m);

}  // namespace kiln::python
