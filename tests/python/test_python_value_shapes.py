"""Shapes decided by input values at run time (issue 30, item 4): a reshape's shape, a reduction's
or (un)squeeze's axes, a slice's starts, ends, axes and steps, TopK's K, Split's sizes and CumSum's
axis given as graph inputs. One library runs every value, each against NumPy; the output has the
shape the values give (get_output, get_output_info with -1 extents); elementwise ops of one input
after such an op keep its shape; values that do not fit are clear errors at run, after which the
library still runs; a node that would need such a value's shape to compile is a clear error."""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln
from kiln import graph_executor, runtime

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")
RNG = np.random.default_rng(30)
FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64


def value(name, elem, shape):
    """shape: extents, or a rank for extents the model does not say."""
    return helper.make_tensor_value_info(name, elem, [None] * shape if isinstance(shape, int) else shape)


def model_path(tmp_path, nodes, inputs, outputs, opset=18, name="model"):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


def compiled(tmp_path, nodes, inputs, outputs, opset=18, name="model"):
    path = model_path(tmp_path, nodes, inputs, outputs, opset, name)
    library = tmp_path / f"{name}.so"
    result = subprocess.run([KILN, "compile", str(path), "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return graph_executor.GraphModule(runtime.load_module(str(library))["default"](runtime.cpu()))


def run(m, **feeds):
    for name, array in feeds.items():
        m.set_input(name, array)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def test_reshape_squeeze_and_unsqueeze_take_their_shapes_at_run_time(tmp_path):
    """Reshape's 0 (the input's extent) and -1 (what is left), Unsqueeze's and Squeeze's axes from
    the end, an elementwise op after each (it keeps the shape), all from one library."""
    m = compiled(tmp_path,
                 [helper.make_node("Reshape", ["x", "shape"], ["r"]),
                  helper.make_node("Abs", ["r"], ["a"]), helper.make_node("Sqrt", ["a"], ["reshaped"]),
                  helper.make_node("Unsqueeze", ["x", "axes"], ["unsqueezed"]),
                  helper.make_node("Squeeze", ["y", "squeeze_axes"], ["squeezed"])],
                 [value("x", FLOAT, [2, 3, 4]), value("shape", INT64, [3]), value("axes", INT64, [2]),
                  value("y", FLOAT, [1, 5, 1]), value("squeeze_axes", INT64, [1])],
                 [value("reshaped", FLOAT, 3), value("unsqueezed", FLOAT, 5), value("squeezed", FLOAT, 2)])
    shapes, _ = m.get_output_info()
    assert list(shapes.values()) == [(-1, -1, -1), (-1, -1, -1, -1, -1), (-1, -1)], shapes
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y = RNG.standard_normal((1, 5, 1)).astype(np.float32)
    for shape, axes, squeeze in [([4, 3, 2], [0, 4], [0]), ([0, -1, 6], [-1, 1], [-1]), ([24, 1, 1], [2, 3], [2]),
                                 ([-1, 2, 0], [-4, 0], [0])]:
        reshaped, unsqueezed, squeezed = run(m, x=x, y=y, shape=np.array(shape, np.int64),
                                             axes=np.array(axes, np.int64), squeeze_axes=np.array(squeeze, np.int64))
        want = [x.shape[d] if v == 0 else v for d, v in enumerate(shape)]
        np.testing.assert_array_equal(reshaped, np.sqrt(np.abs(x)).reshape(want), err_msg=str(shape))
        np.testing.assert_array_equal(unsqueezed, np.expand_dims(x, [a % 5 for a in axes]), err_msg=str(axes))
        np.testing.assert_array_equal(squeezed, np.squeeze(y, tuple(squeeze)), err_msg=str(squeeze))


def log_sum_exp(a, axis, keepdims):
    top = np.max(a, axis=axis, keepdims=True)
    result = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
    return result if keepdims else np.squeeze(result, axis)


@pytest.mark.parametrize("keepdims", [1, 0])
def test_reductions_over_axes_given_at_run_time(tmp_path, keepdims):
    """ReduceSum, Mean, Max, L2 and LogSumExp over sets of two axes (from the end too), and over
    none (all axes, or none with noop_with_empty_axes), against NumPy in float64, rtol 1e-5. One
    column holds values near 1000, whose exponentials overflow unless LogSumExp shifts them."""
    reductions = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max,
                  "ReduceL2": lambda a, axis, keepdims: np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdims)),
                  "ReduceLogSumExp": log_sum_exp}
    nodes = [helper.make_node(op, ["x", "axes"], [op], keepdims=keepdims) for op in reductions]
    nodes.append(helper.make_node("ReduceSum", ["x", "none"], ["noop"], keepdims=keepdims, noop_with_empty_axes=1))
    nodes.append(helper.make_node("ReduceMax", ["x", "none"], ["all"], keepdims=keepdims))
    m = compiled(tmp_path, nodes, [value("x", FLOAT, [3, 4, 5]), value("axes", INT64, [2]), value("none", INT64, [0])],
                 [value(op, FLOAT, 3 if keepdims else 1) for op in reductions]
                 + [value("noop", FLOAT, 3), value("all", FLOAT, 3 if keepdims else 0)])
    x = (RNG.standard_normal((3, 4, 5)) + 1e3 * (np.arange(5) == 4)).astype(np.float32)
    for axes in [[0, 1], [2, 0], [-1, 1], [-3, -2]]:
        outputs = run(m, x=x, axes=np.array(axes, np.int64), none=np.zeros(0, np.int64))
        for got, (op, reference) in zip(outputs, reductions.items()):
            want = reference(x.astype(np.float64), axis=tuple(axes), keepdims=bool(keepdims))
            assert got.shape == want.shape, (op, axes)
            np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"{op} over {axes}")
        np.testing.assert_array_equal(outputs[-2], x)
        np.testing.assert_array_equal(outputs[-1], np.max(x, keepdims=bool(keepdims)))


