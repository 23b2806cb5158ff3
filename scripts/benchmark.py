"""kiln beside ONNX Runtime and OpenVINO on the model suite, behind `make benchmark`.

Each model (scripts/model_suite.py: seeded weights and inputs) is compiled by `kiln compile -O3`
(timed cold, with an empty object cache, and warm), then each engine times it in a process of its
own (scripts/benchmark/worker.py), so that no engine's spinning worker threads take the cores from
another's runs: kiln from its Python package, ONNX Runtime (all graph optimizations) and OpenVINO
(CPU, LATENCY hint, f32 precision) from the peers' venv (scripts/peers_env.sh, versions pinned
there and named in the README). The engines alternate, --repeats processes each per thread count;
an engine's time is the best of its processes' medians of --runs timed runs (end to end: inputs in,
outputs out as numpy arrays) after --warmup seconds of untimed runs.

Reported per model and thread count: milliseconds, kiln's ratio to each peer and to the faster
one, kiln's GFLOP/s (convolutions, transposed convolutions, matrix products: 2 flops per
multiply-add) and its share of the FP32 FMA peak measured on the spot (scripts/benchmark/
fma_peak.cc); per model: compile time, load time (library + executor, session, compiled model),
the first run, anonymous resident memory after loading (RssAnon) and peak resident memory, and the
largest difference between kiln's outputs and ONNX Runtime's; before and after each model, the
cores' distance (scripts/benchmark/core_distance.cc: how much slower a core reads what another
wrote than the writer does; about 3 on a shared machine whose cores are far apart for a while,
which slows every engine's two-thread runs, memory-bound models most).

Throughput: --batch B gives every model's inputs batch B (the ONNX file rewritten, shapes inferred
again); --executors K runs K executors of each engine at once in one process, each of the thread
count (kiln: executors of one library with their own thread counts; ONNX Runtime: sessions;
OpenVINO: compiled models), and adds items per second (B x K / median run).

    PYTHONPATH=build/python python scripts/benchmark.py [--models resnet18,bert_2layer]
        [--threads 2,1] [--repeats 3] [--runs 20] [--warmup 0.5] [--engines kiln,onnxruntime,openvino]
        [--batch 8] [--executors 2] [--markdown table.md]
"""
import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import model_suite  # noqa: E402

WORKER = ROOT / "scripts/benchmark/worker.py"
ENGINES = ["kiln", "kiln+dnnl", "onnxruntime", "openvino"]
PEERS = ["onnxruntime", "openvino"]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(model_suite.MODELS))
    parser.add_argument("--threads", default="2,1", help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=3, help="processes per engine and thread count")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per process")
    parser.add_argument("--warmup", type=float, default=0.5, help="seconds of untimed runs per process")
    parser.add_argument("--engines", default="kiln,onnxruntime,openvino", help=f"of {', '.join(ENGINES)}")
    parser.add_argument("--kiln", default=str(ROOT / "build/bin/kiln"))
    parser.add_argument("--python-path", default=str(ROOT / "build/python"), help="where the kiln package is")
    parser.add_argument("--batch", type=int, default=1, help="batch size of every input")
    parser.add_argument("--executors", type=int, default=1, help="executors of each engine running at once")
    parser.add_argument("--markdown", help="also write the tables to this file")
    args = parser.parse_args()
    args.models = args.models.split(",")
    args.threads = [int(t) for t in args.threads.split(",")]
    args.engines = args.engines.split(",")
    unknown = [m for m in args.models if m not in model_suite.MODELS] + [e for e in args.engines if e not in ENGINES]
    if unknown:
        raise SystemExit(f"unknown {unknown} (models: {', '.join(model_suite.MODELS)}; engines: {', '.join(ENGINES)})")
    return args


def cpu_description():
    fields = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = fields.get("flags", "").split()
    isa = "AVX-512" if "avx512f" in flags else "AVX2 + FMA" if "avx2" in flags and "fma" in flags else "SSE"
    return f"{fields.get('model name', 'unknown CPU')}, {os.cpu_count()} cores, {isa}"


