"""Op cases of neural-network layers (convolutions of every rank, transposed convolutions,
pooling, normalization, matrix products, recurrent layers, quantized ops, Einsum, image ops): the
groups GROUPS in onnx_op_cases.py lists with their opsets. ONNX Runtime is the reference."""
import numpy as np

from onnx_op_group import Group


def conv(opset=14):
    g = Group("conv", opset, rtol=1e-4)
    x = g.input((1, 4, 9, 9))
    g.node("Conv", [x, g.weight((6, 4, 3, 3)), g.weight((6,))], pads=[1, 1, 1, 1])
    g.node("Conv", [x, g.weight((5, 4, 3, 3))], strides=[2, 2])
    g.node("Conv", [x, g.weight((3, 4, 3, 3))], dilations=[2, 2], pads=[2, 1, 0, 3])
    g.node("Conv", [x, g.weight((4, 1, 3, 3)), g.weight((4,))], group=4, pads=[1, 1, 1, 1])
    g.node("Conv", [x, g.weight((8, 1, 5, 5))], group=4, strides=[2, 2], auto_pad="SAME_UPPER")
    g.node("Conv", [x, g.weight((6, 2, 1, 1))], group=2)
    g.node("Conv", [x, g.weight((2, 4, 2, 3))], auto_pad="SAME_LOWER")
    g.node("Conv", [x, g.weight((7, 4, 4, 4))], auto_pad="VALID", strides=[1, 2])
    # Groups of 4 and of 2 channels, each inside a 16-channel block (ResNeXt 32x4d's first stage).
    x16 = g.input((1, 16, 11, 13))
    g.node("Conv", [x16, g.weight((16, 4, 3, 3)), g.weight((16,))], group=4, pads=[1, 1, 1, 1])
    g.node("Conv", [x16, g.weight((16, 2, 3, 3))], group=8, strides=[2, 2], pads=[1, 0, 1, 1])
    # 3x3 stride-1 layers of 16 channels or more whose output planes are 8x8 or more, with constant
    # weights: Winograd's F(4x4, 3x3) at -O3 (conv2d.nchwc_winograd; strategy_test checks the
    # choice). Planes that are not multiples of its 4x4 tile, every padding of the window, batches,
    # 8-channel blocks (24 channels in or out) and a fused bias.
    xw = g.input((2, 16, 13, 10))
    g.node("Conv", [xw, g.weight((32, 16, 3, 3)), g.weight((32,))], pads=[1, 1, 1, 1])
    g.node("Conv", [xw, g.weight((24, 16, 3, 3))], pads=[2, 0, 1, 2])
    g.node("Conv", [g.input((1, 24, 9, 11)), g.weight((16, 24, 3, 3))], pads=[0, 1, 2, 0])
    # 1-D data (an audio front end, a byte CNN) as 2-D of height 1.
    x1 = g.input((2, 4, 17))
    g.node("Conv", [x1, g.weight((6, 4, 5)), g.weight((6,))], strides=[2], pads=[2, 1])
    g.node("Conv", [x1, g.weight((8, 2, 3))], group=2, dilations=[3], pads=[3, 3])
    g.node("Conv", [x1, g.weight((4, 1, 7))], group=4, auto_pad="SAME_LOWER", strides=[3])
    # 3-D data: the window's depth slices become channels of a 2-D convolution.
    x3 = g.input((2, 4, 5, 6, 7))
    g.node("Conv", [x3, g.weight((6, 4, 3, 3, 3)), g.weight((6,))], pads=[1, 1, 1, 1, 1, 1])
    g.node("Conv", [x3, g.weight((4, 2, 2, 3, 1))], group=2, strides=[2, 1, 2], dilations=[2, 1, 1],
           pads=[1, 0, 0, 0, 1, 0])
    g.node("Conv", [x3, g.weight((4, 1, 3, 3, 3))], group=4, auto_pad="SAME_UPPER", strides=[2, 2, 2])
    g.node("Conv", [x3, g.weight((5, 4, 1, 1, 1))])
    return g


