"""ONNX Runtime's contrib ops (com.microsoft, and the default-domain LayerNormalization below opset 17
and SimplifiedLayerNormalization it runs) in models its own tools write: the transformers optimizer
on bert_2layer, a tiny Hugging Face-style BERT and small GPT-2-, CLIP-, T5- and ViT-style blocks
(contrib_models.py); a session's saved optimized model (FusedConv, FusedGemm, MatMulIntegerToFloat,
DynamicQuantizeMatMul) of squeezenet1_1 and small models; quantize_static's QOperator format;
quantize_dynamic (QAttention, QEmbedLayerNormalization, DynamicQuantizeLSTM); and single-node models
of each op's attribute variants. Each is compiled with `kiln compile`, run with `kiln run` and
compared with ONNX Runtime: float outputs within 1e-4 * max(1, max|ort|) unless a test says why it
allows more, integer outputs exactly or, where ONNX Runtime's broadcasting kernels round otherwise,
within one step. Each built model is checked to hold the ops it stands for, so a tool that stops
writing them fails the test. Where ONNX Runtime 1.19's CPU kernels leave an output unset or ignore
an input, that output is checked against numpy, as each test says."""
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnx.utils
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import contrib_models

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
from model_suite import model_path, seeded_inputs  # noqa: E402

MS = "com.microsoft"


def ops_of(path):
    """The (domain, op type) pairs of a model's nodes, "ai.onnx" as ""."""
    return {("" if n.domain == "ai.onnx" else n.domain, n.op_type) for n in onnx.load(str(path)).graph.node}


