"""kiln: a deep-learning compiler and runtime for CPUs, with a TVM-shaped Python API.

    mod, params = kiln.frontend.from_onnx("model.onnx", shape_dict={"x": (1, 3, 224, 224)})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    lib.export_library("model.so")
    gmod = kiln.graph_executor.GraphModule(kiln.runtime.load_module("model.so")["default"](kiln.cpu()))
    gmod.run(x=numpy_array)
    y = gmod.get_output(0).numpy()

Everything is a thin shell over kiln's C++ library (the extension module kiln._ffi); the library's
errors raise kiln.KilnError (a RuntimeError) with the library's message.
"""
from . import _ffi
from ._ffi import InternalError, KilnError
from . import contrib, frontend, graph_executor, ir, nd, runtime, transform
from .build_module import GraphExecutorFactoryModule, build
from .runtime import Device, cpu

__version__: str = _ffi.__version__

__all__ = [
    "Device",
    "GraphExecutorFactoryModule",
    "InternalError",
    "KilnError",
    "build",
    "contrib",
    "cpu",
    "frontend",
    "graph_executor",
    "ir",
    "nd",
    "runtime",
    "transform",
]
