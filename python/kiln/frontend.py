"""kiln.frontend: model importers (TVM's relay.frontend). The ONNX importer checks the model with
ONNX's checker and shape inference, folds shape computations and names every unsupported node at
once."""
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import _ffi
from ._ffi import IRModule, NDArray

__all__ = ["from_onnx", "supported_onnx_ops"]


def from_onnx(model_or_path: Any, shape_dict: Optional[Mapping[str, Sequence[Union[int, str]]]] = None,
              dims: Optional[Mapping[str, Sequence[int]]] = None) -> Tuple[IRModule, Dict[str, NDArray]]:
    """Imports an ONNX model: an onnx.ModelProto, a path, or the model's serialized bytes.

    shape_dict gives static shapes by input name; it is required for inputs with symbolic
    dimensions unless dims gives their range. dims maps a dimension's name (an ONNX dim_param, or
    a name in shape_dict such as {"x": ("N", 3, 224, 224)}) to its (min, max) or (min, max, step):
    the library then runs any value in range, given at set_input. A dimension that is axis 0 of
    every input that has it is a batch; others (a sequence length, an image's height and width)
    are shape dimensions, the model compiled at several of their values into one library.
    Returns (mod, params) like TVM's relay.frontend.from_onnx with
    freeze_params=True: the initializers are constants inside mod, so params is empty; pass it to
    kiln.build as is.
    """
    shapes: Dict[str, list] = {}
    names: Dict[str, Dict[int, str]] = {}
    for name, shape in (shape_dict or {}).items():
        shapes[str(name)] = [-1 if isinstance(d, str) else int(d) for d in shape]
        named = {axis: d for axis, d in enumerate(shape) if isinstance(d, str)}
        if named:
            names[str(name)] = named
    ranges = {}
    for name, bounds in (dims or {}).items():
        if len(bounds) not in (2, 3):
            raise ValueError(f"dims['{name}'] must be (min, max) or (min, max, step), got {bounds!r}")
        ranges[str(name)] = (int(bounds[0]), int(bounds[1]), int(bounds[2]) if len(bounds) == 3 else 1)
    if isinstance(model_or_path, (str, os.PathLike)):
        mod = _ffi.import_onnx_file(os.fspath(model_or_path), shapes, names, ranges)
    elif isinstance(model_or_path, (bytes, bytearray)):
        mod = _ffi.import_onnx_bytes(bytes(model_or_path), shapes, names, ranges)
    elif hasattr(model_or_path, "SerializeToString"):
        mod = _ffi.import_onnx_bytes(model_or_path.SerializeToString(), shapes, names, ranges)
    else:
        raise TypeError("from_onnx expects an onnx.ModelProto, a path or the model's bytes, got "
                        f"{type(model_or_path).__name__}")
    return mod, {}


def supported_onnx_ops() -> list:
    """The ONNX op types the importer converts; those of other domains than ONNX's as domain.type
    ("com.microsoft.Attention")."""
    return list(_ffi.supported_onnx_ops())