def test_slice_topk_split_and_cumsum_take_their_values_at_run_time(tmp_path):
    """Slice with negative starts and steps and ends beyond the extents (clamped), TopK's K from 0
    to the axis's extent, Split's sizes, CumSum's axis from the end, each against NumPy."""
    m = compiled(tmp_path,
                 [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sliced"]),
                  helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1),
                  helper.make_node("Split", ["x", "sizes"], ["first", "second"], axis=2),
                  helper.make_node("CumSum", ["x", "axis"], ["sums"], reverse=1)],
                 [value("x", FLOAT, [3, 6, 5]), value("starts", INT64, [2]), value("ends", INT64, [2]),
                  value("axes", INT64, [2]), value("steps", INT64, [2]), value("k", INT64, [1]),
                  value("sizes", INT64, [2]), value("axis", INT64, [])],
                 [value(n, FLOAT if n != "indices" else INT64, 3)
                  for n in ["sliced", "values", "indices", "first", "second", "sums"]])
    x = RNG.standard_normal((3, 6, 5)).astype(np.float32)
    cases = [([0, -1], [3, -7], [0, 2], [2, -1], 3, [2, 3], 0),
             ([-2, 1], [100, 5], [1, -1], [1, 2], 0, [0, 5], -1),
             ([5, 2], [-100, 0], [1, 2], [-2, -1], 6, [5, 0], 1)]
    for starts, ends, axes, steps, k, sizes, axis in cases:
        sliced, values, indices, first, second, sums = run(
            m, x=x, starts=np.array(starts, np.int64), ends=np.array(ends, np.int64), axes=np.array(axes, np.int64),
            steps=np.array(steps, np.int64), k=np.array([k], np.int64), sizes=np.array(sizes, np.int64),
            axis=np.array(axis, np.int64))
        index = [slice(None)] * 3
        for s, e, a, st in zip(starts, ends, axes, steps):
            index[a] = slice(s, e, st)
        np.testing.assert_array_equal(sliced, x[tuple(index)], err_msg=str((starts, ends, axes, steps)))
        order = np.argsort(-x, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(indices, order, err_msg=f"k={k}")
        np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))
        np.testing.assert_array_equal(first, x[:, :, :sizes[0]])
        np.testing.assert_array_equal(second, x[:, :, sizes[0]:])
        want = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
        np.testing.assert_allclose(sums, want, rtol=1e-5, atol=1e-5, err_msg=f"axis={axis}")


