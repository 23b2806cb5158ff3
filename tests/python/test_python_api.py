"""The Python package's API end to end on small ONNX models checked against ONNX Runtime:
from_onnx, PassContext, build and the factory, load_module, GraphModule (inputs, outputs, params,
benchmark, profile) and the errors each raises with the library's message."""
import json
import os
import signal
import subprocess
import threading
import time

import numpy as np
import onnx
import pytest

import kiln
from kiln import graph_executor
from python_api_models import (W, close, dense_relu, make_model, needs_torch, ort_run, rand, torch,
                               two_inputs_two_outputs, value, weights_as_input)


def build(model, shape_dict=None, **kwargs):
    mod, params = kiln.frontend.from_onnx(model, shape_dict)
    return kiln.build(mod, params=params, **kwargs)


def gmod_of(lib):
    return graph_executor.GraphModule(lib["default"](kiln.cpu()))


@pytest.fixture(scope="module")
def two_io_lib():
    return build(two_inputs_two_outputs())


@pytest.fixture
def two_io(two_io_lib):
    return gmod_of(two_io_lib)


# ---- frontend ---------------------------------------------------------------------------------

def test_from_onnx_takes_a_model_a_path_or_bytes(tmp_path):
    model = dense_relu(batch=2)
    onnx.save(model, tmp_path / "m.onnx")
    texts = set()
    for source in (model, tmp_path / "m.onnx", str(tmp_path / "m.onnx"), model.SerializeToString()):
        mod, params = kiln.frontend.from_onnx(source)
        assert params == {}  # initializers are constants of mod (TVM's freeze_params=True)
        assert isinstance(mod, kiln.ir.IRModule)
        assert mod.params == [("x", (2, 4), "float32")]
        texts.add(str(mod))
    assert len(texts) == 1 and "nn.dense" in texts.pop()


def test_from_onnx_shape_dict_gives_static_shapes():
    mod, _ = kiln.frontend.from_onnx(dense_relu(), shape_dict={"x": np.array([5, 4])})
    assert mod.params == [("x", (5, 4), "float32")]
    with pytest.raises(kiln.KilnError, match=r"'x' \(dimension 'N'\) have no static shape.*shape_dict"):
        kiln.frontend.from_onnx(dense_relu())
    with pytest.raises(kiln.KilnError, match="shape_dict\\) names 'y', which is not an input of the model \\(its inputs are: x\\)"):
        kiln.frontend.from_onnx(dense_relu(), shape_dict={"x": [1, 4], "y": [1]})


def test_ir_text_round_trip():
    mod, _ = kiln.frontend.from_onnx(dense_relu(2))
    again = kiln.ir.IRModule.from_text(mod.astext())
    assert again.structural_equal(mod)
    assert "..." in mod.astext(max_constant_elements=4)
    with pytest.raises(kiln.KilnError, match="line 1"):
        kiln.ir.IRModule.from_text("fn (")


def test_from_onnx_errors():
    with pytest.raises(kiln.KilnError, match="nonexistent.onnx"):
        kiln.frontend.from_onnx("/nonexistent.onnx")
    with pytest.raises(kiln.KilnError):
        kiln.frontend.from_onnx(b"not a model")
    with pytest.raises(TypeError, match="from_onnx expects"):
        kiln.frontend.from_onnx(42)
    unsupported = make_model([onnx.helper.make_node("RandomNormalLike", ["x"], ["y"], name="random_node")], [value("x", [3, 3])],
                             [value("y", [])])
    with pytest.raises(kiln.KilnError, match="random_node"):
        kiln.frontend.from_onnx(unsupported)
    assert "Conv" in kiln.frontend.supported_onnx_ops()


