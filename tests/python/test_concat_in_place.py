"""Concatenations of convolution branches computed in place: where each part of a Concat is a
convolution (with its bias and activation) read only by the Concat and the axes before the joined
one have extent 1, the convolutions and the Concat are one operator function whose convolutions
write their results straight into their places in its output (FuseOps, lower.cc's PlaceParts): a
SqueezeNet fire module (1x1 and 3x3 expansions of a squeezed input) and an Inception-style block
of three branches with channel counts no block divides. Where the parts cannot be placed (a batch
of 2, a branch also read elsewhere, a part that is not a convolution's, a Concat that is the
graph's output and so read by the layout transform back to NCHW) the join is a loop of its own. Each tiny model (opset 13, float32, seeded
weights) is compiled with `kiln compile -O3`, run with `kiln run` and compared with ONNX Runtime
(CPU): every output within 1e-4 * max(1, max|ort|); `kiln inspect` shows which functions hold the
Concat and how they compute it."""
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_attention_fusion import KILN, assert_close, compiled, kiln_outputs, onnxruntime_outputs


def conv_block_model(path, batch, channels, size, branches, squeeze=None, concat_output=False, extra_reader=False,
                     input_part=False, seed=0):
    """x [batch, channels, size, size] -> optional 1x1 squeeze (ReLU) -> branches, each
    (out_channels, kernel) a Conv with bias and ReLU -> Concat(axis=1) -> a 1x1 Conv to 8 channels
    (unless concat_output: then the Concat is the output). extra_reader: the first branch is also a
    graph output; input_part: the squeezed input is a part of the Concat too."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def conv(x, cin, cout, kernel, name):
        w = (rng.standard_normal((cout, cin, kernel, kernel)) * (cin * kernel * kernel) ** -0.5).astype(np.float32)
        b = (0.1 * rng.standard_normal(cout)).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")])
        pad = kernel // 2
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                      pads=[pad] * 4, kernel_shape=[kernel, kernel]))
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [name]))
        return name

    x, cin = "x", channels
    if squeeze is not None:
        x, cin = conv(x, channels, squeeze, 1, "squeeze"), squeeze
    parts = [conv(x, cin, cout, kernel, f"branch{i}") for i, (cout, kernel) in enumerate(branches)]
    if input_part:
        parts.append(x)
    joined = sum(cout for cout, _ in branches) + (cin if input_part else 0)
    nodes.append(helper.make_node("Concat", parts, ["joined"], axis=1))
    def value(name, c):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [batch, c, size, size])

    outputs = [value("joined", joined) if concat_output else value("y", 8)]
    if not concat_output:
        conv("joined", joined, 8, 1, "y")
    if extra_reader:
        outputs.append(value(parts[0], branches[0][0]))
    graph = helper.make_graph(nodes, "conv_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, size, size])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return {"x": rng.standard_normal((batch, channels, size, size)).astype(np.float32)}


def concat_functions(library):
    """(implementation, ops) of each operator function `kiln inspect` lists that holds a concatenate."""
    inspected = subprocess.run([KILN, "inspect", str(library)], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in inspected.split("Operator functions:", 1)[1].splitlines()[2:]:
        row = re.match(r"\s+\d+\s+\S+\s+(.*?)\s{2,}\S+ \((.*)\)\s*$", line)
        if row is None:
            break
        ops = row.group(2).split(",")
        if "concatenate" in ops:
            rows.append((row.group(1), ops))
    return rows


# name: (model options, whether the convolutions write the Concat's parts in place)
CASES = {
    "fire_module": (dict(batch=1, channels=32, size=13, squeeze=16, branches=[(32, 1), (32, 3)]), True),
    "inception_odd_channels": (dict(batch=1, channels=12, size=11, branches=[(5, 1), (7, 3), (3, 5)]), True),
    # The graph's output is NCHW: the layout transform from the blocked layout joins the Concat,
    # and one loop reads the parts where the convolutions wrote them.
    "concat_is_the_output": (dict(batch=1, channels=16, size=9, squeeze=8, branches=[(16, 1), (16, 3)],
                                  concat_output=True), False),
    "batch_2": (dict(batch=2, channels=32, size=13, squeeze=16, branches=[(32, 1), (32, 3)]), False),
    "branch_also_an_output": (dict(batch=1, channels=16, size=9, squeeze=8, branches=[(16, 1), (16, 3)],
                                   extra_reader=True), False),
    "input_as_a_part": (dict(batch=1, channels=16, size=9, squeeze=8, branches=[(16, 1), (16, 3)],
                             input_part=True), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_concatenation_of_branches_matches_onnxruntime(tmp_path, name):
    options, in_place = CASES[name]
    path = tmp_path / f"{name}.onnx"
    feeds = conv_block_model(path, **options)
    library = compiled(tmp_path, path)
    assert_close(kiln_outputs(tmp_path, library, feeds), onnxruntime_outputs(path, feeds), name)
    functions = concat_functions(library)
    print(name, functions)
    if in_place:
        # One function holds every branch's convolution and the Concat, and nothing copies.
        assert len(functions) == 1, functions
        implementation, ops = functions[0]
        assert ops.count("nn.conv2d") + ops.count("nn.conv2d_winograd") == len(options["branches"]), ops
        assert "concatenate" not in implementation and "copy" not in implementation, implementation
    else:
        # The join is written out: no function holds both a branch's convolution and the Concat.
        assert functions, "the Concat is not in any function"
        for implementation, ops in functions:
            assert "nn.conv2d" not in ops and "nn.conv2d_winograd" not in ops, ops