def test_values_that_do_not_fit_are_clear_errors_and_the_library_still_runs(tmp_path):
    m = compiled(tmp_path,
                 [helper.make_node("Reshape", ["x", "shape"], ["reshaped"]),
                  helper.make_node("ReduceSum", ["x", "axes"], ["sum"]),
                  helper.make_node("TopK", ["x", "k"], ["values", "indices"]),
                  helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1)],
                 [value("x", FLOAT, [2, 6]), value("shape", INT64, [2]), value("axes", INT64, [1]),
                  value("k", INT64, [1]), value("sizes", INT64, [2])],
                 [value(n, FLOAT if n != "indices" else INT64, 2)
                  for n in ["reshaped", "sum", "values", "indices", "a", "b"]])
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    good = dict(x=x, shape=np.array([3, 4], np.int64), axes=np.array([1], np.int64), k=np.array([2], np.int64),
                sizes=np.array([1, 5], np.int64))
    bad = [("shape", [5, -1], r"dyn.reshape: no extent for the -1 gives the input's 12 elements"),
           ("shape", [5, 2], r"dyn.reshape: the shape holds 10 elements, the input 12"),
           ("shape", [-1, -1], r"more than one -1"),
           ("axes", [2], r"dyn.reduce: axis 2 is out of range for rank 2"),
           ("k", [7], r"dyn.topk: k = 7 is outside \[0, 6\], the extent of axis 1"),
           ("sizes", [2, 5], r"dyn.split: the sizes add up to 7, not to the extent 6 of axis 1"),
           ("sizes", [-1, 7], r"piece 0 has the negative size -1")]
    for name, values, message in bad:
        with pytest.raises(kiln.KilnError, match=message):
            run(m, **{**good, name: np.array(values, np.int64)})
        reshaped, total, values_, indices, a, b = run(m, **good)
        np.testing.assert_array_equal(reshaped, x.reshape(3, 4))
        np.testing.assert_allclose(total, x.sum(axis=1, keepdims=True), rtol=1e-6)
        np.testing.assert_array_equal(b, x[:, 1:])


def test_elementwise_ops_keep_a_data_dependent_outputs_count(tmp_path):
    """NonZero's coordinates through Cast and Neg: the output is trimmed to the count as NonZero's is."""
    m = compiled(tmp_path, [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Cast", ["nz"], ["f"], to=FLOAT),
                            helper.make_node("Neg", ["f"], ["y"])],
                 [value("x", FLOAT, [3, 4])], [value("y", FLOAT, 2)], opset=13)
    x = (RNG.standard_normal((3, 4)) > 0.3).astype(np.float32)
    (y,) = run(m, x=x)
    np.testing.assert_array_equal(y, -np.array(np.nonzero(x), np.float32))


def test_a_node_that_needs_the_shape_to_compile_is_a_clear_error(tmp_path):
    """A matrix product of a reshape to a shape given at run time: compiled code needs the extents."""
    path = model_path(tmp_path,
                      [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("MatMul", ["r", "w"], ["y"])],
                      [value("x", FLOAT, [2, 6]), value("shape", INT64, [2]), value("w", FLOAT, [6, 3])],
                      [value("y", FLOAT, 2)])
    result = subprocess.run([KILN, "compile", str(path), "-o", str(tmp_path / "m.so")], capture_output=True, text=True)
    assert result.returncode != 0
    assert "MatMul" in result.stderr and "input 'r'" in result.stderr and "decided as the graph runs" in result.stderr, \
        result.stderr
    # An elementwise op of a result whose storage is sized as the graph runs: its size is not known to compile it.
    path = model_path(tmp_path, [helper.make_node("Expand", ["x", "shape"], ["e"]), helper.make_node("Relu", ["e"], ["y"])],
                      [value("x", FLOAT, [2, 1]), value("shape", INT64, [2])], [value("y", FLOAT, 2)], name="sized")
    result = subprocess.run([KILN, "compile", str(path), "-o", str(tmp_path / "s.so")], capture_output=True, text=True)
    assert result.returncode != 0
    assert "(Relu): input 'e': has a shape decided as the graph runs" in result.stderr, result.stderr


