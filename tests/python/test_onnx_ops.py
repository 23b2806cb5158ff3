"""Frontend conformance: every op family of onnx_op_cases.py is compiled with `kiln compile`,
run with `kiln run`, and compared with ONNX Runtime on the same seeded random inputs.
Tolerance: |kiln - ort| <= rtol * max(1, max|ort|) per output (rtol per group, 1e-5 or 1e-4);
integer and bool outputs must be equal.

The same groups with their inputs turned into initializers test constant folding (the ops'
reference evaluators, ir/evaluate.h) against ONNX Runtime: groups made only of ops with reference
semantics must fold to no operator call at all."""
import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import onnx_op_cases

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")


def run_kiln(tmp_path, model, feeds):
    """The outputs of `model` compiled and run by kiln, and what `kiln compile` printed."""
    model_path, library = tmp_path / "model.onnx", tmp_path / "model.so"
    onnx.save(model, model_path)
    compiled = subprocess.run([KILN, "compile", str(model_path), "-o", str(library)], check=True,
                              capture_output=True, text=True)
    command = [KILN, "run", str(library), "--outputs", str(tmp_path / "out.npz")]
    if feeds:
        np.savez(tmp_path / "in.npz", **feeds)
        command += ["--inputs", str(tmp_path / "in.npz")]
    subprocess.run(command, check=True, capture_output=True, text=True)
    out = np.load(tmp_path / "out.npz")
    return [out[f"output_{i}"] for i in range(len(out.files))], compiled.stderr


def assert_outputs_match(group, model, actual, expected):
    assert len(actual) == len(expected)
    producer = {o: n for n in group.nodes for o in n.output}
    for i, (got, want) in enumerate(zip(actual, expected)):
        node = producer.get(model.graph.output[i].name)
        label = f"output {i} ({node.op_type} {node.name})" if node else f"output {i}"
        assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
        if want.dtype == np.bool_:
            got = got.astype(np.bool_)
        assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != {want.dtype}"
        if np.issubdtype(want.dtype, np.floating):
            bound = group.rtol * max(1.0, float(np.abs(want).max(initial=0)))
            err = float(np.abs(got.astype(np.float64) - want).max(initial=0))
            assert err <= bound, f"{label}: max |kiln - ort| = {err:.3g} > {bound:.3g}"
        else:
            np.testing.assert_array_equal(got, want, err_msg=label)


def reference(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


CASES = [(make_group, opset) for make_group, opsets in onnx_op_cases.GROUPS for opset in opsets]


@pytest.mark.parametrize("make_group,opset", CASES, ids=[f"{f.__name__}-opset{o}" for f, o in CASES])
def test_op_family_matches_onnxruntime(tmp_path, make_group, opset):
    group = make_group(opset)
    model = group.model()
    expected = reference(model, group.feeds)
    try:
        actual, _ = run_kiln(tmp_path, model, group.feeds)
    except subprocess.CalledProcessError as e:
        pytest.fail(f"kiln failed: {e.stderr}")
    assert_outputs_match(group, model, actual, expected)


# Groups whose every op has reference semantics once imported: folded, they run no operator.
FOLDED_ENTIRELY = {"elementwise", "elementwise_chains", "compare_and_cast"}
FOLDING_CASES = [(make_group, opsets[-1]) for make_group, opsets in onnx_op_cases.GROUPS]


@pytest.mark.parametrize("make_group,opset", FOLDING_CASES, ids=[f.__name__ for f, _ in FOLDING_CASES])
def test_op_family_folded_from_constants_matches_onnxruntime(tmp_path, make_group, opset):
    group = make_group(opset)
    expected = reference(group.model(), group.feeds)
    group.inits += [numpy_helper.from_array(value, name) for name, value in group.feeds.items()]
    group.inputs = []
    model = group.model()
    try:
        actual, report = run_kiln(tmp_path, model, {})
    except subprocess.CalledProcessError as e:
        pytest.fail(f"kiln failed: {e.stderr}")
    assert_outputs_match(group, model, actual, expected)
    calls = re.search(r"(\d+) operator calls", report)
    assert calls, report
    if make_group.__name__ in FOLDED_ENTIRELY:
        assert int(calls.group(1)) == 0, f"not everything folded: {report}"
