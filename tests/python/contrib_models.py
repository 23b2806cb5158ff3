"""Models for test_contrib_ops.py built in PyTorch (seeded, exported by the test, never downloaded):
small transformer blocks of the shapes ONNX Runtime's transformers optimizer fuses for its model
types gpt2 (also with a key/value cache), clip, t5 and vit, a small CNN and MLP whose ONNX Runtime session's saved optimized model
holds its fused ops; and the runs of ONNX Runtime's tools that make the models with contrib ops."""
import math

import torch

HIDDEN, HEADS, SEQUENCE = 64, 4, 16


def _heads(x):
    """[B, S, HIDDEN] as [B, HEADS, S, HIDDEN / HEADS]."""
    return x.view(x.size(0), x.size(1), HEADS, HIDDEN // HEADS).transpose(1, 2)


def _merged(x):
    """[B, HEADS, S, HIDDEN / HEADS] as [B, S, HIDDEN]."""
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), HIDDEN)


class Gpt2Block(torch.nn.Module):
    """GPT-2's block: one projection to Q, K and V, a causal mask taken from a buffer with where,
    pre-norm, and an MLP with the tanh form of GELU (gelu_new)."""

    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(HIDDEN), torch.nn.LayerNorm(HIDDEN)
        self.c_attn, self.c_proj = torch.nn.Linear(HIDDEN, 3 * HIDDEN), torch.nn.Linear(HIDDEN, HIDDEN)
        self.fc, self.proj = torch.nn.Linear(HIDDEN, 4 * HIDDEN), torch.nn.Linear(4 * HIDDEN, HIDDEN)
        self.register_buffer("causal", torch.tril(torch.ones(SEQUENCE, SEQUENCE, dtype=torch.bool)))

    def attention(self, x):
        q, k, v = (_heads(t) for t in self.c_attn(x).split(HIDDEN, dim=2))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS)
        w = torch.where(self.causal, w, torch.tensor(-1e4))
        return self.c_proj(_merged(torch.matmul(torch.softmax(w, dim=-1), v)))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = self.fc(self.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.proj(h)


class ClipBlock(torch.nn.Module):
    """CLIP's text encoder layer: Q scaled before the product, an additive causal mask, pre-norm,
    and an MLP with QuickGELU (x * sigmoid(1.702 x))."""

    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(HIDDEN), torch.nn.LayerNorm(HIDDEN)
        self.q, self.k, self.v, self.out = (torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
        self.fc1, self.fc2 = torch.nn.Linear(HIDDEN, 4 * HIDDEN), torch.nn.Linear(4 * HIDDEN, HIDDEN)
        self.register_buffer("mask", torch.full((SEQUENCE, SEQUENCE), -1e4).triu(1))

    def attention(self, x):
        q = _heads(self.q(x) * (HIDDEN // HEADS) ** -0.5)
        k, v = _heads(self.k(x)), _heads(self.v(x))
        w = torch.matmul(q, k.transpose(-1, -2)) + self.mask
        return self.out(_merged(torch.matmul(torch.softmax(w, dim=-1), v)))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = self.fc1(self.ln_2(x))
        return x + self.fc2(h * torch.sigmoid(1.702 * h))


class T5Norm(torch.nn.Module):
    """T5's layer norm: root mean square, no mean, no bias."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(1.0 + 0.1 * torch.randn(HIDDEN))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class T5Block(torch.nn.Module):
    """T5's encoder layer: RMS norms, attention without scaling plus a position bias, a ReLU MLP."""

    def __init__(self):
        super().__init__()
        self.norm_1, self.norm_2 = T5Norm(), T5Norm()
        self.q, self.k, self.v, self.o = (torch.nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(4))
        self.wi, self.wo = torch.nn.Linear(HIDDEN, 4 * HIDDEN, bias=False), torch.nn.Linear(4 * HIDDEN, HIDDEN, bias=False)
        self.position_bias = torch.nn.Parameter(0.1 * torch.randn(1, HEADS, SEQUENCE, SEQUENCE))

    def forward(self, x):
        h = self.norm_1(x)
        w = torch.matmul(_heads(self.q(h)), _heads(self.k(h)).transpose(-1, -2)) + self.position_bias
        x = x + self.o(_merged(torch.matmul(torch.softmax(w, dim=-1), _heads(self.v(h)))))
        return x + self.wo(torch.relu(self.wi(self.norm_2(x))))


class VitBlock(torch.nn.Module):
    """A small ViT: 4x4 patches of a 16x16 image embedded by a convolution, a class token and
    positions, then one pre-norm encoder layer (BERT's attention, erf GELU) and the final norm."""

    def __init__(self):
        super().__init__()
        self.patches = torch.nn.Conv2d(3, HIDDEN, 4, stride=4)
        self.cls = torch.nn.Parameter(0.1 * torch.randn(1, 1, HIDDEN))
        self.positions = torch.nn.Parameter(0.1 * torch.randn(1, SEQUENCE + 1, HIDDEN))
        self.ln_1, self.ln_2, self.ln_f = (torch.nn.LayerNorm(HIDDEN, eps=1e-12) for _ in range(3))
        self.q, self.k, self.v, self.out = (torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
        self.fc1, self.fc2 = torch.nn.Linear(HIDDEN, 4 * HIDDEN), torch.nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, image):
        x = self.patches(image).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1) + self.positions
        h = self.ln_1(x)
        q, k, v = _heads(self.q(h)), _heads(self.k(h)), _heads(self.v(h))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS)
        x = x + self.out(_merged(torch.matmul(torch.softmax(w, dim=-1), v)))
        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln_2(x))))
        return self.ln_f(x)


