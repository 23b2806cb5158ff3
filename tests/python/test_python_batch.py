"""A batch dimension decided at run time (kiln compile --dims N=MIN..MAX, from_onnx(dims=...)):
one library runs every batch in range, each against ONNX Runtime at that batch; batches out of
range, inputs that disagree and ops that mix samples are clear errors; the graph JSON says what
TVM's runtime must refuse."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln import graph_executor, runtime

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import model_suite  # noqa: E402
from python_api_models import self_attention  # noqa: E402

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")
RNG = np.random.default_rng(7)


def weight(name, *shape, scale=0.3):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def save(tmp_path, nodes, inputs, outputs, inits, opset=17, name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model)
    path = tmp_path / name
    onnx.save(model, path)
    return path


def cnn(tmp_path, batch="N"):
    """Conv + BatchNorm-free ReLU stack, pooling, a classifier and softmax over classes."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    inits = [weight("w1", 24, 3, 3, 3), weight("b1", 24), weight("w2", 40, 24, 3, 3, scale=0.1), weight("b2", 40),
             weight("w3", 10, 40), weight("b3", 10)]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 20, 20])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], inits)


def attention(tmp_path):
    """One self-attention block over [N, S, D] with 2 heads, a residual and LayerNormalization."""
    S, D, H = 6, 8, 2
    nodes = self_attention("x", "y")
    inits = [weight("wq", D, D), weight("wk", D, D), weight("wv", D, D),
             numpy_helper.from_array(np.array([0, 0, H, D // H], np.int64), "heads"),
             numpy_helper.from_array(np.array([0, 0, D], np.int64), "merged"),
             numpy_helper.from_array(np.array(1 / np.sqrt(D // H), np.float32), "scale"),
             weight("gamma", D), weight("beta", D)]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", S, D])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", S, D])], inits)


def compile_cli(model, out, *args):
    result = subprocess.run([KILN, "compile", str(model), "-o", str(out), *args], capture_output=True, text=True)
    return result


def executor(path):
    return graph_executor.GraphModule(runtime.load_module(str(path))["default"](runtime.cpu()))


def ort_run(model, feeds):
    return ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)


def check_batches(tmp_path, model, sample_shape, batches, rtol=1e-4, atol=1e-5, dims="N=1..4"):
    """Compiles `model` (input x of [N, *sample_shape]) with --dims `dims` and runs each batch
    against ONNX Runtime at that batch."""
    result = compile_cli(model, tmp_path / "m.so", "--dims", dims)
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "m.so")
    for n in batches:
        x = RNG.standard_normal((n, *sample_shape)).astype(np.float32)
        m.set_input("x", x)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"x": x})[0], rtol=rtol, atol=atol)


def test_a_cnn_runs_every_batch_in_range_against_onnx_runtime(tmp_path):
    model = cnn(tmp_path)
    result = compile_cli(model, tmp_path / "m.so", "--dims", "N=1..5")
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "m.so")
    shapes, dtypes = m.get_input_info()
    assert shapes == {"x": (-1, 3, 20, 20)} and dtypes == {"x": "float32"}
    assert list(m.get_output_info()[0].values()) == [(-1, 10)]
    for n in [1, 5, 2, 3, 1, 4]:  # growing and shrinking
        x = RNG.standard_normal((n, 3, 20, 20)).astype(np.float32)
        m.set_input("x", x)
        m.run()
        y = m.get_output(0).numpy()
        assert y.shape == (n, 10)
        np.testing.assert_allclose(y, ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-5)
    inspected = subprocess.run([KILN, "inspect", str(tmp_path / "m.so")], capture_output=True, text=True).stdout
    assert "Batch dimension: N from 1 to 5" in inspected and "float32[N, 3, 20, 20]" in inspected
    assert "float32[N, 10]" in inspected


