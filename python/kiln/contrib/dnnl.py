"""The oneDNN external codegen: convolutions with their post-ops, dense layers, batched matmuls,
pooling, softmax, layer norm and elementwise ops run in oneDNN (libkiln_dnnl)."""
from typing import Any, Mapping, Optional

from ..build_module import IRModule


def partition_for_dnnl(mod: IRModule, params: Optional[Mapping[str, Any]] = None, min_region_ops: int = 1) -> IRModule:
    """TVM's tvm.relay.op.contrib.dnnl.partition_for_dnnl: the model with what oneDNN runs in
    external functions for the dnnl codegen."""
    from . import partition_for
    return partition_for(mod, "dnnl", params, min_region_ops)
