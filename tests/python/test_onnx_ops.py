"""Frontend conformance: every op family of onnx_op_cases.py is compiled with `kiln compile`,
run with `kiln run`, and compared with ONNX Runtime on the same seeded random inputs.
Tolerance: |kiln - ort| <= rtol * max(1, max|ort|) per output (rtol per group, 1e-5 or 1e-4);
integer and bool outputs must be equal.

The same groups with their inputs turned into initializers test constant folding (the ops'
reference evaluators, ir/evaluate.h) against ONNX Runtime: groups made only of ops with reference
semantics must fold to no operator call at all."""
import os
import re
import subprocess

import numpy as np
import onnx
import onnx.reference
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_op_cases
from test_cli import kiln_has_dnnl

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")


def run_kiln(tmp_path, model, feeds, flags=()):
    """The outputs of `model` compiled (with `flags`) and run by kiln, and what `kiln compile` printed."""
    model_path, library = tmp_path / "model.onnx", tmp_path / "model.so"
    onnx.save(model, model_path)
    compiled = subprocess.run([KILN, "compile", str(model_path), "-o", str(library), *flags], check=True,
                              capture_output=True, text=True)
    command = [KILN, "run", str(library), "--outputs", str(tmp_path / "out.npz")]
    if feeds:
        np.savez(tmp_path / "in.npz", **feeds)
        command += ["--inputs", str(tmp_path / "in.npz")]
    subprocess.run(command, check=True, capture_output=True, text=True)
    out = np.load(tmp_path / "out.npz")
    return [out[f"output_{i}"] for i in range(len(out.files))], compiled.stderr


def assert_outputs_match(group, model, actual, expected):
    assert len(actual) == len(expected)
    producer = {o: n for n in group.nodes for o in n.output}
    for i, (got, want) in enumerate(zip(actual, expected)):
        node = producer.get(model.graph.output[i].name)
        label = f"output {i} ({node.op_type} {node.name})" if node else f"output {i}"
        assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
        if want.dtype == np.bool_:
            got = got.astype(np.bool_)
        assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != {want.dtype}"
        if np.issubdtype(want.dtype, np.floating):
            bound = group.rtol * max(1.0, float(np.abs(want).max(initial=0)))
            err = float(np.abs(got.astype(np.float64) - want).max(initial=0))
            assert err <= bound, f"{label}: max |kiln - ort| = {err:.3g} > {bound:.3g}"
        else:
            np.testing.assert_array_equal(got, want, err_msg=label)


def integer_sums(node, values):
    """The int32 sums of MatMulInteger (NumPy) or ConvInteger (ONNX's reference, exact in integers)
    for `node`'s operands: values of A (x), B (w), A's zero point, B's zero point; None where absent."""
    a, b, a_zero, b_zero = values
    if node.op_type in ("MatMulInteger", "QLinearMatMul"):
        wide = lambda v: 0 if v is None else v.astype(np.int64)  # noqa: E731
        return np.matmul(wide(a) - wide(a_zero), wide(b) - wide(b_zero)).astype(np.int32)
    # The convolution of (x - x_zero) and (w - w_zero per output channel), with the node's attributes.
    w_zero = None if b_zero is None else b_zero.astype(np.int64).reshape(-1, *[1] * (b.ndim - 1))
    x = (a.astype(np.int64) - (0 if a_zero is None else a_zero.astype(np.int64))).astype(np.int32)
    w = (b.astype(np.int64) - (0 if w_zero is None else w_zero)).astype(np.int32)
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    conv = helper.make_node("Conv", ["x", "w"], ["y"], **attributes)
    graph = helper.make_graph([conv], "c", [helper.make_tensor_value_info(n, TensorProto.INT32, None) for n in "xw"],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)])
    evaluator = onnx.reference.ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    return evaluator.run(None, {"x": x, "w": w})[0].astype(np.int32)