def test_the_python_api_names_the_batch_in_shape_dict_and_runs_zero_copy(tmp_path):
    model = cnn(tmp_path, batch=1)  # a model of batch 1: the name comes from shape_dict
    mod, params = kiln.frontend.from_onnx(str(model), {"x": ("B", 3, 20, 20)}, dims={"B": (2, 3)})
    lib = kiln.build(mod, target="llvm", params=params)
    lib.export_library(str(tmp_path / "m.so"))
    m = executor(tmp_path / "m.so")
    x = RNG.standard_normal((3, 3, 20, 20)).astype(np.float32)
    aligned = kiln.nd.empty((3, 3, 20, 20), "float32")
    aligned.copyfrom(x)
    m.module["set_input_zero_copy"]("x", aligned)
    m.run()
    want = np.concatenate([ort_run(model, {"x": x[i:i + 1]})[0] for i in range(3)])
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(kiln.KilnError, match="dimension 0 is 1, which is not B with B from 2 to 3"):
        m.set_input("x", x[:1])


def test_batches_out_of_range_and_other_shapes_are_errors_that_change_nothing(tmp_path):
    model = cnn(tmp_path)
    assert compile_cli(model, tmp_path / "m.so", "--dims", "N=2..4").returncode == 0
    m = executor(tmp_path / "m.so")
    x = RNG.standard_normal((3, 3, 20, 20)).astype(np.float32)
    m.set_input("x", x)
    for bad, message in [(np.zeros((1, 3, 20, 20), np.float32), "dimension 0 is 1, which is not N with N from 2 to 4"),
                         (np.zeros((5, 3, 20, 20), np.float32), "dimension 0 is 5, which is not N with N from 2 to 4"),
                         (np.zeros((3, 3, 20, 21), np.float32), r"expected float32\[N, 3, 20, 20\] with N from 2 to 4"),
                         (np.zeros((3, 3, 20, 20), np.float64), r"expected float32\[N, 3, 20, 20\]")]:
        with pytest.raises(kiln.KilnError, match=message):
            m.set_input("x", bad)
    m.run()  # the input set before the errors is still there
    np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_outputs_keep_the_last_runs_batch_until_the_next_run(tmp_path):
    """set_input with another batch changes nothing the last run gave: get_output keeps its shape
    and values until run; an output bound to a buffer of another batch is a clear error at run."""
    model = cnn(tmp_path)
    assert compile_cli(model, tmp_path / "m.so", "--dims", "N=1..4").returncode == 0
    m = executor(tmp_path / "m.so")
    x2 = RNG.standard_normal((2, 3, 20, 20)).astype(np.float32)
    m.set_input("x", x2)
    m.run()
    y2 = m.get_output(0).numpy().copy()
    x4 = RNG.standard_normal((4, 3, 20, 20)).astype(np.float32)
    m.set_input("x", x4)
    assert m.get_input("x").numpy().shape == (4, 3, 20, 20)
    np.testing.assert_array_equal(m.get_output(0).numpy(), y2)
    bound = kiln.nd.empty((2, 10), "float32")
    m.module["set_output_zero_copy"](0, bound)
    with pytest.raises(kiln.KilnError, match="output 0 is bound to a buffer of 2 samples, but the inputs hold 4"):
        m.run()
    assert m.get_output(0).numpy().shape == (2, 10)  # the bound buffer, as the last run shaped it
    m.set_input("x", x2)
    m.run()
    np.testing.assert_allclose(bound.numpy(), ort_run(model, {"x": x2})[0], rtol=1e-4, atol=1e-5)


def test_batched_inputs_must_agree(tmp_path):
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("MatMul", ["s", "w"], ["y"])]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 4]) for n in "ab"],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], [weight("w", 4, 3)])
    assert compile_cli(model, tmp_path / "m.so", "--dims", "N=1..8").returncode == 0
    m = executor(tmp_path / "m.so")
    a, b = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal((2, 4)).astype(np.float32)
    m.set_input("a", a)
    m.set_input("b", b)
    with pytest.raises(kiln.KilnError, match="input 'a' holds 3 samples of batch dimension N and input 'b' 2"):
        m.run()
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    m.set_input("b", b)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"a": a, "b": b})[0], rtol=1e-5, atol=1e-6)


