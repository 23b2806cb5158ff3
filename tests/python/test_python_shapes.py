"""Shape dimensions decided at run time (kiln compile --dims S=MIN..MAX[:STEP], from_onnx(dims=...)):
one library runs a transformer at every sequence length and a detector at every image size in
range, each against ONNX Runtime at that shape (odd ones included); values out of range or off
the step, inputs that disagree, and models whose code depends on a dimension otherwise than
through its extents are clear errors; the graph JSON says what TVM's runtime must refuse."""
import json
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln import graph_executor, runtime
from python_api_models import self_attention

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")
RNG = np.random.default_rng(11)


def weight(name, *shape, scale=0.3):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def save(tmp_path, nodes, inputs, outputs, inits, name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    path = tmp_path / name
    onnx.save(model, path)
    return path


def encoder(tmp_path, extra_nodes=(), extra_inits=(), output="y", extra_inputs=()):
    """Token and position embeddings (positions 0..S-1 of a table of 48: a constant whose front the
    library holds), self-attention with 2 heads over [N, S, 16], a residual, LayerNormalization and
    a GELU feed-forward: a BERT layer in miniature."""
    D, H, F, V, P = 16, 2, 32, 50, 48
    nodes = [
        helper.make_node("Gather", ["tokens", "ids"], ["te"]),
        helper.make_node("Shape", ["ids"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["length"]),
        helper.make_node("Range", ["zero", "length", "one"], ["positions"]),
        helper.make_node("Gather", ["table", "positions"], ["pe"]),
        helper.make_node("Add", ["te", "pe"], ["x"]),
        *self_attention("x", "n1"),
        helper.make_node("MatMul", ["n1", "w1"], ["h1"]), helper.make_node("Add", ["h1", "b1"], ["h2"]),
        helper.make_node("Div", ["h2", "sqrt2"], ["h3"]), helper.make_node("Erf", ["h3"], ["h4"]),
        helper.make_node("Add", ["h4", "onef"], ["h5"]), helper.make_node("Mul", ["h2", "h5"], ["h6"]),
        helper.make_node("Mul", ["h6", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w2"], ["f"]), helper.make_node("Add", ["f", "n1"], ["y"]),
        *extra_nodes,
    ]
    inits = [weight("tokens", V, D), weight("table", P, D), ints("one", 1), ints("zero", 0),
             weight("wq", D, D), weight("wk", D, D), weight("wv", D, D),
             ints("heads", [0, 0, H, D // H]), ints("merged", [0, 0, D]),
             numpy_helper.from_array(np.array(1 / np.sqrt(D // H), np.float32), "scale"),
             weight("gamma", D), weight("beta", D), weight("w1", D, F), weight("b1", F), weight("w2", F, D),
             numpy_helper.from_array(np.array(np.sqrt(2), np.float32), "sqrt2"),
             numpy_helper.from_array(np.array(1, np.float32), "onef"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"), *extra_inits]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", "S"]), *extra_inputs],
                [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["N", "S", D])], inits)


def detector(tmp_path):
    """A detector head in miniature: a stride-2 convolution, a depthwise one, a 1x1 to 8 channels,
    an upsampling by 2 (nearest Resize) added to the stride-1 features, a concatenation, a
    transposed convolution back to full size and a sigmoid."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], group=16),
        helper.make_node("Conv", ["c3", "w4", "b4"], ["c4"], strides=[2, 2]),
        helper.make_node("Resize", ["c4", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Conv", ["r2", "w5"], ["lateral"]),
        helper.make_node("Add", ["up", "lateral"], ["merged"]),
        helper.make_node("Concat", ["merged", "r2"], ["cat"], axis=1),
        helper.make_node("ConvTranspose", ["cat", "wt", "bt"], ["full"], strides=[2, 2]),
        helper.make_node("Sigmoid", ["full"], ["y"]),
    ]
    inits = [weight("w1", 8, 3, 3, 3), weight("b1", 8), weight("w2", 16, 8, 3, 3, scale=0.2), weight("b2", 16),
             weight("w3", 16, 1, 3, 3), weight("b3", 16), weight("w4", 8, 16, 1, 1), weight("b4", 8),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             weight("w5", 8, 16, 1, 1), weight("wt", 24, 1, 2, 2), weight("bt", 1)]
    return save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "H", "W"])], inits,
                name="detector.onnx")


def compile_cli(model, out, *args):
    return subprocess.run([KILN, "compile", str(model), "-o", str(out), *args], capture_output=True, text=True)


def executor(path):
    return graph_executor.GraphModule(runtime.load_module(str(path))["default"](runtime.cpu()))


def ort_run(model, feeds):
    return ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.fixture(scope="module")
def encoder_library(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("encoder")
    model = encoder(tmp)
    result = compile_cli(model, tmp / "m.so", "--dims", "N=1..3,S=1..40")
    assert result.returncode == 0, result.stderr
    return model, tmp / "m.so"


def test_encoder_runs_every_sequence_length_against_onnxruntime(encoder_library):
    """Sequence lengths from 1 to the max, odd ones and the max included, with batches of 1 to 3,
    in an order that grows and shrinks the shapes: each against ONNX Runtime (float32, rtol 1e-4,
    atol 1e-5)."""
    model, library = encoder_library
    m = executor(library)
    for n, s in [(1, 40), (2, 7), (1, 1), (3, 23), (1, 40), (2, 2), (3, 39), (1, 16)]:
        ids = RNG.integers(0, 50, size=(n, s)).astype(np.int64)
        m.set_input("ids", ids)
        m.run()
        got = m.get_output(0).numpy()
        want = ort_run(model, {"ids": ids})[0]
        assert got.shape == want.shape == (n, s, 16)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"N={n} S={s}")


def test_encoder_dimensions_by_name_and_out_of_range_errors(encoder_library):
    model, library = encoder_library
    m = executor(library)
    info = json.loads(m._get_input_info())
    assert info["shape"]["ids"] == [-1, -1] and info["dim_names"]["ids"] == ["N", "S"]
    inspect = subprocess.run([KILN, "inspect", str(library)], capture_output=True, text=True)
    assert inspect.returncode == 0, inspect.stderr
    assert "Shape dimension: S in 1..40" in inspect.stdout and "int64[N, S]" in inspect.stdout, inspect.stdout
    good = RNG.integers(0, 50, size=(2, 5)).astype(np.int64)
    m.set_input("ids", good)
    for shape, message in [((1, 41), "dimension 1 is 41, but S in 1..40"), ((1, 0), "dimension 1 is 0, but S in 1..40"),
                           ((4, 5), "dimension 0 is 4"), ((5,), r"expected int64\[N, S\]")]:
        with pytest.raises(kiln.KilnError, match=message):
            m.set_input("ids", np.zeros(shape, np.int64))
    m.run()  # the rejected inputs changed nothing: the last good one runs
    np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"ids": good})[0], rtol=1e-4, atol=1e-5)


def test_the_profiler_runs_at_the_dimensions_the_inputs_give(encoder_library):
    """profile() steps through the operators itself: after an input at S = 40 and one at S = 3,
    it runs at 3 (the output as ONNX Runtime gives it, node shapes at 3)."""
    model, library = encoder_library
    m = executor(library)
    m.set_input("ids", RNG.integers(0, 50, size=(1, 40)).astype(np.int64))
    m.run()
    ids = RNG.integers(0, 50, size=(1, 3)).astype(np.int64)
    m.set_input("ids", ids)
    m.profile(runs=2)
    np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"ids": ids})[0], rtol=1e-4, atol=1e-5)


def test_zero_copy_inputs_and_outputs_take_the_dimensions_too(encoder_library):
    """An input bound at S = 9 and an output bound for S = 9 run; an output bound for another S
    than the inputs give is a clear error at run."""
    model, library = encoder_library
    m = executor(library)
    ids = RNG.integers(0, 50, size=(2, 9)).astype(np.int64)
    bound_ids = kiln.nd.empty((2, 9), "int64")
    bound_ids.copyfrom(ids)
    out = kiln.nd.empty((2, 9, 16), "float32")
    m.module["set_input_zero_copy"]("ids", bound_ids)
    m.module["set_output_zero_copy"](0, out)
    m.run()
    np.testing.assert_allclose(out.numpy(), ort_run(model, {"ids": ids})[0], rtol=1e-4, atol=1e-5)
    m.set_input("ids", RNG.integers(0, 50, size=(2, 5)).astype(np.int64))
    with pytest.raises(kiln.KilnError, match="output 0 is bound to a buffer for S = 9, but the inputs give 5"):
        m.run()
    with pytest.raises(kiln.KilnError, match="dimension 1 is 41, but S in 1..40"):
        m.module["set_output_zero_copy"](0, kiln.nd.empty((2, 41, 16), "float32"))


def test_a_bound_output_whose_extent_is_not_one_dimension_is_checked_at_run(tmp_path):
    """y = relu(x) flattened to [1, 4 * S]: an output bound for S = 1 is refused at a run for
    S = 64 (the buffer does not decide S; it would be written past its end)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "flat"], ["y"])]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "S", 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "F"])], [ints("flat", [1, -1])])
    assert compile_cli(model, tmp_path / "m.so", "--dims", "S=1..64").returncode == 0
    m = executor(tmp_path / "m.so")
    m.set_input("x", RNG.standard_normal((1, 1, 4)).astype(np.float32))
    m.run()
    out = kiln.nd.empty((1, 4), "float32")
    m.module["set_output_zero_copy"](0, out)
    x = RNG.standard_normal((1, 64, 4)).astype(np.float32)
    m.set_input("x", x)
    with pytest.raises(kiln.KilnError, match=r"output 0 is bound to a buffer of shape \[1, 4\], but the inputs give "
                                             r"it \[1, 256\]"):
        m.run()
    large = kiln.nd.empty((1, 256), "float32")  # alive while bound
    m.module["set_output_zero_copy"](0, large)
    m.run()
    np.testing.assert_array_equal(large.numpy(), np.maximum(x, 0).reshape(1, -1))