def test_import_errors_carry_a_structured_location(tmp_path):
    # A MaxUnpool whose output shape is computed at run time: kiln needs it constant (it decides shapes).
    model = make_model([onnx.helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], name="unpool_node",
                                              kernel_shape=[2, 2], strides=[2, 2])],
                       [value("x", [1, 1, 2, 2]), value("i", [1, 1, 2, 2], onnx.TensorProto.INT64),
                        value("s", [4], onnx.TensorProto.INT64)], [value("y", [1, 1, 4, 4])], opset=11)
    path = tmp_path / "dynamic_unpool.onnx"
    onnx.save(model, path)
    with pytest.raises(kiln.KilnError) as raised:
        kiln.frontend.from_onnx(str(path))
    e = raised.value
    assert (e.file, e.node, e.argument) == (str(path), "node 'unpool_node' (MaxUnpool)", "input 2")
    assert e.message == "must be a constant (its value decides shapes)"
    assert str(e) == f"{path}: node 'unpool_node' (MaxUnpool): input 2: {e.message}"
    # From bytes there is no file; a converter's own error names no argument.
    conv4d = make_model([onnx.helper.make_node("Conv", ["x", "w"], ["y"], name="conv_node")],
                        [value("x", [1, 1, 3, 3, 3, 3])], [value("y", [1, 1, 3, 3, 3, 3])],
                        [onnx.numpy_helper.from_array(np.ones((1, 1, 1, 1, 1, 1), np.float32), "w")])
    with pytest.raises(kiln.KilnError) as raised:
        kiln.frontend.from_onnx(conv4d.SerializeToString())
    e = raised.value
    assert (e.file, e.node, e.argument) == (None, "node 'conv_node' (Conv)", None)
    assert e.message == "only 1-D, 2-D and 3-D data (N, C, spatial...) is supported, got rank 6"
    pool3d = make_model([onnx.helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool_node", kernel_shape=[2, 2, 2],
                                               storage_order=1)],
                        [value("x", [1, 1, 4, 4, 4])],
                        [value("y", [1, 1, 3, 3, 3]), value("i", [1, 1, 3, 3, 3], onnx.TensorProto.INT64)])
    with pytest.raises(kiln.KilnError) as raised:
        kiln.frontend.from_onnx(pool3d.SerializeToString())
    assert raised.value.message == "column-major indices (storage_order 1) of 3-D data are not supported"
    with pytest.raises(kiln.KilnError) as raised:
        kiln.ir.IRModule.from_text("fn (%x: Tensor[(2), float32]) {\n  %0 = nn.relu(%y);\n  %0\n}")
    assert raised.value.node == "line 2, column 16" and raised.value.message == "%y is not defined"


def test_import_refuses_tensors_larger_than_the_limit_before_allocating(monkeypatch):
    """Resource bounds: element counts that overflow, tensors larger than the machine's memory, and
    data shorter than its shape are refused at import with the place named, before any allocation
    (a 64 TiB tensor would otherwise be an allocation failure or the OOM killer)."""
    def initializer(dims):  # four bytes of data whatever the shape says (onnx.helper would refuse it)
        tensor = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, raw_data=b"\0\0\0\0")
        tensor.dims.extend(dims)
        return tensor
    def model_with(init):
        y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
        return make_model([onnx.helper.make_node("Add", ["x", "w"], ["y"], name="add_node")],
                          [value("x", [1])], [y], [init]).SerializeToString()
    monkeypatch.setenv("KILN_MAX_TENSOR_BYTES", str(1 << 40))  # the short-data case must not meet the limit
    cases = [
        ([1 << 40, 1 << 40], "of shape [1099511627776, 1099511627776] has more elements than a 64-bit count holds"),
        ([1 << 22, 1 << 22], "needs 70368744177664 bytes, more than the limit of 1099511627776 bytes"),
        ([1 << 28], "raw data holds 4 bytes, expected 1073741824"),  # 1 GiB declared, 4 bytes given
    ]
    for dims, message in cases:
        with pytest.raises(kiln.KilnError) as raised:
            kiln.frontend.from_onnx(model_with(initializer(dims)))
        assert message in str(raised.value), str(raised.value)
        assert "'w'" in str(raised.value), str(raised.value)
    # An op whose result is too large: named at its node, the limit taken from the environment.
    monkeypatch.setenv("KILN_MAX_TENSOR_BYTES", str(1 << 20))
    shape = onnx.numpy_helper.from_array(np.array([512, 1024], np.int64), "shape")
    expand = make_model([onnx.helper.make_node("Expand", ["x", "shape"], ["y"], name="expand_node")],
                        [value("x", [1])], [value("y", [512, 1024])], [shape])
    with pytest.raises(kiln.KilnError) as raised:
        kiln.frontend.from_onnx(expand.SerializeToString())
    assert raised.value.node == "node 'expand_node' (Expand)", str(raised.value)
    assert "needs 2097152 bytes, more than the limit of 1048576 bytes (KILN_MAX_TENSOR_BYTES)" in str(raised.value)
    monkeypatch.setenv("KILN_MAX_TENSOR_BYTES", str(2 << 20))  # at the bound it imports
    kiln.frontend.from_onnx(expand.SerializeToString())


