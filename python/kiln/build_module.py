"""kiln.build: optimize, lower and compile a model into an executor factory (TVM's relay.build),
and the factory: export_library, the graph JSON, the params, and lib["default"](dev)."""
import os
from typing import Any, Dict, Mapping, Optional, Union

from . import _ffi
from ._ffi import IRModule, Module, NDArray, PackedFunc
from .nd import array
from .transform import PassContext

__all__ = ["GraphExecutorFactoryModule", "build"]


class GraphExecutorFactoryModule:
    """What kiln.build returns: graph JSON, parameters and compiled operators (TVM's
    GraphExecutorFactoryModule)."""

    def __init__(self, factory: "_ffi.ExecutorFactory") -> None:
        self._factory = factory
        self._module: Optional[Module] = None

    def export_library(self, file_name: Union[str, "os.PathLike[str]"]) -> None:
        """Writes one shared library holding the operators, the graph and the params; load it with
        kiln.runtime.load_module (or TVM's tvm.runtime.load_module)."""
        self._factory.export_library(os.fspath(file_name))

    def export_three_files(self, directory: Union[str, "os.PathLike[str]"]) -> None:
        """Writes tvmc's layout: directory/mod.so (operators), mod.json (graph), mod.params."""
        self._factory.export_three_files(os.fspath(directory))

    def get_graph_json(self) -> str:
        """The graph JSON (TVM's format)."""
        return self._factory.graph_json

    def get_source(self) -> str:
        """The C++ of the compiled operator functions (TVM's lib.get_lib().get_source())."""
        return self._factory.get_source()

    def get_params(self) -> Dict[str, NDArray]:
        """The parameters the graph needs (constants of the optimized model), by name."""
        return dict(self._factory.params)

    @property
    def module(self) -> Module:
        """The factory as a runtime module (the library is linked and loaded on first use)."""
        if self._module is None:
            self._module = self._factory.load()
        return self._module

    def __getitem__(self, name: str) -> PackedFunc:
        """A function of the runtime module: lib["default"](kiln.cpu()) makes a graph executor module."""
        return self.module[name]


def build(mod: IRModule, target: Optional[str] = "cpu", params: Optional[Mapping[str, Any]] = None,
          mod_name: str = "default") -> GraphExecutorFactoryModule:
    """Optimizes (with the current kiln.transform.PassContext), lowers and compiles `mod`.

    target: "cpu" (this machine), "cpu -mcpu=NAME" or "llvm -mcpu=NAME" (e.g. skylake-avx512),
    or an -march name such as "x86-64-v3". params: values for inputs of `mod`, by name (kiln
    arrays or numpy arrays), which become constants (TVM's bind_params_by_name); unknown names
    and mismatched shapes raise KilnError. Compiled objects are cached in ~/.cache/kiln/objects.
    """
    bound = [(str(k), v if isinstance(v, NDArray) else array(v)) for k, v in (params or {}).items()]
    factory = _ffi.build(mod, PassContext.current()._context, target or "cpu", bound, mod_name)
    return GraphExecutorFactoryModule(factory)