def test_a_batch_with_empty_samples_keeps_its_batch(tmp_path):
    """x[N, S] without its first column, flattened per sample: at S = 1 each sample is empty, and
    the runs after it still hold every sample."""
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["tail"]),
             helper.make_node("Relu", ["tail"], ["y"])]
    model = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S"])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T"])],
                 [ints("starts", [1]), ints("ends", [1 << 30]), ints("axes", [1])])
    result = compile_cli(model, tmp_path / "m.so", "--dims", "N=1..3,S=1..20")
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "m.so")
    for n, s in [(2, 5), (2, 1), (2, 4), (3, 20)]:
        x = RNG.standard_normal((n, s)).astype(np.float32)
        m.set_input("x", x)
        m.run()
        np.testing.assert_array_equal(m.get_output(0).numpy(), np.maximum(x[:, 1:], 0), err_msg=f"N={n} S={s}")


def test_parameters_whose_extents_vary_load_whole(tmp_path):
    """The tvmc layout's params loaded after a run at a small S (the positions' constant holds all
    40 rows), and again into a fresh executor: both run as ONNX Runtime does."""
    model = encoder(tmp_path)
    out = tmp_path / "tvmc"
    result = compile_cli(model, out, "--input-shapes", "ids:[1,S]", "--dims", "S=1..40", "--format", "tvmc")
    assert result.returncode == 0, result.stderr
    lib = runtime.load_module(str(out / "mod.so"))
    params = (out / "mod.params").read_bytes()
    m = graph_executor.create((out / "mod.json").read_text(), lib, runtime.cpu())
    m.load_params(params)
    for s in (7, 40):
        ids = RNG.integers(0, 50, size=(1, s)).astype(np.int64)
        m.set_input("ids", ids)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"ids": ids})[0], rtol=1e-4, atol=1e-5)
        m.load_params(params)  # after a run at S = 7 too
    # TVM's other forms: set_input(**params), and the parameters bound with zero copy.
    arrays = runtime.load_param_dict(params)
    for bind in (False, True):
        m = graph_executor.create((out / "mod.json").read_text(), lib, runtime.cpu())
        if bind:
            kept = {}
            for name, array in arrays.items():
                kept[name] = kiln.nd.empty(array.shape, str(array.dtype))
                kept[name].copyfrom(array.numpy())
                m.module["set_input_zero_copy"](name, kept[name])
        else:
            m.set_input(**arrays)
        ids = RNG.integers(0, 50, size=(1, 7)).astype(np.int64)
        m.set_input("ids", ids)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"ids": ids})[0], rtol=1e-4, atol=1e-5)