def test_hostile_names_never_reach_generated_code_and_print_escaped(tmp_path):
    """Names are data: quotes, backslashes, newlines, comment ends, #, 10,000 characters and bytes
    that are not UTF-8 in tensor, node and graph names compile and run (checked against NumPy), the
    generated C++ holds none of them, inputs keep their names (invalid bytes as \\xNN, since JSON
    and Python hold only UTF-8), and kiln inspect prints them escaped."""
    hostile = ['in"put', "back\\slash", "line1\nline2", "x*/y", "#define N", "n" * 10000]
    placeholder = "PLACEHOLD_"  # replaced in the serialized model by as many bytes that are not UTF-8
    invalid = b"bad\xff\xfe\x80utf8"
    assert len(invalid) == len(placeholder)
    w = onnx.numpy_helper.from_array(np.array([1.5, -2.0, 0.5], np.float32), hostile[1])
    nodes = [onnx.helper.make_node("Mul", [hostile[0], hostile[1]], [hostile[2]], name=hostile[3]),
             onnx.helper.make_node("Add", [hostile[2], placeholder], [hostile[4]], name=hostile[5]),
             onnx.helper.make_node("Relu", [hostile[4]], [hostile[5]], name='node "3"\n')]
    graph = onnx.helper.make_graph(nodes, "graph */ #x\n\"", [value(hostile[0], [2, 3]), value(placeholder, [2, 3])],
                                   [value(hostile[5], [2, 3])], [w])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 14)], ir_version=8)
    data = model.SerializeToString().replace(placeholder.encode(), invalid)
    mod, params = kiln.frontend.from_onnx(data)
    lib = kiln.build(mod, params=params)
    source = lib.get_source()
    assert "tvmgen_default_fused" in source
    for name in hostile + ['node "3"', "graph */"]:
        assert name not in source, name[:40]
    assert "bad" not in source and "\\x" not in source
    path = tmp_path / "names.so"
    lib.export_library(path)
    gmod = graph_executor.GraphModule(kiln.runtime.load_module(str(path))["default"](kiln.cpu()))
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    gmod.set_input(hostile[0], a)
    gmod.set_input("bad\\xFF\\xFE\\x80utf8", b)  # the invalid bytes as the importer writes them
    gmod.run()
    np.testing.assert_allclose(gmod.get_output(0).numpy(), np.maximum(a * np.array([1.5, -2.0, 0.5]) + b, 0),
                               rtol=1e-6, atol=1e-6)
    inspected = subprocess.run([os.environ.get("KILN_BIN", "build/bin/kiln"), "inspect", str(path)],
                               capture_output=True, text=True, check=True).stdout
    assert 'in\\"put' in inspected and "bad\\\\xFF\\\\xFE\\\\x80utf8" in inspected, inspected
    # shape_dict names such an input by its text; a name that only the escaping tells apart from
    # another input's is refused.
    def two_inputs(second, first_shape):
        add = [onnx.helper.make_node("Add", [placeholder, second], ["y"])]
        m = make_model(add, [value(placeholder, first_shape), value(second, [2, 3])], [value("y", [2, 3])])
        return m.SerializeToString().replace(placeholder.encode(), invalid)
    mod2, _ = kiln.frontend.from_onnx(two_inputs("other", ["N", 3]), shape_dict={"bad\\xFF\\xFE\\x80utf8": [2, 3]})
    assert mod2.astext().startswith('fn (%"bad\\\\xFF\\\\xFE\\\\x80utf8": Tensor[(2, 3), float32]'), mod2.astext()
    with pytest.raises(kiln.KilnError, match="two inputs are named"):
        kiln.frontend.from_onnx(two_inputs("bad\\xFF\\xFE\\x80utf8", [2, 3]))
    # String attributes are checked against what the op knows before anything uses them.
    pads = onnx.numpy_helper.from_array(np.array([1, 1], np.int64), "pads")
    pad = make_model([onnx.helper.make_node("Pad", ["x", "pads"], ["y"], mode='edge"*/\n#')], [value("x", [2])],
                     [value("y", [4])], [pads])
    with pytest.raises(kiln.KilnError, match="pad_mode must be constant, edge, reflect or wrap"):
        kiln.frontend.from_onnx(pad.SerializeToString())
    # A module name becomes part of C symbols, so it must be an identifier.
    with pytest.raises(kiln.KilnError, match="module name 'a\\\\\"b\\*/' must be a C identifier"):
        kiln.build(mod, params=params, mod_name='a"b*/')


# ---- PassContext and build ------------------------------------------------------------------------