def onnxruntime_outputs(path, feeds, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL, threads=0):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def compiled(tmp_path, path, shapes=None):
    """The library of `path`, at -O3 (for input shapes {name: shape} when given): fused, these
    models have fewer distinct functions to compile than at -O0 (measured, cold object cache: the
    whole file in 4.3 min against 5.4)."""
    library = tmp_path / (pathlib.Path(path).stem + ".so")
    fixed = ["--input-shapes", " ".join(f"{k}:[{','.join(map(str, v))}]" for k, v in shapes.items())] if shapes else []
    result = subprocess.run([KILN, "compile", str(path), "-O3", "-o", str(library), *fixed], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    return library


def kiln_outputs(tmp_path, library, feeds):
    np.savez(tmp_path / "in.npz", **feeds)
    ran = subprocess.run([KILN, "run", str(library), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                          str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    out = np.load(tmp_path / "out.npz")
    return [out[f"output_{i}"] for i in range(len(out.files))]


def check(tmp_path, path, feeds, relative=1e-4, steps=None, want=None, fixed_shapes=False):
    """Compiles `path` (for the feeds' shapes with fixed_shapes), runs it on `feeds` and compares
    each output with ONNX Runtime's (or `want`): within `relative` (or for an output listed in a
    dict, its own) * max(1, max|ort|), integer outputs exactly or, for outputs listed in `steps`,
    within that many steps. Returns the library."""
    library = compiled(tmp_path, path, {k: v.shape for k, v in feeds.items()} if fixed_shapes else None)
    want = onnxruntime_outputs(path, feeds) if want is None else want
    got = kiln_outputs(tmp_path, library, feeds)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        err = float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()) if w.size else 0.0
        if np.issubdtype(w.dtype, np.integer):
            bound = (steps or {}).get(i, 0)
        else:
            assert float(np.std(w)) > 1e-3, f"{path.name} output {i}: the reference output is degenerate"
            share = relative.get(i, 1e-4) if isinstance(relative, dict) else relative
            bound = share * max(1.0, float(np.abs(w).max())) + (steps or {}).get(i, 0)
        print(f"{path.name} output {i}: max |kiln - ort| = {err:.3g} (bound {bound:.3g})")
        assert err <= bound, f"{path.name} output {i}: max |kiln - ort| = {err:.3g} > {bound:.3g}"
    return library


def save(tmp_path, name, nodes, inputs, outputs, initializers=(), opset=14):
    """A model of `nodes`; inputs and outputs as (name, elem type, shape); opset for ONNX's domain."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              [numpy_helper.from_array(v, k) for k, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def kiln_error(tmp_path, path):
    result = subprocess.run([KILN, "compile", str(path), "-o", str(tmp_path / "x.so")], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    return result.stderr


# ---- models ONNX Runtime's tools write --------------------------------------------------------


def library_kernels(library):
    """The implementation of each operator function `kiln inspect` lists, with its call count."""
    inspected = subprocess.run([KILN, "inspect", str(library)], check=True, capture_output=True, text=True).stdout
    kernels = {}
    for line in inspected.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].isdigit() and parts[-2].startswith("tvmgen_"):
            implementation = " ".join(parts[2:-2])
            kernels[implementation] = kernels.get(implementation, 0) + int(parts[0])
    return kernels


@pytest.fixture(scope="module")
def bert_fused(tmp_path_factory):
    """bert_2layer through the transformers optimizer (opt_level 1, the embedding fusion off: it
    needs a mask input the suite's model has none of)."""
    target = tmp_path_factory.mktemp("bert") / "bert_fused.onnx"
    return contrib_models.optimized(model_path("bert_2layer"), target, "bert", 1, heads=12, hidden=768,
                                    enable_embed_layer_norm=False)


def test_bert_optimized_reaches_the_unfused_kernels(tmp_path, bert_fused):
    """The optimized bert_2layer: Attention, SkipLayerNormalization, BiasGelu and LayerNormalization
    at opset 14. At -O3 its dense layers, batched products, softmax and layer norms run on the
    kernels the unfused model's do, no more calls of any of them and fewer dense layers (its speed
    beside the unfused model's is the benchmark's to measure, not a timed unit test's)."""
    unfused, path = model_path("bert_2layer"), bert_fused
    assert {(MS, "Attention"), (MS, "SkipLayerNormalization"), (MS, "BiasGelu"), ("", "LayerNormalization")} <= ops_of(path)
    assert onnx.load(str(path)).opset_import[0].version == 14
    feeds = seeded_inputs(onnx.load(str(unfused), load_external_data=False))
    fused_library = check(tmp_path, path, feeds)
    unfused_library = compiled(tmp_path, unfused)
    heavy = ("dense", "BatchGemm", "Softmax", "LayerNorm")
    fused_kernels, unfused_kernels = library_kernels(fused_library), library_kernels(unfused_library)
    pick = lambda kernels: {k: n for k, n in kernels.items() if any(h in k for h in heavy)}  # noqa: E731
    print("fused:", fused_kernels, "\nunfused:", unfused_kernels)
    # The same kernels, none called more often; Attention's Q, K and V come from one dense layer
    # per block (3 in the unfused graph): 8 dense layers where the unfused library has 12.
    fused_heavy, unfused_heavy = pick(fused_kernels), pick(unfused_kernels)
    assert set(fused_heavy) == set(unfused_heavy)
    assert all(fused_heavy[k] <= unfused_heavy[k] for k in fused_heavy), (fused_heavy, unfused_heavy)
    dense_calls = lambda kernels: sum(n for k, n in kernels.items() if k.startswith("dense."))  # noqa: E731
    assert dense_calls(fused_heavy) == dense_calls(unfused_heavy) - 2 * 2
    assert sum(fused_kernels.values()) <= sum(unfused_kernels.values())


@pytest.fixture(scope="module")
def tiny_bert_fused(tmp_path_factory):
    """A tiny Hugging Face-style BERT (mask, token types) through the optimizer (opt_level 0)."""
    folder = tmp_path_factory.mktemp("tiny_bert")
    contrib_models.export_tiny_bert(folder / "tiny_bert.onnx")
    return contrib_models.optimized(folder / "tiny_bert.onnx", folder / "tiny_bert_fused.onnx", "bert", 0)


def tiny_bert_feeds():
    """A padded batch: 11 tokens of 16, two segments."""
    rng = np.random.default_rng(15)
    sequence = contrib_models.SEQUENCE
    return {"input_ids": rng.integers(0, contrib_models.TinyBert.VOCABULARY, (1, sequence)).astype(np.int64),
            "attention_mask": (np.arange(sequence) < 11).astype(np.int64)[None],
            "token_type_ids": (np.arange(sequence) >= 8).astype(np.int64)[None]}


def test_bert_with_mask_and_segments_optimized_matches_onnxruntime(tmp_path, tiny_bert_fused):
    """The tiny BERT's EmbedLayerNormalization (words, positions, segments, the mask's index)
    feeding Attention its mask index, on a padded batch."""
    model = onnx.load(str(tiny_bert_fused))
    attention = next(n for n in model.graph.node if n.op_type == "Attention")
    embedding = next(n for n in model.graph.node if n.op_type == "EmbedLayerNormalization")
    assert len(attention.input) > 3 and attention.input[3] == embedding.output[1]  # the mask index
    check(tmp_path, tiny_bert_fused, tiny_bert_feeds())


@pytest.mark.parametrize("model_type,wanted", [
    ("gpt2", {("", "LayerNormalization"), (MS, "SkipLayerNormalization"), (MS, "FastGelu")}),
    ("clip", {("", "LayerNormalization"), (MS, "SkipLayerNormalization"), (MS, "QuickGelu")}),
    ("t5", {(MS, "SkipSimplifiedLayerNormalization")}),
    ("vit", {("", "LayerNormalization"), (MS, "SkipLayerNormalization"), (MS, "BiasGelu")}),
])
def test_transformer_block_optimized_matches_onnxruntime(tmp_path, model_type, wanted):
    """Small blocks of the optimizer's model types at opt_level 0 (no ONNX Runtime session), opset 14."""
    shapes = contrib_models.export_block(model_type, tmp_path / f"{model_type}.onnx")
    path = contrib_models.optimized(tmp_path / f"{model_type}.onnx", tmp_path / f"{model_type}_fused.onnx", model_type, 0)
    assert wanted <= ops_of(path), ops_of(path)
    rng = np.random.default_rng(1)
    check(tmp_path, path, {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()})


def test_bert_fused_into_multi_head_attention_matches_onnxruntime(tmp_path, tiny_bert_fused):
    """The tiny BERT through the optimizer with use_multi_head_attention: MultiHeadAttention (Q, K
    and V projected apart, one bias for the three, EmbedLayerNormalization's mask index as its key
    padding mask) in place of Attention, on the padded batch."""
    source = tiny_bert_fused.parent / "tiny_bert.onnx"
    path = contrib_models.optimized(source, tmp_path / "tiny_bert_mha.onnx", "bert", 0, use_multi_head_attention=True)
    assert (MS, "MultiHeadAttention") in ops_of(path) and (MS, "Attention") not in ops_of(path), ops_of(path)
    check(tmp_path, path, tiny_bert_feeds())


def test_gpt2_block_with_past_optimized_matches_onnxruntime(tmp_path):
    """A GPT-2 block with its key/value cache, fused by the optimizer (gpt2, opt_level 0) into
    Attention with past (input 4) and present (output 1): compiled for a prompt (4 new tokens after
    6 cached) and for one decoding step (1 after 9)."""
    contrib_models.export_gpt2_past_block(tmp_path / "gpt2_past.onnx")
    path = contrib_models.optimized(tmp_path / "gpt2_past.onnx", tmp_path / "gpt2_past_fused.onnx", "gpt2", 0)
    attention = [n for n in onnx.load(str(path)).graph.node if n.op_type == "Attention"]
    assert len(attention) == 1 and attention[0].domain == MS, ops_of(path)
    assert attention[0].input[4] == "past" and attention[0].output[1] == "present", attention[0]
    assert ("", "MatMul") in ops_of(path) and ("", "Softmax") not in ops_of(path), ops_of(path)
    rng = np.random.default_rng(8)
    for new, cached in ((4, 6), (1, 9)):
        feeds = {"input": floats(rng, 1, new, contrib_models.HIDDEN),
                 "past": floats(rng, 2, 1, contrib_models.HEADS, cached, contrib_models.HIDDEN // contrib_models.HEADS)}
        check(tmp_path, path, feeds, fixed_shapes=True)


def test_session_optimized_cnn_matches_onnxruntime(tmp_path):
    """A session's saved optimized model (extended level) of a small CNN: FusedConv with Relu and
    with LeakyRelu, FusedGemm with Relu."""
    shapes = contrib_models.export_small("cnn", tmp_path / "cnn.onnx")
    path = contrib_models.session_optimized(tmp_path / "cnn.onnx", tmp_path / "cnn_optimized.onnx")
    model = onnx.load(str(path))
    activations = {helper.get_attribute_value(a).decode() for n in model.graph.node if n.op_type == "FusedConv"
                   for a in n.attribute if a.name == "activation"}
    assert {(MS, "FusedConv"), (MS, "FusedGemm")} <= ops_of(path) and {"Relu", "LeakyRelu"} <= activations
    check(tmp_path, path, {"input": floats(np.random.default_rng(8), *shapes["input"])})


def test_session_optimized_squeezenet_reaches_the_unfused_kernels(tmp_path):
    """The suite's squeezenet1_1 as a session saves it optimized (extended level): its 26
    convolutions with ReLU become FusedConv. At -O3 the library calls the same functions, with the
    same kernels, as the unfused model's."""
    unfused = model_path("squeezenet1_1")
    path = contrib_models.session_optimized(unfused, tmp_path / "squeezenet_optimized.onnx")
    fused_convolutions = [n for n in onnx.load(str(path)).graph.node if n.op_type == "FusedConv"]
    assert len(fused_convolutions) == 26
    library = check(tmp_path, path, seeded_inputs(onnx.load(str(unfused))))
    assert library_kernels(library) == library_kernels(compiled(tmp_path, unfused))


def test_session_optimized_dynamic_quantized_mlp_matches_onnxruntime(tmp_path):
    """quantize_dynamic's model (uint8 weights) as a session saves it optimized:
    MatMulIntegerToFloat where a DynamicQuantizeLinear feeds two products, DynamicQuantizeMatMul
    where it feeds one."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    shapes = contrib_models.export_small("mlp", tmp_path / "mlp.onnx")
    quantize_dynamic(str(tmp_path / "mlp.onnx"), str(tmp_path / "mlp_quantized.onnx"), weight_type=QuantType.QUInt8)
    path = contrib_models.session_optimized(tmp_path / "mlp_quantized.onnx", tmp_path / "mlp_optimized.onnx")
    assert {(MS, "MatMulIntegerToFloat"), (MS, "DynamicQuantizeMatMul")} <= ops_of(path), ops_of(path)
    check(tmp_path, path, {"input": floats(np.random.default_rng(9), *shapes["input"])})


QOPERATOR_OPS = ["QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat", "QLinearAveragePool",
                  "QLinearGlobalAveragePool", "QGemm", "QLinearSoftmax"]


def test_quantize_static_qoperator_matches_onnxruntime_exactly(tmp_path):
    """quantize_static's QOperator model, each contrib op's uint8 output made a graph output too:
    every one equal to ONNX Runtime's (its lookup tables and requantization round half to even, as
    kiln's dequantize-op-quantize compositions do), and the float output within 1e-4."""
    shapes = contrib_models.export_small("qoperator", tmp_path / "qoperator.onnx")
    path = contrib_models.quantized_static_qoperator(tmp_path / "qoperator.onnx", tmp_path / "qoperator_q.onnx",
                                                     shapes["input"])
    model = onnx.load(str(path))
    assert {(MS, op) for op in QOPERATOR_OPS} <= ops_of(path), ops_of(path)
    for n in model.graph.node:
        if n.domain == MS:
            model.graph.output.append(helper.make_tensor_value_info(n.output[0], TensorProto.UINT8, None))
    onnx.save(model, str(path))
    check(tmp_path, path, {"input": floats(np.random.default_rng(11), *shapes["input"])})


def test_qlinear_where_and_int8_variants(tmp_path):
    """QLinearWhere; QLinearAdd, QLinearMul and QLinearConcat on int8 with broadcasting; QLinearSoftmax
    at opset 11's form (over the axes from `axis` on); QLinearAveragePool with pads counted. All
    exact but the broadcast int8 QLinearAdd and QLinearMul, within one step (measured: Mul one off
    somewhere): ONNX Runtime's broadcasting kernels scale in another order than it rounds."""
    rng = np.random.default_rng(12)

    def scalar(name, value, dtype=np.float32):
        return name, np.array(value, dtype)

    weights = dict([scalar("s1", 0.05), scalar("z1", 3, np.int8), scalar("s2", 0.02), scalar("z2", -4, np.int8),
                    scalar("s3", 0.07), scalar("z3", 1, np.int8), scalar("u", 0.03), scalar("uz", 128, np.uint8),
                    scalar("p", 1 / 256), scalar("pz", 0, np.uint8)])
    nodes = [node("QLinearWhere", ["cond", "a", "s1", "z1", "b", "s2", "z2", "s3", "z3"], ["where"]),
             node("QLinearAdd", ["a", "s1", "z1", "row", "s2", "z2", "s3", "z3"], ["add"]),
             node("QLinearMul", ["a", "s1", "z1", "row", "s2", "z2", "s3", "z3"], ["mul"]),
             node("QLinearConcat", ["s3", "z3", "a", "s1", "z1", "b", "s2", "z2"], ["concat"], axis=1),
             node("QLinearSoftmax", ["x", "u", "uz", "p", "pz"], ["softmax"], axis=2, opset=11),
             node("QLinearAveragePool", ["x", "u", "uz", "u", "uz"], ["pool"], kernel_shape=[2, 2], pads=[1, 1, 1, 1],
                  count_include_pad=1)]
    inputs = [("cond", TensorProto.BOOL, [2, 3, 4]), ("a", TensorProto.INT8, [2, 3, 4]), ("b", TensorProto.INT8, [2, 3, 4]),
              ("row", TensorProto.INT8, [4]), ("x", TensorProto.UINT8, [1, 2, 3, 4])]
    outputs = [("where", TensorProto.INT8, [2, 3, 4]), ("add", TensorProto.INT8, [2, 3, 4]),
               ("mul", TensorProto.INT8, [2, 3, 4]), ("concat", TensorProto.INT8, [2, 6, 4]),
               ("softmax", TensorProto.UINT8, [1, 2, 3, 4]), ("pool", TensorProto.UINT8, [1, 2, 4, 5])]
    path = save(tmp_path, "qlinear", nodes, inputs, outputs, weights.items(), opset=13)
    int8 = lambda *shape: rng.integers(-128, 128, shape).astype(np.int8)  # noqa: E731
    feeds = {"cond": rng.random((2, 3, 4)) > 0.5, "a": int8(2, 3, 4), "b": int8(2, 3, 4), "row": int8(4),
             "x": rng.integers(0, 256, (1, 2, 3, 4)).astype(np.uint8)}
    check(tmp_path, path, feeds, steps={1: 1, 2: 1})


def test_quantize_dynamic_bert_matches_onnxruntime(tmp_path, tiny_bert_fused):
    """quantize_dynamic (uint8 weights) of the optimized tiny BERT: QEmbedLayerNormalization,
    QAttention, MatMulInteger. Within 1e-3 * max|ort| (measured: 4.8e-7): the activations are
    quantized dynamically, so a float difference in the last bit before a DynamicQuantizeLinear can
    move a value by a whole quantization step."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = tmp_path / "tiny_bert_quantized.onnx"
    quantize_dynamic(str(tiny_bert_fused), str(path), weight_type=QuantType.QUInt8,
                     extra_options={"DefaultTensorType": TensorProto.FLOAT})
    assert {(MS, "QEmbedLayerNormalization"), (MS, "QAttention"), ("", "MatMulInteger")} <= ops_of(path)
    check(tmp_path, path, tiny_bert_feeds(), relative=1e-3)


def dynamic_quantized(a):
    """`a` (float32) quantized to uint8 as ONNX Runtime quantizes a DynamicQuantizeLSTM's X and hidden
    states as it runs (the range widened to hold 0, scale (max - min) / 255 in float32, the zero point
    and levels rounded half to even and saturated), and back, in float64."""
    a = np.asarray(a, np.float32)
    low, high = min(a.min(), np.float32(0)), max(a.max(), np.float32(0))
    scale = np.float32(1) if high == low else np.float32((high - low) / np.float32(255))
    zero_point = np.rint(np.clip(np.float32(0) - low / scale, 0, 255))
    levels = np.clip(np.rint(a / scale) + zero_point, 0, 255)
    return (levels.astype(np.float64) - zero_point) * np.float64(scale)


def lstm_reference(x, w, r, b, quantize):
    """ONNX's LSTM (gates i o f c, sigmoid and tanh, zero initial states, no peepholes, both
    directions) of x [steps, batch, input] with W [directions, 4 * hidden, input], R [directions,
    4 * hidden, hidden] and B [directions, 8 * hidden], in float64 with float32 hidden states, where
    `quantize` maps X once and each step's hidden state before its product; Y [steps, directions,
    batch, hidden]."""
    steps, batch, _ = x.shape
    directions, hidden = w.shape[0], r.shape[2]
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    x = quantize(x)
    y = np.zeros((steps, directions, batch, hidden))
    for d in range(directions):
        h, c = np.zeros((batch, hidden), np.float32), np.zeros((batch, hidden))
        for t in range(steps) if d == 0 else reversed(range(steps)):
            gates = x[t] @ w[d].T + quantize(h) @ r[d].T + b[d, :4 * hidden] + b[d, 4 * hidden:]
            i, o, f, g = np.split(gates, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = (sigmoid(o) * np.tanh(c)).astype(np.float32)
            y[t, d] = h
    return y


def lstm_cut(path, target):
    """The model of `path` up to its (one) LSTM or DynamicQuantizeLSTM node's Y, saved to `target`;
    returns the node and the model's initializers by name, in float64."""
    model = onnx.load(str(path))
    lstm = next(n for n in model.graph.node if n.op_type in ("LSTM", "DynamicQuantizeLSTM"))
    onnx.utils.extract_model(str(path), str(target), ["input"], [lstm.output[0]])
    return lstm, {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}


def test_quantize_dynamic_lstm(tmp_path):
    """quantize_dynamic's DynamicQuantizeLSTM of a small bidirectional LSTM (torch-exported), against
    a NumPy reference of ONNX Runtime's kernel: the 8-bit weights dequantized, X and each step's
    hidden state quantized as it runs (dynamic_quantized), the products exact in float64. The
    reference is checked first: without quantizing, on the float model's weights, against ONNX
    Runtime's float LSTM (1e-6); and where the CPU has VNNI, quantizing, against ONNX Runtime
    1.19.2's DynamicQuantizeLSTM at one thread (which quantizes a state's batch of 2 rows at once),
    within 1e-5 (on an AVX2-only Zen 3 its output was 0.089 off the float model's, so not there).
    Products on unquantized X and states (as kiln once ran them) move Y by more than 1e-3, where
    the bound is 1e-5."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    shapes = contrib_models.export_small("lstm", tmp_path / "lstm.onnx")
    path = tmp_path / "lstm_quantized.onnx"
    quantize_dynamic(str(tmp_path / "lstm.onnx"), str(path), weight_type=QuantType.QUInt8, op_types_to_quantize=["LSTM"])
    assert (MS, "DynamicQuantizeLSTM") in ops_of(path)
    x = floats(np.random.default_rng(13), *shapes["input"])

    lstm, weights = lstm_cut(tmp_path / "lstm.onnx", tmp_path / "lstm_y.onnx")
    real = lstm_reference(x, *(weights[lstm.input[i]] for i in (1, 2, 3)), quantize=lambda a: a.astype(np.float64))
    assert np.abs(real - onnxruntime_outputs(tmp_path / "lstm_y.onnx", {"input": x})[0]).max() < 1e-6

    lstm, weights = lstm_cut(path, tmp_path / "lstm_quantized_y.onnx")
    assert [a.name for a in lstm.attribute] == ["direction", "hidden_size"] and not lstm.input[4]

    def dequantized(levels, scale, zero_point):  # [directions, rows, 4 * hidden] -> ONNX's LSTM layout
        scale, zero_point = (weights[lstm.input[i]] for i in (scale, zero_point))
        shape = (scale.shape[0], 1, -1)
        return ((weights[lstm.input[levels]] - zero_point.reshape(shape)) * scale.reshape(shape)).transpose(0, 2, 1)

    w, r, b = dequantized(1, 8, 9), dequantized(2, 10, 11), weights[lstm.input[3]]
    want = lstm_reference(x, w, r, b, dynamic_quantized)
    unquantized_states = lstm_reference(x, w, r, b, quantize=lambda a: a.astype(np.float64))
    assert np.abs(want - unquantized_states).max() > 1e-3, "quantizing X and the states should show in Y"
    cpu_flags = pathlib.Path("/proc/cpuinfo").read_text() if pathlib.Path("/proc/cpuinfo").exists() else ""
    if "avx512_vnni" in cpu_flags or "avx_vnni" in cpu_flags:
        ort_y = onnxruntime_outputs(tmp_path / "lstm_quantized_y.onnx", {"input": x}, threads=1)[0]
        assert np.abs(ort_y - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max()))
    else:
        warnings.warn("test_quantize_dynamic_lstm: this CPU has no VNNI, so the NumPy reference is not checked against "
                      "ONNX Runtime's DynamicQuantizeLSTM here (kiln is still checked against the reference)")
    check(tmp_path, tmp_path / "lstm_quantized_y.onnx", {"input": x}, relative=1e-5, want=[want.astype(np.float32)])


# ---- single-node models: each op's attribute variants --------------------------------------------

F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
B, S, D, N = 2, 5, 16, 2  # batch, sequence, hidden, heads (head size 8)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain=MS, **attrs)


def floats(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_attention_variants(tmp_path):
    """Attention without a mask; with each mask form ([B, T] of 0 and 1, [B] ends, [2B] ends and
    starts, [B, S, T]); unidirectional; past with present; attention_bias with a scale; a smaller V
    (qkv_hidden_sizes); mask_filter_value. (attention_bias is [B, N, S, T]: ONNX Runtime 1.19's CPU
    kernel misreads one of batch 1, which kiln broadcasts.)"""
    rng = np.random.default_rng(2)
    weights = {"W": 0.3 * floats(rng, D, 3 * D), "b": floats(rng, 3 * D), "W_small": 0.3 * floats(rng, D, 40),
               "b_small": floats(rng, 40)}
    nodes = [node("Attention", ["x", "W", "b"], ["y0"], num_heads=N),
             node("Attention", ["x", "W", "b", "raw"], ["y1"], num_heads=N),
             node("Attention", ["x", "W", "b", "ends"], ["y2"], num_heads=N, unidirectional=1),
             node("Attention", ["x", "W", "b", "ends_starts"], ["y3"], num_heads=N, mask_filter_value=-1000.0),
             node("Attention", ["x", "W", "b", "mask3d", "", "attention_bias"], ["y4"], num_heads=N, scale=0.2),
             node("Attention", ["x", "W", "b", "", "past"], ["y5", "present"], num_heads=N, unidirectional=1),
             node("Attention", ["x", "W_small", "b_small", "raw"], ["y6"], num_heads=N, qkv_hidden_sizes=[16, 16, 8])]
    inputs = [("x", F, [B, S, D]), ("raw", I32, [B, S]), ("ends", I32, [B]), ("ends_starts", I32, [2 * B]),
              ("mask3d", I32, [B, S, S]), ("attention_bias", F, [B, N, S, S]), ("past", F, [2, B, N, 3, 8])]
    outputs = [(f"y{i}", F, [B, S, 8 if i == 6 else D]) for i in range(7)] + [("present", F, [2, B, N, 3 + S, 8])]
    path = save(tmp_path, "attention", nodes, inputs, outputs, weights.items())
    assert ops_of(path) == {(MS, "Attention")}
    mask3d = (rng.random((B, S, S)) > 0.3).astype(np.int32)
    mask3d[:, :, 0] = 1
    feeds = {"x": floats(rng, B, S, D), "raw": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32),
             "ends": np.array([3, 5], np.int32), "ends_starts": np.array([4, 5, 1, 2], np.int32), "mask3d": mask3d,
             "attention_bias": floats(rng, B, N, S, S), "past": floats(rng, 2, B, N, 3, 8)}
    check(tmp_path, path, feeds)


def test_multihead_attention_variants(tmp_path):
    """MultiHeadAttention with separate Q, K and V (cross attention, T != S); with the bias and a
    key padding mask (self-attention's length: ONNX Runtime 1.19's CPU kernel misreads a [B, T] mask
    when T != S); with attention_bias ([B, N, S, T], as for Attention), past_key and past_value
    returning present_key and present_value; unidirectional."""
    rng = np.random.default_rng(3)
    T = 7
    nodes = [node("MultiHeadAttention", ["q", "k", "v"], ["y0"], num_heads=N),
             node("MultiHeadAttention", ["q", "k_self", "v_self", "bias", "padding"], ["y1"], num_heads=N),
             node("MultiHeadAttention", ["q", "q", "q", "", "", "attention_bias", "past_key", "past_value"],
                  ["y2", "present_key", "present_value"], num_heads=N, scale=0.3),
             node("MultiHeadAttention", ["q", "k_self", "v_self"], ["y3"], num_heads=N, unidirectional=1)]
    inputs = [("q", F, [B, S, D]), ("k", F, [B, T, D]), ("v", F, [B, T, D]), ("k_self", F, [B, S, D]),
              ("v_self", F, [B, S, D]), ("padding", I32, [B, S]),
              ("attention_bias", F, [B, N, S, 3 + S]), ("past_key", F, [B, N, 3, 8]), ("past_value", F, [B, N, 3, 8])]
    outputs = [(f"y{i}", F, [B, S, D]) for i in range(3)] + [(name, F, [B, N, 3 + S, 8])
                                                             for name in ("present_key", "present_value")]
    outputs.append(("y3", F, [B, S, D]))
    path = save(tmp_path, "multihead_attention", nodes, inputs, outputs, [("bias", floats(rng, 3 * D))])
    padding = np.ones((B, S), np.int32)
    padding[0, 3:] = 0
    feeds = {"q": floats(rng, B, S, D), "k": floats(rng, B, T, D), "v": floats(rng, B, T, D),
             "k_self": floats(rng, B, S, D), "v_self": floats(rng, B, S, D), "padding": padding,
             "attention_bias": floats(rng, B, N, S, 3 + S), "past_key": floats(rng, B, N, 3, 8),
             "past_value": floats(rng, B, N, 3, 8)}
    check(tmp_path, path, feeds)


def test_activation_and_normalization_variants(tmp_path):
    """Gelu, BiasGelu, FastGelu with and without its bias, QuickGelu with an alpha;
    SkipLayerNormalization with bias, beta and the sum as outputs, and without them with the mean and
    inverse deviation; SkipSimplifiedLayerNormalization; ONNX-domain SimplifiedLayerNormalization
    and LayerNormalization (with its Mean) at opset 14. Against numpy, what ONNX Runtime 1.19's CPU
    kernels do not compute: BiasAdd (CUDA only), SkipLayerNormalization's mean and inverse
    deviation and SkipSimplifiedLayerNormalization's inverse root mean square (left unset), and
    SkipSimplifiedLayerNormalization's bias (ignored: its documentation adds it to the sum)."""
    rng = np.random.default_rng(4)
    weights = {"bias": floats(rng, D), "gamma": 1 + 0.1 * floats(rng, D), "beta": floats(rng, D)}
    nodes = [node("Gelu", ["x"], ["gelu"]), node("BiasGelu", ["x", "bias"], ["bias_gelu"]),
             node("FastGelu", ["x"], ["fast_gelu"]), node("FastGelu", ["x", "bias"], ["fast_gelu_bias"]),
             node("QuickGelu", ["x"], ["quick_gelu"], alpha=1.5),
             node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["skip_ln", "", "", "skip_sum"],
                  epsilon=1e-5),
             node("SkipLayerNormalization", ["x", "skip", "gamma"], ["skip_ln2"]),
             node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["skip_rms", "", "", "skip_rms_sum"],
                  epsilon=1e-6),
             helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["rms"], epsilon=1e-5),
             helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln", "ln_mean"], epsilon=1e-3)]
    full, kept = [B, S, D], [B, S, 1]
    outputs = [(name, F, full) for name in ("gelu", "bias_gelu", "fast_gelu", "fast_gelu_bias", "quick_gelu", "skip_ln",
                                            "skip_sum", "skip_ln2", "skip_rms", "skip_rms_sum", "rms", "ln")]
    outputs.append(("ln_mean", F, kept))
    path = save(tmp_path, "activations", nodes, [("x", F, full), ("skip", F, full)], outputs, weights.items())
    assert {("", "SimplifiedLayerNormalization"), ("", "LayerNormalization")} <= ops_of(path)
    feeds = {"x": floats(rng, *full), "skip": floats(rng, *full)}
    want = onnxruntime_outputs(path, feeds)
    x, skip, bias, gamma = feeds["x"], feeds["skip"], weights["bias"], weights["gamma"]
    total = x + skip
    mean = total.mean(-1, keepdims=True)
    biased = total + bias
    inverse_rms = 1 / np.sqrt((biased * biased).mean(-1, keepdims=True) + 1e-6)
    model = onnx.load(str(path))
    model.graph.node.extend([
        node("BiasAdd", ["x", "bias", "skip"], ["bias_add"]),
        node("SkipLayerNormalization", ["x", "skip", "gamma"], ["skip_ln3", "skip_mean", "skip_inv"]),
        node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"],
             ["skip_rms_bias", "", "skip_rms_inv", "skip_rms_bias_sum"], epsilon=1e-6)])
    numpy_outputs = {"bias_add": x + bias + skip, "skip_mean": mean,
                     "skip_inv": 1 / np.sqrt(((total - mean) ** 2).mean(-1, keepdims=True) + 1e-12),
                     "skip_rms_bias": biased * inverse_rms * gamma, "skip_rms_inv": inverse_rms, "skip_rms_bias_sum": biased}
    for name, value in numpy_outputs.items():
        model.graph.output.append(helper.make_tensor_value_info(name, F, list(value.shape)))
    onnx.save(model, str(path))
    check(tmp_path, path, feeds, want=want + [v.astype(np.float32) for v in numpy_outputs.values()])


