"""Frontend conformance: every op family of onnx_op_cases.py is compiled with `kiln compile`,
run with `kiln run`, and compared with ONNX Runtime on the same seeded random inputs.
Tolerance: |kiln - ort| <= rtol * max(1, max|ort|) per output (rtol per group, 1e-5 or 1e-4);
integer and bool outputs must be equal."""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onnx_op_cases

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")


def run_kiln(tmp_path, model, feeds):
    model_path, library = tmp_path / "model.onnx", tmp_path / "model.so"
    onnx.save(model, model_path)
    np.savez(tmp_path / "in.npz", **feeds)
    subprocess.run([KILN, "compile", str(model_path), "-o", str(library)], check=True, capture_output=True, text=True)
    subprocess.run([KILN, "run", str(library), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                    str(tmp_path / "out.npz")], check=True, capture_output=True, text=True)
    out = np.load(tmp_path / "out.npz")
    return [out[f"output_{i}"] for i in range(len(out.files))]


CASES = [(make_group, opset) for make_group, opsets in onnx_op_cases.GROUPS for opset in opsets]


@pytest.mark.parametrize("make_group,opset", CASES, ids=[f"{f.__name__}-opset{o}" for f, o in CASES])
def test_op_family_matches_onnxruntime(tmp_path, make_group, opset):
    group = make_group(opset)
    model = group.model()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, group.feeds)
    try:
        actual = run_kiln(tmp_path, model, group.feeds)
    except subprocess.CalledProcessError as e:
        pytest.fail(f"kiln failed: {e.stderr}")
    assert len(actual) == len(expected)
    for i, (got, want) in enumerate(zip(actual, expected)):
        node = group.nodes[[n.output[0] for n in group.nodes].index(model.graph.output[i].name)] \
            if model.graph.output[i].name in [n.output[0] for n in group.nodes] else None
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
