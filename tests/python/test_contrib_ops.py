"""ONNX Runtime's contrib ops (com.microsoft, and the default-domain LayerNormalization below opset 17
and SimplifiedLayerNormalization it runs) in models its own tools write: the transformers optimizer
on bert_2layer and on small GPT-2-, CLIP-, T5- and ViT-style blocks (contrib_models.py), a session's
saved optimized model (FusedConv, FusedGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul),
quantize_static's QOperator format; and single-node models of each op's attribute variants. Each is
compiled with `kiln compile`, run with `kiln run` and compared with ONNX Runtime: float outputs within
1e-4 * max(1, max|ort|) (2e-4 where a fused op's kernel sums in another order), integer outputs
exactly or, where ONNX Runtime's kernels compute in fixed point, within one step. Each built model is
checked to hold the ops it stands for, so a tool that stops writing them fails the test."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
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


def onnxruntime_outputs(path, feeds, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def compiled(tmp_path, path, opt_level=0):
    library = tmp_path / (pathlib.Path(path).stem + ".so")
    result = subprocess.run([KILN, "compile", str(path), f"-O{opt_level}", "-o", str(library)], capture_output=True,
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


def check(tmp_path, path, feeds, opt_level=0, relative=1e-4, steps=None):
    """Compiles `path`, runs it on `feeds` and compares each output with ONNX Runtime's: within
    `relative` * max(1, max|ort|), integer outputs exactly or, for outputs listed in `steps`, within
    that many steps. Returns the library."""
    library = compiled(tmp_path, path, opt_level)
    want = onnxruntime_outputs(path, feeds)
    got = kiln_outputs(tmp_path, library, feeds)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        err = float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()) if w.size else 0.0
        if np.issubdtype(w.dtype, np.integer):
            bound = (steps or {}).get(i, 0)
        else:
            assert float(np.std(w)) > 1e-3, f"{path.name} output {i}: the reference output is degenerate"
            bound = relative * max(1.0, float(np.abs(w).max())) + (steps or {}).get(i, 0)
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


def median_ms(library):
    timed = subprocess.run([KILN, "run", str(library), "--print-time", "--repeat", "20"], check=True, capture_output=True,
                           text=True).stdout
    lines = timed.splitlines()
    header = next(i for i, line in enumerate(lines) if "median (ms)" in line)  # mean, median, max, min, std
    return float(lines[header + 1].split()[1])


def test_bert_optimized_reaches_the_unfused_kernels(tmp_path):
    """bert_2layer through the transformers optimizer (opt_level 1, the embedding fusion off: it
    needs a mask input the suite's model has none of): Attention, SkipLayerNormalization, BiasGelu
    and LayerNormalization at opset 14. At -O3 its dense layers, batched products, softmax and
    layer norms run on the kernels the unfused model's do, and it is no slower."""
    unfused = model_path("bert_2layer")
    path = contrib_models.optimized(unfused, tmp_path / "bert_fused.onnx", "bert", 1, enable_embed_layer_norm=False)
    assert {(MS, "Attention"), (MS, "SkipLayerNormalization"), (MS, "BiasGelu"), ("", "LayerNormalization")} <= ops_of(path)
    assert onnx.load(str(path)).opset_import[0].version == 14
    feeds = seeded_inputs(onnx.load(str(unfused), load_external_data=False))
    fused_library = check(tmp_path, path, feeds, opt_level=3)
    unfused_library = compiled(tmp_path, unfused, 3)
    heavy = ("dense", "BatchGemm", "Softmax", "LayerNorm")
    fused_kernels, unfused_kernels = library_kernels(fused_library), library_kernels(unfused_library)
    pick = lambda kernels: {k: n for k, n in kernels.items() if any(h in k for h in heavy)}  # noqa: E731
    print("fused:", fused_kernels, "\nunfused:", unfused_kernels)
    # The same kernels; Attention's Q, K and V come from one dense layer (3 in the unfused graph).
    assert set(pick(fused_kernels)) == set(pick(unfused_kernels))
    fused_ms, unfused_ms = median_ms(fused_library), median_ms(unfused_library)
    print(f"median ms: fused {fused_ms}, unfused {unfused_ms}")
    assert fused_ms <= 1.25 * unfused_ms + 0.5


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
