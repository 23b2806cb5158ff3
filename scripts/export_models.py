"""Exports the model suite to ONNX (opset 14) with seeded random weights, once, into the model
cache (${KILN_MODEL_CACHE:-~/.cache/kiln/models}/<name>.onnx). Nothing is downloaded: the
torchvision architectures are built with weights=None. Batch-norm statistics are calibrated on
random data and parameters that start at zero (classifier heads) are re-randomised, so that the
outputs are not degenerate. Run with the Python of scripts/python_env.sh (Debian's PyTorch).

    python scripts/export_models.py [--models resnet18,bert_2layer,resnet50_batched] [--list]
"""
import argparse
import math
import os
import pathlib
import time

import torch

CACHE = pathlib.Path(os.environ.get("KILN_MODEL_CACHE", pathlib.Path.home() / ".cache/kiln/models"))
VISION = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "squeezenet1_1", "vit_b_16", "resnext50_32x4d",
          "regnet_y_400mf", "shufflenet_v2_x1_0", "densenet121"]
DETECTORS = ["db_text_detector"]
# Exported with a symbolic batch dimension "N" (the shapes benchmark: one library for every batch
# beside libraries compiled for each).
BATCHED = {"resnet50_batched": "resnet50"}
BERT = {"bert_base": 12, "bert_2layer": 2}
# Exported with a symbolic sequence length "S" (the shapes benchmark: one library for every length).
BERT_DYNAMIC = {"bert_2layer_dynamic": 2}
# Exported with a symbolic height "H" and width "W" (the shapes benchmark).
VISION_DYNAMIC = {"db_text_detector_dynamic": "db_text_detector"}
HIDDEN, HEADS, FFN, VOCAB, SEQUENCE, MAX_POSITIONS = 768, 12, 3072, 30522, 128, 512


class EncoderLayer(torch.nn.Module):
    """A BERT encoder layer written with Linear/matmul/softmax so it exports to plain ONNX ops."""

    def __init__(self):
        super().__init__()
        self.query, self.key, self.value = (torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.attention_out = torch.nn.Linear(HIDDEN, HIDDEN)
        self.attention_norm = torch.nn.LayerNorm(HIDDEN, eps=1e-12)
        self.intermediate = torch.nn.Linear(HIDDEN, FFN)
        self.output = torch.nn.Linear(FFN, HIDDEN)
        self.output_norm = torch.nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, x):
        batch, sequence, head_size = x.shape[0], x.shape[1], HIDDEN // HEADS

        def heads(t):
            return t.view(batch, sequence, HEADS, head_size).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_size)
        context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(batch, sequence, HIDDEN)
        x = self.attention_norm(x + self.attention_out(context))
        return self.output_norm(x + self.output(torch.nn.functional.gelu(self.intermediate(x))))


class BertEncoder(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCAB, HIDDEN)
        self.positions = torch.nn.Embedding(MAX_POSITIONS, HIDDEN)
        self.norm = torch.nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = torch.nn.ModuleList(EncoderLayer() for _ in range(layers))
        for module in self.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
                torch.nn.init.normal_(module.weight, std=0.02)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(input_ids) + self.positions(positions))
        for layer in self.layers:
            x = layer(x)
        return x