def fma_peak(work, threads):
    """FP32 GFLOP/s of independent FMA chains in the widest vectors, on `threads` threads."""
    binary = pathlib.Path(work) / "fma_peak"
    if not binary.exists():
        subprocess.run(["g++", "-O3", "-march=native", "-pthread", str(ROOT / "scripts/benchmark/fma_peak.cc"), "-o",
                        str(binary)], check=True)
    return max(float(subprocess.run([str(binary), str(threads), "0.5"], check=True, capture_output=True,
                                    text=True).stdout.split()[0]) for _ in range(3))


def core_distance(work):
    """How much slower a core reads what another core wrote than the writing core reads it
    (scripts/benchmark/core_distance.cc): about 1 when the two cores are close, about 3 when they
    are far apart, as this project's shared machine's are for minutes at a time; None where this
    process may run on one core only."""
    if len(os.sched_getaffinity(0)) < 2:
        return None
    binary = pathlib.Path(work) / "core_distance"
    if not binary.exists():
        subprocess.run(["g++", "-O2", "-pthread", str(ROOT / "scripts/benchmark/core_distance.cc"), "-o", str(binary)],
                       check=True)
    return float(subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout.split()[0])


def model_flops(model):
    """2 x the multiply-adds of the model's convolutions, transposed convolutions and matrix products."""
    model = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    shapes.update({i.name: list(i.dims) for i in model.graph.initializer})
    macs = 0
    for node in model.graph.node:
        ins = [shapes.get(name) for name in node.input]
        out = shapes.get(node.output[0])
        if not out or any(s is None for s in ins[:2]):
            continue
        if node.op_type == "Conv":  # N x Cout x spatial, each Cin/group x kernel
            macs += int(np.prod(out)) * int(np.prod(ins[1][1:]))
        elif node.op_type == "ConvTranspose":  # each input element meets Cout/group x kernel weights
            macs += int(np.prod(ins[0])) * int(np.prod(ins[1][1:]))
        elif node.op_type in ("MatMul", "Gemm"):
            transposed = node.op_type == "Gemm" and any(a.name == "transA" and a.i for a in node.attribute)
            k = ins[0][-2] if transposed else ins[0][-1]
            macs += int(np.prod(out)) * k
    return 2 * macs


