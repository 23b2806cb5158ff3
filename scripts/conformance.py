"""ONNX's backend node conformance cases, run by kiln and by ONNX Runtime with the same rule.

Each case (a directory with model.onnx and test_data_set_*/input_*.pb, output_*.pb) is compiled
with `kiln compile` and run with `kiln run` in a process of its own (a crash is a result, not the
end of the run), in parallel, with kiln's object cache. Outputs are compared by ONNX's rule:
|actual - expected| <= atol + rtol * |expected| with rtol 1e-3, atol 1e-7, NaN equal to NaN,
exact for integers and bools; shapes and dtypes must match.

Inputs that say what shape the output has (shapes, axes, pads, K, scales, sizes; BOUND_INPUTS)
are bound as constants from their input_*.pb, the way models carry them; such cases are counted
in a column of their own, and are run a second time with those inputs given at run time, as the
case has them (a column of their own too, each engine beside the other). Excluded, by category:
cases with sequence, optional, map or string inputs or outputs; training ops; random ops.

The suites: ONNX 1.12's cases (Debian's libonnx-testdata) and those of the onnx wheel in the
Python environment (1.16.2). The report (markdown and JSON) lists each op type's passed / failed /
unsupported / error / excluded counts for kiln and ONNX Runtime.

  scripts/conformance.py [--suite 1.12|wheel] [--cases FILE] [--jobs N] [--report DIR]"""
import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[1]
SUITES = {
    "1.12": pathlib.Path("/usr/share/libonnx-testdata/data/node"),
    "wheel": pathlib.Path(onnx.__file__).parent / "backend/test/data/node",
}
RTOL, ATOL = 1e-3, 1e-7

# Inputs, by op type and position, that decide the shape of a result; bound as constants.
REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
          "ReduceLogSumExp", "ReduceSumSquare"]
BOUND_INPUTS = {
    "Reshape": {1}, "Expand": {1}, "Tile": {1}, "Pad": {1, 3}, "Resize": {1, 2, 3}, "Loop": {0, 1}, "Upsample": {1}, "TopK": {1},
    "Slice": {1, 2, 3, 4}, "Squeeze": {1}, "Unsqueeze": {1}, "ConstantOfShape": {0}, "OneHot": {1}, "Split": {1},
    "CumSum": {1}, "Range": {0, 1, 2}, "Trilu": {1}, "NonMaxSuppression": {2, 3, 4}, "CenterCropPad": {1},
    "Col2Im": {1, 2, 3}, "MaxUnpool": {2}, "AffineGrid": {1}, "DFT": {1, 2}, "STFT": {1, 2, 3},
    "BlackmanWindow": {0}, "HannWindow": {0}, "HammingWindow": {0}, "MelWeightMatrix": {0, 1, 2, 3, 4},
    **{op: {1} for op in REDUCE},
}
TRAINING_OPS = {"Adagrad", "Adam", "Momentum", "Gradient"}
RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"}


def exclusion(case, model):
    """The category a case is excluded under, or None."""
    for value in list(model.graph.input) + list(model.graph.output):
        kind = value.type.WhichOneof("value")
        if kind != "tensor_type":
            return f"{kind.replace('_type', '')} inputs or outputs"
        if value.type.tensor_type.elem_type == onnx.TensorProto.STRING:
            return "string inputs or outputs"
    ops = {n.op_type for n in model.graph.node}
    if ops & TRAINING_OPS or any(n.domain == "ai.onnx.preview.training" for n in model.graph.node):
        return "training ops"
    if ops & RANDOM_OPS or "training_dropout" in case.name:
        return "random ops"
    return None


def op_type_of(case, model):
    """The op a case is about: its node's; for an expanded case (the op's function body), the op of
    the case it expands; else the op its name starts with."""
    ops = [n.op_type for n in model.graph.node]
    if len(ops) == 1:
        return ops[0]
    unexpanded = case.parent / case.name.removesuffix("_expanded")
    if case.name.endswith("_expanded") and (unexpanded / "model.onnx").exists():
        nodes = onnx.load(str(unexpanded / "model.onnx")).graph.node
        if len(nodes) == 1:
            return nodes[0].op_type + " (expanded)"
    name = case.name[len("test_"):].replace("_", "").lower()
    named = [op for op in dict.fromkeys(ops) if name.startswith(op.lower())]
    return (max(named, key=len) if named else ops[0] if ops else "(none)") + " (expanded)"