def test_graph_json_says_what_tvm_must_refuse(encoder_library, tmp_path):
    """TVM v0.19's graph executor skips unknown graph attributes only when they are list_int or
    size_t and aborts on others; kiln_dims is a list_str, so TVM refuses such a library instead of
    running its largest shapes as if fixed."""
    model, _ = encoder_library
    out = tmp_path / "tvmc"
    assert compile_cli(model, out, "--dims", "N=1..3,S=1..40", "--format", "tvmc").returncode == 0
    graph = json.loads((out / "mod.json").read_text())
    assert graph["attrs"]["kiln_dims"] == ["list_str", ["S", "1", "40", "1"]]
    kind, extents = graph["attrs"]["kiln_entry_extents"]
    assert kind == "list_str" and len(extents) == len(graph["attrs"]["shape"][1])
    ids_entry = graph["node_row_ptr"][graph["arg_nodes"][0]]
    assert extents[ids_entry] == "1,d0" and graph["attrs"]["shape"][1][ids_entry] == [3, 40]


def test_python_api_builds_shape_dimensions(tmp_path):
    model = encoder(tmp_path)
    mod, params = kiln.frontend.from_onnx(str(model), {"ids": (1, "S")}, dims={"S": (4, 12, 4)})
    assert mod.params == [("ids", (1, "S"), "int64")]
    lib = kiln.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    for s in (4, 8, 12):
        ids = RNG.integers(0, 50, size=(1, s)).astype(np.int64)
        m.set_input("ids", ids)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"ids": ids})[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(kiln.KilnError, match=r"dimension 1 is 6, but S in 4..12 \(step 4\)"):
        m.set_input("ids", np.zeros((1, 6), np.int64))


def test_detector_runs_every_image_size_against_onnxruntime(tmp_path):
    """Heights and widths in steps of 16 (strides 2 and 2 and an upsampling: the extents divide),
    wide, tall and square, each against ONNX Runtime (rtol 1e-4, atol 1e-5)."""
    model = detector(tmp_path)
    result = compile_cli(model, tmp_path / "d.so", "--dims", "H=16..64:16,W=16..64:16")
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "d.so")
    for h, w in [(64, 64), (16, 16), (48, 16), (16, 64), (32, 48), (64, 32)]:
        x = RNG.standard_normal((1, 3, h, w)).astype(np.float32)
        m.set_input("x", x)
        m.run()
        got = m.get_output(0).numpy()
        want = ort_run(model, {"x": x})[0]
        assert got.shape == want.shape == (1, 1, h, w)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{h}x{w}")
    with pytest.raises(kiln.KilnError, match=r"dimension 2 is 40, but H in 16..64 \(step 16\)"):
        m.set_input("x", np.zeros((1, 3, 40, 16), np.float32))


