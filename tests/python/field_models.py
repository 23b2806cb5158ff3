"""Small models of the kinds deployed in the field, built with PyTorch (seeded weights) and exported
to ONNX by the test itself: a YOLO-style detector (SiLU convs, Split, nearest and bilinear Resize,
Concat, heads decoded against their grids), a causal-mask GPT block (Trilu, LayerNorm, GELU, masked softmax), a
DBNet-style text detector (strided conv backbone, ConvTranspose upsampling, skip concatenation,
sigmoid probability map) and a CRNN-style text recognizer (conv features, a bidirectional LSTM,
per-step class scores), 1-D models (an audio front end with the STFT as a convolution, a byte CNN
ending in a global max pool), a 3-D CNN (3-D convolutions, pooling and a transposed convolution), and a small classifier quantized by ONNX Runtime's quantize_static (QDQ,
uint8 activations, int8 per-channel weights). Each `export_<name>(path)` writes the model and returns its input shapes."""
import math

import torch

SEQUENCE, HIDDEN, HEADS = 12, 32, 4


class GptBlock(torch.nn.Module):
    """Pre-norm decoder block: causal self-attention (mask from torch.triu) and a GELU MLP."""

    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(HIDDEN), torch.nn.LayerNorm(HIDDEN)
        self.qkv, self.proj = torch.nn.Linear(HIDDEN, 3 * HIDDEN), torch.nn.Linear(HIDDEN, HIDDEN)
        self.up, self.down = torch.nn.Linear(HIDDEN, 4 * HIDDEN), torch.nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(HIDDEN, dim=-1)
        heads = lambda t: t.reshape(batch, length, HEADS, HIDDEN // HEADS).transpose(1, 2)  # noqa: E731
        scores = heads(q) @ heads(k).transpose(-1, -2) / math.sqrt(HIDDEN // HEADS)
        future = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        context = (torch.softmax(scores, dim=-1) @ heads(v)).transpose(1, 2).reshape(batch, length, HIDDEN)
        x = x + self.proj(context)
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


def conv_bn_relu(cin, cout, stride):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout),
                               torch.nn.ReLU())


class DbNetStyle(torch.nn.Module):
    """A backbone down to 1/8, a top-down path that upsamples with transposed convolutions and
    concatenates the skips, and DBNet's head: a probability map at full size."""

    def __init__(self):
        super().__init__()
        self.stage1, self.stage2, self.stage3 = conv_bn_relu(3, 8, 2), conv_bn_relu(8, 16, 2), conv_bn_relu(16, 32, 2)
        self.up3 = torch.nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.up2 = torch.nn.ConvTranspose2d(32, 8, 4, stride=2, padding=1)
        self.head = torch.nn.Sequential(conv_bn_relu(16, 8, 1), torch.nn.ConvTranspose2d(8, 4, 2, stride=2),
                                        torch.nn.ReLU(), torch.nn.ConvTranspose2d(4, 1, 2, stride=2, groups=1))

    def forward(self, x):
        c1 = self.stage1(x)
        c2 = self.stage2(c1)
        c3 = self.stage3(c2)
        p2 = torch.cat([self.up3(c3), c2], dim=1)
        p1 = torch.cat([self.up2(p2), c1], dim=1)
        return torch.sigmoid(self.head(p1))


