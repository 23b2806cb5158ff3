"""Single-op ONNX test cases for the frontend conformance test: each group is one ONNX model
whose outputs are several variants (attribute combinations, shapes) of one op family, so one
`kiln compile` covers them all (onnx_op_group.Group). Inputs are seeded random; ONNX Runtime is
the reference. This file holds the tensor, elementwise, control-flow and data-dependent
families; onnx_op_cases_layers.py the neural-network layers; GROUPS below lists them all."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnx_op_group import Group
from onnx_op_cases_layers import (conv, conv_transpose, einsum, image, matmul, normalization, pooling, quantization,
                                  recurrent, softmax_opset11)

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def text(opset=11):
    # TfIdfVectorizer over int32 and int64 tokens, one row and a batch: unigrams and bigrams,
    # skip-grams, each weighting mode with and without weights, a repeated column.
    g = Group("text", opset)
    rows = g.input((3, 12), dtype=np.int32, low=0, high=6)
    row = g.input((15,), dtype=np.int64, low=0, high=5)
    grams = dict(pool_int64s=[1, 3, 4, 0, 2, 2, 3, 5, 1, 1, 4, 0, 3], ngram_counts=[0, 5])
    pool = dict(ngram_indexes=[3, 1, 8, 0, 4, 5, 2, 7, 6], **grams)
    for mode in ("TF", "IDF", "TFIDF"):
        for skip in (0, 2):
            g.node("TfIdfVectorizer", [rows], mode=mode, min_gram_length=1, max_gram_length=2, max_skip_count=skip,
                   **pool)
        g.node("TfIdfVectorizer", [row], mode=mode, min_gram_length=2, max_gram_length=2, max_skip_count=1,
               weights=[0.5, 1, 2, 0.25, 3, 1.5, 0.75, 2.5, 4], **pool)
    g.node("TfIdfVectorizer", [row], mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=3,
           ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 7, 6], **grams)
    return g


def elementwise(opset=14):
    g = Group("elementwise", opset)
    a, b, c = g.input((2, 3, 4)), g.input((3, 1)), g.input((4,))
    for op in ["Add", "Sub", "Mul", "Div"]:
        g.node(op, [a, b])
        g.node(op, [a, c])
    g.node("Pow", [g.input((3, 4), low=0.5, high=2.0), g.input((3, 4), low=-2.0, high=2.0)])
    g.node("Pow", [g.input((3, 4), low=0.5, high=2.0), g.const(2.0)])
    g.node("Max", [a, b, c])
    g.node("Min", [a, c])
    g.node("Sum", [a, b, c])
    g.node("Mean", [a, c])
    for op in ["Relu", "Sigmoid", "Tanh", "Exp", "Erf", "Abs", "Neg", "Floor", "Ceil", "Round", "Identity"]:
        g.node(op, [a])
    positive = g.input((2, 3, 4), low=0.1, high=5.0)
    for op in ["Log", "Sqrt", "Reciprocal"]:
        g.node(op, [positive])
    g.node("LeakyRelu", [a], alpha=0.2)
    g.node("HardSigmoid", [a], alpha=0.3, beta=0.4)
    g.node("Clip", [a, g.const(-0.5), g.const(0.7)])
    g.node("Clip", [a, g.const(0.0)])
    g.node("Dropout", [a])
    return g


def activations_and_trigonometry(opset=14):
    # Large values too: softplus must not overflow; the inverse functions get inputs inside their
    # domains.
    g = Group("activations", opset, rtol=1e-5)
    a = g.input((2, 3, 4))
    wide = g.input((4, 8), low=-60.0, high=60.0)
    for op in ["Sin", "Cos", "Atan", "Sinh", "Cosh", "Asinh", "Softsign", "HardSwish"]:
        g.node(op, [a])
    g.node("Tan", [g.input((3, 4), low=-1.4, high=1.4)])
    unit = g.input((3, 4), low=-0.99, high=0.99)
    for op in ["Asin", "Acos", "Atanh"]:
        g.node(op, [unit])
    g.node("Acosh", [g.input((3, 4), low=1.0, high=5.0)])
    g.node("Softplus", [a])
    g.node("Softplus", [wide])
    g.node("Elu", [a])
    g.node("Elu", [a], alpha=0.5)
    g.node("Selu", [a])
    g.node("Selu", [a], alpha=1.5, gamma=2.0)
    g.node("Celu", [a])
    g.node("Celu", [a], alpha=0.3)
    g.node("ThresholdedRelu", [a])
    g.node("ThresholdedRelu", [a], alpha=0.25)
    return g


def logic_and_composed_reductions(opset=14):
    # Logical ops on bools, BitShift, NaN / infinity tests, Sign, LogSoftmax and the reductions composed of
    # others (with large values for LogSumExp and LogSoftmax, which must not overflow).
    g = Group("logic_reductions", opset, rtol=1e-5)
    p, q = g.input((2, 3, 4), dtype=np.bool_, low=0, high=2), g.input((3, 4), dtype=np.bool_, low=0, high=2)
    for op in ["And", "Or", "Xor"]:
        g.node(op, [p, q])
    g.node("Not", [p])
    special = g.input((2, 6), values=[[0.0, np.nan, np.inf, -np.inf, 1.5, -2.0], [3.0, -0.0, np.nan, 7.0, -np.inf, 2.0]])
    g.node("IsNaN", [special])
    g.node("IsInf", [special])
    g.node("IsInf", [special], detect_negative=0)
    g.node("IsInf", [special], detect_positive=0)
    g.node("IsInf", [special], detect_negative=0, detect_positive=0)
    a = g.input((2, 3, 4))
    g.node("Sign", [a])
    for dtype in (np.uint8, np.uint32, np.uint64):
        bits = np.iinfo(dtype).bits
        g.node("BitShift", [g.input((3, 4), dtype=dtype, low=0, high=200), g.input((4,), dtype=dtype, low=0, high=bits)],
               direction="LEFT")
        g.node("BitShift", [g.input((3, 4), dtype=dtype, low=0, high=200), g.input((3, 1), dtype=dtype, low=0, high=9)],
               direction="RIGHT")
    g.node("Sign", [g.input((5,), dtype=np.int64)])
    wide = g.input((3, 5), low=-80.0, high=80.0)
    g.node("LogSoftmax", [a])
    g.node("LogSoftmax", [wide], axis=0)
    positive = g.input((2, 3, 4), low=0.1, high=3.0)
    axes = {"axes": [1]} if opset < 18 else {}
    axes_input = [] if opset < 18 else [g.const([1], dtype=np.int64)]
    for op in ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"]:
        g.node(op, [a] + axes_input, **axes)
        g.node(op, [a] + axes_input, keepdims=0, **axes)
    g.node("ReduceLogSumExp", [wide], keepdims=0)
    g.node("ReduceLogSum", [positive] + axes_input, **axes)
    # Mod: mixed signs; floored (Python) for integers, truncated (C) with fmod=1; broadcasting.
    for dtype in (np.int32, np.int64, np.int8):
        dividend = g.input((3, 4), dtype=dtype, low=-20, high=20)
        divisor = g.input((3, 4), values=g.rng.choice([-7, -3, -1, 2, 5], (3, 4)), dtype=dtype)
        g.node("Mod", [dividend, divisor])
        g.node("Mod", [dividend, divisor], fmod=1)
    g.node("Mod", [g.input((2, 5), dtype=np.uint8, low=0, high=200), g.input((5,), dtype=np.uint8, low=1, high=9)])
    g.node("Mod", [g.input((3, 4), low=-10.0, high=10.0), g.input((4,), values=[-3.5, 2.0, 0.75, -1.25])], fmod=1)
    return g


def triangles(opset=14):
    # Trilu as a GPT block's causal mask uses it: upper and lower, k above and below the diagonal,
    # square, wide, tall and batched matrices.
    g = Group("trilu", opset)
    square, wide, batched = g.input((5, 5)), g.input((3, 7)), g.input((2, 3, 6, 4))
    for x in (square, wide, batched):
        g.node("Trilu", [x])
        g.node("Trilu", [x], upper=0)
    for k in (-2, 1, 9):
        g.node("Trilu", [wide, g.const(k, dtype=np.int64)])
        g.node("Trilu", [batched, g.const(k, dtype=np.int64)], upper=0)
    return g


def gather_and_scatter(opset=13):
    # GatherElements, GatherND, ScatterElements, ScatterND, OneHot and Tile, with negative indices
    # and int32 and int64 indices; scatter reductions (duplicates allowed) add and mul from opset 16,
    # min and max from 18.
    g = Group("gather_scatter", opset)
    rng = g.rng
    data = g.input((3, 4, 5))
    along1 = rng.integers(-4, 4, (3, 2, 5))
    g.node("GatherElements", [data, g.input(along1.shape, dtype=np.int64, values=along1)], axis=1)
    g.node("GatherElements", [data, g.input((2, 4, 3), dtype=np.int32, low=-3, high=3)], axis=0)
    g.node("GatherElements", [data, g.input((3, 4, 7), dtype=np.int64, low=-5, high=5)], axis=-1)
    g.node("GatherND", [data, g.input((2, 2), dtype=np.int64, values=[[0, 1], [-1, 3]])])
    g.node("GatherND", [data, g.input((2, 3, 3), dtype=np.int64, values=rng.integers(0, 3, (2, 3, 3)))])
    g.node("GatherND", [data, g.input((4, 1), dtype=np.int64, values=[[2], [0], [-2], [1]])])
    if opset >= 12:
        g.node("GatherND", [data, g.input((3, 2, 1), dtype=np.int64, values=rng.integers(0, 4, (3, 2, 1)))],
               batch_dims=1)
    # Scatter with unique targets: a permutation along the axis for each row.
    perm = np.stack([rng.permutation(4)[:3] for _ in range(3 * 5)]).reshape(3, 5, 3).transpose(0, 2, 1)
    g.node("ScatterElements", [data, g.input(perm.shape, dtype=np.int64, values=perm - 2), g.input(perm.shape)], axis=1)
    g.node("ScatterND", [data, g.input((2, 2), dtype=np.int64, values=[[0, 1], [2, -1]]), g.input((2, 5))])
    g.node("ScatterND", [data, g.input((2, 3), dtype=np.int64, values=[[0, 1, 2], [2, 3, 4]]), g.input((2,))])
    if opset >= 16:
        dup = rng.integers(0, 4, (3, 6, 5))
        for reduction in ("add", "mul") + (("min", "max") if opset >= 18 else ()):
            g.node("ScatterElements", [data, g.input(dup.shape, dtype=np.int64, values=dup), g.input(dup.shape)],
                   axis=1, reduction=reduction)
            g.node("ScatterND", [data, g.input((3, 1), dtype=np.int64, values=[[1], [0], [1]]), g.input((3, 4, 5))],
                   reduction=reduction)
    classes = g.input((2, 5), dtype=np.int64, low=-4, high=6)  # some outside [-depth, depth)
    g.node("OneHot", [classes, g.const(4, dtype=np.int64), g.const([0.0, 1.0])])
    g.node("OneHot", [classes, g.const([5.0]), g.input((2,))], axis=0)
    # Float indices are cast to int64 (ONNX Runtime 1.19 compared them unconverted, later versions
    # cast, so only whole values agree across versions).
    g.node("OneHot", [g.input((3,), values=[1.0, -1.0, 3.0]), g.const(4, dtype=np.int64),
                      g.const([-1, 7], dtype=np.int64)], axis=1)
    g.node("Tile", [data, g.const([2, 1, 3], dtype=np.int64)])
    g.node("Tile", [g.input((2, 3), dtype=np.int64), g.const([3, 2], dtype=np.int64)])
    return g


def topk_and_cumsum(opset=14):
    # TopK largest and smallest along each axis, with ties (equal values keep the lower index
    # first) and K from 1 to the axis' length; CumSum forward, reverse and exclusive.
    g = Group("topk_cumsum", opset)
    x, ties = g.input((3, 6, 4)), g.input((4, 9), dtype=np.int64, low=0, high=3)
    for axis, k in ((-1, 2), (1, 6), (0, 1)):
        g.node("TopK", [x, g.const([k], dtype=np.int64)], n_outputs=2, axis=axis)
        g.node("TopK", [x, g.const([k], dtype=np.int64)], n_outputs=2, axis=axis, largest=0)
    g.node("TopK", [ties, g.const([5], dtype=np.int64)], n_outputs=2)
    g.node("TopK", [ties, g.const([3], dtype=np.int64)], n_outputs=2, axis=0, largest=0)
    for exclusive in (0, 1):
        for reverse in (0, 1):
            g.node("CumSum", [x, g.const(1, dtype=np.int64)], exclusive=exclusive, reverse=reverse)
    g.node("CumSum", [ties, g.const(-1, dtype=np.int32)])
    return g


def normalizations_and_activations(opset=17):
    # Instance-, Group- and LpNormalization and LRN composed of reductions and pooling; PRelu with per-channel and
    # scalar slopes, Shrink; Mish from opset 18 and Gelu (both forms) from 20.
    g = Group("norms_activations", opset, rtol=1e-4)
    x = g.input((2, 6, 5, 4))
    g.node("InstanceNormalization", [x, g.weight((6,)), g.weight((6,))], epsilon=1e-3)
    g.node("InstanceNormalization", [g.input((3, 4, 7)), g.weight((4,)), g.weight((4,))])
    g.node("LpNormalization", [x], axis=1, p=1)
    g.node("LpNormalization", [x])
    g.node("LRN", [x], size=3)
    g.node("LRN", [g.input((2, 7, 3, 2))], size=5, alpha=0.02, beta=0.6, bias=2.0)  # ONNX Runtime: odd sizes, 4-D
    g.node("PRelu", [x, g.weight((6, 1, 1))])
    g.node("PRelu", [x, g.weight((1,))])
    g.node("Shrink", [x], lambd=0.7, bias=0.2)
    g.node("Shrink", [g.input((3, 4), dtype=np.int64, low=-4, high=4)], lambd=1.5, bias=1.0)
    if opset >= 18:
        g.node("Mish", [x])
        scale_shape = (6,) if opset >= 21 else (3,)
        g.node("GroupNormalization", [x, g.weight(scale_shape), g.weight(scale_shape)], num_groups=3, epsilon=1e-4)
    if opset >= 20:
        g.node("Gelu", [x])
        g.node("Gelu", [x], approximate="tanh")
    return g


def elementwise_chains(opset=14):
    # Chains fused into one loop, large enough to be split across threads: a GELU after a bias
    # (rows of a broadcast loop), a flat chain, and a broadcast over three dimensions.
    g = Group("elementwise_chains", opset)
    x = g.node("Add", [g.input((64, 600), low=-4.0, high=4.0), g.weight((600,))], output=False)
    erf = g.node("Erf", [g.node("Div", [x, g.const(1.4142135)], output=False)], output=False)
    g.node("Mul", [g.node("Mul", [x, g.node("Add", [erf, g.const(1.0)], output=False)], output=False), g.const(0.5)])
    y = g.input((40000,))
    g.node("Sub", [g.node("Mul", [g.node("Erf", [y], output=False), y], output=False), g.node("Sigmoid", [y], output=False)])
    g.node("Relu", [g.node("Mul", [g.input((4, 100, 100)), g.input((100, 1))], output=False)])  # rows of 3-D
    return g


def compare_and_cast(opset=14):
    g = Group("compare", opset)
    a, b = g.input((3, 4)), g.input((1, 4))
    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        g.node(op, [g.input((3, 4), np.int64), g.input((4,), np.int64)])
    g.node("Where", [g.node("Less", [a, b], output=False), a, b])
    g.node("Cast", [a], to=TensorProto.INT64)
    g.node("Cast", [g.input((5,), np.int64)], to=TensorProto.FLOAT)
    g.node("Cast", [a], to=TensorProto.INT32)
    return g


def shapes(opset=14):
    g = Group("shapes", opset)
    x = g.input((2, 3, 4, 5))
    g.node("Reshape", [x, g.const([0, -1, 5], np.int64)])
    g.node("Reshape", [x, g.const([6, 20], np.int64)])
    g.node("Transpose", [x], perm=[0, 2, 3, 1])
    g.node("Transpose", [x])
    g.node("Concat", [x, g.input((2, 1, 4, 5)), g.input((2, 2, 4, 5))], axis=1)
    g.node("Concat", [x, x], axis=-1)
    g.node("Flatten", [x], axis=2)
    g.node("Flatten", [x], axis=0)
    g.node("Unsqueeze", [x, g.const([0, 5], np.int64)])
    g.node("Squeeze", [g.input((1, 3, 1, 2)), g.const([0], np.int64)])
    g.node("Squeeze", [g.input((1, 3, 1, 2))])
    g.node("Slice", [x, g.const([0, 1], np.int64), g.const([2, 3], np.int64), g.const([1, 3], np.int64)])
    g.node("Slice", [x, g.const([-1], np.int64), g.const([-1000], np.int64), g.const([3], np.int64), g.const([-2], np.int64)])
    g.node("Slice", [x, g.const([1], np.int64), g.const([2**62], np.int64), g.const([2], np.int64), g.const([2], np.int64)])
    g.node("Gather", [x, g.input((2, 2), np.int64, low=-3, high=3)], axis=1)
    g.node("Gather", [g.weight((10, 4)), g.input((3,), np.int64, low=0, high=10)], axis=0)
    g.node("Gather", [x, g.const(2, np.int64)], axis=3)
    g.node("Expand", [g.input((3, 1)), g.const([2, 3, 4], np.int64)])
    pieces = g.node("Split", [x, g.const([1, 2], np.int64)], n_outputs=2, axis=1)
    g.node("Split", [x], n_outputs=2, axis=0, **({"num_outputs": 2} if opset >= 18 else {}))
    g.node("Pad", [x, g.const([0, 0, 1, 2, 0, 1, 3, 0], np.int64), g.const(0.5)], mode="constant")
    g.node("Pad", [x, g.const([0, 0, 1, 2, 0, 0, 2, 1], np.int64)], mode="edge")
    g.node("Pad", [x, g.const([0, 0, 1, 2, 0, 0, 2, 1], np.int64)], mode="reflect")
    if opset >= 18:  # pads for some axes only
        g.node("Pad", [x, g.const([2, 1, 0, 3], np.int64), g.const(-1.0), g.const([-1, 1], np.int64)])
    if opset >= 19:  # wrap (pads within the axis: beyond it ONNX Runtime 1.19 differs from ONNX's reference)
        g.node("Pad", [x, g.const([0, 1, 2, 2, 0, 1, 1, 3], np.int64)], mode="wrap")
    # A shape computation that must fold away: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
    s = g.node("Shape", [x], output=False)
    n = g.node("Gather", [s, g.const(0, np.int64)], output=False, axis=0)
    n1 = g.node("Unsqueeze", [n, g.const([0], np.int64)], output=False)
    shape = g.node("Concat", [n1, g.const([-1], np.int64)], output=False, axis=0)
    g.node("Reshape", [x, shape])
    filled = g.node("ConstantOfShape", [g.const([2, 3], np.int64)], output=False,
                    value=numpy_helper.from_array(np.array([1.5], np.float32)))
    g.node("Add", [g.input((2, 3)), filled])
    r = g.node("Range", [g.const(1, np.int64), g.const(10, np.int64), g.const(3, np.int64)], output=False)
    g.node("Mul", [g.input((3,), np.int64), r])
    return g


def reductions(opset=14):
    g = Group("reduce", opset, rtol=1e-5)
    x = g.input((3, 4, 5))

    def reduce(op, data, axes=None, **attrs):  # axes: an attribute, from opset 18 an input
        if axes is None:
            return g.node(op, [data], **attrs)
        if opset >= 18:
            return g.node(op, [data, g.const(axes, np.int64)], **attrs)
        return g.node(op, [data], axes=axes, **attrs)

    reduce("ReduceMean", x, [-1], keepdims=1)
    reduce("ReduceMean", x, [0, 2], keepdims=0)
    reduce("ReduceMax", x, [1])
    reduce("ReduceMin", x)
    reduce("ReduceProd", g.input((2, 3), low=0.5, high=1.5), [1])
    g.node("ReduceSum", [x, g.const([1], np.int64)], keepdims=0)
    g.node("ReduceSum", [x])
    ties = g.input((4, 6), values=g.rng.integers(0, 3, (4, 6)))  # repeated values: which index wins matters
    for op in ["ArgMax", "ArgMin"]:
        g.node(op, [x], axis=1)
        g.node(op, [x], axis=-1, keepdims=0)
        g.node(op, [ties], axis=1, select_last_index=1)
        g.node(op, [ties], axis=0, keepdims=0)
    return g


def attribute_forms_before_opset13(opset=11):
    """Ops whose axes/splits were attributes before opset 13 (inputs from 13 on)."""
    g = Group("attribute_forms", opset, rtol=1e-5)
    x = g.input((2, 3, 4, 5))
    g.node("Squeeze", [g.input((1, 3, 1, 2))], axes=[0, -2])
    g.node("Unsqueeze", [x], axes=[0, 5])
    g.node("ReduceSum", [x], axes=[1, -1], keepdims=0)
    g.node("ReduceSum", [x], keepdims=1)
    g.node("Split", [x], n_outputs=2, axis=1, split=[1, 2])
    g.node("Split", [x], n_outputs=2, axis=-1, split=[3, 2])
    g.node("Softmax", [x], axis=2)
    g.node("Dropout", [x])
    return g


def control_flow(opset=13):
    # If with a run-time condition (only the taken branch runs) and with one that folds
    # (the taken branch alone, reading outer values); Loop with a constant trip count, carried
    # values and scan outputs, and one whose condition turns false; Scan forward and reverse along
    # other axes; a Loop nested in an If.
    g = Group("control_flow", opset, rtol=1e-5)
    x = g.input((3, 4))
    flag = g.input((), dtype=np.bool_, values=np.array(True))
    shut = g.input((1,), dtype=np.bool_, values=np.array([False]))
    F3 = lambda name, shape: helper.make_tensor_value_info(name, F, shape)  # noqa: E731

    def graph(name, nodes, outputs, inputs=()):
        return helper.make_graph(nodes, name, list(inputs), outputs)

    def branches(tag):
        then = graph(f"then{tag}", [helper.make_node("Add", [x, x], [f"t{tag}"])], [F3(f"t{tag}", [3, 4])])
        other = graph(f"else{tag}", [helper.make_node("Sigmoid", [x], [f"e{tag}"])], [F3(f"e{tag}", [3, 4])])
        return then, other

    for tag, condition in (("a", flag), ("b", shut)):
        then, other = branches(tag)
        g.node("If", [condition], then_branch=then, else_branch=other)
    then, other = branches("c")
    g.node("If", [g.const(np.array(False), dtype=np.bool_)], then_branch=then, else_branch=other)
    # Loop: carried sum += x * i, scan output the running sum, 4 trips.
    B = TensorProto.BOOL
    body = graph("body", [
        helper.make_node("Cast", ["i"], ["i_f"], to=F),
        helper.make_node("Mul", [x, "i_f"], ["xi"]),
        helper.make_node("Add", ["s_in", "xi"], ["s_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Relu", ["s_out"], ["scan"]),
    ], [helper.make_tensor_value_info("cond_out", B, []), F3("s_out", [3, 4]), F3("scan", [3, 4])],
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
         F3("s_in", [3, 4])])
    g.node("Loop", [g.const(np.array(4), dtype=np.int64), "", g.input((3, 4))], n_outputs=2, body=body)
    # Loop that stops when i * 2 >= 5 (after i = 2), its trip count left open.
    body2 = graph("body2", [
        helper.make_node("Mul", ["j", g.const(np.array(2), dtype=np.int64)], ["j2"]),
        helper.make_node("Less", ["j2", g.const(np.array(4), dtype=np.int64)], ["go"]),
        helper.make_node("Mul", ["p_in", x], ["p_out"]),
    ], [helper.make_tensor_value_info("go", B, []), F3("p_out", [3, 4])],
        [helper.make_tensor_value_info("j", I64, []), helper.make_tensor_value_info("c_in", B, []),
         F3("p_in", [3, 4])])
    g.node("Loop", ["", g.const(np.array(True), dtype=np.bool_), g.input((3, 4))], body=body2)
    if opset >= 9:
        # Scan: state += row, scan outputs row * state; one input reversed along axis 1.
        sbody = graph("scan_body", [
            helper.make_node("Add", ["acc", "row"], ["acc_out"]),
            helper.make_node("Mul", ["row", "acc_out"], ["prod"]),
        ], [F3("acc_out", [3]), F3("prod", [3])], [F3("acc", [3]), F3("row", [3])])
        g.node("Scan", [g.input((3,)), g.input((5, 3))], n_outputs=2, body=sbody, num_scan_inputs=1)
        g.node("Scan", [g.input((3,)), g.input((3, 5))], n_outputs=2, body=sbody, num_scan_inputs=1,
               scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1], scan_output_directions=[1])
    # Only the taken branch runs: the else branch gathers column 3 of a 3-column input, out of
    # range, so computing both branches would fail.
    column = g.input((1,), dtype=np.int64, values=np.array([3]))
    narrow = g.input((3, 3))
    gather = lambda tag, data: graph(f"gather{tag}", [helper.make_node("Gather", [data, column], [f"g{tag}"], axis=1)],  # noqa: E731
                                     [F3(f"g{tag}", [3, 1])])
    g.node("If", [flag], then_branch=gather("t", x), else_branch=gather("e", narrow))
    # A Loop inside the taken branch of a run-time If.
    inner = graph("inner", [helper.make_node("Loop", [g.const(np.array(3), dtype=np.int64), "", x], ["looped"],
                                             body=body2)], [F3("looped", [3, 4])])
    g.node("If", [flag], then_branch=inner, else_branch=branches("d")[1])
    return g


def losses_and_sampling(opset=13):
    # NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (every reduction, weights, ignore_index,
    # extra dims; SCE's log_prob output), Hardmax, EyeLike, MeanVarianceNormalization, CastLike,
    # LpPool, ReverseSequence; from opset 16 GridSample in each mode, padding and alignment; from 18
    # the Bitwise ops and CenterCropPad; from 20 AffineGrid; Det and MaxUnpool.
    g = Group("losses_and_sampling", opset, rtol=1e-5)
    scores = g.input((3, 5, 2))
    labels = g.input((3, 2), dtype=np.int64, values=[[0, 4], [2, 1], [3, 3]])
    weights = g.const([0.5, 1.0, 2.0, 0.25, 1.5])
    for reduction in ("none", "sum", "mean"):
        g.node("NegativeLogLikelihoodLoss", [scores, labels], reduction=reduction)
        g.node("NegativeLogLikelihoodLoss", [scores, labels, weights], reduction=reduction, ignore_index=3)
        g.node("SoftmaxCrossEntropyLoss", [scores, labels, weights], n_outputs=2, reduction=reduction)
    g.node("SoftmaxCrossEntropyLoss", [g.input((4, 6)), g.input((4,), dtype=np.int32, values=[5, 0, -1, 2])],
           n_outputs=2, ignore_index=-1)
    x = g.input((2, 3, 4, 5))
    g.node("Hardmax", [g.input((3, 4), values=[[1, 3, 3, 0], [2, 1, 0, 2], [0, 0, 0, 0]])], axis=1)
    g.node("Hardmax", [x], axis=2)
    g.node("EyeLike", [g.input((3, 5))], k=1)
    g.node("EyeLike", [g.input((4, 3), dtype=np.int64)], k=-2, dtype=TensorProto.FLOAT)
    g.node("MeanVarianceNormalization", [x])
    g.node("MeanVarianceNormalization", [x], axes=[1, 3])
    if opset >= 15:
        g.node("CastLike", [g.input((3,), values=[1.7, -2.2, 3.0]), g.const(np.array([0]), dtype=np.int32)])
    g.node("LpPool", [x], kernel_shape=[2, 3], p=2, strides=[1, 2], pads=[1, 0, 1, 1])
    g.node("LpPool", [x], kernel_shape=[3, 3], p=1)
    g.node("LpPool", [x], kernel_shape=[2, 2], p=3)
    g.node("ReverseSequence", [g.input((5, 3, 2)), g.input((3,), dtype=np.int64, values=[5, 2, 1])])
    g.node("ReverseSequence", [g.input((3, 4)), g.input((3,), dtype=np.int64, values=[1, 4, 3])], batch_axis=0,
           time_axis=1)
    if opset >= 16:
        image = g.input((2, 3, 5, 6))
        grid = g.input((2, 4, 7, 2), low=-1.3, high=1.3)  # some points outside
        modes = ("linear", "nearest", "cubic") if opset >= 20 else ("bilinear", "nearest", "bicubic")
        for mode in modes:
            for padding in ("zeros", "border", "reflection"):
                for align in (0, 1):
                    # ONNX Runtime 1.19's bicubic with border padding differs from ONNX's reference
                    # (by up to 0.45 on these points); kiln follows the reference (measured: 1.5e-6).
                    if (mode, padding) not in (("bicubic", "border"), ("cubic", "border")):
                        g.node("GridSample", [image, grid], mode=mode, padding_mode=padding, align_corners=align)
    if opset >= 18:
        a, b = g.input((3, 4), dtype=np.int32, low=-100, high=100), g.input((4,), dtype=np.int32, low=-100, high=100)
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            g.node(op, [a, b])
        g.node("BitwiseNot", [g.input((5,), dtype=np.uint8, low=0, high=256)])
        g.node("CenterCropPad", [x, g.const([2, 7], dtype=np.int64)], axes=[2, 3])
        g.node("CenterCropPad", [x, g.const([1, 4, 3, 3], dtype=np.int64)])
    if opset >= 20:
        theta = g.input((2, 2, 3))
        g.node("AffineGrid", [theta, g.const([2, 3, 4, 5], dtype=np.int64)])
        g.node("AffineGrid", [theta, g.const([2, 1, 3, 2], dtype=np.int64)], align_corners=1)
        g.node("AffineGrid", [g.input((1, 3, 4)), g.const([1, 1, 2, 3, 4], dtype=np.int64)])
    g.node("Det", [g.input((3, 4, 4))])
    g.node("Det", [g.input((2, 2), values=[[1.0, 2.0], [2.0, 4.0]])])
    # MaxUnpool of a 2 x 2 pool's values at their flat indices into the [1, 2, 4, 4] output.
    g.node("MaxUnpool", [g.input((1, 2, 2, 2)), g.input((1, 2, 2, 2), dtype=np.int64,
                                                         values=[[[[0, 3], [9, 15]], [[16, 22], [26, 31]]]])],
           kernel_shape=[2, 2], strides=[2, 2])
    return g


def float16(opset=17):
    # A float16 model as converters write them (weights and activations float16): kiln stores
    # float16 and computes in float32 (LegalizeNarrowFloats), rounding to float16 after each op.
    g = Group("float16", opset, rtol=4e-3)
    x = g.input((1, 3, 6, 6), dtype=np.float16)
    w = g.const(g.rng.standard_normal((4, 3, 3, 3)) * 0.3, dtype=np.float16)
    y = g.node("Relu", [g.node("Conv", [x, w, g.const(g.rng.standard_normal(4) * 0.1, dtype=np.float16)],
                               output=False, pads=[1, 1, 1, 1])])
    flat = g.node("Reshape", [y, g.const([1, 4, 36], dtype=np.int64)], output=False)
    g.node("Softmax", [flat], axis=-1)
    g.node("MatMul", [flat, g.const(g.rng.standard_normal((36, 5)) * 0.2, dtype=np.float16)])
    g.node("LayerNormalization", [flat, g.const(np.ones(36), dtype=np.float16), g.const(np.zeros(36), dtype=np.float16)])
    g.node("Sigmoid", [g.node("Add", [x, x], output=False)])
    g.node("Cast", [g.node("Mul", [x, g.const(0.5, dtype=np.float16)], output=False)], to=TensorProto.FLOAT)
    g.node("Cast", [g.input((2, 3))], to=TensorProto.FLOAT16)
    g.node("ReduceMean", [x], axes=[2, 3])
    g.node("TopK", [flat, g.const([3], dtype=np.int64)], n_outputs=2)  # a tuple result, widened field by field
    return g


def data_dependent(opset=11):
    # Outputs whose shape depends on the data, trimmed by the executor: NonZero (zeros, NaN-free
    # floats, integers, bools; all zero), Compress along each axis and flattened (a short
    # condition, one all false), Unique sorted and in order of occurrence, flattened and along
    # each axis, NonMaxSuppression in both box formats with constant and run-time bounds.
    g = Group("data_dependent", opset)
    sparse = g.input((3, 4, 5), low=-1, high=2, dtype=np.int64)
    g.node("NonZero", [g.node("Cast", [sparse], output=False, to=F)])
    g.node("NonZero", [sparse])
    g.node("NonZero", [g.input((7,), dtype=np.bool_, values=[1, 0, 0, 1, 1, 0, 1])])
    g.node("Identity", [g.node("NonZero", [g.input((2, 3), values=np.zeros((2, 3)))], output=False)])
    data = g.input((4, 5, 3))
    for axis in (0, 1, -1):
        length = (4, 5, 3)[axis]
        cond = g.input((length,), dtype=np.bool_, values=g.rng.integers(0, 2, length))
        g.node("Compress", [data, cond], axis=axis)
    g.node("Compress", [data, g.input((4,), dtype=np.bool_, values=[0, 1, 1, 0])], axis=1)
    g.node("Compress", [data, g.input((9,), dtype=np.bool_, values=g.rng.integers(0, 2, 9))])
    g.node("Compress", [data, g.input((3,), dtype=np.bool_, values=[0, 0, 0])], axis=0)
    repeats = g.input((4, 6), dtype=np.int64, low=0, high=3)
    rows = g.input((5, 3), dtype=np.int64, values=[[1, 2, 0], [0, 1, 1], [1, 2, 0], [0, 1, 0], [0, 1, 1]])
    cube = g.input((2, 4, 2), dtype=np.int64, values=np.tile([[[1, 0]], [[0, 1]]], (1, 4, 1)) * [[[1], [2], [1], [0]]])
    floats = g.input((9,), values=[2.5, -1, 2.5, 0, -1, 3, 0, 7, -1])
    for sorted_ in (0, 1):
        g.node("Unique", [repeats], n_outputs=4, sorted=sorted_)
        g.node("Unique", [floats], n_outputs=4, sorted=sorted_)
        g.node("Unique", [rows], n_outputs=4, axis=0, sorted=sorted_)
    g.node("Unique", [rows], n_outputs=4, axis=1)
    g.node("Unique", [cube], n_outputs=4, axis=-2)
    batches, classes, n = 2, 3, 24
    corners = g.rng.uniform(0, 10, (batches, n, 2))
    sizes = g.rng.uniform(1, 4, (batches, n, 2))
    flipped = np.concatenate([corners + sizes, corners], axis=2)  # y2, x2, y1, x1: the other diagonal
    boxes = g.input(flipped.shape, values=flipped)
    centers = g.input((batches, n, 4), values=np.concatenate([corners * 0.3, sizes], axis=2))
    scores = g.input((batches, classes, n), low=0, high=1)
    runtime_bound = g.input((1,), dtype=np.int64, values=[4])
    iou, threshold = g.const([0.3]), g.const([0.4])
    g.node("NonMaxSuppression", [boxes, scores, g.const([3], dtype=np.int64), iou, threshold])
    g.node("NonMaxSuppression", [boxes, scores, runtime_bound, iou])
    g.node("NonMaxSuppression", [centers, scores, g.const([100], dtype=np.int64), g.const([0.1])], center_point_box=1)
    g.node("NonMaxSuppression", [boxes, scores])
    return g


# Each group with the opsets it is built at: the model suite's ops over opsets 11 to 17.
GROUPS = [
    (conv, [11, 14, 17]),
    (conv_transpose, [11, 17]),
    (image, [9, 10, 11, 13, 19]),
    (control_flow, [11, 13, 16]),
    (losses_and_sampling, [13, 16, 18, 20]),
    (float16, [17]),
    (recurrent, [11, 14]),
    (quantization, [11, 13, 19]),
    (einsum, [12, 17]),
    (pooling, [11, 17]),
    (normalization, [11, 14, 17]),
    (softmax_opset11, [11, 12]),
    (attribute_forms_before_opset13, [11, 12]),
    (matmul, [11, 17]),
    (elementwise, [13, 17]),
    (activations_and_trigonometry, [14, 17, 21]),
    (logic_and_composed_reductions, [11, 17]),
    (triangles, [14, 17]),
    (gather_and_scatter, [11, 13, 16, 18]),
    (topk_and_cumsum, [11, 17]),
    (normalizations_and_activations, [11, 18, 20]),
    (elementwise_chains, [14]),
    (compare_and_cast, [13, 17]),
    (shapes, [13, 17, 18, 19]),
    (reductions, [13, 17, 18]),
    (data_dependent, [11, 13, 21]),
    (text, [11, 17]),
]