def pooling(opset=14):
    g = Group("pool", opset)
    x = g.input((2, 3, 10, 11))
    g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    g.node("MaxPool", [x], kernel_shape=[2, 3], dilations=[2, 1])
    g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    g.node("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    g.node("AveragePool", [x], kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1)
    g.node("GlobalAveragePool", [x])
    g.node("GlobalMaxPool", [x])
    # 1-D data (as 2-D of height 1) and 8-bit integers (max pooled on their float values).
    x1 = g.input((2, 3, 9))
    g.node("MaxPool", [x1], kernel_shape=[3], strides=[2], pads=[1, 1])
    g.node("AveragePool", [x1], kernel_shape=[2], auto_pad="SAME_UPPER")
    if opset >= 12:
        g.node("MaxPool", [g.input((1, 2, 5, 6), dtype=np.uint8, low=0, high=256)], kernel_shape=[2, 2])
        g.node("MaxPool", [g.input((1, 2, 5, 6), dtype=np.int8, low=-128, high=128)], kernel_shape=[3, 2],
               strides=[2, 1])
    # 3-D data (pooled over H and W, then over D), and MaxPool's Indices in both storage orders.
    x3 = g.input((2, 2, 7, 6, 5))
    g.node("MaxPool", [x3], kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 0])
    g.node("MaxPool", [x3], kernel_shape=[2, 2, 2], dilations=[2, 1, 2], ceil_mode=1, strides=[2, 2, 2])
    g.node("AveragePool", [x3], kernel_shape=[3, 3, 2], strides=[2, 2, 1], pads=[1, 1, 0, 1, 1, 1])
    g.node("AveragePool", [x3], kernel_shape=[3, 3, 2], strides=[2, 2, 1], pads=[1, 1, 0, 1, 1, 1], count_include_pad=1)
    g.node("AveragePool", [x3], kernel_shape=[2, 3, 3], auto_pad="SAME_UPPER")
    g.node("LpPool", [x3], kernel_shape=[2, 2, 3], p=3, strides=[1, 2, 1], pads=[0, 1, 1, 1, 0, 1])
    g.node("LpPool", [x1], kernel_shape=[3], strides=[2])
    for data in (x1, x3):
        g.node("GlobalAveragePool", [data])
        g.node("GlobalMaxPool", [data])
    g.node("MaxPool", [x], n_outputs=2, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node("MaxPool", [x], n_outputs=2, kernel_shape=[2, 3], strides=[1, 2], storage_order=1)
    # Indices of 1-D (both storage orders) and 3-D data; ties (8-bit values) go to the first.
    g.node("MaxPool", [x1], n_outputs=2, kernel_shape=[3], strides=[2], pads=[1, 1])
    g.node("MaxPool", [x1], n_outputs=2, kernel_shape=[2], storage_order=1)
    g.node("MaxPool", [x3], n_outputs=2, kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 0])
    g.node("MaxPool", [x3], n_outputs=2, kernel_shape=[2, 2, 2], dilations=[2, 1, 2], ceil_mode=1, strides=[2, 2, 2])
    ties = g.input((1, 2, 4, 5, 6), values=np.random.default_rng(5).integers(0, 3, (1, 2, 4, 5, 6)).astype(np.float32))
    g.node("MaxPool", [ties], n_outputs=2, kernel_shape=[2, 3, 2], strides=[1, 2, 2])
    return g


def normalization(opset=17):
    g = Group("normalization", opset, rtol=1e-4)
    x = g.input((2, 5, 4, 3))
    var = g.const(g.rng.uniform(0.5, 2.0, 5))
    g.node("BatchNormalization", [x, g.weight((5,)), g.weight((5,)), g.weight((5,)), var], epsilon=1e-3)
    t = g.input((2, 7, 16))
    if opset >= 17:  # LayerNormalization is new in opset 17
        g.node("LayerNormalization", [t, g.weight((16,)), g.weight((16,))], axis=-1, epsilon=1e-5)
        g.node("LayerNormalization", [t, g.weight((16,))], axis=2)
        # Over the last two axes, with the Mean and InvStdDev outputs: composed of reductions.
        g.node("LayerNormalization", [t, g.weight((7, 16)), g.weight((7, 16))], n_outputs=3, axis=1)
        g.node("LayerNormalization", [t, g.weight((16,))], n_outputs=3, epsilon=1e-3)
    g.node("Softmax", [t], axis=1)
    g.node("Softmax", [t], axis=-1)
    return g


def softmax_opset11(opset=11):
    g = Group("softmax11", opset)
    t = g.input((2, 3, 4))
    g.node("Softmax", [t], axis=1)  # before opset 13: over the input flattened at axis 1
    g.node("Softmax", [t])
    return g


