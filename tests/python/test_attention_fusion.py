"""Scaled dot-product attention as exporters write it (the batched product Q K^T, the scale, an
optional additive mask, Softmax over the last axis, the product with V, and the Reshapes,
Transposes and Slices around Q, K, V and the output), which the fusion pass turns into one
nn.attention: Hugging Face BERT with a padding mask (its head Reshapes to a constant target or to
one computed from Shape), scaled by Div or Mul; torch.nn.MultiheadAttention / ViT sequence first,
with one packed QKV projection and Q divided before the product; a GPT-style causal mask; a value
head size apart from the query's; cross attention; and the attention scores and probabilities also
as graph outputs. Each tiny model (opset 17, float32, seeded weights as initializers, shapes and
scalars as Constant nodes as torch.onnx writes them) is compiled with `kiln compile -O3`, run with
`kiln run` and compared with ONNX Runtime (CPU): every output within 1e-4 * max(1, max|ort|). All
but the last must compile to a library with a function holding nn.attention and none holding
nn.softmax, a batched product, a transpose or a slice: the heads are read and written in place (the
last may be fused or not: it must only keep its outputs). ONNX Runtime's outputs
are checked against numpy's attention on the same weights, so the graphs are the attention meant."""
import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")
F = TensorProto.FLOAT

# Each case: the builder's options; batch, seq, heads and head are required.
CASES = {
    "bert_mask": dict(batch=1, seq=13, heads=3, head=8, mask="input"),
    "bert_mask_batch2_head20": dict(batch=2, seq=40, heads=2, head=20, mask="input", computed_shapes=True),
    "bert_mul_scale": dict(batch=1, seq=13, heads=3, head=8, scale="mul"),
    "seq_first_packed": dict(layout="seq_first", batch=1, seq=17, heads=4, head=16, scale="div_q"),
    "seq_first_packed_batch2": dict(layout="seq_first", batch=2, seq=9, heads=2, head=12, scale="div_q",
                                    softmax_axis=2, flat_merge=False),
    "causal": dict(batch=1, seq=11, heads=2, head=16, mask="causal"),
    "value_head_24": dict(batch=1, seq=10, heads=2, head=16, value_head=24),
    "cross": dict(batch=1, seq=7, kv_seq=23, heads=2, head=16, mask="input"),
    "scores_output": dict(batch=1, seq=13, heads=3, head=8, mask="input", scores_output=True),
}
MUST_FUSE = [name for name, case in CASES.items() if not case.get("scores_output")]