def read_tensor(path):
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def load_case(case, bind=True):
    """The model with its shape-deciding inputs bound (unless not `bind`: the case's own model), the
    feeds, the expected outputs, and how many inputs decide shapes."""
    model = onnx.load(str(case / "model.onnx"))
    data = sorted(case.glob("test_data_set_*"))[0]
    inputs = [read_tensor(p) for p in sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))]
    outputs = [read_tensor(p) for p in sorted(data.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1]))]
    initializers = {i.name for i in model.graph.initializer}
    graph_inputs = [v.name for v in model.graph.input if v.name not in initializers]
    feeds = dict(zip(graph_inputs, inputs))
    to_bind = set()
    for node in model.graph.node:
        for position in BOUND_INPUTS.get(node.op_type, ()):
            if position < len(node.input) and node.input[position] in feeds:
                to_bind.add(node.input[position])
    for name in to_bind if bind else ():
        model.graph.initializer.append(numpy_helper.from_array(feeds.pop(name), name))
        kept = [v for v in model.graph.input if v.name != name]
        del model.graph.input[:]
        model.graph.input.extend(kept)
    return model, feeds, outputs, len(to_bind)


def compare(actual, expected):
    """None when `actual` matches `expected` by ONNX's rule, else what differs."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (got, want) in enumerate(zip(actual, expected)):
        got = np.asarray(got)
        if got.shape != want.shape:
            return f"output {i}: shape {list(got.shape)}, expected {list(want.shape)}"
        if got.dtype != want.dtype:
            return f"output {i}: dtype {got.dtype}, expected {want.dtype}"
        if np.issubdtype(want.dtype, np.floating) or np.issubdtype(want.dtype, np.complexfloating):
            try:
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
            except AssertionError as e:
                return f"output {i}: " + " ".join(str(e).split())[:300]
        elif not np.array_equal(got, want):
            return f"output {i}: values differ"
    return None


UNSUPPORTED = re.compile(r"unsupported|not supported|only .* supported|must be a constant|does not support|kiln imports opsets",
                         re.I)


# ONNX's float8 types: how onnx.helper converts float32 to each (e4m3 or e5m2, fn, uz).
FLOAT8 = {17: ("e4m3", True, False), 18: ("e4m3", True, True), 19: ("e5m2", False, False), 20: ("e5m2", True, True)}


def float8_bits(values, elem_type):
    kind, fn, uz = FLOAT8[elem_type]
    convert = onnx.helper.float32_to_float8e4m3 if kind == "e4m3" else onnx.helper.float32_to_float8e5m2
    return np.array([convert(v, fn=fn, uz=uz) for v in np.asarray(values, np.float32).ravel()],
                    np.uint8).reshape(np.shape(values))


def float8_values(bits, elem_type):
    kind, fn, uz = FLOAT8[elem_type]
    decode = numpy_helper.float8e4m3_to_float32 if kind == "e4m3" else numpy_helper.float8e5m2_to_float32
    return decode(bits.astype(np.uint32), fn=fn, uz=uz).astype(np.float32).reshape(bits.shape)


def elem_types(values):
    return {v.name: v.type.tensor_type.elem_type for v in values}


def run_kiln(kiln, model, feeds, timeout):
    """(status, detail) of `model` compiled and run by the kiln command line. kiln's .npz files
    hold float8 as its bits (uint8; numpy has no float8), where ONNX's data holds float32 values."""
    inputs = elem_types(model.graph.input)
    feeds = {name: float8_bits(a, inputs[name]) if inputs.get(name) in FLOAT8 else a for name, a in feeds.items()}
    outputs = [v.type.tensor_type.elem_type for v in model.graph.output]
    with tempfile.TemporaryDirectory(prefix="kiln-conformance-") as tmp:
        tmp = pathlib.Path(tmp)
        onnx.save(model, tmp / "model.onnx")
        np.savez(tmp / "in.npz", **feeds)
        shapes = " ".join(f"{name}:[{','.join(map(str, a.shape))}]" for name, a in feeds.items())
        steps = [("compile", [kiln, "compile", str(tmp / "model.onnx"), "-o", str(tmp / "model.so")]
                  + (["--input-shapes", shapes] if shapes else [])),
                 ("run", [kiln, "run", str(tmp / "model.so"), "--outputs", str(tmp / "out.npz")]
                  + (["--inputs", str(tmp / "in.npz")] if feeds else []))]
        for step, command in steps:
            try:
                done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout)
            except subprocess.TimeoutExpired:
                return "error", f"{step} took more than {timeout} s"
            if done.returncode != 0:
                return classify_failure(done)
        out = np.load(tmp / "out.npz")
        actual = [out[f"output_{i}"] for i in range(len(out.files))]
        return "actual", [float8_values(a, t) if t in FLOAT8 else a for a, t in zip(actual, outputs)]


