"""One engine timing one model in a process of its own (scripts/benchmark.py starts it), so that no
other engine's spinning worker threads share the cores with it. Prints one JSON line: the seconds
loading took (kiln: load the library and create its executor; ONNX Runtime: create the session;
OpenVINO: read and compile the model and create an infer request), each timed run's seconds,
peak resident memory, and anonymous resident memory after loading; writes the outputs.

    python worker.py --engine kiln|onnxruntime|openvino --model M.onnx [--library M.so]
        --inputs in.npz --outputs out.npz --threads N --warmup 0.5 --runs 20 [--executors K]

With --executors K, K executors (kiln executors of one loaded library; ONNX Runtime sessions;
OpenVINO compiled models), each of N threads, run at once in K Python threads (every engine lets go
of the GIL while it runs); the times are all their runs'.

kiln runs from the Python package on PYTHONPATH with KILN_NUM_THREADS set by the caller; the peers
run from the peers' venv (scripts/peers_env.sh). Each run is end to end: inputs in, outputs out
as numpy arrays."""
import argparse
import json
import threading
import time

import numpy as np


def status_bytes(field):
    """A memory line of /proc/self/status ("RssAnon", "VmHWM"), in bytes. (Not getrusage's
    ru_maxrss: a child started by fork and exec inherits its parent's peak.)"""
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def load_kiln(args, feeds):
    import kiln

    module = kiln.graph_executor.GraphModule(kiln.runtime.load_module(args.library)["default"](kiln.cpu()))
    module.set_num_threads(args.threads)

    def run():
        module.run(**feeds)
        return [module.get_output(i).numpy() for i in range(module.get_num_outputs())]
    return run


def load_onnxruntime(args, feeds):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, feeds)


def load_openvino(args, feeds):
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(args.model, "CPU", {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32",
                                                     "INFERENCE_NUM_THREADS": args.threads})
    request = compiled.create_infer_request()
    names = [output.get_any_name() for output in compiled.outputs]

    def run():
        results = request.infer(feeds)
        by_name = {key.get_any_name(): value for key, value in results.items()}
        return [np.array(by_name[name], copy=True) for name in names]
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, choices=["kiln", "onnxruntime", "openvino"])
    parser.add_argument("--model", required=True)
    parser.add_argument("--library")
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--outputs")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--warmup", type=float, default=0.5, help="seconds of untimed runs first")
    parser.add_argument("--runs", type=int, default=20, help="timed runs")
    parser.add_argument("--executors", type=int, default=1, help="executors running at once")
    args = parser.parse_args()
    feeds = dict(np.load(args.inputs))
    anon_before = status_bytes("RssAnon")
    start = time.perf_counter()
    load = {"kiln": load_kiln, "onnxruntime": load_onnxruntime, "openvino": load_openvino}[args.engine]
    run = load(args, feeds)
    load_seconds = time.perf_counter() - start
    anon_after_load = status_bytes("RssAnon")
    start = time.perf_counter()
    outputs = run()
    first_run_seconds = time.perf_counter() - start
    if args.outputs:
        np.savez(args.outputs, *outputs)
    runners = [run] + [load(args, feeds) for _ in range(args.executors - 1)]
    times = []

    def time_runs(run):
        start = time.perf_counter()
        while time.perf_counter() - start < args.warmup:
            run()
        for _ in range(args.runs):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)

    threads = [threading.Thread(target=time_runs, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"load_seconds": load_seconds, "first_run_seconds": first_run_seconds, "times": times,
                      "anon_load_bytes": anon_after_load - anon_before,
                      "peak_rss_bytes": status_bytes("VmHWM")}))


if __name__ == "__main__":
    main()
