"""The model suite end to end: each model (exported once with seeded weights by
scripts/export_models.py into the model cache) is compiled with `kiln compile` at opt levels 0
and 3 (the models added for the performance work at 3 only: model_suite.O3_ONLY), exported as one library, reloaded from the .so alone by `kiln run`, and compared with
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
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
from test_cli import kiln_has_dnnl  # noqa: E402
from model_suite import MODELS, O3_ONLY, model_path, seeded_inputs  # noqa: E402  (test_python_models imports these from here)


# KILN_SUITE_OPT_LEVELS and KILN_SUITE_MODELS narrow the levels and the models: the newest ONNX
# Runtime's references are checked at -O3 on a model of each kind (test_python_wheel.py).
OPT_LEVELS = [int(level) for level in os.environ.get("KILN_SUITE_OPT_LEVELS", "3,0").split(",")]
SUITE = os.environ.get("KILN_SUITE_MODELS", ",".join(MODELS)).split(",")


def check_against_onnxruntime(tmp_path, name, flags, label):
    """Compiles `name` with `flags`, runs the library alone and compares each output with ONNX
    Runtime's; returns kiln compile's summary line."""
    path = model_path(name)
    model = onnx.load(str(path), load_external_data=False)
    feeds = seeded_inputs(model)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    library = tmp_path / f"{name}.so"
    compiled = subprocess.run([KILN, "compile", str(path), *flags, "-o", str(library)], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    summary = compiled.stderr.strip().splitlines()[-1]
    print(summary)
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
        print(f"{name} {label} output {i}: max |kiln - ort| = {err:.3g} (bound {bound:.3g})")
        assert err <= bound, f"{name} {label} output {i}: max |kiln - ort| = {err:.3g} > {bound:.3g}"
    return summary


CASES = [(name, level) for name in SUITE for level in OPT_LEVELS if level == 3 or name not in O3_ONLY]


@pytest.mark.parametrize("name,opt_level", CASES, ids=[f"{name}-O{level}" for name, level in CASES])
def test_model_matches_onnxruntime(tmp_path, name, opt_level):
    check_against_onnxruntime(tmp_path, name, ["-O", str(opt_level)], f"-O{opt_level}")


@pytest.mark.skipif(not kiln_has_dnnl(), reason="this kiln is built without oneDNN (KILN_USE_DNNL=OFF)")
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert_2layer"])
def test_model_with_dnnl_matches_onnxruntime(tmp_path, name):
    """The model with what oneDNN runs handed to it (--byoc dnnl): convolutions with their
    post-ops, dense layers, pooling, softmax and layer norm in dnnl_json modules."""
    summary = check_against_onnxruntime(tmp_path, name, ["--byoc", "dnnl"], "--byoc dnnl")
    assert "oneDNN" in summary, summary
    inspected = subprocess.run([KILN, "inspect", str(tmp_path / f"{name}.so")], capture_output=True, text=True)
    assert inspected.returncode == 0, inspected.stderr
    assert "dnnl_json tvmgen_default_dnnl_main_0:" in inspected.stdout, inspected.stdout