def test_default_domain_ops_unknown_to_libonnx_inside_if_and_loop(tmp_path):
    """LayerNormalization at opset 14 and SimplifiedLayerNormalization inside an If's branches (the
    condition a graph input) and inside a Loop's body nested in the else branch: libonnx's checker
    knows neither at that opset, in subgraphs as in the main graph."""
    rng = np.random.default_rng(6)
    gamma, beta = 1 + 0.1 * floats(rng, D), floats(rng, D)
    full = [B, S, D]

    def branch(name, nodes, output):
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(output, F, full)],
                                 [numpy_helper.from_array(gamma, f"{name}_gamma"), numpy_helper.from_array(beta, f"{name}_beta")])

    then_branch = branch("then", [helper.make_node("LayerNormalization", ["x", "then_gamma", "then_beta"], ["then_y"],
                                                   epsilon=1e-5)], "then_y")
    body = helper.make_graph(
        [helper.make_node("SimplifiedLayerNormalization", ["state", "body_gamma"], ["rms"], epsilon=1e-6),
         helper.make_node("Add", ["rms", "body_beta"], ["next"]), helper.make_node("Identity", ["keep_going"], ["again"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("keep_going", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("state", F, full)],
        [helper.make_tensor_value_info("again", TensorProto.BOOL, []), helper.make_tensor_value_info("next", F, full)],
        [numpy_helper.from_array(gamma, "body_gamma"), numpy_helper.from_array(beta, "body_beta")])
    loop = helper.make_node("Loop", ["trips", "", "x"], ["else_y"], body=body)
    else_branch = helper.make_graph([loop], "else", [], [helper.make_tensor_value_info("else_y", F, full)])
    nodes = [helper.make_node("If", ["condition"], ["y"], then_branch=then_branch, else_branch=else_branch)]
    path = save(tmp_path, "subgraphs", nodes, [("condition", TensorProto.BOOL, []), ("x", F, full)], [("y", F, full)],
                [("trips", np.array(3, np.int64))])
    for taken in (True, False):
        check(tmp_path, path, {"condition": np.array(taken), "x": floats(rng, *full)})


def test_embed_layer_normalization_variants(tmp_path):
    """EmbedLayerNormalization with segments and a mask (its mask index counts the ones), and
    without them with position_ids; both with the embedding sum."""
    rng = np.random.default_rng(5)
    weights = {"word": floats(rng, 30, D), "position": floats(rng, 10, D), "segment": floats(rng, 2, D),
               "gamma": 1 + 0.1 * floats(rng, D), "beta": floats(rng, D)}
    nodes = [node("EmbedLayerNormalization", ["ids", "segments", "word", "position", "segment", "gamma", "beta", "mask"],
                  ["y0", "mask_index0", "sum0"], epsilon=1e-5),
             node("EmbedLayerNormalization", ["ids", "", "word", "position", "", "gamma", "beta", "", "positions"],
                  ["y1", "mask_index1", "sum1"])]
    inputs = [("ids", I32, [B, S]), ("segments", I32, [B, S]), ("mask", I32, [B, S]), ("positions", I32, [B, S])]
    outputs = [("y0", F, [B, S, D]), ("mask_index0", I32, [B]), ("sum0", F, [B, S, D]), ("y1", F, [B, S, D]),
               ("mask_index1", I32, [B]), ("sum1", F, [B, S, D])]
    path = save(tmp_path, "embed", nodes, inputs, outputs, weights.items())
    feeds = {"ids": rng.integers(0, 30, (B, S)).astype(np.int32), "segments": rng.integers(0, 2, (B, S)).astype(np.int32),
             "mask": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32),
             "positions": rng.integers(0, 10, (B, S)).astype(np.int32)}
    library = compiled(tmp_path, path)
    want, got = onnxruntime_outputs(path, feeds), kiln_outputs(tmp_path, library, feeds)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-4 if w.dtype == np.float32 else 0, err_msg=f"output {i}")


def test_rotary_embedding_variants(tmp_path):
    """RotaryEmbedding on [B, S, N * H] with num_heads and position_ids [B, S]; interleaved; on
    [B, N, S, H]; position_ids as one offset; only part of each head rotated."""
    rng = np.random.default_rng(6)
    angles = rng.uniform(0, 6, (12, 4))
    part = rng.uniform(0, 6, (12, 2))
    weights = {"cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32),
               "cos_part": np.cos(part).astype(np.float32), "sin_part": np.sin(part).astype(np.float32),
               "offset": np.array([3], np.int64)}
    nodes = [node("RotaryEmbedding", ["x", "positions", "cos", "sin"], ["y0"], num_heads=N),
             node("RotaryEmbedding", ["x", "positions", "cos", "sin"], ["y1"], num_heads=N, interleaved=1),
             node("RotaryEmbedding", ["x4", "positions", "cos", "sin"], ["y2"]),
             node("RotaryEmbedding", ["x4", "offset", "cos", "sin"], ["y3"], interleaved=1),
             node("RotaryEmbedding", ["x", "positions", "cos_part", "sin_part"], ["y4"], num_heads=N,
                  rotary_embedding_dim=4)]
    inputs = [("x", F, [B, S, D]), ("x4", F, [B, N, S, 8]), ("positions", I64, [B, S])]
    outputs = [("y0", F, [B, S, D]), ("y1", F, [B, S, D]), ("y2", F, [B, N, S, 8]), ("y3", F, [B, N, S, 8]),
               ("y4", F, [B, S, D])]
    path = save(tmp_path, "rotary", nodes, inputs, outputs, weights.items())
    check(tmp_path, path, {"x": floats(rng, B, S, D), "x4": floats(rng, B, N, S, 8),
                           "positions": rng.integers(0, 12, (B, S)).astype(np.int64)})


def test_fused_conv_and_gemm_variants(tmp_path):
    """FusedConv with the sum input Z and each activation ONNX Runtime fuses (Tanh, Sigmoid, Clip,
    HardSigmoid), strided and grouped; FusedGemm with transB, alpha and beta, and Tanh or LeakyRelu."""
    rng = np.random.default_rng(10)
    weights = {"w": floats(rng, 4, 2, 3, 3), "wb": floats(rng, 4), "g": floats(rng, 6, 8), "gb": floats(rng, 6)}
    nodes = [node("FusedConv", ["x", "w", "wb", "z"], ["c0"], activation="Tanh", pads=[1, 1, 1, 1], group=2),
             node("FusedConv", ["x", "w", "wb"], ["c1"], activation="Sigmoid", strides=[2, 2], group=2),
             node("FusedConv", ["x", "w"], ["c2"], activation="Clip", activation_params=[-0.5, 0.5], group=2),
             node("FusedConv", ["x", "w", "wb"], ["c3"], activation="HardSigmoid", activation_params=[0.3, 0.4], group=2),
             node("FusedGemm", ["a", "g", "gb"], ["g0"], activation="Tanh", transB=1, alpha=0.5, beta=2.0),
             node("FusedGemm", ["a", "g"], ["g1"], activation="LeakyRelu", activation_alpha=0.2, transB=1)]
    inputs = [("x", F, [1, 4, 6, 6]), ("z", F, [1, 4, 6, 6]), ("a", F, [3, 8])]
    outputs = [("c0", F, [1, 4, 6, 6]), ("c1", F, [1, 4, 2, 2]), ("c2", F, [1, 4, 4, 4]), ("c3", F, [1, 4, 4, 4]),
               ("g0", F, [3, 6]), ("g1", F, [3, 6])]
    path = save(tmp_path, "fused", nodes, inputs, outputs, weights.items(), opset=13)
    check(tmp_path, path, {"x": floats(rng, 1, 4, 6, 6), "z": floats(rng, 1, 4, 6, 6), "a": floats(rng, 3, 8)})


def test_qattention_single_nodes_match(tmp_path):
    """QAttention with zero points and a [B, T] mask, and with past and unidirectional."""
    rng = np.random.default_rng(14)
    weights = {"Wq": rng.integers(0, 256, (D, 3 * D)).astype(np.uint8), "bq": floats(rng, 3 * D),
               "xs": np.array(0.02, np.float32), "ws": np.array(0.01, np.float32), "xz": np.array(120, np.uint8),
               "wz": np.array(130, np.uint8)}
    nodes = [node("QAttention", ["q_in", "Wq", "bq", "xs", "ws", "mask", "xz", "wz"], ["y0"], num_heads=N),
             node("QAttention", ["q_in", "Wq", "bq", "xs", "ws", "", "xz", "wz", "past"], ["y1", "present"], num_heads=N,
                  unidirectional=1)]
    inputs = [("q_in", TensorProto.UINT8, [B, S, D]), ("mask", I32, [B, S]), ("past", F, [2, B, N, 3, 8])]
    outputs = [("y0", F, [B, S, D]), ("y1", F, [B, S, D]), ("present", F, [2, B, N, 3 + S, 8])]
    path = save(tmp_path, "qattention", nodes, inputs, outputs, weights.items())
    feeds = {"q_in": rng.integers(0, 256, (B, S, D)).astype(np.uint8),
             "mask": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32), "past": floats(rng, 2, B, N, 3, 8)}
    check(tmp_path, path, feeds)