def test_pass_context_is_a_nested_thread_local_context_manager():
    assert kiln.transform.PassContext.current().opt_level == 3
    with kiln.transform.PassContext(opt_level=1, disabled_pass=["FoldScaleAxis"]) as outer:
        assert kiln.transform.PassContext.current() is outer
        with kiln.transform.PassContext(opt_level=2, required_pass=["FuseOps"], config={"relay.FuseOps.max_depth": 4,
                                                                                      "tir.disable_vectorize": True}) as inner:
            assert kiln.transform.PassContext.current() is inner
            seen = []
            thread = threading.Thread(target=lambda: seen.append(kiln.transform.PassContext.current().opt_level))
            thread.start()
            thread.join()
            assert seen == [3]  # another thread has its own stack
        assert kiln.transform.PassContext.current() is outer
    assert kiln.transform.PassContext.current().opt_level == 3
    assert "FuseOps" in kiln.transform.pass_names()
    configs = kiln.transform.PassContext.list_configs()
    assert configs["relay.FuseOps.max_depth"]["type"] == "int"


def test_pass_context_rejects_unknown_passes_and_config():
    with pytest.raises(kiln.KilnError, match="unknown pass 'NoSuchPass' \\(passes: .*FuseOps"):
        kiln.transform.PassContext(disabled_pass=["NoSuchPass"])
    with pytest.raises(kiln.KilnError, match="unknown pass config key 'no.such.key' \\(known keys: "):
        kiln.transform.PassContext(config={"no.such.key": 1})
    with pytest.raises(kiln.KilnError, match="needs an integer"):
        kiln.transform.PassContext(config={"relay.FuseOps.max_depth": "deep"})
    with pytest.raises(kiln.KilnError, match="needs true or false"):
        kiln.transform.PassContext(config={"tir.disable_vectorize": "maybe"})
    mod, params = kiln.frontend.from_onnx(dense_relu(2))
    with kiln.transform.PassContext(opt_level=7):
        with pytest.raises(kiln.KilnError, match="opt_level must be 0 to 3, got 7"):
            kiln.build(mod, params=params)


def operator_calls(lib):
    return sum(1 for node in json.loads(lib.get_graph_json())["nodes"] if node["op"] == "tvm_op")


def test_build_uses_the_current_pass_context():
    mod, params = kiln.frontend.from_onnx(dense_relu(2))
    assert operator_calls(kiln.build(mod, params=params)) == 1  # dense + relu fused
    with kiln.transform.PassContext(opt_level=3, config={"relay.FuseOps.max_depth": 1}):
        assert operator_calls(kiln.build(mod, params=params)) == 2
    with kiln.transform.PassContext(disabled_pass=["FuseOps"]):
        with pytest.raises(kiln.KilnError, match="FuseOps cannot be disabled"):
            kiln.build(mod, params=params)
    with kiln.transform.PassContext(opt_level=0):
        assert operator_calls(kiln.build(mod, params=params)) == 2


