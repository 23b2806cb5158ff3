"""Bring your own codegen from the command line: `kiln compile --byoc ccompiler` hands what the
codegen runs to it, and the library gives ONNX Runtime's outputs; `kiln inspect` shows the module
tree and the ops of each external function; unknown and disabled codegens are clear errors."""
import os
import re
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_cli import KILN, kiln, kiln_has_dnnl, save


def mlp(path, rng):
    """A two-layer perceptron (Gemm with transposed weights, Relu, Gemm, Sigmoid)."""
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)
             for name, shape in (("w1", (16, 8)), ("b1", (16,)), ("w2", (4, 16)), ("b2", (4,)))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["o"], transB=1), helper.make_node("Sigmoid", ["o"], ["y"])]
    return save(path.parent, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], inits, name=path.name), {"x": (3, 8)}


def gated(path, rng):
    """Elementwise work around a softmax the codegen does not run: x * scale (per channel) + bias,
    tanh, then softmax on the host, then the gate multiplied back in and the max with x."""
    inits = [numpy_helper.from_array(rng.standard_normal((1, 4, 1, 1)).astype(np.float32), "scale"),
             numpy_helper.from_array(rng.standard_normal((4, 1, 1)).astype(np.float32), "bias")]
    nodes = [helper.make_node("Mul", ["x", "scale"], ["s"]), helper.make_node("Add", ["s", "bias"], ["a"]),
             helper.make_node("Tanh", ["a"], ["t"]), helper.make_node("Softmax", ["t"], ["g"], axis=1),
             helper.make_node("Mul", ["g", "a"], ["m"]), helper.make_node("Max", ["m", "x"], ["y"])]
    return save(path.parent, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 5])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3, 5])], inits, name=path.name), {"x": (2, 4, 3, 5)}


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


def test_a_batch_dimension_in_an_external_function_is_a_clear_error(tmp_path):
    """External functions are compiled for fixed shapes: a batch decided at run time that reaches
    one is refused at compile time, saying what to do, and no library is written; the same model
    without the codegen compiles with the batch dimension."""
    scale = numpy_helper.from_array(np.random.default_rng(3).standard_normal((1, 4, 1, 1)).astype(np.float32), "scale")
    nodes = [helper.make_node("Mul", ["x", "scale"], ["s"]), helper.make_node("Max", ["s", "x"], ["y"])]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 3, 5])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 3, 5])], [scale], name="scaled.onnx")
    lib = tmp_path / "m.so"
    failed = kiln("compile", model, "--byoc", "ccompiler", "--dims", "N=1..4", "-o", lib, check=False)
    assert failed.returncode != 0
    assert ("the batch dimension cannot be decided at run time in a function of the external codegen 'ccompiler' "
            "(fixed shapes only): compile without --byoc, or with a fixed batch") in failed.stderr, failed.stderr
    assert not lib.exists()
    kiln("compile", model, "--dims", "N=1..4", "-o", lib)
    assert "float32[N, 4, 3, 5]" in kiln("inspect", lib).stdout


def test_a_dnnl_library_runs_from_a_c_program(tmp_path):
    """examples/minimal.c (TVM's C API only) loads a library whose dense layer runs in oneDNN:
    libkiln_runtime loads libkiln_dnnl on its own."""
    if not kiln_has_dnnl():
        pytest.skip("this kiln is built without oneDNN (KILN_USE_DNNL=OFF)")
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.abs(rng.standard_normal((4, 8))).astype(np.float32) * 0.1, "w"),
             numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "b")]
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])]
    model, _ = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits), None
    kiln("compile", model, "--byoc", "dnnl", "-o", tmp_path / "m.so")
    assert "dnnl_json tvmgen_default_dnnl_main_0: dnnl.dense_bias_relu" in kiln("inspect", tmp_path / "m.so").stdout
    program = os.path.join(os.path.dirname(KILN), "minimal_c")
    ran = subprocess.run([program, str(tmp_path / "m.so")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 8)  # what minimal.c feeds
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = float(re.search(r"first value (\S+)", ran.stdout).group(1))
    assert want[0, 0] > 0.1  # not clipped by the relu
    assert abs(got - want[0, 0]) <= 1e-5 * max(1.0, abs(want[0, 0])), (ran.stdout, want)
