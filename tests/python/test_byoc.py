"""Bring your own codegen from the command line: `kiln compile --byoc ccompiler` hands what the
codegen runs to it, and the library gives ONNX Runtime's outputs; `kiln inspect` shows the module
tree and the ops of each external function; unknown and disabled codegens are clear errors."""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")


def kiln(*args, check=True):
    result = subprocess.run([KILN, *map(str, args)], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"kiln {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result


def save(path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8), path)
    return path


def mlp(path, rng):
    """A two-layer perceptron (Gemm with transposed weights, Relu, Gemm, Sigmoid)."""
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)
             for name, shape in (("w1", (16, 8)), ("b1", (16,)), ("w2", (4, 16)), ("b2", (4,)))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["o"], transB=1), helper.make_node("Sigmoid", ["o"], ["y"])]
    return save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], inits), {"x": (3, 8)}


def gated(path, rng):
    """Elementwise work around a softmax the codegen does not run: x * scale (per channel) + bias,
    tanh, then softmax on the host, then the gate multiplied back in and the max with x."""
    inits = [numpy_helper.from_array(rng.standard_normal((1, 4, 1, 1)).astype(np.float32), "scale"),
             numpy_helper.from_array(rng.standard_normal((4, 1, 1)).astype(np.float32), "bias")]
    nodes = [helper.make_node("Mul", ["x", "scale"], ["s"]), helper.make_node("Add", ["s", "bias"], ["a"]),
             helper.make_node("Tanh", ["a"], ["t"]), helper.make_node("Softmax", ["t"], ["g"], axis=1),
             helper.make_node("Mul", ["g", "a"], ["m"]), helper.make_node("Max", ["m", "x"], ["y"])]
    return save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 5])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3, 5])], inits), {"x": (2, 4, 3, 5)}


def test_ccompiler_models_match_onnxruntime(tmp_path):
    rng = np.random.default_rng(0)
    for name, make in (("mlp", mlp), ("gated", gated)):
        model, shapes = make(tmp_path / f"{name}.onnx", rng)
        lib = tmp_path / f"{name}.so"
        kiln("compile", model, "--byoc", "ccompiler", "-o", lib)
        feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
        np.savez(tmp_path / "in.npz", **feeds)
        kiln("run", lib, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz")
        want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output_0"], want, rtol=1e-5, atol=1e-6,
                                   err_msg=name)
        inspected = kiln("inspect", lib).stdout
        assert "GraphExecutorFactory\n    const_loader\n" in inspected, inspected
        assert "tvmgen_default_ccompiler_main_0" in inspected, inspected
    # The gated model: two regions around the host's softmax.
    assert "tvmgen_default_ccompiler_main_1 (multiply,maximum)" in inspected, inspected


def test_small_regions_stay_on_the_host(tmp_path):
    model, _ = gated(tmp_path / "gated.onnx", np.random.default_rng(1))
    kiln("compile", model, "--byoc", "ccompiler", "--byoc-min-ops", "4", "-o", tmp_path / "m.so")
    inspected = kiln("inspect", tmp_path / "m.so").stdout
    assert "ccompiler" not in inspected and "const_loader" not in inspected, inspected


def test_unknown_and_disabled_codegens_are_clear_errors(tmp_path):
    model, _ = mlp(tmp_path / "mlp.onnx", np.random.default_rng(2))
    failed = kiln("compile", model, "--byoc", "nope", "-o", tmp_path / "m.so", check=False)
    assert failed.returncode != 0
    assert "there is no external codegen 'nope' (known: dnnl, ccompiler)" in failed.stderr, failed.stderr