def test_dynamic_quantize_lstm_single_node_matches(tmp_path):
    """DynamicQuantizeLSTM bidirectional over 4 steps with initial states, a batch of 2, and
    sequence_lens of 3: step 3 of X holds the largest values, which must not
    widen X's quantization range (ONNX Runtime quantizes the steps up to the longest sequence).
    ONNX Runtime at one thread: with more it may quantize a batch's hidden states row by row."""
    rng = np.random.default_rng(15)
    I, H, T = 4, 3, 4
    weights = {"W": rng.integers(0, 256, (2, I, 4 * H)).astype(np.uint8),
               "R": rng.integers(0, 256, (2, H, 4 * H)).astype(np.uint8), "B": floats(rng, 2, 8 * H),
               "w_scale": np.array([0.01, 0.02], np.float32), "w_zero": np.array([128, 120], np.uint8),
               "r_scale": np.array([0.02, 0.01], np.float32), "r_zero": np.array([130, 128], np.uint8),
               "lengths": np.array([3, 3], np.int32)}
    lstm = node("DynamicQuantizeLSTM", ["x", "W", "R", "B", "lengths", "initial_h", "initial_c", "", "w_scale", "w_zero",
                                        "r_scale", "r_zero"], ["Y", "Y_h", "Y_c"], hidden_size=H, direction="bidirectional")
    inputs = [("x", F, [T, B, I]), ("initial_h", F, [2, B, H]), ("initial_c", F, [2, B, H])]
    outputs = [("Y", F, [T, 2, B, H]), ("Y_h", F, [2, B, H]), ("Y_c", F, [2, B, H])]
    path = save(tmp_path, "quantized_lstm", [lstm], inputs, outputs, weights.items())
    x = floats(rng, T, B, I)
    x[3] *= 8
    feeds = {"x": x, "initial_h": floats(rng, 2, B, H), "initial_c": floats(rng, 2, B, H)}
    check(tmp_path, path, feeds, relative=1e-5, want=onnxruntime_outputs(path, feeds, threads=1))


