"""Serving throughput and latency, kiln's Triton backend beside ONNX Runtime served through Triton by
PyTriton (ONNX Runtime inside PyTriton's Python inference function: Triton's Python backend, not
Triton's ONNX Runtime backend): `perf_analyzer` (from tritonclient 2.51.0) at concurrency 1, 4 and
16 on the suite's ResNet-18 and BERT 2-layer encoder, each server alone on the machine, on
127.0.0.1, with the process's threads (KILN_NUM_THREADS / ONNX Runtime's intra-op threads) set to
--threads. No batching on either side (the suite's models take one sample). Run with the Python of
scripts/triton_env.sh (make benchmark-serving):

    python scripts/benchmark_serving.py [--models resnet18,bert_2layer] [--concurrency 1,4,16]
        [--seconds 5] [--threads 2] [--markdown FILE]
"""
import argparse
import csv
import io
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytriton

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests/python"))
import model_suite  # noqa: E402
from serving_models import free_port  # noqa: E402
import triton_server  # noqa: E402

PYTRITON_LIBS = pathlib.Path(pytriton.__file__).parent.parent / "nvidia_pytriton.libs"
# The inputs of the suite's models as perf_analyzer sends them (zeros: token id 0 is in BERT's range).
SHAPES = {"resnet18": ("input", "FP32", "1,3,224,224"), "bert_2layer": ("input_ids", "INT64", "1,128")}

PYTRITON_SERVER = r'''
import sys
import numpy as np
import onnxruntime as ort
from pytriton.model_config import ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

path, name, input_name, threads, http, grpc, metrics = sys.argv[1:8]
options = ort.SessionOptions()
options.intra_op_num_threads = int(threads)
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
feed = session.get_inputs()[0]
dtype = np.int64 if "int64" in feed.type else np.float32

def infer(requests):
    return [{"output_0": session.run(None, {input_name: r[input_name]})[0]} for r in requests]

config = TritonConfig(http_address="127.0.0.1", http_port=int(http), grpc_address="127.0.0.1", grpc_port=int(grpc),
                      metrics_address="127.0.0.1", metrics_port=int(metrics))
# perf_analyzer reads the statistics endpoint, which PyTriton guards with a token by default.
with Triton(config=config, security_config=TritonSecurityConfig(restricted_endpoints=[])) as triton:
    triton.bind(model_name=name, infer_func=infer, inputs=[Tensor(name=input_name, dtype=dtype, shape=tuple(feed.shape))],
                outputs=[Tensor(name="output_0", dtype=np.float32, shape=(-1, -1, -1)[:len(session.get_outputs()[0].shape)])],
                config=ModelConfig(batching=False))
    triton.serve()
'''


def perf_analyzer_env(work):
    """perf_analyzer links libcudart.so.12 and libb64.so.0d, which the nvidia-pytriton wheel bundles
    under hashed names: links of the names it wants, on its library path."""
    libs = work / "perf_analyzer_libs"
    libs.mkdir(exist_ok=True)
    for wanted, pattern in [("libcudart.so.12", "libcudart-*.so.12*"), ("libb64.so.0d", "libb64-*.so.0d")]:
        found = sorted(PYTRITON_LIBS.glob(pattern))
        if not found:
            raise SystemExit(f"{pattern} is not in {PYTRITON_LIBS}")
        link = libs / wanted
        if not link.exists():
            link.symlink_to(found[0])
    return dict(os.environ, LD_LIBRARY_PATH=f"{libs}:{PYTRITON_LIBS}:{os.environ.get('LD_LIBRARY_PATH', '')}")


def measure(args, env, url, model, concurrency):
    """perf_analyzer's throughput (inferences/s) and p50 / p99 latency (ms) at one concurrency."""
    name, datatype, shape = SHAPES[model]
    with tempfile.NamedTemporaryFile(suffix=".csv") as report:
        result = subprocess.run([str(pathlib.Path(sys.executable).parent / "perf_analyzer"), "-m", model, "-u", url, "-i", "http",
                        "--concurrency-range", f"{concurrency}:{concurrency}", "--input-data", "zero",
                        "--shape", f"{name}:{shape}", "--measurement-interval", str(args.seconds * 1000),
                        "--stability-percentage", "50", "-f", report.name],
                       capture_output=True, text=True, env=env, timeout=600)
        if result.returncode != 0:
            raise SystemExit(f"perf_analyzer failed on {model} at {url}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
        row = next(csv.DictReader(io.StringIO(pathlib.Path(report.name).read_text())))
    return float(row["Inferences/Second"]), float(row["p50 latency"]) / 1000, float(row["p99 latency"]) / 1000


def wait_ready(url, model, process, seconds=120):
    """Until the PyTriton server's model is ready (the server is, before PyTriton binds the model)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the PyTriton server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://{url}/v2/models/{model}/ready", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("the PyTriton server was not ready in time")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,bert_2layer")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--seconds", type=int, default=5, help="perf_analyzer's measurement interval")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--kiln", default=str(ROOT / "build/bin/kiln"))
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--markdown")
    args = parser.parse_args()
    models = args.models.split(",")
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        env = perf_analyzer_env(work)
        prefix = work / "prefix"
        for component in ["runtime", "triton"]:
            subprocess.run(["cmake", "--install", args.build, "--prefix", str(prefix), "--component", component],
                           check=True, capture_output=True)
        repository = work / "repository"
        for model in models:
            version = repository / model / "1"
            version.mkdir(parents=True)
            (repository / model / "config.pbtxt").write_text('backend: "kiln"\n')
            subprocess.run([args.kiln, "compile", str(model_suite.model_path(model)), "-O3", "-o",
                            str(version / "model.so")], check=True, capture_output=True)
        triton_server.NUM_THREADS = args.threads  # the server's KILN_NUM_THREADS
        kiln = triton_server.TritonServer(repository, prefix / "lib/triton/backends", work / "kiln.log")
        try:
            for model in models:
                for c in levels:
                    rows.append(("kiln (Triton backend)", model, c, *measure(args, env, kiln.http_url, model, c)))
                    print(rows[-1], flush=True)
        finally:
            kiln.stop()
        for model in models:
            http, grpc, metrics = free_port(), free_port(), free_port()
            server = subprocess.Popen([sys.executable, "-c", PYTRITON_SERVER, str(model_suite.model_path(model)), model,
                                       SHAPES[model][0], str(args.threads), str(http), str(grpc), str(metrics)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_ready(f"127.0.0.1:{http}", model, server)
                for c in levels:
                    rows.append(("ONNX Runtime 1.19.2 (PyTriton)", model, c,
                                 *measure(args, env, f"127.0.0.1:{http}", model, c)))
                    print(rows[-1], flush=True)
            finally:
                server.terminate()
                server.wait(timeout=60)
    lines = ["| server | model | concurrency | inferences/s | p50 ms | p99 ms |", "|---|---|---|---|---|---|"]
    for server, model, c, throughput, p50, p99 in sorted(rows, key=lambda r: (r[1], r[2], r[0])):
        lines.append(f"| {server} | {model} | {c} | {throughput:.1f} | {p50:.2f} | {p99:.2f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table)


if __name__ == "__main__":
    main()
