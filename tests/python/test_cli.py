"""The kiln command line on good and bad input: compile/run/inspect work end to end on a small
model, and every error is one clear sentence on stderr with a non-zero exit code."""
import os
import re
import signal
import subprocess
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")


def kiln(*args, check=True):
    result = subprocess.run([KILN, *map(str, args)], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"kiln {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result


def kiln_has_dnnl():
    """Whether this kiln was built with oneDNN (KILN_USE_DNNL=ON)."""
    version = subprocess.run([KILN, "--version"], capture_output=True, text=True).stdout
    return "dnnl" in version and "dnnl (not enabled" not in version


def save(tmp_path, nodes, inputs, outputs, inits=(), opset=14, name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    path = tmp_path / name
    onnx.save(model, path)
    return path


def small_model_nodes():
    return [helper.make_node("MatMul", ["x", "w"], ["y0"]), helper.make_node("Relu", ["y0"], ["y"])]


def small_model_io(batch="N"):
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "w")
    return ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])], [w])


def small_model(tmp_path, batch="N"):
    return save(tmp_path, small_model_nodes(), *small_model_io(batch))


def test_compile_run_inspect_with_symbolic_batch(tmp_path):
    model = small_model(tmp_path)
    failed = kiln("compile", model, "-o", tmp_path / "m.so", check=False)
    assert failed.returncode != 0
    assert "'x' (dimension 'N') have no static shape; give them with --input-shapes" in failed.stderr
    kiln("compile", model, "--input-shapes", "x:[2,4]", "-o", tmp_path / "m.so")
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    kiln("run", tmp_path / "m.so", "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz")
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output_0"], want, rtol=1e-5, atol=1e-6)
    timed = kiln("run", tmp_path / "m.so", "--print-time", "--repeat", "3", "--print-top", "2", "--profile")
    assert "Execution time summary" in timed.stdout and "median (ms)" in timed.stdout
    assert "Top 2 of output 0" in timed.stdout and "Total" in timed.stdout
    # The profile and inspect name what computes each function: a weight of 3 columns is not
    # packed (dense.gemm), the Relu is a loop after it.
    assert "Implementation" in timed.stdout and "dense.gemm + elementwise loop" in timed.stdout
    inspected = kiln("inspect", tmp_path / "m.so").stdout
    assert "float32[2, 4]" in inspected and "Operator functions: 1 distinct, 1 calls" in inspected
    assert "dense.gemm + elementwise loop  tvmgen_default_fused_nn_dense_nn_relu" in inspected


def test_damaged_libraries_are_clear_errors_never_signals(tmp_path):
    """A library cut short or with bytes changed (a bad copy, a disk fault) is an error naming the
    file and the problem: exit code 1, never a signal from inside the dynamic loader."""
    kiln("compile", small_model(tmp_path, batch=2), "-o", tmp_path / "m.so")
    library = (tmp_path / "m.so").read_bytes()
    rng = np.random.default_rng(3)
    cuts = [0, 3, 64, 1000, *rng.integers(0, len(library), 30), len(library) - 1]
    flips = [5, 18, 40, 100, 700, 2000, *rng.integers(0, len(library), 30), len(library) - 3]
    damaged = [library[:int(c)] for c in cuts]
    damaged += [library[:int(f)] + bytes([library[int(f)] ^ 0x10]) + library[int(f) + 1:] for f in flips]
    for i, data in enumerate(damaged):
        path = tmp_path / f"damaged{i}.so"
        path.write_bytes(data)
        result = kiln("run", path, check=False)
        assert result.returncode == 1, (i, result.returncode, result.stderr)
        assert f"cannot load library '{path}'" in result.stderr, result.stderr
        assert re.search(r"damaged|cut short|empty|not an ELF", result.stderr), result.stderr
        path.unlink()


