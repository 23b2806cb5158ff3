"""The real Triton Inference Server for the kiln backend's tests: the `tritonserver` binary of PyPI's
nvidia-pytriton 0.7.0 (Triton 2.51.0), started on 127.0.0.1 only, on free ports, with kiln's
backend directory, and stopped by the test that started it; the models it serves come from
serving_models.py."""
import os
import pathlib
import subprocess
import time
import urllib.request

import pytriton

from serving_models import compile_model, free_port, image, int_add, mlp, sequence_model  # noqa: F401 (test_triton_backend's imports)

SERVER = pathlib.Path(pytriton.__file__).parent / "tritonserver" / "bin" / "tritonserver"
START_SECONDS = 60
# The server's process thread count (KILN_NUM_THREADS), set so that the backend's default thread
# counts (this divided by the instances) do not depend on the machine's cores.
NUM_THREADS = 2


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