def exact_integer_products(model, feeds):
    """The outputs of MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv computed exactly, by
    output name, for the nodes whose inputs are graph inputs or initializers. ONNX Runtime's are not
    exact on CPUs without VNNI: its AVX2 uint8 x int8 kernels add pairs of products in int16
    (vpmaddubsw), which saturates. The QLinear ops requantize as ONNX Runtime does: the int32 sum
    (plus the bias) times the float32 x_scale * w_scale / y_scale (per output channel), rounded half
    to even, plus y_zero_point, saturated."""
    known = dict(feeds)
    known.update({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    exact = {}
    for node in model.graph.node:
        ops = ("MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv")
        if node.op_type not in ops or not all(n in known for n in node.input if n):
            continue
        values = [known[name] if name else None for name in node.input] + [None] * 9
        if node.op_type in ("MatMulInteger", "ConvInteger"):
            exact[node.output[0]] = integer_sums(node, values[:4])
            continue
        x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, bias = values[:9]
        sums = integer_sums(node, [x, w, x_zero, w_zero]).astype(np.int64)
        channel = (-1,) + (1,) * (sums.ndim - 2) if node.op_type == "QLinearConv" else (-1,)
        if bias is not None:
            sums += bias.astype(np.int64).reshape(channel)
        multiplier = (np.float32(x_scale) * w_scale.astype(np.float32) / np.float32(y_scale)).reshape(
            channel if w_scale.size > 1 else ())
        scaled = np.rint(sums.astype(np.float32) * multiplier) + np.float32(y_zero)
        info = np.iinfo(y_zero.dtype)
        exact[node.output[0]] = np.clip(scaled, info.min, info.max).astype(y_zero.dtype)
    return exact


def reference(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    exact = exact_integer_products(model, feeds)
    return [exact.get(o.name, want) for o, want in zip(model.graph.output, outputs)]


CASES = [(make_group, opset) for make_group, opsets in onnx_op_cases.GROUPS for opset in opsets]


@pytest.mark.parametrize("make_group,opset", CASES, ids=[f"{f.__name__}-opset{o}" for f, o in CASES])
def test_op_family_matches_onnxruntime(tmp_path, make_group, opset):
    group = make_group(opset)
    model = group.model()
    expected = reference(model, group.feeds)
    try:
        actual, _ = run_kiln(tmp_path, model, group.feeds)
    except subprocess.CalledProcessError as e:
        pytest.fail(f"kiln failed: {e.stderr}")
    assert_outputs_match(group, model, actual, expected)


@pytest.mark.skipif(not kiln_has_dnnl(), reason="this kiln is built without oneDNN (KILN_USE_DNNL=OFF)")
def test_transposed_convolutions_in_onednn_match_onnxruntime(tmp_path):
    """The conv_transpose group with --byoc dnnl: every 2-D and 1-D case runs as oneDNN's
    deconvolution (an output_padding as a negative end padding); the 3-D ones, which the dnnl
    codegen does not take, on kiln's own kernel."""
    group = onnx_op_cases.conv_transpose()
    model = group.model()
    expected = reference(model, group.feeds)
    actual, _ = run_kiln(tmp_path, model, group.feeds, ["--byoc", "dnnl"])
    assert_outputs_match(group, model, actual, expected)
    inspected = subprocess.run([KILN, "inspect", str(tmp_path / "model.so")], check=True, capture_output=True,
                               text=True).stdout
    in_onednn = re.findall(r"^ *dnnl_json \S+: (?:nn\.conv2d_transpose|dnnl\.deconv2d_bias)$", inspected, re.M)
    on_host = re.findall(r"conv3d_transpose\.gemm_scatter\b.*\(nn\.conv3d_transpose", inspected)
    weight_ranks = {init.name: len(init.dims) for init in group.inits}
    three_d = [n for n in group.nodes if weight_ranks[n.input[1]] == 5]
    assert len(on_host) == len(three_d) > 0, inspected
    assert len(in_onednn) == len(group.nodes) - len(three_d), inspected


# Groups whose every op has reference semantics once imported: folded, they run no operator.
FOLDED_ENTIRELY = {"elementwise", "elementwise_chains", "compare_and_cast"}
FOLDING_CASES = [(make_group, opsets[-1]) for make_group, opsets in onnx_op_cases.GROUPS]


@pytest.mark.parametrize("make_group,opset", FOLDING_CASES, ids=[f.__name__ for f, _ in FOLDING_CASES])
def test_op_family_folded_from_constants_matches_onnxruntime(tmp_path, make_group, opset):
    group = make_group(opset)
    expected = reference(group.model(), group.feeds)
    group.inits += [numpy_helper.from_array(value, name) for name, value in group.feeds.items()]
    group.inputs = []
    model = group.model()
    try:
        actual, report = run_kiln(tmp_path, model, {})
    except subprocess.CalledProcessError as e:
        pytest.fail(f"kiln failed: {e.stderr}")
    assert_outputs_match(group, model, actual, expected)
    calls = re.search(r"(\d+) operator calls", report)
    assert calls, report
    if make_group.__name__ in FOLDED_ENTIRELY:
        assert int(calls.group(1)) == 0, f"not everything folded: {report}"


def test_batchwise_recurrent_layers_match_onnxruntime_time_major(tmp_path):
    # Layout 1 (batch first), which ONNX Runtime does not run: its reference is ONNX Runtime on the
    # same layers in layout 0, with the inputs and initial states transposed there and back.
    batch, steps, features, hidden = 3, 5, 4, 6
    rng = np.random.default_rng(7)
    x = rng.standard_normal((batch, steps, features)).astype(np.float32)
    lengths = np.array([5, 3, 1], np.int32)
    nodes, inits, outputs, states = [], [], [], {}
    for op, gates in (("LSTM", 4), ("GRU", 3), ("RNN", 1)):
        for name, shape in (("w", (2, gates * hidden, features)), ("r", (2, gates * hidden, hidden)),
                            ("b", (2, 2 * gates * hidden))):
            inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), f"{op}_{name}"))
        names = [f"{op}_h"] + ([f"{op}_c"] if op == "LSTM" else [])
        for n in names:
            states[n] = rng.standard_normal((batch, 2, hidden)).astype(np.float32)  # batch first
        outs = [f"{op}_y", f"{op}_yh"] + ([f"{op}_yc"] if op == "LSTM" else [])
        nodes.append((op, [f"{op}_w", f"{op}_r", f"{op}_b", "lengths", *names], outs))
        outputs += outs

    def model(layout):
        graph_nodes = [onnx.helper.make_node(op, ["x", *ins], outs, hidden_size=hidden, direction="bidirectional",
                                             **({"layout": 1} if layout else {})) for op, ins, outs in nodes]
        batch_first = {"x": (batch, steps, features), **{n: (batch, 2, hidden) for n in states}}
        time_major = {"x": (steps, batch, features), **{n: (2, batch, hidden) for n in states}}
        shapes = batch_first if layout else time_major
        inputs = [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, shape) for n, shape in shapes.items()]
        inputs.append(onnx.helper.make_tensor_value_info("lengths", onnx.TensorProto.INT32, (batch,)))
        graph = onnx.helper.make_graph(graph_nodes, "batchwise", inputs,
                                       [onnx.helper.make_empty_tensor_value_info(o) for o in outputs], inits)
        return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 14)], ir_version=8)

    time_major_feeds = {"x": x.transpose(1, 0, 2), "lengths": lengths,
                        **{n: v.transpose(1, 0, 2) for n, v in states.items()}}
    expected = reference(model(0), time_major_feeds)
    # Y [T, D, B, H] -> [B, T, D, H]; Y_h, Y_c [D, B, H] -> [B, D, H].
    expected = [e.transpose(2, 0, 1, 3) if e.ndim == 4 else e.transpose(1, 0, 2) for e in expected]
    actual, _ = run_kiln(tmp_path, model(1), {"x": x, "lengths": lengths, **states})
    assert len(actual) == len(expected)
    for name, got, want in zip(outputs, actual, expected):
        assert got.shape == want.shape, name
        assert float(np.abs(got - want).max()) <= 1e-4 * max(1.0, float(np.abs(want).max())), name