def test_factory_graph_json_params_and_export(tmp_path, two_io_lib):
    graph = json.loads(two_io_lib.get_graph_json())
    assert {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"} <= set(graph)
    params = two_io_lib.get_params()
    assert params and all(isinstance(v, kiln.nd.NDArray) for v in params.values())
    assert any(np.array_equal(v.numpy(), W.T) or np.array_equal(v.numpy(), W) for v in params.values())
    two_io_lib.export_library(tmp_path / "m.so")
    a, b = rand(2, 4, seed=1), rand(2, 4, seed=2)
    want = ort_run(two_inputs_two_outputs(), {"a": a, "b": b})
    for lib in (kiln.runtime.load_module(tmp_path / "m.so"), two_io_lib):
        gmod = gmod_of(lib)
        gmod.run(a=a, b=b)
        close(gmod.get_output(0).numpy(), want[0])
        close(gmod.get_output(1).numpy(), want[1])


def test_three_file_form_with_create_load_params_and_share_params(tmp_path, two_io_lib):
    two_io_lib.export_three_files(tmp_path / "out")
    graph_json = (tmp_path / "out/mod.json").read_text()
    ops = kiln.runtime.load_module(tmp_path / "out/mod.so")
    params_bytes = (tmp_path / "out/mod.params").read_bytes()
    assert set(kiln.runtime.load_param_dict(params_bytes)) == set(two_io_lib.get_params())
    assert kiln.runtime.save_param_dict(two_io_lib.get_params()) == params_bytes
    first = graph_executor.create(graph_json, ops, kiln.cpu())
    first.load_params(params_bytes)
    second = graph_executor.create(graph_json, ops, kiln.cpu())
    second.share_params(first, bytearray(params_bytes))
    a, b = rand(2, 4, seed=3), rand(2, 4, seed=4)
    want = ort_run(two_inputs_two_outputs(), {"a": a, "b": b})
    for gmod in (first, second):
        gmod.run(a=a, b=b)
        close(gmod.get_output(0).numpy(), want[0])
    with pytest.raises(kiln.KilnError):
        first.load_params(b"garbage")


def test_build_targets():
    mod, params = kiln.frontend.from_onnx(dense_relu(2))
    x = rand(2, 4)
    for target in ("cpu", "cpu -mcpu=x86-64-v2", "llvm -mcpu=x86-64", "x86-64-v2"):
        gmod = gmod_of(kiln.build(mod, target=target, params=params))
        gmod.run(x=x)
        close(gmod.get_output(0).numpy(), np.maximum(x @ W, 0))
    for bad in ("cuda -mcpu=sm_80", "cpu -foo"):
        with pytest.raises(kiln.KilnError, match="target"):
            kiln.build(mod, target=bad, params=params)


def test_build_without_a_compiler_says_how_to_install_one(monkeypatch):
    mod, params = kiln.frontend.from_onnx(dense_relu(2))
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(kiln.KilnError, match=r"no C\+\+ compiler found.*'c\+\+' is not installed.*apt-get install g\+\+"):
        kiln.build(mod, params=params)


def test_console_script_without_its_tool_says_to_reinstall(monkeypatch, capsys):
    from kiln import _cli
    monkeypatch.setattr(_cli.os, "access", lambda path, mode: False)
    monkeypatch.setattr(_cli.os, "execv", lambda *args: pytest.fail("execv called without the tool"))
    with pytest.raises(SystemExit, match=r"the command-line tool is missing from this installation "
                                         r"\(.*kiln/bin/kiln\); reinstall kiln"):
        _cli.main()


def test_build_params_bind_inputs_by_name():
    mod, _ = kiln.frontend.from_onnx(weights_as_input())
    gmod = gmod_of(kiln.build(mod, params={"w": W}))
    assert gmod.get_input_info() == ({"x": (2, 4)}, {"x": "float32"})
    x = rand(2, 4)
    gmod.run(x=x)
    close(gmod.get_output(0).numpy(), x @ W)
    with pytest.raises(kiln.KilnError, match="main has no parameter 'v' \\(parameters: x, w\\)"):
        kiln.build(mod, params={"v": W})
    with pytest.raises(kiln.KilnError, match="param 'w' is Tensor\\[\\(3, 4\\), float32\\]"):
        kiln.build(mod, params={"w": W.T.copy()})


# ---- GraphModule ----------------------------------------------------------------------------------

def test_set_input_by_name_index_keyword_and_array_kind(two_io):
    a, b = rand(2, 4, seed=5), rand(2, 4, seed=6)
    want = ort_run(two_inputs_two_outputs(), {"a": a, "b": b})
    setters = [
        lambda: (two_io.set_input("a", a), two_io.set_input("b", b)),
        lambda: (two_io.set_input(0, a), two_io.set_input(1, kiln.nd.array(b))),
        lambda: two_io.set_input(a=kiln.nd.from_dlpack(a), b=kiln.nd.from_dlpack(b)),
        lambda: two_io.set_input("a", np.asfortranarray(a), b=b[:, ::-1][:, ::-1]),  # non-contiguous: copied
    ]
    for set_inputs in setters:
        two_io.set_input(a=np.zeros_like(a), b=np.zeros_like(b))
        set_inputs()
        two_io.run()
        close(two_io.get_output(0).numpy(), want[0])
        close(two_io.get_output(1).numpy(), want[1])
    np.testing.assert_array_equal(two_io.get_input("a").numpy(), a)
    np.testing.assert_array_equal(two_io.get_input(1, out=kiln.nd.empty((2, 4))).numpy(), b)


@needs_torch
def test_set_input_takes_torch_tensors(two_io):
    a, b = rand(2, 4, seed=5), rand(2, 4, seed=6)
    want = ort_run(two_inputs_two_outputs(), {"a": a, "b": b})
    two_io.set_input(a=torch.from_numpy(a), b=kiln.nd.from_dlpack(torch.from_numpy(b)))
    two_io.run()
    close(two_io.get_output(0).numpy(), want[0])
    close(two_io.get_output(1).numpy(), want[1])


def test_outputs_and_infos(two_io):
    a, b = rand(2, 4, seed=7), rand(2, 4, seed=8)
    two_io.run(a=a, b=b)
    assert two_io.get_num_outputs() == 2
    assert two_io.get_num_inputs() >= 2  # parameters count as inputs, as in TVM
    assert two_io.get_input_index("b") == 1 and two_io.get_input_index("zz") == -1
    assert two_io.get_input_info() == ({"a": (2, 4), "b": (2, 4)}, {"a": "float32", "b": "float32"})
    shapes, dtypes = two_io.get_output_info()
    assert sorted(shapes.values()) == [(2, 3), (2, 4)] and set(dtypes.values()) == {"float32"}
    out = kiln.nd.empty((2, 4))
    assert two_io.get_output(1, out) is out
    np.testing.assert_allclose(out.numpy(), a - b, rtol=1e-6)
    view = two_io.get_output(1)
    assert view.shape == (2, 4) and view.dtype == "float32"
    assert two_io["get_num_outputs"]() == 2


def test_benchmark(two_io):
    a, b = rand(2, 4), rand(2, 4)
    result = two_io.benchmark(repeat=4, number=3, a=a, b=b)
    assert len(result.results) == 4
    assert 0 < result.min <= result.median <= result.max and result.std >= 0
    assert result.min <= result.mean <= result.max
    assert "Execution time summary" in str(result) and "median (ms)" in str(result)
    close(two_io.get_output(1).numpy(), a - b)  # the inputs were set
    end_to_end = two_io.benchmark(kiln.cpu(), repeat=2, number=1, min_repeat_ms=1, end_to_end=True, a=b, b=a)
    assert len(end_to_end.results) == 2 and end_to_end.mean > 0
    close(two_io.get_output(1).numpy(), b - a)
    with pytest.raises(kiln.KilnError, match="number and repeat must be positive"):
        two_io.benchmark(repeat=0)
    with pytest.raises(kiln.KilnError, match="zz"):
        two_io.benchmark(zz=a)
    with pytest.raises(ValueError, match="CPU"):
        two_io.benchmark(kiln.Device(2, 0))


def test_profile_report_and_debug_executor(two_io_lib):
    gmod = gmod_of(two_io_lib)
    gmod.set_input(a=rand(2, 4), b=rand(2, 4))
    report = gmod.profile()
    assert len(report.nodes) >= 2 and report.total_us >= 0
    assert "Total" in str(report) and "Time (us)" in report.table()
    assert {n.function for n in report.nodes} <= {n["attrs"]["func_name"] for n in
                                                  json.loads(two_io_lib.get_graph_json())["nodes"] if "attrs" in n}
    trace = json.loads(report.chrome_trace())
    assert len(trace["traceEvents"]) == len(report.nodes)
    medians = gmod.profile(runs=5)
    assert [n.name for n in medians.nodes] == [n.name for n in report.nodes]
    assert medians.total_us == pytest.approx(sum(n.duration_us for n in medians.nodes))
    with pytest.raises(kiln.KilnError, match="at least one run"):
        gmod.profile(runs=0)
    debug = graph_executor.GraphModule(two_io_lib["debug_create"]("default", kiln.cpu()))
    debug.run(a=rand(2, 4), b=rand(2, 4))
    assert "Total" in debug["profile"]()
    assert json.loads(debug["profile_chrome_trace"]())["traceEvents"]
    assert "Total" in str(debug.profile())


def test_executors_sharing_params_run_in_threads(tmp_path, two_io_lib):
    two_io_lib.export_three_files(tmp_path / "out")
    graph_json = (tmp_path / "out/mod.json").read_text()
    ops = kiln.runtime.load_module(tmp_path / "out/mod.so")
    params_bytes = (tmp_path / "out/mod.params").read_bytes()
    owner = graph_executor.create(graph_json, ops, kiln.cpu())
    owner.load_params(params_bytes)
    results, errors = {}, []

    def work(i):
        try:
            gmod = graph_executor.create(graph_json, ops, kiln.cpu())
            gmod.share_params(owner, params_bytes)
            a, b = rand(2, 4, seed=10 + i), rand(2, 4, seed=20 + i)
            for _ in range(20):
                gmod.run(a=a, b=b)
            results[i] = (gmod.get_output(0).numpy(), ort_run(two_inputs_two_outputs(), {"a": a, "b": b})[0])
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got, want in results.values():
        close(got, want)


def test_executors_with_their_own_thread_counts_run_at_once(two_io_lib):
    a, b = rand(2, 4, seed=5), rand(2, 4, seed=6)
    want = ort_run(two_inputs_two_outputs(), {"a": a, "b": b})
    modules = [gmod_of(two_io_lib) for _ in range(3)]
    for gmod, count in zip(modules, (1, 2, 0)):
        gmod.set_num_threads(count)
        assert gmod.get_num_threads() == count
    errors = []

    def work(gmod):
        try:
            for _ in range(20):
                gmod.run(a=a, b=b)
                close(gmod.get_output(0).numpy(), want[0])
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(gmod,)) for gmod in modules]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with pytest.raises(kiln.KilnError, match="expected a thread count from 0"):
        modules[0].set_num_threads(-2)