def attention_model(path, batch, seq, heads, head, layout="bert", kv_seq=None, value_head=None, mask=None,
                    scale="div", softmax_axis=-1, computed_shapes=False, flat_merge=True, scores_output=False,
                    seed=0, seq_dim=None):
    """Writes the attention graph the options describe to `path`; returns (feeds, weights).
    layout "bert": x [B, S, E], Q, K, V projected apart (K and V from y [B, T, E] given kv_seq),
    heads [B, N, S, H]; "seq_first": x [S, B, E], one packed projection Sliced into q, k, v, heads
    [B*N, S, H], merged to [S*B, E] before the output projection (flat_merge) or to [S, B, E].
    mask: None, "input" (a 0/1 `mask` [B, T] made (1 - mask) * -10000) or "causal" (a constant
    [S, S] of -1e9 above the diagonal). scale: "div" or "mul" after Q K^T, "div_q" on Q. seq_dim: a
    name the inputs' sequence axis has instead of its length (feeds still of length `seq`)."""
    rng = np.random.default_rng(seed)
    kv_seq, value_head = kv_seq or seq, value_head or head
    hidden, value_hidden = heads * head, heads * value_head
    nodes, inits = [], {}

    def const(name, value, dtype=np.int64):
        nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, dtype))))
        return name

    def op(kind, inputs, output, **attrs):
        nodes.append(helper.make_node(kind, inputs, [output], **attrs))
        return output

    def weight(name, *shape):
        std = shape[0] ** -0.5 if len(shape) == 2 else 0.1  # scores of about unit spread
        inits[name] = (std * rng.standard_normal(shape)).astype(np.float32)
        return name

    def heads_of(t, name, size, perm):  # [B, L, N*size] -> heads, K transposed by perm
        if computed_shapes:  # as torch.onnx writes x.size()[:-1] + (N, size) for dynamic axes
            shape = op("Shape", [t], f"{name}_shape")
            dims = [op("Unsqueeze", [op("Gather", [shape, const(f"{name}_i{i}", i)], f"{name}_d{i}", axis=0),
                                     const(f"{name}_ax{i}", [0])], f"{name}_u{i}") for i in range(2)]
            target = op("Concat", dims + [const(f"{name}_nh", [heads, size])], f"{name}_target", axis=0)
        else:
            target = const(f"{name}_target", [0, 0, heads, size])
        return op("Transpose", [op("Reshape", [t, target], f"{name}_split")], f"{name}_heads", perm=perm)

    x_shape = [batch, seq, hidden] if layout == "bert" else [seq, batch, hidden]
    inputs, feeds = [("x", x_shape)], {"x": rng.standard_normal(x_shape).astype(np.float32)}
    if layout == "bert":
        source = "x"
        if kv_seq != seq:
            source = "y"
            inputs.append(("y", [batch, kv_seq, hidden]))
            feeds["y"] = rng.standard_normal(inputs[-1][1]).astype(np.float32)
        proj = {n: op("Add", [op("MatMul", [src, weight(f"W{n}", hidden, width)], f"{n}_mm"), weight(f"b{n}", width)],
                      f"{n}_proj") for n, src, width in (("q", "x", hidden), ("k", source, hidden),
                                                         ("v", source, value_hidden))}
        q = heads_of(proj["q"], "q", head, [0, 2, 1, 3])
        k = heads_of(proj["k"], "k", head, [0, 2, 3, 1])
        v = heads_of(proj["v"], "v", value_head, [0, 2, 1, 3])
    else:
        packed = op("Add", [op("MatMul", ["x", weight("Wqkv", hidden, 3 * hidden)], "qkv_mm"),
                            weight("bqkv", 3 * hidden)], "qkv")
        flat = const("heads_shape", [seq, batch * heads, head])
        part = {n: op("Reshape", [op("Slice", [packed, const(f"{n}_start", [i * hidden]),
                                               const(f"{n}_end", [(i + 1) * hidden]), const(f"{n}_axis", [2])],
                                     f"{n}_slice"), flat], f"{n}_flat") for i, n in enumerate("qkv")}
        q, k, v = (op("Transpose", [part[n]], f"{n}_heads", perm=p) for n, p in
                   (("q", [1, 0, 2]), ("k", [1, 2, 0]), ("v", [1, 0, 2])))
    if scale == "div_q":
        q = op("Div", [q, const("root", np.sqrt(head), np.float32)], "q_scaled")
    scores = op("MatMul", [q, k], "qk")
    if scale == "div":
        scores = op("Div", [scores, const("root", np.sqrt(head), np.float32)], "qk_scaled")
    elif scale == "mul":
        scores = op("Mul", [scores, const("inverse_root", 1 / np.sqrt(head), np.float32)], "qk_scaled")
    if mask == "input":
        inputs.append(("mask", [batch, kv_seq]))
        keep = np.arange(kv_seq)[None] < kv_seq - np.arange(1, batch + 1)[:, None] * kv_seq // 4
        feeds["mask"] = keep.astype(np.float32)
        extended = op("Unsqueeze", ["mask", const("mask_axes", [1, 2])], "mask_4d")
        inverted = op("Sub", [const("one", 1.0, np.float32), extended], "mask_inverted")
        scores = op("Add", [scores, op("Mul", [inverted, const("big", -10000.0, np.float32)], "mask_bias")], "masked")
    elif mask == "causal":
        inits["causal"] = np.triu(np.full((seq, seq), -1e9, np.float32), 1)
        scores = op("Add", [scores, "causal"], "masked")
    probs = op("Softmax", [scores], "probs", axis=softmax_axis)
    context = op("MatMul", [probs, v], "context")
    if layout == "bert":
        merged = op("Reshape", [op("Transpose", [context], "context_t", perm=[0, 2, 1, 3]),
                                const("merged_shape", [0, 0, value_hidden])], "merged")
    else:  # torch: view(S * B, E), the projection, view(S, B, E); or straight to [S, B, E]
        merged_shape = [seq * batch, hidden] if flat_merge else x_shape
        merged = op("Reshape", [op("Transpose", [context], "context_t", perm=[1, 0, 2]),
                                const("merged_shape", merged_shape)], "merged")
    out = op("Add", [op("MatMul", [merged, weight("Wo", value_hidden, hidden)], "out_mm"), weight("bo", hidden)],
             "out_proj")
    if layout == "seq_first" and flat_merge:
        out = op("Reshape", [out, const("out_shape", x_shape)], "out")
    score_shape = [batch, heads, seq, kv_seq] if layout == "bert" else [batch * heads, seq, seq]
    outputs = [(out, x_shape)] + ([(scores, score_shape), (probs, score_shape)] if scores_output else [])
    if seq_dim is not None:  # bert layout, self-attention: the sequence is axis 1 of every input and output
        def named(pairs):
            return [(n, [seq_dim if i == 1 else d for i, d in enumerate(shape)]) for n, shape in pairs]
        inputs, outputs = named(inputs), named(outputs)
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, F, s) for n, s in outputs],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return feeds, inits