def matmul(opset=14):
    g = Group("matmul", opset, rtol=1e-4)
    a2, a3, a4 = g.input((5, 8)), g.input((3, 5, 8)), g.input((2, 3, 5, 8))
    g.node("MatMul", [a2, g.weight((8, 6))])
    g.node("MatMul", [a3, g.weight((8, 6))])
    g.node("MatMul", [a2, g.input((8, 4))])
    g.node("MatMul", [a4, g.input((2, 3, 8, 7))])
    g.node("MatMul", [a4, g.input((1, 3, 8, 7))])
    g.node("MatMul", [a3, g.input((8, 2))])
    g.node("MatMul", [g.input((8,)), g.weight((8, 3))])
    g.node("MatMul", [a3, g.input((8,))])
    g.node("Gemm", [a2, g.weight((8, 6)), g.weight((6,))])
    g.node("Gemm", [a2, g.weight((6, 8)), g.weight((5, 6))], transB=1, alpha=0.5, beta=2.0)
    g.node("Gemm", [g.input((8, 5)), g.weight((8, 6))], transA=1)
    # Weights with N a multiple of 16 are packed at build time (NK16n); K = 300 spans two blocks.
    g.node("MatMul", [a3, g.weight((8, 32))])
    g.node("Gemm", [g.input((7, 300)), g.weight((48, 300)), g.weight((48,))], transB=1)
    # A packed dense layer followed by bias, residual and relu in one primitive function.
    y = g.node("Add", [g.node("MatMul", [a3, g.weight((8, 32))], output=False), g.weight((32,))], output=False)
    g.node("Relu", [g.node("Add", [y, g.input((3, 5, 32))], output=False)])
    # float64 and int32 products (the plain kernels).
    g.node("MatMul", [g.input((2, 4, 6), dtype=np.float64), g.input((2, 6, 3), dtype=np.float64)])
    g.node("MatMul", [g.input((4, 6), dtype=np.int32), g.input((6, 5), dtype=np.int32)])
    # Clip with bounds known only at run time, Pad with a run-time value, Dropout's mask.
    lo, hi = g.input((), values=np.array(-0.5)), g.input((), values=np.array(0.7))
    g.node("Clip", [a2, lo, hi])
    g.node("Clip", [a2, "", hi])
    g.node("Pad", [a2, g.const([1, 0, 2, 3], dtype=np.int64), g.input((), values=np.array(9.5))])
    if opset >= 12:
        g.node("Dropout", [a2], n_outputs=2)
        # Training mode with ratio 0 (torchvision's Swin exports so) is the identity, as ONNX defines
        # it; the flag as a constant and as a value known at run time.
        zero, training = g.const(0.0), g.const(True, dtype=np.bool_)
        g.node("Dropout", [a2, zero, training], n_outputs=2)
        g.node("Dropout", [a3, zero, g.input((), dtype=np.bool_, values=np.array(True))])
    return g


