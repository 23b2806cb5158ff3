"""The model suite shared by the tests, the demo and the benchmark: the model names, the cached
ONNX file of each (exported once by export_models.py with the running Python), and seeded inputs
(float inputs standard normal, int64 token ids below the vocabulary size)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx

ROOT = pathlib.Path(__file__).resolve().parents[1]
CACHE = pathlib.Path(os.environ.get("KILN_MODEL_CACHE", pathlib.Path.home() / ".cache/kiln/models"))
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "squeezenet1_1", "vit_b_16", "bert_2layer",
          "bert_base", "resnext50_32x4d", "regnet_y_400mf", "shufflenet_v2_x1_0", "densenet121", "db_text_detector"]
# Checked at -O3 only by `make test` (grouped convolutions, channel shuffles, concatenations, a
# text detector's transposed convolutions and resizes: what the performance work changes).
O3_ONLY = {"resnext50_32x4d", "regnet_y_400mf", "shufflenet_v2_x1_0", "densenet121", "db_text_detector"}


def model_path(name):
    """The cached ONNX file of `name`, exported first when it is missing."""
    path = CACHE / f"{name}.onnx"
    if not path.exists():
        print(f"exporting {name} (once; cached in {CACHE}) ...", flush=True)
        subprocess.run([sys.executable, str(ROOT / "scripts/export_models.py"), "--models", name], check=True)
    if not path.exists():
        raise RuntimeError(f"export of {name} did not produce {path}")
    return path


def seeded_inputs(model):
    """Inputs for an onnx.ModelProto, the same on every call."""
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
