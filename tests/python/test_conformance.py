"""ONNX's backend node cases in `make test`: a fixed subset (conformance_cases.txt, cases of every
op family kiln runs and some it does not yet) through scripts/conformance.py, the runner of
`make conformance`. A case listed as passing must pass by ONNX's rule; a case listed as
unsupported must fail with a clear error (or pass, once supported), never crash or mismatch.
The runner's comparison rule is tested on its own first."""
import collections
import concurrent.futures
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import conformance  # noqa: E402

KILN = os.environ.get("KILN_BIN", str(ROOT / "build/bin/kiln"))


def test_the_comparison_rule_is_onnxs():
    f32 = np.float32
    assert conformance.compare([np.array([1.0, np.nan], f32)], [np.array([1.0005, np.nan], f32)]) is None
    assert "output 0" in conformance.compare([np.array([1.0], f32)], [np.array([1.002], f32)])  # rtol 1e-3
    assert conformance.compare([np.array([1e-7], f32)], [np.array([0.0], f32)]) is None  # atol 1e-7
    assert conformance.compare([np.array([3e-7], f32)], [np.array([0.0], f32)]) is not None
    assert conformance.compare([np.array([np.nan], f32)], [np.array([0.0], f32)]) is not None
    assert conformance.compare([np.array([2], np.int64)], [np.array([2], np.int64)]) is None
    assert "values differ" in conformance.compare([np.array([2], np.int64)], [np.array([3], np.int64)])
    assert "dtype" in conformance.compare([np.array([2], np.int32)], [np.array([2], np.int64)])
    assert "shape" in conformance.compare([np.zeros((2, 1), f32)], [np.zeros((2,), f32)])
    assert "outputs" in conformance.compare([], [np.zeros(1, f32)])


def listed_cases():
    """(suite, case, expected, unbound): unbound when the line ends in "unbound" (the case's
    shape-deciding inputs given at run time, not bound as constants)."""
    cases = []
    for line in (pathlib.Path(__file__).parent / "conformance_cases.txt").read_text().splitlines():
        line = line.split("#")[0].split()
        if line:
            suite, name, expected, *mode = line
            assert mode in ([], ["unbound"]), f"conformance_cases.txt: {' '.join(line)}"
            cases.append((suite, conformance.SUITES[suite] / name, expected, mode == ["unbound"]))
    return cases


def test_the_subset_of_node_cases():
    cases = listed_cases()
    missing = [str(case) for _, case, _, _ in cases if not (case / "model.onnx").exists()]
    assert not missing, f"cases not found (make deps installs libonnx-testdata): {missing}"
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        results = list(pool.map(lambda c: conformance.run_case(c[1], KILN, ["kiln"], 600, unbound=c[3]), cases))
    wrong = []
    for (suite, case, expected, unbound), result in zip(cases, results):
        if unbound and "unbound" not in result:
            wrong.append(f"{suite} {case.name}: listed unbound, but has no shape-deciding inputs")
            continue
        kiln = (result["unbound"] if unbound else result).get("kiln", {})
        got = kiln.get("status", "excluded")
        allowed = {"passed"} if expected == "passed" else {"passed", "unsupported"}
        if got not in allowed:
            wrong.append(f"{suite} {case.name}{' (unbound)' if unbound else ''}: expected {expected}, got {got}: "
                         f"{kiln.get('detail', result.get('excluded'))}")
    print(collections.Counter(r.get("kiln", {}).get("status") for r in results))
    assert not wrong, "\n".join(wrong)
