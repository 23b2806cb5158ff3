"""Latency of kiln beside ONNX Runtime on the model suite, in one process, behind `make benchmark`.

Each model (scripts/model_suite.py: seeded weights and inputs) is compiled through kiln's Python
package and loaded as an exported library, once with kiln's own kernels and, when this build has
oneDNN, once with what oneDNN runs handed to it (kiln+dnnl: kiln.contrib.partition_for "dnnl",
TVM's partition_for_dnnl); ONNX Runtime gets the same file with all graph
optimizations and the same number of threads. All are timed end to end (inputs in, outputs out
as numpy arrays) in interleaved rounds, so that load on this shared machine hits both alike. A
round first runs untimed for --settle seconds: ONNX Runtime's worker threads keep spinning for tens
of milliseconds after a run, and would otherwise take the cores from kiln's next runs (and kiln's
from ONNX Runtime's). A round's time is the mean of --number runs; the table gives the median round
of each, their ratio and the largest difference between the two outputs.

    PYTHONPATH=build/python python scripts/benchmark.py [--models resnet18,bert_2layer]
        [--opt-level 3] [--rounds 15] [--number 5] [--settle 0.1] [--threads N]
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="comma-separated names (default: the whole suite)")
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=5, help="timed runs per round")
    parser.add_argument("--settle", type=float, default=0.1, help="seconds of untimed runs that start a round")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    return parser.parse_args()


def timed_rounds(run, rounds, number, settle):
    """The mean seconds of `number` calls of run after `settle` seconds of untimed calls, once per
    round (a generator, so that two engines' rounds interleave)."""
    for _ in range(rounds):
        start = time.perf_counter()
        while time.perf_counter() - start < settle:
            run()
        start = time.perf_counter()
        for _ in range(number):
            run()
        yield (time.perf_counter() - start) / number


def compile_kiln(kiln, path, feeds, args, library, byoc):
    """kiln's library for the model (with what oneDNN runs handed to it when byoc is "dnnl"),
    loaded; and the seconds compiling took."""
    start = time.perf_counter()
    mod, params = kiln.frontend.from_onnx(path, shape_dict={k: v.shape for k, v in feeds.items()})
    if byoc:
        mod = kiln.contrib.partition_for(mod, byoc, params)
    with kiln.transform.PassContext(opt_level=args.opt_level):
        lib = kiln.build(mod, target="cpu", params=params)
    seconds = time.perf_counter() - start
    lib.export_library(library)
    return kiln.graph_executor.GraphModule(kiln.runtime.load_module(library)["default"](kiln.cpu())), seconds


def benchmark(name, args, work, kiln, onnx, ort, model_suite):
    """Per engine (kiln, kiln+dnnl when this build has oneDNN, ONNX Runtime): the median round's
    seconds; with kiln's compile seconds and the largest output difference from ONNX Runtime."""
    path = model_suite.model_path(name)
    feeds = model_suite.seeded_inputs(onnx.load(str(path), load_external_data=False))
    engines = {}
    compile_seconds = None
    for byoc in ["", "dnnl"] if args.dnnl else [""]:
        gmod, seconds = compile_kiln(kiln, path, feeds, args, os.path.join(work, f"{name}{byoc}.so"), byoc)
        compile_seconds = compile_seconds or seconds

        def run_kiln(gmod=gmod):
            gmod.run(**feeds)
            return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]
        engines["kiln+" + byoc if byoc else "kiln"] = run_kiln

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    engines["ORT"] = lambda: session.run(None, feeds)

    want = engines["ORT"]()
    error = 0.0
    for engine, run in engines.items():
        if engine != "ORT":
            error = max([error] + [float(np.abs(g.astype(np.float64) - w).max()) / max(1.0, float(np.abs(w).max()))
                                   for g, w in zip(run(), want)])
    rounds = {engine: [] for engine in engines}
    timers = [timed_rounds(run, args.rounds, args.number, args.settle) for run in engines.values()]
    for times in zip(*timers):
        for engine, seconds in zip(engines, times):
            rounds[engine].append(seconds)
    return compile_seconds, {engine: statistics.median(r) for engine, r in rounds.items()}, error


def main():
    args = parse_args()
    # Before kiln starts its thread pool.
    os.environ["KILN_NUM_THREADS"] = str(args.threads)
    import onnx
    import onnxruntime as ort

    import kiln
    import model_suite

    names = args.models.split(",") if args.models else model_suite.MODELS
    unknown = [n for n in names if n not in model_suite.MODELS]
    if unknown:
        raise SystemExit(f"unknown models {unknown} (the suite: {', '.join(model_suite.MODELS)})")
    args.dnnl = kiln.contrib.external_codegens().get("dnnl", False)
    print(f"kiln -O{args.opt_level}{' and kiln+dnnl (--byoc dnnl)' if args.dnnl else ''} beside ONNX Runtime "
          f"{ort.__version__}, {args.threads} threads each, median of {args.rounds} rounds of {args.number} runs "
          f"(end to end, interleaved)")
    dnnl_columns = f" {'dnnl ms':>9} {'dnnl/ORT':>9}" if args.dnnl else ""
    header = (f"{'model':<16} {'compile s':>9} {'kiln ms':>9} {'ORT ms':>9} {'kiln/ORT':>9}{dnnl_columns} "
              f"{'max rel diff':>13}")
    print(header)
    print("-" * len(header))
    ratios, dnnl_ratios = [], []
    with tempfile.TemporaryDirectory(prefix="kiln_benchmark_") as work:
        for name in names:
            compile_seconds, times, error = benchmark(name, args, work, kiln, onnx, ort, model_suite)
            ratios.append(times["kiln"] / times["ORT"])
            line = (f"{name:<16} {compile_seconds:>9.1f} {times['kiln'] * 1e3:>9.2f} {times['ORT'] * 1e3:>9.2f} "
                    f"{ratios[-1]:>9.2f}")
            if args.dnnl:
                dnnl_ratios.append(times["kiln+dnnl"] / times["ORT"])
                line += f" {times['kiln+dnnl'] * 1e3:>9.2f} {dnnl_ratios[-1]:>9.2f}"
            print(f"{line} {error:>13.2g}", flush=True)
    for label, values in (("kiln/ORT", ratios), ("kiln+dnnl/ORT", dnnl_ratios)):
        if values:
            print(f"geometric mean of {label} over {len(values)} models: {float(np.exp(np.mean(np.log(values)))):.2f}")


if __name__ == "__main__":
    main()