# ---- processes: fork ----------------------------------------------------------------------------

def _matmul_relu():
    w = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32) / 16
    return make_model([onnx.helper.make_node("MatMul", ["x", "w"], ["y0"]), onnx.helper.make_node("Relu", ["y0"], ["y"])],
                      [value("x", [64, 256])], [value("y", [64, 256])], [onnx.numpy_helper.from_array(w, "w")]), w


def test_a_forked_child_loads_and_runs_models(tmp_path):
    """After os.fork() (multiprocessing, web servers), the child runs the parent's executor and
    loads and runs a library of its own; the parent's worker threads did not come along, so the
    child's launches must not wait for them. A child that hangs is killed and fails the test."""
    model, w = _matmul_relu()
    lib = build(model)
    lib.export_library(tmp_path / "m.so")
    gmod = gmod_of(lib)
    x = rand(64, 256)
    want = np.maximum(x @ w, 0)
    gmod.set_input("x", x)
    gmod.run()  # the parent's worker threads exist now
    close(gmod.get_output(0).numpy(), want)
    pid = os.fork()
    if pid == 0:  # the child: any failure is its exit code
        code = 1
        try:
            gmod.set_input("x", x)
            gmod.run()
            fresh = gmod_of(kiln.runtime.load_module(tmp_path / "m.so"))
            fresh.set_input("x", 2 * x)
            fresh.run()
            ok = np.allclose(gmod.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)
            ok &= np.allclose(fresh.get_output(0).numpy(), np.maximum(2 * x @ w, 0), rtol=1e-4, atol=1e-5)
            code = 0 if ok else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 120
    while (waited := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if waited == (0, 0):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.waitstatus_to_exitcode(waited[1]) == 0, "the child's outputs were wrong or it failed"
    gmod.run()  # the parent's pool still works
    close(gmod.get_output(0).numpy(), want)


# ---- errors: Python exceptions with the library's message, never a crash ----------------------

def test_graph_module_errors(two_io, two_io_lib, tmp_path):
    with pytest.raises(kiln.KilnError, match="'zz'.*a, b"):
        two_io.set_input("zz", rand(2, 4))
    with pytest.raises(kiln.KilnError, match="set_input 'a': expected float32 of shape \\[2, 4\\], got float32 of shape \\[4, 2\\]"):
        two_io.set_input("a", rand(4, 2))
    with pytest.raises(kiln.KilnError, match="float32"):
        two_io.set_input("a", np.zeros((2, 4), np.int32))
    with pytest.raises(kiln.KilnError, match="output"):
        two_io.get_output(5)
    with pytest.raises(TypeError, match="no value given"):
        two_io.set_input("a")
    with pytest.raises(TypeError, match="cannot pass a list"):
        two_io["set_input"]("a", [1, 2])
    with pytest.raises(kiln.KilnError, match="expected 2 arguments"):
        two_io["set_input"]("a")
    with pytest.raises(kiln.KilnError, match="no_such.so"):
        kiln.runtime.load_module(tmp_path / "no_such.so")
    (tmp_path / "garbage.so").write_bytes(b"\x7fELF garbage")
    with pytest.raises(kiln.KilnError, match="garbage.so"):
        kiln.runtime.load_module(tmp_path / "garbage.so")
    two_io_lib.export_library(tmp_path / "whole.so")
    (tmp_path / "cut.so").write_bytes((tmp_path / "whole.so").read_bytes()[:5000])
    with pytest.raises(kiln.KilnError, match="cut.so': the file is cut short"):
        kiln.runtime.load_module(tmp_path / "cut.so")
    with pytest.raises(AttributeError, match="has no function 'nope'"):
        two_io.module["nope"]
    with pytest.raises(ValueError, match="no global function"):
        kiln.runtime.get_global_func("no.such.function")
    assert kiln.runtime.get_global_func("no.such.function", allow_missing=True) is None


def test_graph_module_needs_an_executor_module(two_io_lib, tmp_path):
    two_io_lib.export_library(tmp_path / "m.so")
    lib = kiln.runtime.load_module(tmp_path / "m.so")
    assert lib.type_key == "GraphExecutorFactory"
    with pytest.raises(AttributeError, match="has no function 'set_input'"):
        graph_executor.GraphModule(lib)
    with pytest.raises(kiln.KilnError, match="expected a graph executor module"):
        kiln._ffi.benchmark(lib, 1, 1, 0, False, {})


# ---- bring your own codegen ---------------------------------------------------------------------
def conv_block():
    """relu(conv(x, w) + b) + x, then a max pool: oneDNN's conv2d_bias_sum_relu and pooling."""
    from onnx import helper, numpy_helper
    w = numpy_helper.from_array(rand(4, 4, 3, 3, seed=3) * 0.3, "w")
    b = numpy_helper.from_array(rand(4, seed=4), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["c", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]), helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    return make_model(nodes, [value("x", [1, 4, 6, 6])], [value("y", [1, 4, 3, 3])], [w, b])


@pytest.mark.parametrize("codegen", ["dnnl", "ccompiler"])
def test_partition_for_an_external_codegen_then_build(tmp_path, codegen):
    if not kiln.contrib.external_codegens()[codegen]:
        pytest.skip(f"this build has no {codegen}")
    model = conv_block() if codegen == "dnnl" else two_inputs_two_outputs()
    mod, params = kiln.frontend.from_onnx(model)
    partitioned = getattr(kiln.contrib, codegen).__dict__[f"partition_for_{codegen}"](mod, params)
    assert f"Compiler=\"{codegen}\"" in partitioned.astext()
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(partitioned, target="cpu", params=params)
    lib.export_library(str(tmp_path / "m.so"))
    gmod = gmod_of(kiln.runtime.load_module(str(tmp_path / "m.so")))
    feeds = {"x": rand(1, 4, 6, 6)} if codegen == "dnnl" else {"a": rand(2, 4), "b": rand(2, 4, seed=1)}
    gmod.run(**feeds)
    for i, want in enumerate(ort_run(model, feeds)):
        close(gmod.get_output(i).numpy(), want)


def test_params_bound_by_partitioning_may_be_passed_to_build_again(tmp_path):
    """TVM's flow: relay.build(partition_for_dnnl(mod, params), params=params)."""
    mod = kiln.ir.IRModule.from_text("""fn (%x: Tensor[(2, 4), float32], %w: Tensor[(3, 4), float32]) {
      %0 = nn.dense(%x, %w);
      %1 = nn.relu(%0);
      %1
    }""")
    params = {"w": rand(3, 4, seed=5)}
    partitioned = kiln.contrib.partition_for(mod, "ccompiler", params)
    assert "Compiler=\"ccompiler\"" in partitioned.astext()
    gmod = gmod_of(kiln.build(partitioned, params=params))
    x = rand(2, 4, seed=6)
    gmod.run(x=x)
    np.testing.assert_allclose(gmod.get_output(0).numpy(), np.maximum(x @ params["w"].T, 0), rtol=1e-5, atol=1e-6)
    with pytest.raises(kiln.KilnError, match="'v'"):
        kiln.build(partitioned, params={"v": rand(3, 4)})


def test_partition_errors_name_the_codegen():
    mod, params = kiln.frontend.from_onnx(dense_relu(2))
    with pytest.raises(kiln.KilnError, match="there is no external codegen 'tensorrt' \\(known: dnnl, ccompiler\\)"):
        kiln.contrib.partition_for(mod, "tensorrt", params)
    assert set(kiln.contrib.external_codegens()) == {"dnnl", "ccompiler"}


def test_exception_types():
    assert issubclass(kiln.KilnError, RuntimeError)
    assert issubclass(kiln.InternalError, kiln.KilnError)


def test_public_api_is_documented_and_typed():
    import pathlib
    package = pathlib.Path(kiln.__file__).parent
    assert (package / "py.typed").exists() and (package / "_ffi.pyi").exists()
    documented = [kiln.frontend.from_onnx, kiln.transform.PassContext, kiln.build, kiln.runtime.load_module,
                  kiln.cpu, kiln.nd.array, kiln.nd.from_dlpack, kiln.nd.empty, kiln.graph_executor.GraphModule,
                  kiln.graph_executor.create, kiln.GraphExecutorFactoryModule.export_library,
                  kiln.graph_executor.GraphModule.benchmark, kiln.graph_executor.GraphModule.profile,
                  kiln.runtime.save_param_dict, kiln.nd.NDArray, kiln.nd.NDArray.numpy,
                  kiln.contrib.partition_for, kiln.contrib.dnnl.partition_for_dnnl,
                  kiln.contrib.ccompiler.partition_for_ccompiler, kiln.contrib.external_codegens]
    for item in documented:
        assert item.__doc__ and item.__doc__.strip(), item
