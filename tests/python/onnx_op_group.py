"""The builder of the frontend's op cases (onnx_op_cases.py, onnx_op_cases_layers.py): a Group
collects variants of one op family (inputs, initializers, nodes, outputs) and makes one ONNX model
of them, so one `kiln compile` covers them all. Inputs are seeded random per group."""
import zlib

import numpy as np
from onnx import helper, numpy_helper


class Group:
    """Collects variants: graph inputs, initializers, nodes and outputs, then makes a model."""

    def __init__(self, name, opset=14, rtol=1e-5):
        self.name, self.opset, self.rtol = name, opset, rtol
        self.inputs, self.inits, self.nodes, self.outputs, self.feeds = [], [], [], [], {}
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))  # the same inputs on every run
        self.count = 0

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def input(self, shape, dtype=np.float32, low=None, high=None, values=None):
        name = self.fresh("in")
        if values is None:
            if np.issubdtype(dtype, np.floating):
                values = self.rng.standard_normal(shape) if low is None else self.rng.uniform(low, high, shape)
            else:
                values = self.rng.integers(low if low is not None else -5, high if high is not None else 5, shape)
        values = np.asarray(values).astype(dtype)
        self.feeds[name] = values
        self.inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(values.dtype), values.shape))
        return name

    def const(self, values, dtype=np.float32):
        name = self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.asarray(values).astype(dtype), name))
        return name

    def weight(self, shape):
        return self.const(self.rng.standard_normal(shape) * 0.5)

    def node(self, op, inputs, n_outputs=1, output=True, **attrs):
        outs = [self.fresh("out") for _ in range(n_outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.fresh(op), **attrs))
        if output:
            for o in outs:
                self.outputs.append(helper.make_empty_tensor_value_info(o))
        return outs[0] if n_outputs == 1 else outs

    def model(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], ir_version=8)
