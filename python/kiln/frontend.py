"""kiln.frontend: model importers (TVM's relay.frontend). The ONNX importer checks the model with
ONNX's checker and shape inference, folds shape computations and names every unsupported node at
once."""
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from . import _ffi
from ._ffi import IRModule, NDArray

__all__ = ["from_onnx", "supported_onnx_ops"]


def from_onnx(model_or_path: Any, shape_dict: Optional[Mapping[str, Sequence[int]]] = None
              ) -> Tuple[IRModule, Dict[str, NDArray]]:
    """Imports an ONNX model: an onnx.ModelProto, a path, or the model's serialized bytes.

    shape_dict gives static shapes by input name; it is required for inputs with symbolic
    dimensions. Returns (mod, params) like TVM's relay.frontend.from_onnx with freeze_params=True:
    the initializers are constants inside mod, so params is empty; pass it to kiln.build as is.
    """
    shapes = {str(name): [int(d) for d in shape] for name, shape in (shape_dict or {}).items()}
    if isinstance(model_or_path, (str, os.PathLike)):
        mod = _ffi.import_onnx_file(os.fspath(model_or_path), shapes)
    elif isinstance(model_or_path, (bytes, bytearray)):
        mod = _ffi.import_onnx_bytes(bytes(model_or_path), shapes)
    elif hasattr(model_or_path, "SerializeToString"):
        mod = _ffi.import_onnx_bytes(model_or_path.SerializeToString(), shapes)
    else:
        raise TypeError("from_onnx expects an onnx.ModelProto, a path or the model's bytes, got "
                        f"{type(model_or_path).__name__}")
    return mod, {}


def supported_onnx_ops() -> list:
    """The ONNX op types the importer converts; those of other domains than ONNX's as domain.type
    ("com.microsoft.Attention")."""
    return list(_ffi.supported_onnx_ops())