class Crnn(torch.nn.Module):
    """Conv features pooled to a height of 1, read left to right by a two-layer bidirectional LSTM,
    then log-probabilities of 20 classes per column (as CTC decoding wants)."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(conv_bn_relu(1, 8, 1), torch.nn.MaxPool2d(2), conv_bn_relu(8, 16, 1),
                                            torch.nn.MaxPool2d((2, 1)), conv_bn_relu(16, 24, 1),
                                            torch.nn.AdaptiveAvgPool2d((1, None)))
        self.rnn = torch.nn.LSTM(24, 16, num_layers=2, bidirectional=True)
        self.classes = torch.nn.Linear(32, 20)

    def forward(self, x):
        columns = self.features(x).squeeze(2).permute(2, 0, 1)  # [W, N, C]
        sequence, _ = self.rnn(columns)
        return torch.log_softmax(self.classes(sequence), dim=-1)


def conv_bn_silu(cin, cout, stride):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout),
                               torch.nn.SiLU())


class YoloStyle(torch.nn.Module):
    """YOLOv5/v8's shape at small size: YOLOv5's Focus stem (the four pixels of each 2x2 cell
    stacked as channels: stride-2 slices, two of them slicing one slice, concatenated), a SiLU
    backbone to 1/16, a split-and-concatenate block, a
    top-down neck that upsamples with nearest Resize, a bilinear (pytorch_half_pixel) side branch,
    and two detection heads decoded against their grids into [N, boxes, 4 + classes]."""

    CLASSES = 3

    def __init__(self):
        super().__init__()
        self.stem, self.down1 = conv_bn_silu(12, 8, 1), conv_bn_silu(8, 16, 2)
        self.down2, self.down3 = conv_bn_silu(16, 32, 2), conv_bn_silu(32, 32, 2)
        self.block = conv_bn_silu(8, 8, 1)
        self.lateral = conv_bn_silu(64, 32, 1)
        self.side = torch.nn.Conv2d(16, 32, 1)
        self.heads = torch.nn.ModuleList([torch.nn.Conv2d(32, 4 + self.CLASSES, 1) for _ in range(2)])

    def focus(self, x):
        return self.stem(torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1))

    def split_block(self, x):
        a, b = x.split([8, 8], dim=1)
        return torch.cat([a, self.block(b)], dim=1)

    def decode(self, head, features, stride):
        n, _, h, w = features.shape
        out = head(features).reshape(n, 4 + self.CLASSES, h * w).permute(0, 2, 1)
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        grid = torch.stack([xs, ys], dim=-1).reshape(1, h * w, 2).float()
        xy = (out[..., :2].sigmoid() * 2 - 0.5 + grid) * stride
        wh = out[..., 2:4].exp() * stride
        return torch.cat([xy, wh, out[..., 4:].sigmoid()], dim=-1)

    def forward(self, x):
        c2 = self.down1(self.focus(x))
        c3 = self.down2(self.split_block(c2))
        c4 = self.down3(c3)
        up = torch.nn.functional.interpolate(c4, scale_factor=2.0, mode="nearest")
        p3 = self.lateral(torch.cat([up, c3], dim=1))
        p3 = p3 + torch.nn.functional.interpolate(self.side(c2), size=p3.shape[2:], mode="bilinear",
                                                  align_corners=False)
        return torch.cat([self.decode(self.heads[0], p3, 8), self.decode(self.heads[1], c4, 16)], dim=1)


class AudioFrontEnd(torch.nn.Module):
    """A voice-activity detector's shape (as Silero VAD): the STFT as a strided 1-D convolution with
    fixed cosine and sine filters, the magnitude, then 1-D convolutions with batch norm and a max
    pool to a speech probability per group of frames."""

    def __init__(self, window=128, hop=32):
        super().__init__()
        bins = window // 2 + 1
        t = torch.arange(window, dtype=torch.float32)
        f = torch.arange(bins, dtype=torch.float32)[:, None]
        hann = 0.5 - 0.5 * torch.cos(2 * math.pi * t / window)
        basis = torch.cat([torch.cos(2 * math.pi * f * t / window), -torch.sin(2 * math.pi * f * t / window)]) * hann
        self.stft = torch.nn.Conv1d(1, 2 * bins, window, stride=hop, bias=False)
        self.stft.weight.data.copy_(basis[:, None, :])
        self.bins = bins
        self.encoder = torch.nn.Sequential(
            torch.nn.Conv1d(bins, 32, 3, padding=1), torch.nn.BatchNorm1d(32), torch.nn.ReLU(),
            torch.nn.Conv1d(32, 32, 3, stride=2, padding=1), torch.nn.BatchNorm1d(32), torch.nn.ReLU(),
            torch.nn.MaxPool1d(2), torch.nn.Conv1d(32, 16, 5, padding=2, groups=4), torch.nn.ReLU())
        self.head = torch.nn.Sequential(torch.nn.Conv1d(16, 1, 1), torch.nn.Sigmoid())

    def forward(self, x):
        spectrum = self.stft(x)
        re, im = spectrum[:, :self.bins], spectrum[:, self.bins:]
        return self.head(self.encoder(torch.sqrt(re * re + im * im + 1e-6)))


class ByteCnn(torch.nn.Module):
    """A file-type detector's shape (as Magika): embedded bytes through dilated 1-D convolutions,
    a global max pool over the sequence and class scores."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv1d(8, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.Conv1d(32, 32, 3, padding=2, dilation=2),
            torch.nn.ReLU(), torch.nn.Conv1d(32, 48, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveMaxPool1d(1),
            torch.nn.Flatten(), torch.nn.Linear(48, 12))

    def forward(self, x):
        return torch.softmax(self.body(x), dim=-1)


