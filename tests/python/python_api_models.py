"""Small ONNX models (onnx.helper) and references shared by the Python API tests, and PyTorch when
it is installed (the numpy 2 environment has none: Debian's torch 1.13 works only with numpy 1)."""
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed in this environment")

W = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 10


def make_model(nodes, inputs, outputs, inits=(), opset=14):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def value(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def self_attention(x, y):
    """Nodes of self-attention over `x` of [N, S, D] (initializers wq, wk, wv of [D, D]; heads, the
    reshape to [N, S, H, D / H]; merged, back to [N, S, D]; scale), a residual and
    LayerNormalization (gamma, beta) into `y`."""
    return [
        helper.make_node("MatMul", [x, "wq"], ["q"]), helper.make_node("MatMul", [x, "wk"], ["k"]),
        helper.make_node("MatMul", [x, "wv"], ["v"]),
        helper.make_node("Reshape", ["q", "heads"], ["q4"]), helper.make_node("Reshape", ["k", "heads"], ["k4"]),
        helper.make_node("Reshape", ["v", "heads"], ["v4"]),
        helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["s"]), helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["a"], axis=-1), helper.make_node("MatMul", ["a", "vt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "merged"], ["om"]), helper.make_node("Add", ["om", x], ["res"]),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], [y], axis=-1),
    ]


def dense_relu(batch="N"):
    """y = relu(x @ W), x: [batch, 4]; W is an initializer."""
    return make_model([helper.make_node("MatMul", ["x", "w"], ["y0"]), helper.make_node("Relu", ["y0"], ["y"])],
                      [value("x", [batch, 4])], [value("y", [batch, 3])], [numpy_helper.from_array(W, "w")])


def two_inputs_two_outputs():
    """s = relu((a + b) @ W) [2, 3] and d = a - b [2, 4]."""
    return make_model([helper.make_node("Add", ["a", "b"], ["ab"]), helper.make_node("MatMul", ["ab", "w"], ["m"]),
                       helper.make_node("Relu", ["m"], ["s"]), helper.make_node("Sub", ["a", "b"], ["d"])],
                      [value("a", [2, 4]), value("b", [2, 4])], [value("s", [2, 3]), value("d", [2, 4])],
                      [numpy_helper.from_array(W, "w")])


def weights_as_input():
    """y = x @ w with w a graph input (for build's params)."""
    return make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [value("x", [2, 4]), value("w", [4, 3])],
                      [value("y", [2, 3])])


def ort_run(model, feeds):
    if isinstance(model, onnx.ModelProto):
        model = model.SerializeToString()
    else:
        model = str(model)
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(got, want):
    """The model suite's tolerance: max|kiln - ort| <= 1e-4 * max(1, max|ort|)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    error = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    bound = 1e-4 * max(1.0, float(np.max(np.abs(want))) if want.size else 0.0)
    assert error <= bound, f"max error {error} > {bound}"


def check_cli_round_trip(kiln, tmp_path, env=None):
    """`kiln compile`, `run` and `inspect` of dense_relu(2) with the command line `kiln` (a path or a
    name on env's PATH), the output checked against ONNX Runtime."""
    def run(*args):
        result = subprocess.run([str(kiln), *map(str, args)], env=env, capture_output=True, text=True)
        assert result.returncode == 0, f"kiln {' '.join(map(str, args))} failed:\n{result.stderr}"
        return result.stdout

    model = dense_relu(2)
    onnx.save(model, tmp_path / "m.onnx")
    x = rand(2, 4)
    np.savez(tmp_path / "in.npz", x=x)
    run("compile", tmp_path / "m.onnx", "-o", tmp_path / "m.so")
    run("run", tmp_path / "m.so", "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz")
    close(np.load(tmp_path / "out.npz")["output_0"], ort_run(model, {"x": x})[0])
    assert "Operator functions: 1 distinct" in run("inspect", tmp_path / "m.so")