class TinyBert(torch.nn.Module):
    """Hugging Face BERT's shape at small size: word, position (from a position_ids buffer) and
    token-type embeddings with a layer norm, an attention mask made additive ((1 - mask) * -10000),
    one encoder layer. The optimizer fuses its embedding into EmbedLayerNormalization, whose mask
    index feeds Attention."""

    VOCABULARY = 100

    def __init__(self):
        super().__init__()
        self.word, self.position = torch.nn.Embedding(self.VOCABULARY, HIDDEN), torch.nn.Embedding(SEQUENCE, HIDDEN)
        self.segment = torch.nn.Embedding(2, HIDDEN)
        self.norm, self.norm_1, self.norm_2 = (torch.nn.LayerNorm(HIDDEN, eps=1e-12) for _ in range(3))
        self.q, self.k, self.v, self.out = (torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
        self.fc1, self.fc2 = torch.nn.Linear(HIDDEN, 4 * HIDDEN), torch.nn.Linear(4 * HIDDEN, HIDDEN)
        self.register_buffer("position_ids", torch.arange(SEQUENCE).expand((1, -1)))

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.word(input_ids) + self.position(self.position_ids[:, :input_ids.size(1)]) + self.segment(token_type_ids)
        x = self.norm(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        w = torch.matmul(_heads(self.q(x)), _heads(self.k(x)).transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS) + mask
        x = self.norm_1(x + self.out(_merged(torch.matmul(torch.softmax(w, -1), _heads(self.v(x))))))
        return self.norm_2(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


def export_tiny_bert(path):
    """TinyBert exported to `path` (int64 inputs [1, SEQUENCE])."""
    torch.manual_seed(0)
    example = (torch.randint(0, TinyBert.VOCABULARY, (1, SEQUENCE)), torch.ones(1, SEQUENCE, dtype=torch.int64),
               torch.zeros(1, SEQUENCE, dtype=torch.int64))
    torch.onnx.export(TinyBert().eval(), example, str(path), opset_version=14,
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["output"])


class Conv1D(torch.nn.Module):
    """Hugging Face GPT-2's projection: x as 2-D times the weight with addmm (a Gemm between
    Reshapes in ONNX, the form the optimizer's GPT-2 attention fusion matches)."""

    def __init__(self, inputs, outputs):
        super().__init__()
        self.weight = torch.nn.Parameter(0.02 * torch.randn(inputs, outputs))
        self.bias = torch.nn.Parameter(0.02 * torch.randn(outputs))

    def forward(self, x):
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(*x.shape[:-1], self.weight.size(1))


class Gpt2PastBlock(torch.nn.Module):
    """GPT-2's block with its key/value cache as Hugging Face transformers exported it before the
    tuple cache: the past one tensor [2, B, HEADS, P, HIDDEN / HEADS] whose key and value are
    concatenated before the new ones, present their stack; the causal mask sliced from a bool buffer
    by the scores' shape. The optimizer fuses it into Attention with past and present (unidirectional)."""

    POSITIONS = 32  # the causal mask buffer's size: past and new tokens together

    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(HIDDEN), torch.nn.LayerNorm(HIDDEN)
        for norm in (self.ln_1, self.ln_2):
            torch.nn.init.normal_(norm.weight, 1.0, 0.1)
            torch.nn.init.normal_(norm.bias, 0.0, 0.1)
        self.c_attn, self.c_proj = Conv1D(HIDDEN, 3 * HIDDEN), Conv1D(HIDDEN, HIDDEN)
        self.c_fc, self.mlp_proj = Conv1D(HIDDEN, 4 * HIDDEN), Conv1D(4 * HIDDEN, HIDDEN)
        causal = torch.tril(torch.ones(self.POSITIONS, self.POSITIONS, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, self.POSITIONS, self.POSITIONS))
        self.register_buffer("masked", torch.tensor(-1e4))

    def attention(self, x, past):
        q, k, v = (_heads(t) for t in self.c_attn(x).split(HIDDEN, dim=2))
        k, v = torch.cat((past[0], k), dim=-2), torch.cat((past[1], v), dim=-2)
        present = torch.stack((k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / (float(v.size(-1)) ** 0.5)
        new, total = w.size(-2), w.size(-1)
        w = torch.where(self.causal[:, :, total - new:total, :total], w, self.masked)
        return self.c_proj(_merged(torch.matmul(torch.softmax(w, dim=-1), v))), present

    def forward(self, x, past):
        a, present = self.attention(self.ln_1(x), past)
        x = x + a
        h = self.c_fc(self.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.mlp_proj(h), present


def export_gpt2_past_block(path):
    """Gpt2PastBlock exported to `path` with batch, sequence and past length dynamic (exported with
    fixed ones, the mask's slicing folds to constants and the optimizer fuses nothing)."""
    torch.manual_seed(0)
    example = (torch.randn(1, 4, HIDDEN), torch.randn(2, 1, HEADS, 6, HIDDEN // HEADS))
    axes = {"input": {0: "batch", 1: "sequence"}, "past": {1: "batch", 3: "past_sequence"},
            "output": {0: "batch", 1: "sequence"}, "present": {1: "batch", 3: "total_sequence"}}
    torch.onnx.export(Gpt2PastBlock().eval(), example, str(path), opset_version=14, input_names=["input", "past"],
                      output_names=["output", "present"], dynamic_axes=axes, do_constant_folding=True)


BLOCKS = {"gpt2": (Gpt2Block, (1, SEQUENCE, HIDDEN)), "clip": (ClipBlock, (1, SEQUENCE, HIDDEN)),
          "t5": (T5Block, (1, SEQUENCE, HIDDEN)), "vit": (VitBlock, (1, 3, 16, 16))}


def export_block(model_type, path, opset=14):
    """The block of `model_type` exported to `path`; returns its input shapes by name."""
    torch.manual_seed(0)
    block, shape = BLOCKS[model_type]
    example = torch.randn(*shape)
    torch.onnx.export(block().eval(), example, str(path), opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    return {"input": shape}


def optimized(source, target, model_type, opt_level, heads=HEADS, hidden=HIDDEN, **options):
    """ONNX Runtime's transformers optimizer run on `source` (at `opt_level`: 0 fuses without an
    ONNX Runtime session), saved to `target`; `options` set FusionOptions fields."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    fusion = FusionOptions(model_type)
    for name, value in options.items():
        setattr(fusion, name, value)
    model = optimize_model(str(source), model_type=model_type, num_heads=heads, hidden_size=hidden, opt_level=opt_level,
                           optimization_options=fusion)
    model.save_model_to_file(str(target))
    return target


class SmallCnn(torch.nn.Module):
    """Convolutions with batch norm and ReLU, a residual add, a LeakyReLU convolution, and a linear
    layer with ReLU: ONNX Runtime's extended optimizations make FusedConv and FusedGemm of them."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = torch.nn.Conv2d(8, 8, 1)
        self.b1, self.b2 = torch.nn.BatchNorm2d(8), torch.nn.BatchNorm2d(8)
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 10)
        for norm in (self.b1, self.b2):
            norm.running_mean.uniform_(-0.2, 0.2)
            norm.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)) + y)
        y = torch.nn.functional.leaky_relu(self.c3(y), 0.1)
        return self.fc2(torch.relu(self.fc1(torch.sigmoid(y).mean((2, 3)))))


class SmallMlp(torch.nn.Module):
    """Two linear layers reading one input and a third after them: quantized dynamically, the
    shared input's DynamicQuantizeLinear feeds two MatMulIntegers (MatMulIntegerToFloat once
    fused), the third's its own (DynamicQuantizeMatMul)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = torch.nn.Linear(32, 64), torch.nn.Linear(32, 64), torch.nn.Linear(64, 16)

    def forward(self, x):
        return self.c(torch.relu(self.a(x)) * self.b(x))


class QOperatorNet(torch.nn.Module):
    """Two convolutions whose outputs are added, multiplied, squashed (sigmoid, LeakyReLU),
    concatenated, pooled (average, then global average), a linear layer and a softmax:
    quantize_static's QOperator format makes each a QLinear op of ONNX Runtime's (QGemm for the
    linear layer)."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        a, b = self.c1(x), self.c2(x)
        y = torch.sigmoid((a + b) * b)
        y = torch.cat([torch.nn.functional.leaky_relu(y, 0.1), a], 1)
        y = torch.nn.functional.adaptive_avg_pool2d(torch.nn.functional.avg_pool2d(y, 2), 1).flatten(1)
        return torch.softmax(self.fc(y), -1)


class SmallLstm(torch.nn.Module):
    """A bidirectional LSTM read by a linear layer (quantize_dynamic makes DynamicQuantizeLSTM of it)."""

    def __init__(self):
        super().__init__()
        self.lstm, self.fc = torch.nn.LSTM(16, 32, bidirectional=True), torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


SMALL = {"cnn": (SmallCnn, (1, 3, 16, 16)), "mlp": (SmallMlp, (1, 4, 32)), "qoperator": (QOperatorNet, (1, 3, 8, 8)),
         "lstm": (SmallLstm, (6, 2, 16))}


def export_small(name, path, opset=13):
    """The small model `name` exported to `path`; returns its input shapes by name."""
    torch.manual_seed(0)
    model, shape = SMALL[name]
    torch.onnx.export(model().eval(), torch.randn(*shape), str(path), opset_version=opset, input_names=["input"],
                      output_names=["output"])
    return {"input": shape}


def session_optimized(source, target):
    """The model an ONNX Runtime session at ORT_ENABLE_EXTENDED saves (optimized_model_filepath)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    return target


def quantized_static_qoperator(source, target, shape):
    """quantize_static's QOperator format of `source` (uint8 activations and weights), calibrated on
    four seeded batches."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Calibration(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.batches = iter([{"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(str(source), str(target), Calibration(), quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)
    return target