def conv_transpose(opset=14):
    # ConvTranspose as DBNet-style detectors upsample (stride 2, kernel 2 or 4), and with groups,
    # dilations, output_padding, output_shape, auto_pad, asymmetric pads; 1-D and 3-D data.
    g = Group("conv_transpose", opset, rtol=1e-4)
    x = g.input((1, 4, 5, 6))
    g.node("ConvTranspose", [x, g.weight((4, 3, 2, 2)), g.weight((3,))], strides=[2, 2])
    g.node("ConvTranspose", [x, g.weight((4, 2, 4, 4))], strides=[2, 2], pads=[1, 1, 1, 1])
    g.node("ConvTranspose", [x, g.weight((4, 3, 3, 3))], pads=[1, 0, 2, 1])
    g.node("ConvTranspose", [x, g.weight((4, 2, 3, 3))], strides=[3, 2], output_padding=[1, 1], group=2)
    g.node("ConvTranspose", [x, g.weight((4, 1, 3, 3)), g.weight((4,))], dilations=[2, 2], group=4)
    g.node("ConvTranspose", [x, g.weight((4, 2, 3, 3))], strides=[2, 2], output_shape=[11, 13])
    g.node("ConvTranspose", [x, g.weight((4, 2, 3, 3)), g.weight((2,))], strides=[2, 2], output_shape=[12, 14])
    g.node("ConvTranspose", [x, g.weight((4, 2, 3, 3))], strides=[2, 2], auto_pad="SAME_UPPER")
    g.node("ConvTranspose", [x, g.weight((4, 2, 4, 3))], strides=[2, 3], auto_pad="SAME_LOWER")
    g.node("ConvTranspose", [g.input((2, 3, 7)), g.weight((3, 5, 3)), g.weight((5,))], strides=[2], pads=[1, 0])
    # 3-D data (nn.conv3d_transpose): strides per axis, pads, output_padding, groups, dilations.
    x3 = g.input((2, 4, 3, 4, 5))
    g.node("ConvTranspose", [x3, g.weight((4, 3, 2, 2, 2)), g.weight((3,))], strides=[2, 2, 2])
    g.node("ConvTranspose", [x3, g.weight((4, 2, 3, 3, 2))], strides=[1, 2, 3], pads=[1, 0, 1, 0, 1, 0],
           output_padding=[0, 1, 2], group=2)
    g.node("ConvTranspose", [x3, g.weight((4, 1, 2, 3, 3)), g.weight((4,))], dilations=[2, 1, 2], group=4)
    g.node("ConvTranspose", [x3, g.weight((4, 2, 3, 3, 3))], strides=[2, 2, 2], output_shape=[7, 9, 11])
    return g


def recurrent(opset=14):
    # LSTM, GRU and RNN: forward, reverse and bidirectional, with biases, initial states, sequence
    # lengths, peepholes, clip, input_forget, other activations (with alpha / beta),
    # linear_before_reset.
    g = Group("recurrent", opset, rtol=1e-4)
    steps, batch, features, hidden = 5, 3, 4, 6
    x = g.input((steps, batch, features))
    lengths = g.input((batch,), dtype=np.int32, values=[5, 2, 4])

    def weights(dirs, gates):
        return (g.weight((dirs, gates * hidden, features)), g.weight((dirs, gates * hidden, hidden)),
                g.weight((dirs, 2 * gates * hidden)))

    def state(dirs):
        return g.input((dirs, batch, hidden))

    for direction, dirs in (("forward", 1), ("reverse", 1), ("bidirectional", 2)):
        w, r, b = weights(dirs, 4)
        g.node("LSTM", [x, w, r, b, "", state(dirs), state(dirs)], n_outputs=3, hidden_size=hidden, direction=direction)
        w, r, b = weights(dirs, 3)
        g.node("GRU", [x, w, r, b, lengths, state(dirs)], n_outputs=2, hidden_size=hidden, direction=direction)
    w, r, b = weights(2, 4)
    g.node("LSTM", [x, w, r, b, lengths, "", "", g.weight((2, 3 * hidden))], n_outputs=3, hidden_size=hidden,
           direction="bidirectional", clip=1.5)
    w, r, b = weights(1, 4)
    g.node("LSTM", [x, w, r], n_outputs=2, hidden_size=hidden, input_forget=1,
           activations=["HardSigmoid", "LeakyRelu", "Softsign"], activation_alpha=[0.3, 0.2], activation_beta=[0.4])
    w, r, b = weights(1, 3)
    g.node("GRU", [x, w, r, b], n_outputs=2, hidden_size=hidden, linear_before_reset=1)
    w, r, b = weights(2, 1)
    g.node("RNN", [x, w, r, b, lengths], n_outputs=2, hidden_size=hidden, direction="bidirectional",
           activations=["Relu", "Tanh"])
    return g  # layout 1, which ONNX Runtime does not run, is tested by ONNX's *_batchwise node cases