def test_a_range_of_values_the_model_does_not_take_is_refused(tmp_path):
    """Without a step the detector is imported at odd sizes, where its upsampled features do not
    match the others: the error names the values and suggests a step."""
    result = compile_cli(detector(tmp_path), tmp_path / "d.so", "--dims", "H=16..64,W=16..64")
    assert result.returncode != 0
    assert "imported at H = " in result.stderr and "MIN..MAX:STEP" in result.stderr, result.stderr


def test_inputs_that_disagree_on_a_dimension_are_refused(tmp_path):
    """Two inputs of length S: set for different lengths, the run says which disagree."""
    mask = helper.make_node("Mul", ["y", "mask3"], ["masked"])
    unsqueeze = helper.make_node("Unsqueeze", ["mask", "last"], ["mask3"])
    model = encoder(tmp_path, [unsqueeze, mask], [ints("last", [2])], output="masked",
                    extra_inputs=[helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, "S"])])
    assert compile_cli(model, tmp_path / "m.so", "--input-shapes", "ids:[1,S]", "--dims", "S=1..20").returncode == 0
    m = executor(tmp_path / "m.so")
    ids, mask = RNG.integers(0, 50, size=(1, 9)).astype(np.int64), RNG.random((1, 9)).astype(np.float32)
    m.set_input("ids", ids)
    m.set_input("mask", mask)
    m.run()
    want = ort_run(model, {"ids": ids, "mask": mask})[0]
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)
    m.set_input("mask", np.ones((1, 4), np.float32))
    with pytest.raises(kiln.KilnError, match="input 'ids' gives S = 9 and input 'mask' 4"):
        m.run()


