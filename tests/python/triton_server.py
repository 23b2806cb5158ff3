"""The real Triton Inference Server for the kiln backend's tests: the `tritonserver` binary of PyPI's
nvidia-pytriton 0.7.0 (Triton 2.51.0), started on 127.0.0.1 only, on free ports, with kiln's
backend directory, and stopped by the test that started it; plus the small ONNX models the tests
serve, compiled with the `kiln` command line (env KILN_BIN)."""
import contextlib
import os
import pathlib
import socket
import subprocess
import time
import urllib.request

import numpy as np
import onnx
import pytriton
from onnx import TensorProto, helper, numpy_helper

KILN = os.environ.get("KILN_BIN", "build/bin/kiln")
SERVER = pathlib.Path(pytriton.__file__).parent / "tritonserver" / "bin" / "tritonserver"
START_SECONDS = 60
# The server's process thread count (KILN_NUM_THREADS), set so that the backend's default thread
# counts (this divided by the instances) do not depend on the machine's cores.
NUM_THREADS = 2


def compile_model(model, out, *extra):
    """Saves the ONNX model beside `out` and compiles it with `kiln compile` (at -O3)."""
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    source = out.parent / (out.name.split(".")[0] + ".onnx")
    onnx.save(model, source)
    result = subprocess.run([KILN, "compile", str(source), "-o", str(out), *extra], capture_output=True, text=True)
    assert result.returncode == 0, f"kiln compile {source} failed:\n{result.stderr}"
    source.unlink()  # the repository holds only what Triton serves


def onnx_model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def mlp(batch, seed=31):
    """y = relu(x @ W + b) [batch, 8] and s = the largest of each row of y [batch, 1], x: [batch, 16];
    weights from the seed."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((16, 8)).astype(np.float32) / 4
    b = rng.standard_normal(8).astype(np.float32) / 4
    return onnx_model(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"]),
         helper.make_node("ReduceMax", ["y"], ["s"], axes=[1], keepdims=1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [batch, 1])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def int_add():
    """c = a * 3 + b on int64 [1, 5]: two inputs, exact results."""
    three = numpy_helper.from_array(np.array(3, dtype=np.int64), "three")
    return onnx_model(
        [helper.make_node("Mul", ["a", "three"], ["a3"]), helper.make_node("Add", ["a3", "b"], ["c"])],
        [helper.make_tensor_value_info("a", TensorProto.INT64, [1, 5]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [1, 5])],
        [helper.make_tensor_value_info("c", TensorProto.INT64, [1, 5])], [three])


def image(seed=33):
    """y = relu(conv3x3(x) + b) [1, 4, 112, 112], x: float32 [1, 3, 112, 112] (147 KiB: large enough
    that Triton's HTTP frontend hands it over in several buffers)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) / 4
    b = rng.standard_normal(4).astype(np.float32) / 4
    return onnx_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["pre"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["pre"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 112, 112])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 112, 112])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def free_port():
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TritonServer:
    """tritonserver on 127.0.0.1 (HTTP, gRPC and metrics on free ports), with KILN_NUM_THREADS set
    to NUM_THREADS; stop() ends it."""

    def __init__(self, repository, backend_directory, log_path, extra_args=()):
        self.repository = pathlib.Path(repository)
        self.http_port, self.grpc_port, self.metrics_port = free_port(), free_port(), free_port()
        self.log_path = pathlib.Path(log_path)
        args = [str(SERVER), f"--model-repository={repository}", f"--backend-directory={backend_directory}",
                "--http-address=127.0.0.1", f"--http-port={self.http_port}",
                "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}",
                "--metrics-address=127.0.0.1", f"--metrics-port={self.metrics_port}",
                "--allow-gpu-metrics=false", "--allow-cpu-metrics=false", "--log-verbose=0",
                "--exit-timeout-secs=10", *extra_args]
        self.log = open(self.log_path, "w")
        env = dict(os.environ, KILN_NUM_THREADS=str(NUM_THREADS))
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=env)
        self.http_url = f"127.0.0.1:{self.http_port}"
        self.grpc_url = f"127.0.0.1:{self.grpc_port}"
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        self._wait_ready()

    def _wait_ready(self):
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"tritonserver exited with {self.process.returncode}:\n{self.log_text()}")
            try:
                with urllib.request.urlopen(f"http://{self.http_url}/v2/health/live", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise AssertionError(f"tritonserver was not live within {START_SECONDS} s:\n{self.log_text()}")

    def log_text(self, tail=6000):
        """The server's log so far (its last `tail` characters; None: all of it)."""
        self.log.flush()
        text = self.log_path.read_text(errors="replace")
        return text if tail is None else text[-tail:]

    def resident_kib(self):
        """The server process's resident memory (VmRSS), KiB."""
        status = pathlib.Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()