def squeeze_excitation(tmp_path, batch="N"):
    """A squeeze-and-excitation block before a 1x1 projection (EfficientNet's, RegNetY's): each
    image's channels scaled by a gate computed from that image."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["g"]),
        helper.make_node("Conv", ["g", "w2", "b2"], ["squeezed"]), helper.make_node("Relu", ["squeezed"], ["r"]),
        helper.make_node("Conv", ["r", "w3", "b3"], ["e"]), helper.make_node("Sigmoid", ["e"], ["gate"]),
        helper.make_node("Mul", ["c", "gate"], ["scaled"]),
        helper.make_node("Conv", ["scaled", "w4", "b4"], ["y"]),
    ]
    inits = [weight("w1", 16, 3, 3, 3), weight("b1", 16), weight("w2", 4, 16, 1, 1), weight("b2", 4),
             weight("w3", 16, 4, 1, 1), weight("b3", 16), weight("w4", 8, 16, 1, 1), weight("b4", 8)]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 12, 12])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8, 12, 12])], inits,
                name=f"se_{batch}.onnx")


def test_each_image_keeps_its_own_squeeze_excitation_gate(tmp_path):
    """With a fixed batch of 1 the gate moves into the projection's weight (FoldScaleAxis); with
    a batch decided at run time it must not (the weight would be one image's), and each batch
    matches ONNX Runtime."""
    fixed = squeeze_excitation(tmp_path, batch=1)
    result = compile_cli(fixed, tmp_path / "fixed.so")
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "fixed.so")
    x = RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(fixed, {"x": x})[0], rtol=1e-4, atol=1e-5)
    def functions(lib):
        return subprocess.run([KILN, "inspect", str(lib)], capture_output=True, text=True).stdout

    inspected = functions(tmp_path / "fixed.so")  # the gate scales the weight, not the feature map
    assert "(nn.conv2d,add,sigmoid)" in inspected and "(reshape,multiply,layout_transform)" in inspected, inspected
    check_batches(tmp_path, squeeze_excitation(tmp_path), (3, 12, 12), [3, 1, 4, 2])
    assert "(nn.conv2d,add,sigmoid,multiply)" in functions(tmp_path / "m.so")


def test_a_per_sample_scale_after_a_convolution_stays_per_sample(tmp_path):
    """A convolution whose output is scaled per channel by a second input (FiLM-style
    conditioning) takes the scale into its epilogue; with a batch decided at run time each image
    has its own scale, so the library must not run the batch as one call reading the first
    image's."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c", "s"], ["y"])]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8]),
                                   helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N", 16, 1, 1])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, 8, 8])],
                 [weight("w", 16, 3, 3, 3), weight("b", 16)], name="film.onnx")
    result = compile_cli(model, tmp_path / "m.so", "--dims", "N=1..4")
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "m.so")
    for n in [3, 1, 4]:
        feeds = {"x": RNG.standard_normal((n, 3, 8, 8)).astype(np.float32),
                 "s": RNG.standard_normal((n, 16, 1, 1)).astype(np.float32)}
        for name, value in feeds.items():
            m.set_input(name, value)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, feeds)[0], rtol=1e-4, atol=1e-5)


def test_attention_keeps_samples_apart(tmp_path):
    check_batches(tmp_path, attention(tmp_path), (6, 8), [4, 1, 3])