def test_a_constant_computed_from_a_dimension_is_refused_unless_a_front(tmp_path):
    """Positions counted backwards (S-1 .. 0) fold to a constant whose value at a smaller S is not
    the front of its value at the max: refused, naming why. (Ones of [S, S] are such a front and
    compile: test_a_causal_mask_runs.)"""
    last = helper.make_node("Sub", ["length", "one"], ["last_position"])
    backwards = helper.make_node("Range", ["last_position", "minus_one", "minus_one"], ["reversed"])
    gather = helper.make_node("Gather", ["table", "reversed"], ["reversed_pe"])
    add = helper.make_node("Add", ["y", "reversed_pe"], ["shifted"])
    model = encoder(tmp_path, [last, backwards, gather, add], [ints("minus_one", -1)], output="shifted")
    result = compile_cli(model, tmp_path / "m.so", "--input-shapes", "ids:[1,S]", "--dims", "S=1..20")
    assert result.returncode != 0
    assert "depends on the shape dimensions other than as the front of its value" in result.stderr, result.stderr


def test_a_causal_mask_runs(tmp_path):
    """A causal mask from the sequence length (Trilu of ConstantOfShape [S, S]) applied to the
    encoder's output, against ONNX Runtime at several lengths."""
    length = helper.make_node("Gather", ["shape", "one_1d"], ["length_1d"])
    square = helper.make_node("Concat", ["length_1d", "length_1d"], ["square"], axis=0)
    ones = helper.make_node("ConstantOfShape", ["square"], ["ones"],
                            value=numpy_helper.from_array(np.array([1], np.float32)))
    causal = helper.make_node("Trilu", ["ones"], ["causal"], upper=0)
    masked = helper.make_node("MatMul", ["causal", "y"], ["masked"])
    model = encoder(tmp_path, [length, square, ones, causal, masked], [ints("one_1d", [1])], output="masked")
    result = compile_cli(model, tmp_path / "m.so", "--input-shapes", "ids:[1,S]", "--dims", "S=1..20")
    assert result.returncode == 0, result.stderr
    m = executor(tmp_path / "m.so")
    for s in (20, 1, 7, 13):
        ids = RNG.integers(0, 50, size=(1, s)).astype(np.int64)
        m.set_input("ids", ids)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), ort_run(model, {"ids": ids})[0], rtol=1e-4, atol=1e-5)