def test_dimensions_written_as_minus_one_are_unknown(tmp_path):
    # Paddle's exporter writes -1 for dims it does not know, in value_info and graph outputs (here
    # also in a branch of an If): they are inferred, as ONNX Runtime does; in a graph input they
    # need --input-shapes, as a named dim does.
    branch = helper.make_graph([helper.make_node("Neg", ["y0"], ["z"])], "then", [],
                               [helper.make_tensor_value_info("z", TensorProto.FLOAT, [-1, 6])])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["y0"]),
             helper.make_node("If", ["cond"], ["y1"], then_branch=branch, else_branch=branch)]
    shape = numpy_helper.from_array(np.array([-1, 6], np.int64), "shape")
    cond = numpy_helper.from_array(np.array(True), "cond")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [-1, 6]),
                               helper.make_tensor_value_info("y1", TensorProto.FLOAT, [-1, -1])], [shape, cond],
                              value_info=[helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, -1, 4])])
    path = tmp_path / "minus_one.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    kiln("compile", path, "-o", tmp_path / "m.so")
    np.savez(tmp_path / "in.npz", x=x)
    kiln("run", tmp_path / "m.so", "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz")
    out = np.load(tmp_path / "out.npz")
    for i, expected in enumerate(want):
        assert out[f"output_{i}"].shape == expected.shape == (4, 6)
        np.testing.assert_array_equal(out[f"output_{i}"], expected)
    # -1 in the graph input: unknown, so --input-shapes gives it.
    graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    failed = kiln("compile", path, "-o", tmp_path / "m.so", check=False)
    assert failed.returncode == 1 and "have no static shape; give them with --input-shapes" in failed.stderr, failed.stderr
    kiln("compile", path, "--input-shapes", "x:[2,3,4]", "-o", tmp_path / "m.so")


def test_tvmc_format_and_target(tmp_path):
    model = small_model(tmp_path, batch=2)
    kiln("compile", model, "--target", "x86-64-v2", "-O0", "-o", tmp_path / "out", "--format", "tvmc")
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"mod.so", "mod.json", "mod.params"}
    kiln("run", tmp_path / "out", "--fill-mode", "ones", "--outputs", tmp_path / "o.npz")
    ones = np.ones((2, 4), np.float32)
    want = np.maximum(ones @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10), 0)
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["output_0"], want, rtol=1e-6)