def test_pieces_joined_per_sample_and_a_token_expanded_to_the_batch(tmp_path):
    """ViT's class token: expanded to the batch by shape arithmetic (folded to one sample at
    import) and joined with each sample's patches along axis 1; then a join of two batched pieces."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "tail"], ["token_shape"], axis=0),
        helper.make_node("Expand", ["token", "token_shape"], ["tokens"]),
        helper.make_node("Concat", ["tokens", "x"], ["joined"], axis=1),
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Concat", ["joined", "r"], ["y"], axis=1),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0"),
             numpy_helper.from_array(np.array([1, 6], np.int64), "tail"), weight("token", 1, 1, 6)]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 9, 6])], inits, opset=13)
    check_batches(tmp_path, model, (4, 6), [3, 1, 4], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("node, shape", [
    (helper.make_node("ReduceMean", ["x"], ["y"], axes=[0], keepdims=1), [1, 4]),
    (helper.make_node("Softmax", ["x"], ["y"], axis=0), ["N", 4]),
    (helper.make_node("Concat", ["x", "x"], ["y"], axis=0), ["2N", 4]),
    (helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0]), [4, "N"]),
])
def test_ops_that_mix_samples_make_the_dimension_a_shape_dimension(tmp_path, node, shape):
    """An op that does not keep the samples apart: N is not a batch (run sample by sample) but a
    shape dimension (the model compiled at several values of N), and the library computes what
    ONNX Runtime does at every N."""
    model = save(tmp_path, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [], opset=13)
    # (N = 1..6: a range of 1..4 checks its fit at N = 1, where a transpose of [1, 4] is a reshape and
    # the graph differs; that is refused, test_python_shapes.py)
    check_batches(tmp_path, model, (4,), [4, 1, 6, 3], rtol=1e-5, atol=1e-6, dims="N=1..6")
    inspected = subprocess.run([KILN, "inspect", str(tmp_path / "m.so")], capture_output=True, text=True).stdout
    assert "Shape dimension: N in 1..6" in inspected and "Batch dimension" not in inspected, inspected


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype), name)


# Models whose ops combine samples in ways a shape at one sample does not show (found in review):
# each would give wrong values if run sample by sample; none is a batch, and each runs with N as a
# shape dimension or is refused naming why it is neither.
MIXING_MODELS = {
    # [N, 3, 4] -> [3, N, 4] -> [3N, 4]: the rows interleave the samples; a softmax over them.
    "interleaved": ([helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                     helper.make_node("Reshape", ["t", "rows"], ["r"]),
                     helper.make_node("Softmax", ["r"], ["s"], axis=0, name="interleaved"),
                     helper.make_node("Reshape", ["s", "back"], ["b"]),
                     helper.make_node("Transpose", ["b"], ["y"], perm=[1, 0, 2])],
                    ["N", 3, 4], [const("rows", [-1, 4]), const("back", [3, -1, 4])],
                    "'interleaved' (Softmax)) does not keep the samples apart (it works along the samples' axis)"),
    # [N, 4] -> [1, 4N]: a softmax over all samples' features.
    "flattened": ([helper.make_node("Flatten", ["x"], ["f"], axis=0),
                   helper.make_node("Softmax", ["f"], ["s"], axis=1),
                   helper.make_node("Reshape", ["s", "back"], ["y"])],
                  ["N", 4], [const("back", [-1, 4])], "the model's graph changes with the batch size at call of"),
    # Every sample with every other: an outer sum.
    "outer sum": ([helper.make_node("Unsqueeze", ["x", "one"], ["a"]), helper.make_node("Unsqueeze", ["x", "zero"], ["b"]),
                   helper.make_node("Add", ["a", "b"], ["o"]), helper.make_node("Reshape", ["o", "flat"], ["y"])],
                  ["N", 4], [const("one", [1]), const("zero", [0]), const("flat", [-1, 4])],
                  "two axes that grow with the batch"),
    # The batch size used as data.
    "divided by N": ([helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "zero0"], ["n"]),
                      helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
                      helper.make_node("Div", ["x", "nf"], ["y"])],
                     ["N", 4], [const("zero0", 0)], "takes a value computed from the batch size as data"),
    # MaxPool's indices count every sample's elements before it.
    "pool indices": ([helper.make_node("MaxPool", ["x"], ["v", "y"], kernel_shape=[2, 2], strides=[2, 2])],
                     ["N", 2, 4, 4], [], "kiln has no rule yet for how it treats the samples"),
}


def test_rows_that_interleave_the_samples_run(tmp_path):
    """torch's nn.MultiheadAttention: [N, S, D] -> [S, N, D] -> [S * N, D] (the samples inside the
    rows' index, not its outer part), a product per row, and back to [N, S, E]."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Reshape", ["t", "rows"], ["r"]),
             helper.make_node("MatMul", ["r", "w"], ["p"]),
             helper.make_node("Relu", ["p"], ["q"]),
             helper.make_node("Reshape", ["q", "back"], ["b"]),
             helper.make_node("Transpose", ["b"], ["y"], perm=[1, 0, 2])]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 2])],
                 [const("rows", [-1, 4]), const("back", [3, -1, 2]), weight("w", 4, 2)], opset=13)
    check_batches(tmp_path, model, (3, 4), [3, 1, 4], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", sorted(MIXING_MODELS))
def test_models_that_combine_samples_run_with_a_shape_dimension_or_are_refused(tmp_path, case):
    """Each is refused as a batch; as a shape dimension each runs as ONNX Runtime does at every N,
    but the batch size used as data (a constant of every sample's value), which is refused naming
    both reasons."""
    nodes, shape, inits, why = MIXING_MODELS[case]
    out_type = TensorProto.INT64 if case == "pool indices" else TensorProto.FLOAT
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", out_type, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, tmp_path / "model.onnx")
    if case == "divided by N":
        result = compile_cli(tmp_path / "model.onnx", tmp_path / "m.so", "--dims", "N=1..6")
        assert result.returncode != 0
        assert "compiled as a shape dimension, since as a batch" in result.stderr and why in result.stderr, result.stderr
        return
    check_batches(tmp_path, tmp_path / "model.onnx", tuple(shape[1:]), [4, 1, 6], rtol=1e-5, atol=1e-6, dims="N=1..6")


def test_samples_moved_off_axis_0_and_back(tmp_path):
    """torch's sequence-first attention: [N, S, D] -> [S, N, D], a product per token and a
    softmax over the sequence, then back to [N, S, D]; computing each sample alone is the same."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["t", "w"], ["h"]),
        helper.make_node("Softmax", ["h"], ["p"], axis=0),  # over the sequence, axis 0 here
        helper.make_node("Transpose", ["p"], ["y"], perm=[1, 0, 2]),
    ]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5, 3])], [weight("w", 6, 3)], opset=13)
    check_batches(tmp_path, model, (5, 6), [3, 1], rtol=1e-5, atol=1e-6)
    # A softmax over the axis the samples were moved to mixes them.
    nodes[2] = helper.make_node("Softmax", ["h"], ["p"], axis=1, name="over_samples")
    mixed = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5, 3])], [weight("w", 6, 3)], opset=13,
                 name="mixed.onnx")
    check_batches(tmp_path, mixed, (5, 6), [3, 1, 6], rtol=1e-5, atol=1e-6, dims="N=1..6")  # a shape dimension


@pytest.mark.parametrize("args, message", [
    (["--dims", "N=4..2"], "the range of 'N' is 4..2"),
    (["--dims", "N=0..2"], "the range of 'N' is 0..2"),
    (["--dims", "N=1-2"], "--dims: expected NAME=MIN..MAX"),
    (["--dims", "M=1..2"], "--dims names 'M', which no input of the model has"),
    # A dimension that is not axis 0 is a shape dimension (test_python_shapes.py): this model has no
    # 1-row images.
    (["--input-shapes", "x:[1,3,H,20]", "--dims", "H=1..2"], "imported at H = 1"),
    (["--input-shapes", "x:[1,3,2x,20]"], "dimension '2x' of 'x' is neither a whole number nor a name"),
    (["--input-shapes", "x:[1,3,99999999999999999999,20]"], "dimension '99999999999999999999' of 'x' is too large"),
    (["--dims", "N=1..99999999999999999999"], "--dims: expected NAME=MIN..MAX"),
])
def test_command_line_mistakes_are_clear_errors(tmp_path, args, message):
    result = compile_cli(cnn(tmp_path), tmp_path / "m.so", *args)
    assert result.returncode != 0 and message in result.stderr, result.stderr


def test_leading_zeros_on_the_command_line_are_not_counted_as_digits(tmp_path):
    """A bound or a dimension is at most 9 digits, its leading zeros not counted, in both options."""
    model = cnn(tmp_path, batch=1)
    args = ["--input-shapes", "x:[N,0000000003,20,0020]", "--dims", "N=0000000001..000000000004"]
    result = compile_cli(model, tmp_path / "m.so", *args)
    assert result.returncode == 0, result.stderr
    assert "Batch dimension: N from 1 to 4" in subprocess.run([KILN, "inspect", str(tmp_path / "m.so")],
                                                                capture_output=True, text=True).stdout
    result = compile_cli(model, tmp_path / "m.so", "--dims", "N=1..0001000000000")
    assert result.returncode != 0 and "--dims: expected NAME=MIN..MAX" in result.stderr, result.stderr


def test_the_graph_json_marks_what_tvm_must_refuse(tmp_path):
    """TVM v0.19's graph executor skips unknown graph attributes only when they are list_int or
    size_t and aborts on others ("cannot skip graph attr kiln_batch_dim"): a batched library is
    refused there, never run with its largest shape misread as fixed."""
    out = tmp_path / "tvmc"
    assert compile_cli(cnn(tmp_path), out, "--dims", "N=1..6", "--format", "tvmc").returncode == 0
    graph = json.loads((out / "mod.json").read_text())
    assert graph["attrs"]["kiln_batch_dim"] == ["list_str", ["N", "1", "6"]]
    flags = graph["attrs"]["kiln_batch_entries"]
    assert flags[0] == "list_int" and len(flags[1]) == len(graph["attrs"]["shape"][1])
    entry = {graph["nodes"][n]["name"]: graph["node_row_ptr"][n] for n in graph["arg_nodes"]}["x"]
    assert flags[1][entry] == 1 and graph["attrs"]["shape"][1][entry] == [6, 3, 20, 20]  # planned for the largest
    head = graph["node_row_ptr"][graph["heads"][0][0]]
    assert flags[1][head] == 1 and graph["attrs"]["shape"][1][head] == [6, 10]
    weights = [graph["node_row_ptr"][n] for n in graph["arg_nodes"] if graph["nodes"][n]["name"] != "x"]
    assert weights and all(flags[1][e] == 0 for e in weights)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_suite_models_exported_for_one_sample_run_batches(tmp_path, name):
    """The suite's models are exported with a batch of 1; those whose graph holds at any batch
    (nothing fixed to one sample) run 2 samples with a batch dimension, each as ONNX Runtime runs it
    alone (the suite's rule: max|kiln - ort| <= 1e-4 * max(1, max|ort|))."""
    path = model_suite.model_path(name)
    model = onnx.load(str(path), load_external_data=False)
    feeds = model_suite.seeded_inputs(model)
    (input_name, one), = feeds.items()
    spec = f"{input_name}:[N,{','.join(map(str, one.shape[1:]))}]"
    result = compile_cli(path, tmp_path / "m.so", "--input-shapes", spec, "--dims", "N=1..3")
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "m.so")
    x = np.concatenate([one, np.flip(one, axis=-1)])
    m.set_input(input_name, x)
    m.run()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = np.concatenate([session.run(None, {input_name: x[i:i + 1]})[0] for i in range(2)])
    got = m.get_output(0).numpy()
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max())


def test_a_model_fixed_to_one_sample_is_refused_with_the_reason(tmp_path):
    """The suite's BERT encoder reshapes to [1, 128, 12, 64], a batch of 1 written into the model:
    whether it keeps samples apart cannot be told, so it is refused, saying where it fails."""
    path = model_suite.model_path("bert_2layer")
    result = compile_cli(path, tmp_path / "m.so", "--input-shapes", "input_ids:[N,128]", "--dims", "N=1..3")
    assert result.returncode != 0
    assert ("imported for a batch of 2 (to find where each value holds the samples), the model fails: node "
            "'/layers.0/Reshape' (Reshape)") in result.stderr, result.stderr