# ---- clear errors ------------------------------------------------------------------------------


def test_out_of_scope_and_malformed_contrib_nodes_are_clear_errors(tmp_path):
    rng = np.random.default_rng(7)
    x = [("x", F, [B, S, D])]
    weights = [("W", floats(rng, D, 3 * D))]
    nchwc = helper.make_node("ReorderInput", ["x"], ["y"], domain="com.microsoft.nchwc")
    graph = helper.make_graph([nchwc], "nchwc", [helper.make_tensor_value_info("x", F, [1, 8, 4, 4])],
                              [helper.make_tensor_value_info("y", F, [1, 8, 4, 4])])
    path = tmp_path / "nchwc.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14),
                                                      helper.make_opsetid("com.microsoft.nchwc", 1)]), str(path))
    assert "NCHWc-layout ops (domain 'com.microsoft.nchwc')" in kiln_error(tmp_path, path)

    bits = node("MatMulNBits", ["x", "W"], ["y"], K=D, N=3 * D, bits=4, block_size=16)
    path = save(tmp_path, "nbits", [bits], x, [("y", F, [B, S, 3 * D])], weights)
    assert "MatMulNBits (weights quantized in blocks of 2 to 8 bits) is not supported" in kiln_error(tmp_path, path)

    lstm = node("DynamicQuantizeLSTM", ["s", "W", "R", "", "lengths", "", "", "", "ws", "wz", "rs", "rz"], ["Y"],
                hidden_size=2)
    weights_lstm = [("W", np.zeros((1, 3, 8), np.uint8)), ("R", np.zeros((1, 2, 8), np.uint8)),
                    ("ws", np.ones(1, np.float32)), ("wz", np.zeros(1, np.uint8)), ("rs", np.ones(1, np.float32)),
                    ("rz", np.zeros(1, np.uint8)), ("lengths", np.ones(B, np.int8))]
    path = save(tmp_path, "lstm_lengths", [lstm], [("s", F, [1, B, 3])], [("Y", F, [1, 1, B, 2])], weights_lstm)
    assert "sequence_lens must be int32 or int64, got int8" in kiln_error(tmp_path, path)

    path = save(tmp_path, "no_weights", [node("Attention", ["x"], ["y"], num_heads=N)], x, [("y", F, [B, S, D])])
    error = kiln_error(tmp_path, path)
    assert "(Attention)" in error and "input 1" in error and "is missing" in error, error

    path = save(tmp_path, "float_heads", [node("Attention", ["x", "W"], ["y"], num_heads=2.0)], x, [("y", F, [B, S, D])],
                weights)
    error = kiln_error(tmp_path, path)
    assert "attribute 'num_heads'" in error and "must be INT, it is FLOAT" in error, error

    path = save(tmp_path, "bad_heads", [node("Attention", ["x", "W"], ["y"], num_heads=3)], x, [("y", F, [B, S, D])],
                weights)
    assert "does not divide into 3 heads" in kiln_error(tmp_path, path)

    model = onnx.load(str(path))
    del model.opset_import[1]
    onnx.save(model, str(path))
    assert "in domain 'com.microsoft', which the model's opset_import does not name" in kiln_error(tmp_path, path)

    unknown = node("SparseAttention", ["x"], ["y"])
    path = save(tmp_path, "unknown", [unknown], x, [("y", F, [B, S, D])])
    assert "unsupported op type (SparseAttention)" in kiln_error(tmp_path, path)