def quantization(opset=13):
    # QuantizeLinear / DequantizeLinear per tensor and (from opset 13) per axis, uint8 and int8, with
    # values that saturate and halves that round to even; a QDQ conv as quantize_static writes it;
    # DynamicQuantizeLinear; MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.
    g = Group("quantization", opset, rtol=1e-5)
    x = g.input((2, 3, 4, 5), low=-3.0, high=3.0)
    halves = g.input((6,), values=[0.5, 1.5, 2.5, -0.5, -1.5, 300.0])
    g.node("QuantizeLinear", [x, g.const(0.02), g.const(128, dtype=np.uint8)])
    g.node("QuantizeLinear", [x, g.const(0.03), g.const(-5, dtype=np.int8)])
    g.node("QuantizeLinear", [halves, g.const(1.0)])
    q = g.input((2, 3, 4, 5), dtype=np.uint8, low=0, high=256)
    g.node("DequantizeLinear", [q, g.const(0.05), g.const(100, dtype=np.uint8)])
    g.node("DequantizeLinear", [g.input((7,), dtype=np.int8, low=-128, high=128), g.const(0.1)])
    g.node("DequantizeLinear", [g.input((5,), dtype=np.int32, low=-1000, high=1000), g.const(0.001)])
    if opset >= 13:
        g.node("QuantizeLinear", [x, g.const([0.01, 0.02, 0.04]), g.const([0, 10, -10], dtype=np.int8)], axis=1)
        g.node("DequantizeLinear", [q, g.const([0.1, 0.2, 0.3, 0.4, 0.5]), g.const([1, 2, 3, 4, 5], dtype=np.uint8)],
               axis=-1)
    # QDQ: activations and weights quantized, the conv on dequantized values, its result quantized.
    xq = g.node("QuantizeLinear", [x, g.const(0.025), g.const(120, dtype=np.uint8)], output=False)
    xd = g.node("DequantizeLinear", [xq, g.const(0.025), g.const(120, dtype=np.uint8)], output=False)
    wq = g.const(g.rng.integers(-60, 60, (4, 3, 3, 3)), dtype=np.int8)
    wd = g.node("DequantizeLinear", [wq, g.const(0.01), g.const(0, dtype=np.int8)], output=False)
    y = g.node("Conv", [xd, wd], output=False, pads=[1, 1, 1, 1])
    g.node("QuantizeLinear", [y, g.const(0.05), g.const(128, dtype=np.uint8)])
    if opset >= 13:
        # QDQ groups with per-channel weights and int32 biases, as quantize_static writes them: Conv,
        # Gemm (transB) and MatMul between DequantizeLinear and QuantizeLinear; computed in integers
        # (QLinearConv, QGemm, QLinearMatMul) by both ONNX Runtime and kiln. Each y_scale is twice
        # x_scale * w_scale, so every odd integer sum requantizes to a tie (rounded to even), where
        # the float ops' inexact sums would round either way.
        f32 = np.float32
        small = g.input((2, 3, 6, 6), low=-0.12, high=0.12)
        sx = f32(0.025)
        xs = g.node("DequantizeLinear", [g.node("QuantizeLinear", [small, g.const(sx), g.const(128, dtype=np.uint8)],
                                                output=False), g.const(sx), g.const(128, dtype=np.uint8)], output=False)
        wcd = g.node("DequantizeLinear", [g.const(g.rng.integers(-3, 4, (5, 3, 3, 3)), dtype=np.int8),
                                          g.const([0.01] * 5), g.const([0] * 5, dtype=np.int8)], output=False, axis=0)
        bias = g.node("DequantizeLinear", [g.const(g.rng.integers(-40, 40, (5,)), dtype=np.int32),
                                           g.const([sx * f32(0.01)] * 5), g.const([0] * 5, dtype=np.int32)],
                      output=False, axis=0)
        yc = g.node("Conv", [xs, wcd, bias], output=False, strides=[2, 1], pads=[1, 1, 1, 1])
        g.node("QuantizeLinear", [yc, g.const(2 * f32(sx * f32(0.01))), g.const(100, dtype=np.uint8)])
        sa, sb = f32(0.02), f32(0.003)
        ad = g.node("DequantizeLinear", [g.node("QuantizeLinear", [g.input((16, 64), low=-0.1, high=0.1), g.const(sa),
                                                                   g.const(128, dtype=np.uint8)], output=False),
                                         g.const(sa), g.const(128, dtype=np.uint8)], output=False)
        bd = g.node("DequantizeLinear", [g.const(g.rng.integers(-3, 4, (24, 64)), dtype=np.int8), g.const([sb] * 24),
                                         g.const([0] * 24, dtype=np.int8)], output=False, axis=0)
        gb = g.node("DequantizeLinear", [g.const(g.rng.integers(-40, 40, (24,)), dtype=np.int32),
                                         g.const([sa * sb] * 24), g.const([0] * 24, dtype=np.int32)], output=False, axis=0)
        yg = g.node("Gemm", [ad, bd, gb], output=False, transB=1)
        g.node("QuantizeLinear", [yg, g.const(2 * f32(sa * sb)), g.const(120, dtype=np.uint8)])
        md = g.node("DequantizeLinear", [g.const(g.rng.integers(-3, 4, (64, 20)), dtype=np.int8), g.const(sb),
                                         g.const(0, dtype=np.int8)], output=False)
        ym = g.node("MatMul", [ad, md], output=False)
        g.node("QuantizeLinear", [ym, g.const(2 * f32(sa * sb)), g.const(125, dtype=np.uint8)])
    g.node("DynamicQuantizeLinear", [g.input((3, 8), low=-2.0, high=5.0)], n_outputs=3)
    g.node("DynamicQuantizeLinear", [g.input((4,), values=np.zeros(4))], n_outputs=3)  # an empty range: scale 1
    # Integer products: uint8 activations with uint8 or int8 weights, zero points per tensor and
    # per column of B (ONNX Runtime takes no per-row zero point of A), batched; QLinearMatMul requantizing with saturation.
    au = g.input((5, 16), dtype=np.uint8, low=0, high=256)
    g.node("MatMulInteger", [au, g.const(g.rng.integers(-128, 128, (16, 7)), dtype=np.int8)])
    g.node("MatMulInteger", [au, g.const(g.rng.integers(0, 256, (16, 7)), dtype=np.uint8),
                             g.const(131, dtype=np.uint8), g.const(120, dtype=np.uint8)])
    g.node("MatMulInteger", [g.input((2, 3, 5, 16), dtype=np.uint8, low=0, high=256),
                             g.const(g.rng.integers(-128, 128, (16, 4)), dtype=np.int8),
                             g.const(77, dtype=np.uint8),
                             g.const(g.rng.integers(-20, 20, (4,)), dtype=np.int8)])
    g.node("MatMulInteger", [g.input((3, 5, 16), dtype=np.uint8, low=0, high=256),
                             g.input((3, 16, 6), dtype=np.uint8, low=0, high=256), g.const(7, dtype=np.uint8)])
    g.node("QLinearMatMul", [au, g.const(0.02), g.const(128, dtype=np.uint8),
                             g.const(g.rng.integers(0, 256, (16, 7)), dtype=np.uint8), g.const(0.01),
                             g.const(125, dtype=np.uint8), g.const(0.15), g.const(100, dtype=np.uint8)])
    g.node("QLinearMatMul", [g.input((2, 5, 16), dtype=np.uint8, low=0, high=256), g.const(0.03),
                             g.const(120, dtype=np.uint8), g.const(g.rng.integers(-128, 128, (16, 7)), dtype=np.int8),
                             g.const(0.004), g.const(0, dtype=np.int8), g.const(0.05), g.const(128, dtype=np.uint8)])
    # Integer convolutions: zero points (padding reads the input's), strides, dilations, groups;
    # QLinearConv with per-output-channel int8 weight scales and an int32 bias, requantized.
    xu = g.input((2, 4, 7, 6), dtype=np.uint8, low=0, high=256)
    wu = g.const(g.rng.integers(0, 256, (6, 4, 3, 3)), dtype=np.uint8)
    g.node("ConvInteger", [xu, wu, g.const(119, dtype=np.uint8), g.const(130, dtype=np.uint8)], pads=[1, 1, 1, 1])
    g.node("ConvInteger", [xu, g.const(g.rng.integers(0, 256, (4, 2, 2, 3)), dtype=np.uint8)], strides=[2, 1],
           dilations=[1, 2], group=2)
    g.node("QLinearConv", [xu, g.const(0.02), g.const(128, dtype=np.uint8),
                           g.const(g.rng.integers(-128, 128, (6, 4, 3, 3)), dtype=np.int8),
                           g.const([0.003, 0.004, 0.002, 0.005, 0.001, 0.003]), g.const([0] * 6, dtype=np.int8),
                           g.const(0.4), g.const(110, dtype=np.uint8),
                           g.const(g.rng.integers(-3000, 3000, (6,)), dtype=np.int32)], pads=[1, 0, 1, 2])
    g.node("QLinearConv", [xu, g.const(0.05), g.const(100, dtype=np.uint8), wu, g.const(0.01),
                           g.const(127, dtype=np.uint8), g.const(2.0), g.const(5, dtype=np.uint8)], strides=[2, 2])
    # 1-D and 3-D integer convolutions (per-channel scales and bias shaped to them).
    xu1, xu3 = g.input((2, 4, 9), dtype=np.uint8, low=0, high=256), g.input((1, 4, 4, 5, 6), dtype=np.uint8, low=0, high=256)
    g.node("ConvInteger", [xu1, g.const(g.rng.integers(0, 256, (3, 4, 3)), dtype=np.uint8), g.const(119, dtype=np.uint8),
                           g.const(130, dtype=np.uint8)], pads=[1, 2], strides=[2])
    g.node("ConvInteger", [xu3, g.const(g.rng.integers(0, 256, (4, 2, 2, 3, 2)), dtype=np.uint8),
                           g.const(120, dtype=np.uint8)], pads=[1, 1, 0, 0, 1, 1], strides=[2, 1, 2], group=2)
    g.node("QLinearConv", [xu1, g.const(0.02), g.const(128, dtype=np.uint8),
                           g.const(g.rng.integers(-128, 128, (3, 4, 3)), dtype=np.int8),
                           g.const([0.003, 0.004, 0.002]), g.const([0] * 3, dtype=np.int8), g.const(0.3),
                           g.const(110, dtype=np.uint8), g.const(g.rng.integers(-3000, 3000, (3,)), dtype=np.int32)],
           pads=[1, 1])
    g.node("QLinearConv", [xu3, g.const(0.05), g.const(100, dtype=np.uint8),
                           g.const(g.rng.integers(-128, 128, (5, 4, 3, 2, 3)), dtype=np.int8),
                           g.const([0.003, 0.004, 0.002, 0.005, 0.001]), g.const([0] * 5, dtype=np.int8), g.const(0.5),
                           g.const(120, dtype=np.uint8), g.const(g.rng.integers(-3000, 3000, (5,)), dtype=np.int32)],
           pads=[1, 0, 1, 1, 1, 0], dilations=[2, 1, 1])
    return g


