"""bfloat16 and ONNX's float8 formats through `kiln compile` and `kiln run`: Cast from float32
to each format (saturating and not) over a sweep of values (zeros, subnormals, the largest
values and just past them, halfway cases, infinities, NaN, random magnitudes), compared bit for
bit with ONNX's reference conversions (onnx.helper.float32_to_float8e4m3 / e5m2 /
float32_to_bfloat16), and every code of each format back to float32 against ONNX's decoders.
kiln's .npz files hold these formats as their bits (numpy has none of them)."""
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")

# ONNX type: (onnx.helper's converter, numpy_helper's decoder, fn, uz)
FLOAT8 = {
    TensorProto.FLOAT8E4M3FN: (helper.float32_to_float8e4m3, numpy_helper.float8e4m3_to_float32, True, False),
    TensorProto.FLOAT8E4M3FNUZ: (helper.float32_to_float8e4m3, numpy_helper.float8e4m3_to_float32, True, True),
    TensorProto.FLOAT8E5M2: (helper.float32_to_float8e5m2, numpy_helper.float8e5m2_to_float32, False, False),
    TensorProto.FLOAT8E5M2FNUZ: (helper.float32_to_float8e5m2, numpy_helper.float8e5m2_to_float32, True, True),
}


def sweep():
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 448.0, 449.0, 464.0, 465.0, 480.0, 500.0, 240.0, 247.0, 248.0, 57344.0,
             61440.0, 61441.0, 65536.0, 1e-3, 2.0 ** -6, 2.0 ** -7, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10,
             2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 3.0 * 2.0 ** -18, 1e-30, np.inf, -np.inf, np.nan, 3.4e38]
    values = np.concatenate([edges, -np.array(edges), rng.standard_normal(400) * 10.0 ** rng.uniform(-8, 6, 400)])
    # Every bfloat16 and float8 midpoint region: values of the form m * 2^e around the formats' spacing.
    grid = np.array([k * 2.0 ** e for e in range(-20, 17) for k in (1, 1.0625, 1.125, 1.1875, 1.25, 1.3125, 1.75, 1.9375)])
    return np.concatenate([values, grid, -grid]).astype(np.float32)


def run(tmp_path, nodes, inputs, outputs, feeds):
    graph = helper.make_graph(nodes, "narrow", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feeds)
    subprocess.run([KILN, "compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.so")], check=True,
                   capture_output=True, text=True)
    subprocess.run([KILN, "run", str(tmp_path / "m.so"), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                    str(tmp_path / "out.npz")], check=True, capture_output=True, text=True)
    out = np.load(tmp_path / "out.npz")
    return [out[f"output_{i}"] for i in range(len(out.files))]


def test_float32_to_each_format_matches_onnx_reference_bits(tmp_path):
    x = sweep()
    nodes, outputs, expected = [], [], []
    for to, (convert, _, fn, uz) in FLOAT8.items():
        for saturate in (1, 0):
            name = f"y{to}_{saturate}"
            nodes.append(helper.make_node("Cast", ["x"], [name], to=to, saturate=saturate))
            outputs.append(helper.make_tensor_value_info(name, to, list(x.shape)))
            expected.append(np.array([convert(v, fn=fn, uz=uz, saturate=bool(saturate)) for v in x], np.uint8))
    nodes.append(helper.make_node("Cast", ["x"], ["y_bf16"], to=TensorProto.BFLOAT16))
    outputs.append(helper.make_tensor_value_info("y_bf16", TensorProto.BFLOAT16, list(x.shape)))
    expected.append(np.array([helper.float32_to_bfloat16(v, truncate=True) for v in x], np.uint16))
    actual = run(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))], outputs,
                 {"x": x})
    for node, got, want in zip(nodes, actual, expected):
        assert got.dtype == want.dtype, node.output[0]
        wrong = np.nonzero(got != want)[0]
        assert wrong.size == 0, (f"{node.output[0]}: {wrong.size} of {x.size} differ, e.g. x = {x[wrong[:5]]}: "
                                 f"kiln {got[wrong[:5]]}, ONNX {want[wrong[:5]]}")


def test_every_code_of_each_format_to_float32_matches_onnx_decoders(tmp_path):
    codes = np.arange(256, dtype=np.uint8)
    halves = np.concatenate([np.arange(0, 65536, 97), [0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x8001]]).astype(np.uint16)
    nodes, inputs, outputs, feeds, expected = [], [], [], {}, []
    for i, (of, (_, decode, fn, uz)) in enumerate(FLOAT8.items()):
        inputs.append(helper.make_tensor_value_info(f"c{i}", of, [256]))
        feeds[f"c{i}"] = codes
        nodes.append(helper.make_node("Cast", [f"c{i}"], [f"f{i}"], to=TensorProto.FLOAT))
        outputs.append(helper.make_tensor_value_info(f"f{i}", TensorProto.FLOAT, [256]))
        expected.append(decode(codes.astype(np.uint32), fn=fn, uz=uz).astype(np.float32))
    inputs.append(helper.make_tensor_value_info("h", TensorProto.BFLOAT16, [halves.size]))
    feeds["h"] = halves
    nodes.append(helper.make_node("Cast", ["h"], ["fh"], to=TensorProto.FLOAT))
    outputs.append(helper.make_tensor_value_info("fh", TensorProto.FLOAT, [halves.size]))
    expected.append(numpy_helper.bfloat16_to_float32(halves))
    actual = run(tmp_path, nodes, inputs, outputs, feeds)
    for node, got, want in zip(nodes, actual, expected):
        np.testing.assert_array_equal(got, want, err_msg=node.input[0])  # NaN equals NaN here
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=node.input[0])
