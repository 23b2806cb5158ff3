"""The small ONNX models that the serving tests (Triton's and Ray Serve's) serve, compiled with the
`kiln` command line (env KILN_BIN), and free ports on 127.0.0.1 for their servers."""
import contextlib
import os
import pathlib
import socket
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")


def compile_model(model, out, *extra):
    """Saves the ONNX model beside `out` and compiles it with `kiln compile` (at -O3)."""
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    source = out.parent / (out.name.split(".")[0] + ".onnx")
    onnx.save(model, source)
    result = subprocess.run([KILN, "compile", str(source), "-o", str(out), *extra], capture_output=True, text=True)
    assert result.returncode == 0, f"kiln compile {source} failed:\n{result.stderr}"
    source.unlink()  # the repository holds only what Triton serves


def onnx_model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def mlp(batch, seed=31):
    """y = relu(x @ W + b) [batch, 8] and s = the largest of each row of y [batch, 1], x: [batch, 16];
    weights from the seed."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((16, 8)).astype(np.float32) / 4
    b = rng.standard_normal(8).astype(np.float32) / 4
    return onnx_model(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"]),
         helper.make_node("ReduceMax", ["y"], ["s"], axes=[1], keepdims=1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [batch, 1])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def sequence_model(seed=35):
    """A token model with a batch N and a sequence length S: y = relu(x @ W) * mask [N, S, 8] and
    s = the sum of y over the sequence [N, 8]; x: float32 [N, S, 16], mask: float32 [N, S, 1]."""
    w = np.random.default_rng(seed).standard_normal((16, 8)).astype(np.float32) / 4
    return onnx_model(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Relu", ["xw"], ["r"]),
         helper.make_node("Mul", ["r", "mask"], ["y"]), helper.make_node("ReduceSum", ["y", "axis"], ["s"], keepdims=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", 16]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["N", "S", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "S", 8]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N", 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([1], dtype=np.int64), "axis")])


def int_add():
    """c = a * 3 + b on int64 [1, 5]: two inputs, exact results."""
    three = numpy_helper.from_array(np.array(3, dtype=np.int64), "three")
    return onnx_model(
        [helper.make_node("Mul", ["a", "three"], ["a3"]), helper.make_node("Add", ["a3", "b"], ["c"])],
        [helper.make_tensor_value_info("a", TensorProto.INT64, [1, 5]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [1, 5])],
        [helper.make_tensor_value_info("c", TensorProto.INT64, [1, 5])], [three])


def image(seed=33):
    """y = relu(conv3x3(x) + b) [1, 4, 112, 112], x: float32 [1, 3, 112, 112] (147 KiB: large enough
    that Triton's HTTP frontend hands it over in several buffers)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) / 4
    b = rng.standard_normal(4).astype(np.float32) / 4
    return onnx_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["pre"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["pre"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 112, 112])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 112, 112])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def free_port():
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
