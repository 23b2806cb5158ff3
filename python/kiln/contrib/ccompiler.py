"""The ccompiler external codegen: float32 elementwise arithmetic, bias adds and dense layers
emitted as C++ that export_library compiles into the library (TVM's example C codegen)."""
from typing import Any, Mapping, Optional

from ..build_module import IRModule


def partition_for_ccompiler(mod: IRModule, params: Optional[Mapping[str, Any]] = None,
                            min_region_ops: int = 1) -> IRModule:
    """The model with what ccompiler runs in external functions for it."""
    from . import partition_for
    return partition_for(mod, "ccompiler", params, min_region_ops)