def with_batch(model, batch):
    """The model with `batch` as the first dimension of its inputs and outputs (other shapes
    inferred again by the engines)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    initializers = {i.name for i in model.graph.initializer}
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        if value.name not in initializers and len(dims) > 0:
            dims[0].dim_value = batch
    del model.graph.value_info[:]
    return model


def compile_kiln(args, path, library, flags, cache):
    """Seconds of `kiln compile -O3` with the object cache at `cache` as it is."""
    start = time.perf_counter()
    subprocess.run([args.kiln, "compile", str(path), "-O3", "-o", str(library), *flags], check=True,
                   capture_output=True, env={**os.environ, "KILN_CACHE_DIR": str(cache)})
    return time.perf_counter() - start


def run_worker(args, engine, path, library, inputs, outputs, threads):
    if engine.startswith("kiln"):
        python = sys.executable
        env = {**os.environ, "PYTHONPATH": args.python_path, "KILN_NUM_THREADS": str(threads)}
    else:
        python = args.peers_python
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [python, str(WORKER), "--engine", "kiln" if engine.startswith("kiln") else engine, "--model", str(path),
               "--inputs", str(inputs), "--threads", str(threads), "--runs", str(args.runs),
               "--warmup", str(args.warmup), "--executors", str(args.executors)]
    if library:
        command += ["--library", str(library)]
    if outputs:
        command += ["--outputs", str(outputs)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{engine} failed on {path.name}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def benchmark_model(args, name, work):
    path = model_suite.model_path(name)
    model = onnx.load(str(path))
    if args.batch > 1:
        model = with_batch(model, args.batch)
        path = pathlib.Path(work) / f"{name}.batch{args.batch}.onnx"
        onnx.save(model, str(path))
    feeds = model_suite.seeded_inputs(model)
    inputs = pathlib.Path(work) / f"{name}.in.npz"
    np.savez(inputs, **feeds)
    result = {"name": name, "gflop": model_flops(model) / 1e9,
              "weights_mb": sum(numpy_helper.to_array(i).nbytes for i in model.graph.initializer) / 1e6,
              "libraries": {}, "compile": {}}
    for engine in [e for e in args.engines if e.startswith("kiln")]:
        library = pathlib.Path(work) / f"{name}.{engine}.so"
        flags = ["--byoc", "dnnl"] if engine == "kiln+dnnl" else []
        cache = pathlib.Path(work) / f"cache-{name}-{engine}"
        result["compile"][engine] = (compile_kiln(args, path, library, flags, cache),
                                     compile_kiln(args, path, library, flags, cache))
        result["libraries"][engine] = library
    runs = {}
    for threads in args.threads:
        for repeat in range(args.repeats):
            for engine in args.engines:
                outputs = pathlib.Path(work) / f"{name}.{engine}.out.npz" if repeat == 0 and threads == args.threads[0] else None
                measured = run_worker(args, engine, path, result["libraries"].get(engine), inputs, outputs, threads)
                runs.setdefault((engine, threads), []).append(measured)
    result["runs"] = runs
    result["seconds"] = {key: min(statistics.median(m["times"]) for m in measured) for key, measured in runs.items()}
    if "onnxruntime" in args.engines:
        reference = np.load(pathlib.Path(work) / f"{name}.onnxruntime.out.npz")
        result["difference"] = {}
        for engine in [e for e in args.engines if e != "onnxruntime"]:
            got = np.load(pathlib.Path(work) / f"{name}.{engine}.out.npz")
            result["difference"][engine] = max(
                float(np.abs(got[k].astype(np.float64) - reference[k]).max()) / max(1.0, float(np.abs(reference[k]).max()))
                for k in reference.files)
    return result


def ratio_columns(args):
    return [peer for peer in PEERS if peer in args.engines]


def latency_table(args, results, peaks):
    peers = ratio_columns(args)
    short = {"kiln": "kiln", "kiln+dnnl": "kiln+dnnl", "onnxruntime": "ORT", "openvino": "OpenVINO"}
    kiln_engines = [e for e in args.engines if e.startswith("kiln")]
    header = ["model", "threads", "GFLOP"] + [f"{short[e]} ms" for e in args.engines]
    header += [f"{short[k]} / {short[p]}" for k in kiln_engines for p in peers]
    if len(peers) > 1:
        header += [f"{short[k]} / best" for k in kiln_engines]
    header += ["kiln GFLOP/s (% of peak)"]
    items = args.batch * args.executors
    if items > 1:
        header += [f"items/s ({', '.join(short[e] for e in args.engines)})"]
    rows, geomeans = [], {}
    for threads in args.threads:
        for r in results:
            s = r["seconds"]
            row = [r["name"], str(threads), f"{r['gflop']:.2f}"]
            row += [f"{s[(e, threads)] * 1e3:.3g}" for e in args.engines]
            for k in kiln_engines:
                for p in peers:
                    ratio = s[(k, threads)] / s[(p, threads)]
                    geomeans.setdefault((k, p, threads), []).append(ratio)
                    row.append(f"{ratio:.2f}")
            if len(peers) > 1:
                for k in kiln_engines:
                    ratio = s[(k, threads)] / min(s[(p, threads)] for p in peers)
                    geomeans.setdefault((k, "best", threads), []).append(ratio)
                    row.append(f"**{ratio:.2f}**")
            if "kiln" in args.engines:
                rate = r["gflop"] * args.executors / s[("kiln", threads)]
                row.append(f"{rate:.0f} ({100 * rate / (peaks[threads] * args.executors):.0f}%)")
            else:
                row.append("")
            if items > 1:
                row.append(" / ".join(f"{items / s[(e, threads)]:.0f}" for e in args.engines))
            rows.append(row)
    lines = table(header, rows)
    for (k, p, threads), values in geomeans.items():
        lines.append(f"geometric mean of {short[k]} / {short.get(p, p)} at {threads} thread{'s' * (threads > 1)} over "
                     f"{len(values)} models: {float(np.exp(np.mean(np.log(values)))):.2f}")
    return lines


def resources_table(args, results):
    short = {"kiln": "kiln", "kiln+dnnl": "kiln+dnnl", "onnxruntime": "ORT", "openvino": "OpenVINO"}
    header = ["model", "weights MB"] + [f"{short[e]} compile s (cold / warm)" for e in args.engines if e.startswith("kiln")]
    header += [f"load ms ({', '.join(short[e] for e in args.engines)})",
               f"first run ms ({', '.join(short[e] for e in args.engines)})",
               f"RssAnon after load MB ({', '.join(short[e] for e in args.engines)})",
               f"peak RSS MB ({', '.join(short[e] for e in args.engines)})"]
    if "onnxruntime" in args.engines:
        header.append("max rel. difference to ORT")
    rows = []
    for r in results:
        def best(key, scale, engine):
            return f"{min(m[key] for (e, _), ms in r['runs'].items() if e == engine for m in ms) * scale:.0f}"
        row = [r["name"], f"{r['weights_mb']:.0f}"]
        row += [f"{r['compile'][e][0]:.1f} / {r['compile'][e][1]:.1f}" for e in args.engines if e.startswith("kiln")]
        row += [" / ".join(best(key, scale, e) for e in args.engines)
                for key, scale in (("load_seconds", 1e3), ("first_run_seconds", 1e3), ("anon_load_bytes", 1e-6),
                                   ("peak_rss_bytes", 1e-6))]
        if "onnxruntime" in args.engines:
            row.append(", ".join(f"{short[e]} {d:.1e}" for e, d in r["difference"].items()))
        rows.append(row)
    return table(header, rows)


def table(header, rows):
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def main():
    args = parse_args()
    args.peers_python = None
    if any(e in PEERS for e in args.engines):
        args.peers_python = subprocess.run([str(ROOT / "scripts/peers_env.sh"), "--print-python"], check=True,
                                           capture_output=True, text=True).stdout.strip()
        versions = subprocess.run([args.peers_python, "-c", "import onnxruntime, openvino; "
                                   "print(onnxruntime.__version__, openvino.__version__)"],
                                  check=True, capture_output=True, text=True).stdout.split()
    with tempfile.TemporaryDirectory(prefix="kiln_benchmark_") as work:
        peaks = {t: fma_peak(work, t) for t in args.threads}
        title = [f"{datetime.date.today()}, {cpu_description()}; FP32 FMA peak measured "
                 + ", ".join(f"{peaks[t]:.0f} GFLOP/s on {t} thread{'s' * (t > 1)}" for t in args.threads)]
        if args.batch * args.executors > 1:
            title.append(f"batch {args.batch}; {args.executors} executor{'s' * (args.executors > 1)} of each engine at "
                         "once, each of the thread count (threads per executor; the peak is per executor's threads)")
        if args.peers_python:
            title.append(f"ONNX Runtime {versions[0]}, OpenVINO {versions[1].split('-')[0]} (CPU, LATENCY, f32); kiln -O3; "
                         f"best of {args.repeats} processes' medians of {args.runs} runs each")
        print("\n".join(title) + "\n", flush=True)
        results, distances = [], []
        for name in args.models:
            before = core_distance(work)
            results.append(benchmark_model(args, name, work))
            r = results[-1]
            print(f"{name}: " + ", ".join(f"{e} {t}T {s * 1e3:.3g} ms" for (e, t), s in r["seconds"].items()), flush=True)
            if before is not None:
                distances.append(f"{name} {before:.1f} / {core_distance(work):.1f}")
        lines = title + [""] + latency_table(args, results, peaks)
        if distances:
            lines += ["", "cores' distance before / after each model (a core's read of what another wrote over "
                      "the writer's own read; about 3: far apart, every engine's two-thread runs slower): "
                      + ", ".join(distances)]
        lines += [""] + resources_table(args, results)
    print("\n".join(lines[len(title):]))
    if args.markdown:
        pathlib.Path(args.markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
