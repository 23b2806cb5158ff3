"""kiln.ir: a model in kiln's IR (what kiln.frontend.from_onnx returns and kiln.build takes)."""
from ._ffi import IRModule

__all__ = ["IRModule"]