class Video3d(torch.nn.Module):
    """A 3-D CNN over a short clip (as video classifiers and medical-volume segmenters): 3-D
    convolutions with batch norm, a 3-D max pool, a 3-D transposed convolution back up, and a global
    average pool to class scores beside the upsampled map."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv3d(3, 8, 3, padding=1), torch.nn.BatchNorm3d(8), torch.nn.ReLU(),
                                        torch.nn.MaxPool3d(2))
        self.down = torch.nn.Sequential(torch.nn.Conv3d(8, 16, 3, stride=(1, 2, 2), padding=1),
                                        torch.nn.BatchNorm3d(16), torch.nn.ReLU())
        self.up = torch.nn.ConvTranspose3d(16, 4, (2, 4, 4), stride=(2, 4, 4))
        self.classes = torch.nn.Sequential(torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(), torch.nn.Linear(16, 5))

    def forward(self, x):
        features = self.down(self.stem(x))
        return self.classes(features), torch.sigmoid(self.up(features))


def _export(model, example, path, opset, outputs=("output",)):
    torch.manual_seed(0)
    for module in model.modules():  # non-trivial batch-norm statistics
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    torch.onnx.export(model.eval(), example, str(path), opset_version=opset, input_names=["input"],
                      output_names=list(outputs), do_constant_folding=True)
    return {"input": tuple(example.shape)}


def export_gpt_block(path):
    torch.manual_seed(0)
    return _export(GptBlock(), torch.randn(1, SEQUENCE, HIDDEN), path, 17)


def export_dbnet_style(path):
    torch.manual_seed(0)
    return _export(DbNetStyle(), torch.randn(1, 3, 64, 96), path, 13)


def export_crnn(path):
    torch.manual_seed(0)
    return _export(Crnn(), torch.randn(1, 1, 16, 40), path, 13)


def export_audio_frontend(path):
    torch.manual_seed(0)
    return _export(AudioFrontEnd(), torch.randn(1, 1, 4000), path, 13)


def export_byte_cnn(path):
    torch.manual_seed(0)
    return _export(ByteCnn(), torch.randn(1, 8, 512), path, 13)


def export_video_3d(path):
    torch.manual_seed(0)
    return _export(Video3d(), torch.randn(1, 3, 8, 32, 32), path, 13, outputs=("classes", "map"))


def export_yolo_style(path):
    torch.manual_seed(0)
    return _export(YoloStyle(), torch.randn(1, 3, 64, 96), path, 13)


class SmallClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(conv_bn_relu(3, 8, 2), conv_bn_relu(8, 16, 2), torch.nn.AdaptiveAvgPool2d(1),
                                        torch.nn.Flatten(), torch.nn.Linear(16, 10))

    def forward(self, x):
        return self.body(x)


def export_quantized_static(path):
    """The classifier exported, then quantized with calibration on seeded inputs."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    torch.manual_seed(0)
    float_path = path.with_name(path.stem + "_float.onnx")
    shapes = _export(SmallClassifier(), torch.randn(1, 3, 32, 32), float_path, 13)

    class Calibration(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.batches = iter([{"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(str(float_path), str(path), Calibration(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    return shapes


class BrightnessGate(torch.nn.Module):
    """A data-dependent branch, as scripted models have: features are sharpened when the image is
    bright on average and smoothed otherwise (an If whose condition is known only at run time)."""

    def __init__(self):
        super().__init__()
        self.features = conv_bn_relu(3, 8, 1)
        self.sharpen, self.smooth = torch.nn.Conv2d(8, 4, 3, padding=1), torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.features(x)
        if bool(x.mean() > 0.0):
            return torch.relu(self.sharpen(y)) * 2.0
        return torch.sigmoid(self.smooth(y))


def export_runtime_if(path):
    torch.manual_seed(0)
    model = torch.jit.script(BrightnessGate().eval())
    example = torch.randn(1, 3, 16, 16)
    torch.onnx.export(model, example, str(path), opset_version=13, input_names=["input"], output_names=["output"])
    return {"input": tuple(example.shape)}


def export_quantized_dynamic(path):
    """The GPT block exported, then quantized with quantize_dynamic: its MatMuls become
    DynamicQuantizeLinear on the activations and MatMulInteger with int8 weights."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    float_path = path.with_name(path.stem + "_float.onnx")
    shapes = export_gpt_block(float_path)
    quantize_dynamic(str(float_path), str(path), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
    return shapes


def export_quantized_dynamic_cnn(path):
    """The small classifier quantized with quantize_dynamic: its convolutions become ConvInteger
    on dynamically quantized uint8 activations and uint8 weights (ONNX Runtime has no ConvInteger
    for int8 weights), its linear layer MatMulInteger."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    torch.manual_seed(0)
    float_path = path.with_name(path.stem + "_float.onnx")
    shapes = _export(SmallClassifier(), torch.randn(1, 3, 32, 32), float_path, 13)
    quantize_dynamic(str(float_path), str(path), weight_type=QuantType.QUInt8)
    return shapes


MODELS = {"gpt_block": export_gpt_block, "dbnet_style": export_dbnet_style, "crnn": export_crnn,
          "audio_frontend": export_audio_frontend, "byte_cnn": export_byte_cnn, "video_3d": export_video_3d,
          "yolo_style": export_yolo_style, "runtime_if": export_runtime_if,
          "quantized_static": export_quantized_static, "quantized_dynamic": export_quantized_dynamic,
          "quantized_dynamic_cnn": export_quantized_dynamic_cnn}