def test_with_shape_dimensions_too_is_a_clear_error(tmp_path):
    """A reduction over axes given at run time of an input with a shape dimension: either is run,
    not both in one output."""
    path = model_path(tmp_path, [helper.make_node("ReduceSum", ["x", "axes"], ["y"])],
                      [value("x", FLOAT, [3, "S"]), value("axes", INT64, [1])], [value("y", FLOAT, 2)])
    result = subprocess.run([KILN, "compile", str(path), "-o", str(tmp_path / "m.so"), "--dims", "S=1..40"],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert ("output 0 has a shape that input values decide at run time and a size that the shape dimensions "
            "decide") in result.stderr, result.stderr


def test_results_no_input_bounds_get_storage_as_the_graph_runs(tmp_path):
    """Expand, Tile, Pad (every mode, negative pads crop), ConstantOfShape and Range with their
    shapes given at run time: the executor sizes each result's storage before the node that computes
    it, growing it when a run needs more (small, large, then small again), each against NumPy."""
    m = compiled(tmp_path,
                 [helper.make_node("Expand", ["x", "shape"], ["expanded"]),
                  helper.make_node("Tile", ["x", "repeats"], ["tiled"]),
                  helper.make_node("Pad", ["x", "pads"], ["reflected"], mode="reflect"),
                  helper.make_node("Pad", ["x", "pads", "value"], ["constant"]),
                  helper.make_node("Pad", ["x", "pads"], ["wrapped"], mode="wrap"),
                  helper.make_node("ConstantOfShape", ["shape"], ["filled"],
                                   value=helper.make_tensor("v", TensorProto.INT32, [1], [7])),
                  helper.make_node("Range", ["start", "limit", "delta"], ["range"])],
                 [value("x", FLOAT, [2, 3]), value("shape", INT64, [3]), value("repeats", INT64, [2]),
                  value("pads", INT64, [4]), value("value", FLOAT, []), value("start", FLOAT, []),
                  value("limit", FLOAT, []), value("delta", FLOAT, [])],
                 [value("expanded", FLOAT, 3), value("tiled", FLOAT, 2), value("reflected", FLOAT, 2),
                  value("constant", FLOAT, 2), value("wrapped", FLOAT, 2), value("filled", TensorProto.INT32, 3),
                  value("range", FLOAT, 1)])
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    cases = [([1, 2, 1], [1, 1], [0, 1, 1, 0], (0.0, 1.0, 0.5)),
             ([40, 2, 3], [30, 20], [1, 2, 1, 2], (10.0, -50.5, -0.25)),
             ([2, 1, 3], [0, 2], [-1, 0, 0, -2], (3.0, 1.0, 1.0))]
    for shape, repeats, pads, (start, limit, delta) in cases:
        expanded, tiled, reflected, constant, wrapped, filled, values = run(
            m, x=x, shape=np.array(shape, np.int64), repeats=np.array(repeats, np.int64),
            pads=np.array(pads, np.int64), value=np.array(2.5, np.float32), start=np.array(start, np.float32),
            limit=np.array(limit, np.float32), delta=np.array(delta, np.float32))
        np.testing.assert_array_equal(expanded, x * np.ones(shape, np.float32))
        np.testing.assert_array_equal(tiled, np.tile(x, repeats))
        width = [(pads[0], pads[2]), (pads[1], pads[3])]
        grow = [(max(b, 0), max(e, 0)) for b, e in width]
        padded = np.pad(x, grow, constant_values=2.5)  # then cropped where a pad is negative
        crop = tuple(slice(max(-b, 0), padded.shape[d] - max(-e, 0)) for d, (b, e) in enumerate(width))
        np.testing.assert_array_equal(constant, padded[crop], err_msg=str(pads))
        if min(pads) >= 0:
            np.testing.assert_array_equal(reflected, np.pad(x, grow, mode="reflect"), err_msg=str(pads))
            np.testing.assert_array_equal(wrapped, np.pad(x, grow, mode="wrap"), err_msg=str(pads))
        np.testing.assert_array_equal(filled, np.full(shape, 7, np.int32))
        np.testing.assert_allclose(values, np.arange(start, limit, delta, dtype=np.float32), rtol=1e-6)


def test_sized_results_that_do_not_fit_are_clear_errors(tmp_path):
    """Shapes that do not broadcast, negative repeats or extents, a zero delta and a shape beyond the
    executor's 16 GiB limit fail the run with a message; a good run follows."""
    m = compiled(tmp_path,
                 [helper.make_node("Expand", ["x", "shape"], ["expanded"]),
                  helper.make_node("Tile", ["x", "repeats"], ["tiled"]),
                  helper.make_node("Range", ["start", "limit", "delta"], ["range"])],
                 [value("x", FLOAT, [2, 3]), value("shape", INT64, [2]), value("repeats", INT64, [2]),
                  value("start", INT64, []), value("limit", INT64, []), value("delta", INT64, [])],
                 [value("expanded", FLOAT, 2), value("tiled", FLOAT, 2), value("range", INT64, 1)])
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    good = dict(x=x, shape=np.array([2, 3], np.int64), repeats=np.array([1, 2], np.int64),
                start=np.array(0, np.int64), limit=np.array(5, np.int64), delta=np.array(2, np.int64))
    bad = [("shape", [4, 3], r"dyn.expand_shape: the input's extent 2 and the shape's 4 do not broadcast"),
           ("shape", [2, -3], r"the shape has the negative extent -3"),
           ("repeats", [1, -1], r"dyn.tile_shape: axis 1 repeats -1 times"),
           ("repeats", [2**20, 2**20], r"needs more than 17179869184 bytes"),
           ("delta", 0, r"dyn.range_shape: delta 0 makes no range")]
    for name, values, message in bad:
        with pytest.raises(kiln.KilnError, match=message):
            run(m, **{**good, name: np.array(values, np.int64)})
        expanded, tiled, values_ = run(m, **good)
        np.testing.assert_array_equal(tiled, np.tile(x, [1, 2]))
        np.testing.assert_array_equal(values_, [0, 2, 4])


@pytest.mark.parametrize("mode,transform", [("linear", "half_pixel"), ("cubic", "align_corners"),
                                            ("nearest", "asymmetric")])
def test_resize_takes_its_sizes_and_scales_at_run_time(tmp_path, mode, transform):
    """A convolution whose feature map is resized to sizes given at run time (the last two axes) and
    by scales given at run time: one library, shapes up and down, odd ones, against ONNX Runtime
    (rtol 1e-5, atol 1e-4 on values up to about 10: ONNX Runtime sums the cubic taps in float32); the
    storage grows when a run needs more."""
    import onnxruntime as ort
    from onnx import numpy_helper
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["f"], pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["f", "", "", "sizes"], ["by_sizes"], mode=mode, axes=[2, 3],
                              coordinate_transformation_mode=transform),
             helper.make_node("Resize", ["f", "", "scales"], ["by_scales"], mode=mode,
                              coordinate_transformation_mode=transform)]
    graph = helper.make_graph(nodes, "g", [value("x", FLOAT, [1, 3, 7, 9]), value("sizes", INT64, [2]),
                                           value("scales", FLOAT, [4])],
                              [value("by_sizes", FLOAT, 4), value("by_scales", FLOAT, 4)], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    path = tmp_path / "resize.onnx"
    onnx.save(model, path)
    library = tmp_path / "resize.so"
    result = subprocess.run([KILN, "compile", str(path), "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    m = graph_executor.GraphModule(runtime.load_module(str(library))["default"](runtime.cpu()))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = RNG.standard_normal((1, 3, 7, 9)).astype(np.float32)
    cases = [([14, 18], [1, 1, 2, 2]), ([5, 31], [1, 1, 0.5, 3.3]), ([70, 90], [1, 1, 10, 9]), ([1, 2], [1, 1, 1.5, 0.25])]
    if transform == "align_corners":  # scales whose output is not scale * input: ONNX's reference and ORT differ
        cases = [(sizes, [1, 1, 3, 2] if k % 2 else [1, 1, 1, 5]) for k, (sizes, _) in enumerate(cases)]
    for sizes, scales in cases:
        feeds = dict(x=x, sizes=np.array(sizes, np.int64), scales=np.array(scales, np.float32))
        got = run(m, **feeds)
        want = session.run(None, feeds)
        for g, e, name in zip(got, want, ["by_sizes", "by_scales"]):
            assert g.shape == e.shape, (name, sizes, scales)
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-4, err_msg=f"{name} {sizes} {scales}")


def test_one_hot_windows_center_crop_pad_and_affine_grid_take_their_sizes_at_run_time(tmp_path):
    """OneHot's depth (negative indices count from the end, others out of range are all off),
    the Hann, Hamming and Blackman windows' sizes (periodic and symmetric), CenterCropPad's lengths
    (cropping and padding) and AffineGrid's size (align_corners) given as graph inputs: one library
    for several values each, against ONNX Runtime (rtol 1e-5, atol 1e-6)."""
    import onnxruntime as ort
    nodes = [helper.make_node("OneHot", ["indices", "depth", "values"], ["hot"], axis=1),
             helper.make_node("HannWindow", ["size"], ["hann"]),
             helper.make_node("HammingWindow", ["size"], ["hamming"], periodic=0),
             helper.make_node("BlackmanWindow", ["size"], ["blackman"]),
             helper.make_node("CenterCropPad", ["x", "lengths"], ["cropped"], axes=[0, 2]),
             helper.make_node("AffineGrid", ["theta", "grid_size"], ["grid"], align_corners=1)]
    inputs = [value("indices", INT64, [2, 3]), value("depth", INT64, [1]), value("values", FLOAT, [2]),
              value("size", TensorProto.INT32, []), value("x", FLOAT, [4, 3, 5]), value("lengths", INT64, [2]),
              value("theta", FLOAT, [2, 2, 3]), value("grid_size", INT64, [4])]
    outputs = [value("hot", FLOAT, 3), value("hann", FLOAT, 1), value("hamming", FLOAT, 1), value("blackman", FLOAT, 1),
               value("cropped", FLOAT, 3), value("grid", FLOAT, 4)]
    path = model_path(tmp_path, nodes, inputs, outputs, opset=20, name="sized_ops")
    library = tmp_path / "sized_ops.so"
    result = subprocess.run([KILN, "compile", str(path), "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    m = graph_executor.GraphModule(runtime.load_module(str(library))["default"](runtime.cpu()))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    indices = np.array([[0, 3, -1], [9, -4, 2]], np.int64)
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    theta = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    # (No grid axis of one pixel: with align_corners ONNX Runtime puts it at 1, ONNX's reference and
    # PyTorch, as kiln, at -1.)
    for depth, size, lengths, grid in [(4, 8, [2, 9], [2, 3, 4, 5]), (10, 1, [7, 1], [2, 1, 2, 2]),
                                       (1, 33, [4, 5], [2, 5, 9, 2])]:
        feeds = dict(indices=indices, depth=np.array([depth], np.int64), values=np.array([-1, 3], np.float32),
                     size=np.array(size, np.int32), x=x, lengths=np.array(lengths, np.int64), theta=theta,
                     grid_size=np.array(grid, np.int64))
        for got, want, name in zip(run(m, **feeds), session.run(None, feeds), [o.name for o in outputs]):
            assert got.shape == want.shape, (name, depth, size, lengths, grid)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} {depth} {size} {lengths} {grid}")


def test_affine_grid_puts_an_axis_of_one_pixel_where_onnx_reference_does(tmp_path):
    """With align_corners an axis of one pixel is at -1 (ONNX's reference, and PyTorch's
    linspace(-1, 1, 1)), given at import or at run time; ONNX Runtime puts it at 1."""
    from onnx.reference import ReferenceEvaluator
    theta = RNG.standard_normal((1, 2, 3)).astype(np.float32)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=1)
    for given_at_run_time in [True, False]:
        size = value("size", INT64, [4])
        inits = [] if given_at_run_time else [onnx.numpy_helper.from_array(np.array([1, 1, 1, 3], np.int64), "size")]
        graph = helper.make_graph([node], "g", [value("theta", FLOAT, [1, 2, 3])] + ([size] if given_at_run_time else []),
                                  [value("grid", FLOAT, 4)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=8)
        path = tmp_path / f"grid_{given_at_run_time}.onnx"
        onnx.save(model, path)
        library = tmp_path / f"grid_{given_at_run_time}.so"
        result = subprocess.run([KILN, "compile", str(path), "-o", str(library)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        m = graph_executor.GraphModule(runtime.load_module(str(library))["default"](runtime.cpu()))
        feeds = dict(theta=theta, **({"size": np.array([1, 1, 1, 3], np.int64)} if given_at_run_time else {}))
        with np.errstate(divide="ignore"):
            (want,) = ReferenceEvaluator(model).run(None, feeds)
        np.testing.assert_allclose(run(m, **feeds)[0], want, rtol=1e-6, atol=1e-6)


def test_pads_crop_before_they_pad_and_a_failed_run_keeps_the_last_shapes(tmp_path):
    """Pad in reflect, edge and wrap with a negative pad beside a positive one: cropped first, then
    padded from what is left (ONNX Runtime's order), against ONNX Runtime. A run whose reshape fails
    leaves the output as the last good run gave it; a ConstantOfShape of no axes is one element
    before any run."""
    import onnxruntime as ort
    nodes = [helper.make_node("Pad", ["x", "pads"], [mode], mode=mode) for mode in ["reflect", "edge", "wrap"]]
    nodes += [helper.make_node("Reshape", ["x", "shape"], ["reshaped"]),
              helper.make_node("ConstantOfShape", ["none"], ["scalar"])]
    outputs = [value(mode, FLOAT, 2) for mode in ["reflect", "edge", "wrap"]]
    outputs += [value("reshaped", FLOAT, 2), value("scalar", FLOAT, 0)]
    path = model_path(tmp_path, nodes, [value("x", FLOAT, [3, 4]), value("pads", INT64, [4]),
                                        value("shape", INT64, [2]), value("none", INT64, [0])], outputs, name="crop")
    library = tmp_path / "crop.so"
    result = subprocess.run([KILN, "compile", str(path), "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    m = graph_executor.GraphModule(runtime.load_module(str(library))["default"](runtime.cpu()))
    assert m.get_output(4).numpy().shape == () and m.get_output(4).numpy() == 0
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for pads in [[1, -1, 0, 1], [-1, 1, 1, -2], [0, -2, 0, 1]]:  # reflect within what is kept
        feeds = dict(x=x, pads=np.array(pads, np.int64), shape=np.array([6, 2], np.int64), none=np.zeros(0, np.int64))
        for got, want, name in zip(run(m, **feeds), session.run(None, feeds), ["reflect", "edge", "wrap"]):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {pads}")
    with pytest.raises(kiln.KilnError, match="the shape holds 10 elements, the input 12"):
        run(m, x=x, pads=np.zeros(4, np.int64), shape=np.array([5, 2], np.int64), none=np.zeros(0, np.int64))
    assert m.get_output(3).numpy().shape == (6, 2)


def test_a_graph_whose_sizing_does_not_match_its_nodes_fails_the_run_not_the_memory(tmp_path):
    """The library's graph JSON without its sized entries (a hand-edited or damaged graph): the
    expand's output has no storage sized for it, and its operator says so instead of writing past."""
    import json
    m_path = model_path(tmp_path, [helper.make_node("Expand", ["x", "shape"], ["y"])],
                        [value("x", FLOAT, [2, 1]), value("shape", INT64, [2])], [value("y", FLOAT, 2)], name="expand")
    library = tmp_path / "expand.so"
    result = subprocess.run([KILN, "compile", str(m_path), "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lib = runtime.load_module(str(library))
    graph = json.loads(lib["get_graph_json"]())
    assert graph["attrs"]["kiln_sized_entries"][0] == "list_str"  # TVM's executor refuses such a graph
    del graph["attrs"]["kiln_sized_entries"]
    m = graph_executor.create(json.dumps(graph), lib, runtime.cpu())
    with pytest.raises(kiln.KilnError, match="its output holds 0 elements, its shape needs 2000"):
        run(m, x=np.ones((2, 1), np.float32), shape=np.array([2, 1000], np.int64))


def test_storage_the_memory_cannot_give_is_an_error_naming_the_node(tmp_path):
    """A tile whose result needs more memory than the process may have (its address space limited
    in a child process): the run fails with the node's name and the shape, and a small run follows."""
    m_path = model_path(tmp_path, [helper.make_node("Tile", ["x", "repeats"], ["y"])],
                        [value("x", FLOAT, [2, 3]), value("repeats", INT64, [2])], [value("y", FLOAT, 2)],
                        name="tile")
    library = tmp_path / "tile.so"
    result = subprocess.run([KILN, "compile", str(m_path), "-o", str(library)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    script = f"""
import resource
import numpy as np
import kiln
from kiln import graph_executor, runtime
m = graph_executor.GraphModule(runtime.load_module({str(library)!r})["default"](runtime.cpu()))
with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) for line in status if line.startswith("VmSize")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + 2**30, size + 2**30))
m.set_input("x", np.ones((2, 3), np.float32))
m.set_input("repeats", np.array([2**14, 2**14], np.int64))  # 6 GiB of floats
try:
    m.run()
    print("no error")
except kiln.KilnError as error:
    print("error:", error)
m.set_input("repeats", np.array([2, 1], np.int64))
m.run()
print("small run:", m.get_output(0).numpy().shape)
"""
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
    assert child.returncode == 0, child.stderr
    expected = r"error: graph node \d+ '\w*dyn_tile': its output of shape \[32768, 49152\]: cannot allocate"
    assert re.search(expected, child.stdout), child.stdout
    assert "small run: (4, 3)" in child.stdout