def classify_failure(process):
    message = " ".join(process.stderr.split())[:400]
    if process.returncode < 0:
        return "crash", f"signal {-process.returncode}: {message}"
    if "internal error" in process.stderr.lower():
        return "crash", message
    return ("unsupported" if UNSUPPORTED.search(process.stderr) else "error"), message


def run_ort(model, feeds):
    import onnxruntime as ort
    ort.set_default_logger_severity(3)  # no warnings about old opsets per case
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ORT's own exception types
        text = " ".join(str(e).split())[:300]
        return ("unsupported" if re.search(r"NOT_IMPLEMENTED|not implemented|opset|Could not find an implementation",
                                           text) else "error"), text
    try:
        return "actual", session.run(None, feeds)
    except Exception as e:  # noqa: BLE001
        return "error", " ".join(str(e).split())[:300]


def run_case(case, kiln, engines, timeout, unbound=True):
    """A case's result: per engine, with its shape-deciding inputs bound; and, where it has such
    inputs and `unbound`, per engine with them given at run time (result["unbound"])."""
    result = {"case": case.name}
    try:
        model = onnx.load(str(case / "model.onnx"))
    except Exception as e:  # noqa: BLE001 - an unreadable case is reported, not fatal
        return {**result, "op": "(unreadable)", "excluded": f"unreadable: {e}"}
    result["op"] = op_type_of(case, model)
    why = exclusion(case, model)
    if why:
        return {**result, "excluded": why}
    model, feeds, expected, bound = load_case(case)
    result["bound"] = bound
    for engine in engines:
        result[engine] = run_engine(engine, kiln, model, feeds, expected, timeout)
    if bound and unbound:
        model, feeds, expected, _ = load_case(case, bind=False)
        result["unbound"] = {engine: run_engine(engine, kiln, model, feeds, expected, timeout) for engine in engines}
    return result


def run_engine(engine, kiln, model, feeds, expected, timeout):
    return judge(*(run_kiln(kiln, model, feeds, timeout) if engine == "kiln" else run_ort(model, feeds)), expected)


def judge(status, detail, expected):
    """An engine's result: its outputs ("actual") compared with the expected ones, or its failure."""
    if status == "actual":
        mismatch = compare(detail, expected)
        status, detail = ("passed", "") if mismatch is None else ("failed", mismatch)
    return {"status": status, "detail": detail}


STATUSES = ["passed", "failed", "unsupported", "error", "crash"]