class DbTextDetector(torch.nn.Module):
    """PaddleOCR's text detector (DB) in its default form: a MobileNetV3 backbone, DBFPN (1x1
    laterals to 96 channels, a top-down path of nearest x2 Resizes and adds, 3x3 convolutions to 24
    channels, each level resized to 1/4 and concatenated) and DBHead's probability map (3x3
    conv, BN, ReLU, two stride-2 ConvTransposes with BN and ReLU between, sigmoid)."""

    LEVELS = (3, 6, 12, 16)  # the backbone's features at strides 4, 8, 16 and 32

    def __init__(self):
        super().__init__()
        import torchvision

        self.backbone = torchvision.models.mobilenet_v3_large(weights=None).features
        channels = (24, 40, 112, 960)
        self.laterals = torch.nn.ModuleList(torch.nn.Conv2d(c, 96, 1, bias=False) for c in channels)
        self.smooth = torch.nn.ModuleList(torch.nn.Conv2d(96, 24, 3, padding=1, bias=False) for _ in channels)
        self.head = torch.nn.Sequential(
            torch.nn.Conv2d(96, 24, 3, padding=1, bias=False), torch.nn.BatchNorm2d(24), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(24, 24, 2, stride=2), torch.nn.BatchNorm2d(24), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(24, 1, 2, stride=2), torch.nn.Sigmoid())

    def forward(self, x):
        features = []
        for i, layer in enumerate(self.backbone):
            x = layer(x)
            if i in self.LEVELS:
                features.append(x)
        inner = [lateral(f) for lateral, f in zip(self.laterals, features)]
        for i in (2, 1, 0):
            inner[i] = inner[i] + torch.nn.functional.interpolate(inner[i + 1], scale_factor=2.0, mode="nearest")
        levels = [smooth(f) for smooth, f in zip(self.smooth, inner)]
        levels = [levels[0]] + [torch.nn.functional.interpolate(f, scale_factor=2.0 ** i, mode="nearest")
                                for i, f in enumerate(levels[1:], start=1)]
        return self.head(torch.cat(levels[::-1], dim=1))


def calibrated(model, size):
    """`model` with batch-norm statistics from random batches and no parameter left at zero."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = None  # cumulative average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, 3, size, size) if size <= 224 else torch.randn(2, 3, size, size))
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 1 and float(p.abs().max()) == 0.0:
                torch.nn.init.normal_(p, std=0.05)
    return model.eval()


def vision_model(name):
    import torchvision

    if name == "db_text_detector":
        return calibrated(DbTextDetector(), 640), torch.randn(1, 3, 640, 640), "input"
    model = getattr(torchvision.models, name)(weights=None)
    return calibrated(model, 224), torch.randn(1, 3, 224, 224), "input"


def export(name):
    torch.manual_seed(0)
    dynamic_axes = None
    if name in BERT or name in BERT_DYNAMIC:
        layers = BERT.get(name) or BERT_DYNAMIC[name]
        model, example, input_name = BertEncoder(layers).eval(), torch.randint(0, VOCAB, (1, SEQUENCE)), "input_ids"
        if name in BERT_DYNAMIC:
            dynamic_axes = {input_name: {1: "S"}, "output": {1: "S"}}
    elif name in BATCHED:
        model, example, input_name = vision_model(BATCHED[name])
        dynamic_axes = {input_name: {0: "N"}, "output": {0: "N"}}
    elif name in VISION_DYNAMIC:
        model, example, input_name = vision_model(VISION_DYNAMIC[name])
        dynamic_axes = {input_name: {2: "H", 3: "W"}, "output": {2: "H", 3: "W"}}
    else:
        model, example, input_name = vision_model(name)
    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / f"{name}.onnx"
    temporary = CACHE / f".{name}.{os.getpid()}.onnx"
    with torch.no_grad():
        out = model(example)
    # Outside no_grad: there torchvision's attention takes a fused fast path ONNX cannot express.
    torch.onnx.export(model, example, str(temporary), opset_version=14, input_names=[input_name],
                      output_names=["output"], do_constant_folding=True, dynamic_axes=dynamic_axes)
    temporary.rename(target)
    return float(out.std())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # The BATCHED and *_DYNAMIC models on request.
    parser.add_argument("--models", default=",".join(VISION + DETECTORS + list(BERT)))
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        print("\n".join(VISION + DETECTORS + list(BERT)))
        return
    torch.set_num_threads(os.cpu_count() or 1)
    for name in args.models.split(","):
        known = VISION + DETECTORS + list(BERT) + list(BATCHED) + list(BERT_DYNAMIC) + list(VISION_DYNAMIC)
        if name not in known:
            raise SystemExit(f"unknown model '{name}' (known: {', '.join(known)})")
        if (CACHE / f"{name}.onnx").exists():
            continue
        start = time.time()
        spread = export(name)
        print(f"exported {name} in {time.time() - start:.1f} s (output std {spread:.3g})", flush=True)


if __name__ == "__main__":
    main()