def numpy_attention(case, feeds, w):
    """The outputs `attention_model` means for `case`, computed in float64 with numpy."""
    batch, seq, heads, head = case["batch"], case["seq"], case["heads"], case["head"]
    seq_first = case.get("layout") == "seq_first"
    x = feeds["x"].astype(np.float64).transpose(1, 0, 2) if seq_first else feeds["x"].astype(np.float64)
    y = feeds.get("y", x).astype(np.float64)
    if seq_first:
        q, k, v = np.split(x @ w["Wqkv"] + w["bqkv"], 3, axis=-1)
    else:
        q, k, v = x @ w["Wq"] + w["bq"], y @ w["Wk"] + w["bk"], y @ w["Wv"] + w["bv"]
    split = lambda t: t.reshape(batch, t.shape[1], heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head)
    if case.get("mask") == "input":
        scores = scores + (1 - feeds["mask"][:, None, None, :]) * -10000.0
    elif case.get("mask") == "causal":
        scores = scores + w["causal"]
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, -1) @ w["Wo"] + w["bo"]
    if not seq_first:
        return [out] + ([scores, probs] if case.get("scores_output") else [])
    flat = lambda t: t.reshape(batch * heads, *t.shape[2:])  # noqa: E731
    return [out.transpose(1, 0, 2)] + ([flat(scores), flat(probs)] if case.get("scores_output") else [])


def onnxruntime_outputs(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def compiled(tmp_path, path):
    library = tmp_path / (path.stem + ".so")
    result = subprocess.run([KILN, "compile", str(path), "-O3", "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return library


def kiln_outputs(tmp_path, library, feeds):
    np.savez(tmp_path / "in.npz", **feeds)
    ran = subprocess.run([KILN, "run", str(library), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                          str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    out = np.load(tmp_path / "out.npz")
    return [out[f"output_{i}"] for i in range(len(out.files))]


def fused_ops(library):
    """The op names of the operator functions `kiln inspect` lists (the parenthesized list that ends
    each row of its "Operator functions" table)."""
    inspected = subprocess.run([KILN, "inspect", str(library)], check=True, capture_output=True, text=True).stdout
    table = inspected.split("Operator functions:", 1)[1].splitlines()[2:]
    ops = set()
    for line in table:
        row = re.match(r"\s+\d+\s.*\((.*)\)\s*$", line)
        if row is None:
            break
        ops.update(o for o in row.group(1).split(",") if o)
    return ops


def assert_close(got, want, what):
    assert len(got) == len(want), (what, len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (what, i, g.shape, w.shape)
        assert float(np.std(w)) > 1e-3, f"{what} output {i}: the reference output is degenerate"
        err = float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max())
        bound = 1e-4 * max(1.0, float(np.abs(w).max()))
        print(f"{what} output {i}: max error {err:.3g} (bound {bound:.3g})")
        assert err <= bound, f"{what} output {i}: max error {err:.3g} > {bound:.3g}"


@pytest.mark.parametrize("name", CASES)
def test_onnxruntime_computes_the_attention_meant(tmp_path, name):
    """The graph as ONNX Runtime runs it against numpy's attention: the model is the one described."""
    feeds, weights = attention_model(tmp_path / f"{name}.onnx", **CASES[name])
    want = numpy_attention(CASES[name], feeds, weights)
    assert_close(onnxruntime_outputs(tmp_path / f"{name}.onnx", feeds), want, f"{name} (ort against numpy)")


@pytest.mark.parametrize("name", CASES)
def test_attention_matches_onnxruntime(tmp_path, name):
    """kiln's outputs against ONNX Runtime's, then the library's ops: fused into nn.attention."""
    path = tmp_path / f"{name}.onnx"
    feeds, _ = attention_model(path, **CASES[name])
    library = compiled(tmp_path, path)
    assert_close(kiln_outputs(tmp_path, library, feeds), onnxruntime_outputs(path, feeds), name)
    if name in MUST_FUSE:
        ops = fused_ops(library)
        # The heads' split (slices, reshapes, transposes) and join are read and written in place.
        assert "nn.attention" in ops and not ops & {"nn.softmax", "nn.batch_matmul", "transpose", "strided_slice"}, \
            f"{name}: ops {', '.join(sorted(ops))}"


def test_attention_of_any_sequence_length_in_one_library(tmp_path):
    """BERT with a padding mask compiled once for S = 1..40 (`--dims`): fused, and against ONNX
    Runtime at lengths from 1 to the max, the views' strides computed from S at run time."""
    path = tmp_path / "dynamic.onnx"
    attention_model(path, batch=2, seq=13, heads=3, head=8, mask="input", seq_dim="S")
    library = tmp_path / "dynamic.so"
    result = subprocess.run([KILN, "compile", str(path), "-O3", "--dims", "S=1..40", "-o", str(library)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "nn.attention" in fused_ops(library) and "transpose" not in fused_ops(library)
    for seq in (40, 1, 7, 23):
        feeds, _ = attention_model(tmp_path / f"s{seq}.onnx", batch=2, seq=seq, heads=3, head=8, mask="input",
                                   seq_dim="S")  # the same seeded weights, inputs of this length
        assert_close(kiln_outputs(tmp_path, library, feeds), onnxruntime_outputs(path, feeds), f"S = {seq}")
