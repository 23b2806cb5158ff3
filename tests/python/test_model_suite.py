"""The model suite end to end: each model (exported once with seeded weights by
scripts/export_models.py into the model cache) is compiled with `kiln compile` at opt levels 0
and 3, exported as one library, reloaded from the .so alone by `kiln run`, and compared with
ONNX Runtime on the same seeded inputs: max|kiln - ort| <= 1e-4 * max(1, max|ort|)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")
ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("KILN_MODEL_CACHE", pathlib.Path.home() / ".cache/kiln/models"))
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "squeezenet1_1", "vit_b_16", "bert_2layer",
          "bert_base"]


def model_path(name):
    path = CACHE / f"{name}.onnx"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts/export_models.py"), "--models", name], check=True)
    assert path.exists(), f"export of {name} did not produce {path}"
    return path


def seeded_inputs(model):
    rng = np.random.default_rng(0)
    initializers = {i.name for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            vocab = max((i.dims[0] for i in model.graph.initializer if len(i.dims) == 2), default=100)
            feeds[value.name] = rng.integers(0, vocab, shape).astype(np.int64)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("opt_level", [3, 0])
@pytest.mark.parametrize("name", MODELS)
def test_model_matches_onnxruntime(tmp_path, name, opt_level):
    path = model_path(name)
    model = onnx.load(str(path), load_external_data=False)
    feeds = seeded_inputs(model)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    library = tmp_path / f"{name}.so"
    compiled = subprocess.run([KILN, "compile", str(path), "-O", str(opt_level), "-o", str(library)],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    print(compiled.stderr.strip().splitlines()[-1])
    np.savez(tmp_path / "in.npz", **feeds)
    ran = subprocess.run([KILN, "run", str(library), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                          str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    out = np.load(tmp_path / "out.npz")
    assert len(out.files) == len(expected)
    for i, want in enumerate(expected):
        got = out[f"output_{i}"]
        assert got.shape == want.shape and got.dtype == want.dtype
        assert float(np.std(want)) > 1e-3, f"{name}: the reference output is degenerate"
        bound = 1e-4 * max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got.astype(np.float64) - want).max())
        print(f"{name} -O{opt_level} output {i}: max |kiln - ort| = {err:.3g} (bound {bound:.3g})")
        assert err <= bound, f"{name} -O{opt_level} output {i}: max |kiln - ort| = {err:.3g} > {bound:.3g}"