def einsum(opset=12):
    # Einsum as attention and mixers write it: batched contractions, transposes, sums, outer
    # products, ellipses, an implicit output and three operands.
    g = Group("einsum", opset, rtol=1e-4)
    q, k = g.input((2, 3, 5, 4)), g.input((2, 3, 6, 4))
    g.node("Einsum", [q, k], equation="bhqd,bhkd->bhqk")
    g.node("Einsum", [g.input((2, 3, 5, 6)), g.input((2, 3, 6, 4))], equation="bhqk,bhkd->bqhd")
    g.node("Einsum", [g.input((4, 5))], equation="ij->ji")
    g.node("Einsum", [g.input((4, 5, 6))], equation="ijk->j")
    g.node("Einsum", [g.input((4,)), g.input((5,))], equation="i,j->ij")
    g.node("Einsum", [g.input((2, 7, 4, 5)), g.input((5, 3))], equation="...ij,jk->...ik")
    g.node("Einsum", [g.input((3, 4)), g.input((4, 5))], equation="ij,jk")
    g.node("Einsum", [g.input((3, 4)), g.input((4, 5)), g.input((5, 2))], equation="ab,bc,cd->ad")
    g.node("Einsum", [g.input((3, 4, 5)), g.input((3, 5))], equation="bij,bj->bi")
    return g


