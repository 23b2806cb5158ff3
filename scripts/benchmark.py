"""Latency of kiln beside ONNX Runtime on the model suite, in one process, behind `make benchmark`.

Each model (scripts/model_suite.py: seeded weights and inputs) is compiled through kiln's Python
package and loaded as an exported library; ONNX Runtime gets the same file with all graph
optimizations and the same number of threads. Both are timed end to end (inputs in, outputs out
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


def benchmark(name, args, work, kiln, onnx, ort, model_suite):
    path = model_suite.model_path(name)
    feeds = model_suite.seeded_inputs(onnx.load(str(path), load_external_data=False))

    start = time.perf_counter()
    mod, params = kiln.frontend.from_onnx(path, shape_dict={k: v.shape for k, v in feeds.items()})
    with kiln.transform.PassContext(opt_level=args.opt_level):
        lib = kiln.build(mod, target="cpu", params=params)
    compile_seconds = time.perf_counter() - start
    library = os.path.join(work, f"{name}.so")
    lib.export_library(library)
    gmod = kiln.graph_executor.GraphModule(kiln.runtime.load_module(library)["default"](kiln.cpu()))

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run_kiln():
        gmod.run(**feeds)
        return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]

    def run_ort():
        return session.run(None, feeds)

    got, want = run_kiln(), run_ort()
    error = max(float(np.abs(g.astype(np.float64) - w).max()) / max(1.0, float(np.abs(w).max()))
                for g, w in zip(got, want))
    kiln_rounds, ort_rounds = [], []
    for kiln_time, ort_time in zip(timed_rounds(run_kiln, args.rounds, args.number, args.settle),
                                   timed_rounds(run_ort, args.rounds, args.number, args.settle)):
        kiln_rounds.append(kiln_time)
        ort_rounds.append(ort_time)
    return compile_seconds, statistics.median(kiln_rounds), statistics.median(ort_rounds), error


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
    print(f"kiln -O{args.opt_level} beside ONNX Runtime {ort.__version__}, {args.threads} threads each, "
          f"median of {args.rounds} rounds of {args.number} runs (end to end, interleaved)")
    header = f"{'model':<16} {'compile s':>9} {'kiln ms':>9} {'ORT ms':>9} {'kiln/ORT':>9} {'max rel diff':>13}"
    print(header)
    print("-" * len(header))
    ratios = []
    with tempfile.TemporaryDirectory(prefix="kiln_benchmark_") as work:
        for name in names:
            compile_seconds, kiln_s, ort_s, error = benchmark(name, args, work, kiln, onnx, ort, model_suite)
            ratios.append(kiln_s / ort_s)
            print(f"{name:<16} {compile_seconds:>9.1f} {kiln_s * 1e3:>9.2f} {ort_s * 1e3:>9.2f} "
                  f"{kiln_s / ort_s:>9.2f} {error:>13.2g}", flush=True)
    geomean = float(np.exp(np.mean(np.log(ratios))))
    print(f"geometric mean of kiln/ORT over {len(ratios)} models: {geomean:.2f}")


if __name__ == "__main__":
    main()
