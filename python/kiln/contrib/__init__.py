"""Bring your own codegen: partitioning a model for an external codegen before kiln.build, as
TVM users write it.

    mod = kiln.contrib.dnnl.partition_for_dnnl(mod, params)
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)

What the codegen claims becomes external functions whose code travels in the exported library
(oneDNN's runs through libkiln_dnnl; ccompiler's is compiled into the library); the rest stays
on kiln's own code.
"""
from typing import Any, Dict, Mapping, Optional

from .. import _ffi
from ..build_module import IRModule
from ..nd import NDArray, array


def external_codegens() -> Dict[str, bool]:
    """Every external codegen kiln knows, and whether this build has it."""
    return dict(_ffi.external_codegens())


def partition_for(mod: IRModule, codegen: str, params: Optional[Mapping[str, Any]] = None,
                  min_region_ops: int = 1) -> IRModule:
    """Partitions `mod` for `codegen` (TVM's partition_for_<codegen>): params become constants,
    batch norms fold, the codegen's composite patterns merge, and each region of what it runs
    (at least min_region_ops ops) becomes an external function. Raises KilnError for an unknown
    codegen or one this build does not have."""
    bound = [(str(k), v if isinstance(v, NDArray) else array(v)) for k, v in (params or {}).items()]
    return _ffi.partition_for(mod, codegen, bound, int(min_region_ops))


from . import ccompiler, dnnl  # noqa: E402  (they use partition_for)

__all__ = ["ccompiler", "dnnl", "external_codegens", "partition_for"]