def test_unsupported_ops_are_all_listed_with_node_names(tmp_path):
    model = save(tmp_path, [helper.make_node("RandomNormalLike", ["x"], ["a"], name="first"),
                            helper.make_node("Relu", ["a"], ["b"], name="fine"),
                            helper.make_node("RandomUniformLike", ["b"], ["c"], name="second"),
                            helper.make_node("RandomNormalLike", ["c"], ["y"], name="third")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    result = kiln("compile", model, "-o", tmp_path / "m.so", check=False)
    assert result.returncode == 1
    assert "2 unsupported op types (RandomNormalLike, RandomUniformLike)" in result.stderr
    for node in ["'first' (RandomNormalLike)", "'second' (RandomUniformLike)", "'third' (RandomNormalLike)"]:
        assert node in result.stderr


def test_bad_models_and_arguments_give_clear_errors(tmp_path):
    (tmp_path / "garbage.onnx").write_bytes(b"this is not protobuf")
    cases = [
        (["compile", tmp_path / "garbage.onnx"], "not an ONNX model"),
        (["compile", tmp_path / "missing.onnx"], "cannot open"),
        (["compile", small_model(tmp_path), "--input-shapes", "y:[1,4]"], "names 'y', which is not an input of the model (its inputs are: x)"),
        (["compile", small_model(tmp_path), "--input-shapes", "x:[2,5]"], "shape inference"),
        (["compile", small_model(tmp_path), "-O", "7"], "-O must be 0 to 3"),
        (["compile", small_model(tmp_path), "-O7"], "-O must be 0 to 3"),
        (["compile", small_model(tmp_path), "--bogus"], "unknown option '--bogus'"),
        (["compile", small_model(tmp_path), "--target", "cuda -mcpu=sm_80"], "only cpu and llvm take -mcpu"),
        (["compile", small_model(tmp_path), "--target", "cpu --fast"], "is not understood"),
        (["run", tmp_path / "nothing.so"], "does not exist"),
        (["frobnicate"], "unknown command 'frobnicate'"),
    ]
    dangling = save(tmp_path, [helper.make_node("Relu", ["nowhere"], ["y"])],
                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], name="dangling.onnx")
    cases.append((["compile", dangling], "nowhere"))
    # Each op from the oldest opset whose form of it kiln converts: MatMul from 11 (not 10), Relu from 6.
    cases.append((["compile", save(tmp_path, small_model_nodes(), *small_model_io(), opset=10, name="old.onnx")],
                  "node #0 (MatMul): kiln converts MatMul from opset 11, the model uses opset 10"))
    cases.append((["compile", save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])],
                                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=5,
                                   name="relu5.onnx")], "kiln converts Relu from opset 6, the model uses opset 5"))
    cases.append((["compile", save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])],
                                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=22,
                                   name="relu22.onnx")], "kiln imports opsets up to 21"))
    # Above opset 17 libonnx's checker does not run; kiln checks attribute types itself.
    cases.append((["compile", save(tmp_path, [helper.make_node("Softmax", ["x"], ["y"], axis=1.5)],
                                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])], opset=18,
                                   name="float_axis.onnx")], "attribute 'axis': must be INT, it is FLOAT"))
    # Resize's own checks (opset 19: above 17 libonnx's inference does not run first).
    const = lambda name, values, dtype: helper.make_node(
        "Constant", [], [name], value=helper.make_tensor(name, dtype, [len(values)], values))
    x4 = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])]
    y4 = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])]
    for name, nodes, inputs, message in [
        ("resize_both.onnx", [const("s", [1, 1, 2, 2], TensorProto.FLOAT), const("z", [1, 1, 4, 4], TensorProto.INT64),
                              helper.make_node("Resize", ["x", "", "s", "z"], ["y"])], x4,
         "Resize needs scales or sizes, exactly one of them"),
        ("resize_count.onnx", [const("s", [2, 2], TensorProto.FLOAT), helper.make_node("Resize", ["x", "", "s"], ["y"])],
         x4, "input 2: holds 2 values for 4 axes"),
        ("resize_int.onnx", [const("s", [1, 1, 2, 2], TensorProto.FLOAT),
                             helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")],
         [helper.make_tensor_value_info("x", TensorProto.INT32, [1, 1, 2, 2])], "linear resizing needs floats, got int32"),
        ("resize_scale.onnx", [const("s", [1, 1, -2, 2], TensorProto.FLOAT),
                               helper.make_node("Resize", ["x", "", "s"], ["y"])], x4, "scale -2 must be positive"),
        # Dropout in training mode at a ratio above 0 is random (at 0 it is the identity: op cases).
        ("dropout_training.onnx", [helper.make_node("Constant", [], ["r"], value=helper.make_tensor("r", TensorProto.FLOAT, [], [0.5])),
                                   helper.make_node("Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
                                   helper.make_node("Dropout", ["x", "r", "t"], ["y"])], x4,
         "input 2: training mode with ratio 0.5 drops values at random"),
        ("dropout_training_ratio_input.onnx",
         [helper.make_node("Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
          helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
         x4 + [helper.make_tensor_value_info("r", TensorProto.FLOAT, [])],
         "input 2: training mode with a ratio computed at run time drops values at random"),
    ]:
        cases.append((["compile", save(tmp_path, nodes, inputs, y4, opset=19, name=name)], message))
    # Control flow kiln cannot resolve at import, and an unsupported op inside a branch.
    x2 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    flag = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y_any = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    branch = lambda name, node, shape: helper.make_graph(  # noqa: E731
        [node], name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, shape)])
    if_node = lambda then, other: helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)  # noqa: E731
    cases.append((["compile", save(tmp_path, [if_node(branch("t", helper.make_node("Relu", ["x"], ["t_y"]), [2]),
                                                      branch("e", helper.make_node("Concat", ["x", "x"], ["e_y"], axis=0),
                                                             [4]))],
                                   [x2, flag], y_any, name="if_types.onnx")],
                  "output 0: the then branch gives Tensor[(2), float32] and the else branch Tensor[(4), float32]"))
    cases.append((["compile", save(tmp_path, [if_node(branch("t", helper.make_node("RandomNormalLike", ["x"], ["t_y"]), [2]),
                                                      branch("e", helper.make_node("Relu", ["x"], ["e_y"]), [2]))],
                                   [x2, flag], y_any, name="if_det.onnx")],
                  "1 unsupported op type (RandomNormalLike):\n  node #0 (If), graph 't': node #0 (RandomNormalLike)"))
    # Values whose shape depends on the data are outputs of the model only (the executor trims them).
    ragged = [helper.make_tensor_value_info("y", TensorProto.INT64, None)]
    cases.append((["compile", save(tmp_path, [helper.make_node("NonZero", ["x"], ["a"], name="nz"),
                                              helper.make_node("Transpose", ["a"], ["y"], name="after_nz")],
                                   [x2], ragged, name="nonzero_used.onnx")],
                  "node 'after_nz' (Transpose): input 'a': has a shape decided as the graph runs (by the data, or "
                  "by an input's values), which this node does not support: kiln runs such values only as outputs "
                  "of the model"))
    nonzero_branch = lambda name: helper.make_graph(  # noqa: E731
        [helper.make_node("NonZero", ["x"], [name + "_y"])], name, [],
        [helper.make_tensor_value_info(name + "_y", TensorProto.INT64, None)])
    cases.append((["compile", save(tmp_path, [if_node(nonzero_branch("t"), nonzero_branch("e"))],
                                   [x2, flag], ragged, name="if_nonzero.onnx")],
                  "subgraph output 't_y' has a shape decided as the graph runs"))
    body = helper.make_graph([helper.make_node("Identity", ["b_c"], ["b_co"]), helper.make_node("Relu", ["b_v"], ["b_vo"])],
                             "body", [helper.make_tensor_value_info("b_i", TensorProto.INT64, []),
                                      helper.make_tensor_value_info("b_c", TensorProto.BOOL, []),
                                      helper.make_tensor_value_info("b_v", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("b_co", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("b_vo", TensorProto.FLOAT, [2])])
    cases.append((["compile", save(tmp_path, [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
                                   [x2, helper.make_tensor_value_info("n", TensorProto.INT64, [])], y_any,
                                   name="loop_n.onnx")], "the trip count must be a constant (kiln unrolls loops at import)"))
    for args, message in cases:
        result = kiln(*args, check=False)
        assert result.returncode != 0, args
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr and "terminate called" not in result.stderr


def test_wrong_run_inputs_are_clear_errors(tmp_path):
    kiln("compile", small_model(tmp_path, batch=2), "-o", tmp_path / "m.so")
    np.savez(tmp_path / "wrong_name.npz", z=np.zeros((2, 4), np.float32))
    np.savez(tmp_path / "wrong_shape.npz", x=np.zeros((3, 4), np.float32))
    np.savez(tmp_path / "wrong_dtype.npz", x=np.zeros((2, 4), np.float64))
    np.savez_compressed(tmp_path / "compressed.npz", x=np.zeros((2, 4), np.float32))
    expect = {"wrong_name": "no input named 'z' (its inputs are: x, p0)",
              "wrong_shape": "expected float32 of shape [2, 4], got float32 of shape [3, 4]",
              "wrong_dtype": "got float64", "compressed": "numpy.savez (not savez_compressed)"}
    for name, message in expect.items():
        result = kiln("run", tmp_path / "m.so", "--inputs", tmp_path / f"{name}.npz", check=False)
        assert result.returncode == 1 and message in result.stderr, (name, result.stderr)


def test_missing_compiler_says_how_to_install_one(tmp_path):
    model = small_model(tmp_path, batch=2)
    env = {k: v for k, v in os.environ.items() if k != "CXX"}
    env["PATH"] = str(tmp_path / "empty")  # no compiler on PATH
    result = subprocess.run([KILN, "compile", model, "-o", tmp_path / "m.so"], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert "no C++ compiler found" in result.stderr and "'c++' is not installed or not on PATH" in result.stderr
    assert "apt-get install g++" in result.stderr
    env["CXX"] = "/nonexistent/g++"
    result = subprocess.run([KILN, "compile", model, "-o", tmp_path / "m.so"], env=env, capture_output=True, text=True)
    assert result.returncode == 1 and "'/nonexistent/g++' is not installed" in result.stderr
    assert not (tmp_path / "m.so").exists()


def test_concurrent_killed_and_damaged_compiles_on_one_cache(tmp_path):
    """The object cache under faults, on an empty cache: two compiles at once both succeed; compiles
    killed at several moments leave nothing a later compile trusts; damaged entries are compiled
    again. Each library is checked against ONNX Runtime."""
    model = small_model(tmp_path, batch=2)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"))

    def compile_and_check(library, *args):
        result = subprocess.run([KILN, "compile", model, "-o", library, *args], env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        kiln("run", library, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz")
        np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output_0"], want, rtol=1e-5, atol=1e-6)
        return result.stderr

    both = [subprocess.Popen([KILN, "compile", model, "-o", tmp_path / f"at_once{i}.so"], env=env,
                             stderr=subprocess.PIPE, text=True) for i in range(2)]
    for i, process in enumerate(both):
        assert process.wait() == 0, process.stderr.read()
        compile_and_check(tmp_path / f"at_once{i}.so")  # from the cache both filled

    # Another target gives other objects: kill those compiles at several moments, then finish.
    for delay in (0.2, 1.0, 3.0, 6.0):
        process = subprocess.Popen([KILN, "compile", model, "-o", tmp_path / "killed.so", "--target", "x86-64-v2"],
                                   env=env, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
    compile_and_check(tmp_path / "killed.so", "--target", "x86-64-v2")

    objects = sorted((tmp_path / "cache").glob("*.o"))
    objects[0].write_bytes(objects[0].read_bytes()[:100])  # cut short
    (tmp_path / "cache" / (objects[1].name + ".sum")).unlink()  # no checksum
    logs = compile_and_check(tmp_path / "again.so") + compile_and_check(tmp_path / "again.so", "--target", "x86-64-v2")
    assert sum(int(n) for n in re.findall(r"\((\d+) objects compiled", logs)) == 2, logs  # just the damaged two
