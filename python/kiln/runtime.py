"""kiln.runtime: devices, modules and packed functions, params files, and the measurement results
of graph executors (TVM's tvm.runtime)."""
import os
from typing import Any, Dict, Mapping, Optional, Union

from . import _ffi
from ._ffi import BenchmarkResult, Device, Module, NodeTiming, PackedFunc, ProfileReport
from .nd import NDArray, array

__all__ = [
    "BenchmarkResult",
    "Device",
    "Module",
    "NodeTiming",
    "PackedFunc",
    "ProfileReport",
    "cpu",
    "get_global_func",
    "load_module",
    "load_param_dict",
    "save_param_dict",
]

PathLike = Union[str, "os.PathLike[str]"]


def cpu(dev_id: int = 0) -> Device:
    """The CPU device (DLPack device type 1)."""
    return Device(1, dev_id)


def load_module(path: PathLike, fmt: str = "") -> Module:
    """Loads a library written by export_library (kiln's or TVM's) with the modules of its import
    blob; lib["default"](kiln.cpu()) then makes a graph executor module. A library without a blob
    (the mod.so of the three-file form) gives its operators for kiln.graph_executor.create."""
    return _ffi.load_module(os.fspath(path), fmt)


def get_global_func(name: str, allow_missing: bool = False) -> Optional[PackedFunc]:
    """A global packed function of the runtime (e.g. "tvm.graph_executor.create")."""
    function = _ffi.get_global_func(name)
    if function is None and not allow_missing:
        raise ValueError(f"no global function '{name}'")
    return function


def save_param_dict(params: Mapping[str, Any]) -> bytes:
    """The bytes of a params file (TVM's format) holding `params` (kiln arrays, or anything
    kiln.nd.array accepts), in the order given."""
    return _ffi.save_param_dict({k: v if isinstance(v, NDArray) else array(v) for k, v in params.items()})


def load_param_dict(params_bytes: Union[bytes, bytearray]) -> Dict[str, NDArray]:
    """The arrays of a params file, by name, in file order."""
    return _ffi.load_param_dict(bytes(params_bytes))