def test_a_graph_that_differs_at_a_checking_value_is_refused(tmp_path):
    """x[S, 4] transposed: at S = 1 the transpose is a reshape, and a range of 1..4 checks its fit
    at 1 (the other three values fit it): refused, naming the values; 1..6 checks at 2 and 3 and
    runs at 1 as ONNX Runtime does."""
    model = save(tmp_path, [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, "S"])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["S", 4])], [])
    result = compile_cli(model, tmp_path / "m.so", "--dims", "S=1..4")
    assert result.returncode != 0 and "the model's graph differs between S = 4 and S = 1" in result.stderr, result.stderr
    assert compile_cli(model, tmp_path / "m.so", "--dims", "S=1..6").returncode == 0
    m = executor(tmp_path / "m.so")
    for s in (1, 6, 4):
        x = RNG.standard_normal((4, s)).astype(np.float32)
        m.set_input("x", x)
        m.run()
        np.testing.assert_array_equal(m.get_output(0).numpy(), x.T)


@pytest.mark.parametrize("args,message", [
    (["--dims", "S=1..40:0"], "the range of 'S' is 1..40:0"),
    (["--dims", "S=1..40:7"], "MAX - MIN a whole number of steps"),
    (["--dims", "S=1..40:x"], "--dims: expected NAME=MIN..MAX or NAME=MIN..MAX:STEP"),
    (["--dims", "N=1..3,S=1..40", "--byoc", "dnnl"], "external codegens take fixed shapes only"),
])
def test_bad_dimension_options_are_clear_errors(tmp_path, args, message):
    result = compile_cli(encoder(tmp_path), tmp_path / "m.so", *args)
    assert result.returncode != 0 and message in result.stderr, result.stderr


@pytest.mark.parametrize("upper", [1, 0])
def test_trilu_takes_k_at_run_time(tmp_path, upper):
    """Trilu's k as a graph input (issue 30, item 4): one library for every k, each against NumPy
    (exact: the elements whose j - i is at least k, or at most, in Python's integers), k inside,
    at and beyond the matrices' extents, up to int64's ends (clamped: every element kept or none,
    no overflow), float32 and int32 data."""
    for dtype, elem in [(np.float32, TensorProto.FLOAT), (np.int32, TensorProto.INT32)]:
        model = save(tmp_path, [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)],
                     [helper.make_tensor_value_info("x", elem, [2, 3, 5]),
                      helper.make_tensor_value_info("k", TensorProto.INT64, [])],
                     [helper.make_tensor_value_info("y", elem, [2, 3, 5])], [], name=f"trilu_{elem}.onnx")
        library = tmp_path / f"trilu_{elem}.so"
        result = compile_cli(model, library)
        assert result.returncode == 0, result.stderr
        m = executor(library)
        x = (RNG.standard_normal((2, 3, 5)) * 10).astype(dtype)
        for k in [0, 2, -1, 4, 5, -2, -3, 7, -9, 2**50, -(2**50), 2**63 - 1, -(2**63)]:
            m.set_input("x", x)
            m.set_input("k", np.array(k, np.int64))
            m.run()
            offset = np.arange(5, dtype=object)[None, :] - np.arange(3, dtype=object)[:, None]  # j - i, exact
            want = np.where((offset >= k) if upper else (offset <= k), x, 0).astype(dtype)
            np.testing.assert_array_equal(m.get_output(0).numpy(), want, err_msg=f"k={k}")


def test_trilu_with_k_at_run_time_over_too_wide_a_matrix_is_a_clear_error(tmp_path):
    """The row and column indices a run-time k is compared with are constants of the matrix's
    extents: beyond what kiln makes at import, the compile says which and how many."""
    model = save(tmp_path, [helper.make_node("Trilu", ["x", "k"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2**27]),
                  helper.make_tensor_value_info("k", TensorProto.INT64, [])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2**27])], [], name="wide_trilu.onnx")
    result = compile_cli(model, tmp_path / "wide.so")
    assert result.returncode != 0
    assert "Trilu" in result.stderr and "the column indices would be a constant of 134217728 elements" in result.stderr, \
        result.stderr