def image(opset=13):
    # Resize as detectors and segmenters upsample (nearest 2x in both roundings, linear with
    # half_pixel, pytorch_half_pixel and align_corners, cubic), downsampling, tf_crop_and_resize,
    # exclude_outside; after convolutions, in their blocked layouts; from opset 18 axes, antialias
    # and keep_aspect_ratio_policy. Upsample before opset 10 and Resize's opset-10 form.
    # DepthToSpace (DCR, CRD) and SpaceToDepth.
    g = Group("image", opset, rtol=1e-4)
    x = g.input((1, 3, 5, 7))
    if opset < 10:
        g.node("Upsample", [x, g.const([1, 1, 2, 2])], mode="nearest")
        g.node("Upsample", [x, g.const([1, 1, 2, 3])], mode="linear")
    elif opset == 10:
        g.node("Resize", [x, g.const([1, 1, 2, 2])], mode="nearest")
        g.node("Resize", [x, g.const([1, 1, 1.5, 0.5])], mode="linear")
    else:
        empty = g.const([]) if opset < 13 else ""

        def resize(scales=None, sizes=None, roi=None, data=x, **attrs):
            inputs = [data, g.const(roi) if roi is not None else empty,
                      g.const(scales) if scales is not None else (g.const([]) if opset < 13 else "")]
            if sizes is not None:
                inputs.append(g.const(sizes, dtype=np.int64))
            g.node("Resize", inputs, **attrs)

        resize([1, 1, 2, 2], mode="nearest")
        resize([1, 1, 2, 2], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        # After a convolution, in its blocked layout (16 and 24 channels: blocks of 16 and of 8), H and W
        # resized and the channel blocks kept; tf_half_pixel_for_nn's (opsets 11 and 12) and
        # tf_crop_and_resize's (a region over every axis) in the plain layout.
        for channels in (16, 24):
            blocked = g.node("Conv", [g.input((1, 8, 5, 7)), g.weight((channels, 8, 1, 1))], output=False)
            resize([1, 1, 2, 2], data=blocked, mode="nearest", coordinate_transformation_mode="asymmetric",
                   nearest_mode="floor")
            resize(sizes=[1, channels, 9, 13], data=blocked, mode="linear", coordinate_transformation_mode="align_corners")
        resize([1, 1, 1.5, 2], data=blocked, mode="cubic")
        resize(sizes=[1, 24, 10, 3], data=blocked, mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
        if opset < 13:
            resize([1, 1, 2, 2], data=blocked, mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn")
        resize(sizes=[1, 24, 4, 5], data=blocked, roi=[0, 0, 0.2, 0.1, 1, 1, 0.9, 1.3], mode="linear",
               coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-2.0)
        resize(sizes=[1, 3, 3, 4], mode="nearest", nearest_mode="round_prefer_ceil")
        resize(sizes=[1, 3, 8, 11], mode="nearest", nearest_mode="ceil", coordinate_transformation_mode="align_corners")
        resize([1, 1, 2, 2], mode="linear")
        resize(sizes=[1, 3, 10, 3], mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
        resize(sizes=[1, 3, 9, 13], mode="linear", coordinate_transformation_mode="align_corners")
        resize([1, 1, 0.6, 1.5], mode="cubic")
        resize(sizes=[1, 3, 7, 4], mode="cubic", coordinate_transformation_mode="asymmetric")
        resize([1, 1, 1.5, 2], mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1)
        resize(sizes=[1, 3, 4, 5], roi=[0, 0, 0.2, 0.1, 1, 1, 0.9, 1.3], mode="linear",
               coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-2.0)
        resize([1, 2, 3], data=g.input((2, 3, 4)), mode="nearest")
        if opset >= 18:
            resize(sizes=[6, 10], mode="linear", axes=[2, 3])
            resize([0.5, 0.6], mode="linear", axes=[3, 2], antialias=1)
            resize(sizes=[3, 3], mode="cubic", antialias=1, axes=[2, 3])
            resize(sizes=[10, 10], mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_larger")
            resize(sizes=[10, 10], mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_smaller")
    y = g.input((2, 8, 3, 2))
    g.node("DepthToSpace", [y], blocksize=2)
    if opset >= 11:
        g.node("DepthToSpace", [y], blocksize=2, mode="CRD")
    g.node("SpaceToDepth", [g.input((2, 3, 4, 6))], blocksize=2)
    if opset >= 10:  # RoiAlign as Mask R-CNN crops its feature maps: avg and max, scaled regions
        features = g.input((2, 3, 12, 10))
        boxes = np.array([[0, 0, 9, 9], [1.5, 2.2, 7.9, 11.3], [4, 4, 4.5, 5], [-2, 3, 14, 20], [6, 1, 2, 8]])
        rois, batch = g.input(boxes.shape, values=boxes), g.input((5,), dtype=np.int64, values=[0, 1, 1, 0, 1])
        for mode, ratio in (("avg", 2), ("avg", 0), ("max", 2)):
            modes = [{}] if opset < 16 else [{}, {"coordinate_transformation_mode": "output_half_pixel"}]
            for extra in modes:
                g.node("RoiAlign", [features, rois, batch], mode=mode, sampling_ratio=ratio, output_height=3,
                       output_width=4, spatial_scale=0.8, **extra)
    return g