def write_report(results, engines, report_dir, suite):
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / f"conformance-{suite}.json").write_text(json.dumps(results, indent=1))
    by_op = collections.defaultdict(list)
    for r in results:
        by_op[r["op"]].append(r)
    lines = [f"# ONNX backend node cases, suite {suite}", ""]
    totals = {e: collections.Counter() for e in engines}
    excluded = collections.Counter(r["excluded"] for r in results if "excluded" in r)
    bound_passed = sum(1 for r in results if r.get("bound") and r.get("kiln", {}).get("status") == "passed")
    for e in engines:
        for r in results:
            if e in r:
                totals[e][r[e]["status"]] += 1
    lines.append(f"{len(results)} cases, {sum(excluded.values())} excluded; of the others:")
    lines.append("")
    lines.append("| engine | " + " | ".join(STATUSES) + " |")
    lines.append("|---|" + "---|" * len(STATUSES))
    for e in engines:
        lines.append(f"| {e} | " + " | ".join(str(totals[e][s]) for s in STATUSES) + " |")
    lines.append("")
    if "kiln" in engines:
        lines.append(f"kiln passes {bound_passed} cases with inputs bound as constants (shapes, axes, pads, K, scales).")
        lines.append("")
    with_inputs = [r for r in results if r.get("bound") and "unbound" in r]
    if with_inputs:
        lines.append(f"The {len(with_inputs)} cases with such inputs, run with them given at run time, as the case has "
                     "them (not bound):")
        lines.append("")
        lines.append("| engine | " + " | ".join(STATUSES) + " |")
        lines.append("|---|" + "---|" * len(STATUSES))
        for e in engines:
            c = collections.Counter(r["unbound"][e]["status"] for r in with_inputs if e in r["unbound"])
            lines.append(f"| {e} | " + " | ".join(str(c[s]) for s in STATUSES) + " |")
        lines.append("")
    lines.append("Excluded: " + ", ".join(f"{why} ({n})" for why, n in excluded.most_common()) + ".")
    lines.append("")
    header = "| op type | cases | " + " | ".join(f"{e} passed / failed / unsupported / error+crash" for e in engines)
    lines.append(header + " | bound | " + " | ".join(f"{e} passed unbound" for e in engines) + " | excluded |")
    lines.append("|---|---|" + "---|" * len(engines) + "---|" + "---|" * len(engines) + "---|")
    for op in sorted(by_op):
        rs = by_op[op]
        cells = []
        for e in engines:
            c = collections.Counter(r[e]["status"] for r in rs if e in r)
            cells.append(f"{c['passed']} / {c['failed']} / {c['unsupported']} / {c['error'] + c['crash']}")
        bound = sum(1 for r in rs if r.get("bound"))
        unbound = [f"{sum(1 for r in rs if r.get('unbound', {}).get(e, {}).get('status') == 'passed')} / {bound}"
                   if bound else "" for e in engines]
        lines.append(f"| {op} | {len(rs)} | " + " | ".join(cells) + f" | {bound} | " + " | ".join(unbound)
                     + f" | {sum('excluded' in r for r in rs)} |")
    (report_dir / f"conformance-{suite}.md").write_text("\n".join(lines) + "\n")
    return totals, excluded


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=sorted(SUITES), action="append", help="default: both")
    parser.add_argument("--cases", type=pathlib.Path, help="a file of case names (one per line) to run alone")
    parser.add_argument("--engines", default="kiln,ort", help="kiln, ort or both (default)")
    parser.add_argument("--kiln", default=os.environ.get("KILN_BIN", str(ROOT / "build/bin/kiln")))
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--timeout", type=int, default=600, help="seconds per compile or run")
    parser.add_argument("--report", type=pathlib.Path, default=ROOT / "build/conformance")
    args = parser.parse_args()
    engines = args.engines.split(",")
    wanted = None
    if args.cases:
        wanted = {line.split("#")[0].strip() for line in args.cases.read_text().splitlines()} - {""}
    for suite in args.suite or sorted(SUITES):
        root = SUITES[suite]
        if not root.is_dir():
            sys.exit(f"conformance: suite {suite}: {root} is missing (make deps installs libonnx-testdata)")
        cases = sorted(p for p in root.iterdir() if (p / "model.onnx").exists() and (wanted is None or p.name in wanted))
        start = time.monotonic()
        kiln_engines = [e for e in engines if e == "kiln"]
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(run_case, case, args.kiln, kiln_engines, args.timeout) for case in cases]
            results = [f.result() for f in futures]
        if "ort" in engines:  # in this process, one case at a time (ORT is quick and uses its own threads)
            for case, result in zip(cases, results):
                if "excluded" not in result:
                    model, feeds, expected, bound = load_case(case)
                    result["ort"] = judge(*run_ort(model, feeds), expected)
                    if bound:
                        model, feeds, expected, _ = load_case(case, bind=False)
                        result.setdefault("unbound", {})["ort"] = judge(*run_ort(model, feeds), expected)
        totals, excluded = write_report(results, engines, args.report, suite)
        unbound = [r["unbound"] for r in results if "unbound" in r]
        print(f"suite {suite}: {len(cases)} cases in {time.monotonic() - start:.0f} s, {sum(excluded.values())} excluded; "
              + "; ".join(f"{e}: " + ", ".join(f"{totals[e][s]} {s}" for s in STATUSES) for e in engines)
              + f"; of the {len(unbound)} with shape-deciding inputs, given at run time: "
              + ", ".join(f"{e} {sum(u.get(e, {}).get('status') == 'passed' for u in unbound)} passed"
                          for e in engines)
              + f" (report: {args.report / f'conformance-{suite}.md'})", flush=True)


if __name__ == "__main__":
    main()
