"""kiln.serve (Ray Serve). Without a server: the protocol's checks, integers exact, a library with a
batch dimension running the samples of several requests together. On one machine: `python -m
kiln.serve` starting Ray locally, serving a library of batches 1 to 4 to concurrent requests, and
stopped by SIGINT with nothing left. On a Ray cluster of a head and two worker nodes on 127.0.0.1
(ray_cluster.py), the model deployed by `python -m kiln.serve --address` as two replicas, one per
worker node. Every socket that the Ray processes listen on, the cluster's and kiln serve's on one
machine, is on 127.0.0.1 (found by process in /proc). On the cluster: tritonclient's HTTP client
(JSON and binary tensors) against ONNX Runtime (float32: rtol 1e-5, atol 1e-5; integers exact);
health and metadata; 2,000 requests at concurrency 16 with zero errors (KILN_RAY_LOAD="10000,32"
for `make soak`, which also checks the replicas' resident memory flat); malformed requests answered
4xx with {"error": ...} while the server keeps serving; a replica's process killed under load
(every request answered correctly within 3 retries, and Serve brings the replica back); a second
application with Ray Serve's autoscaling_config; a library for instructions the CPU lacks refused
at load, also by a replica on the cluster. The cluster and everything it started is stopped at the
end."""
import concurrent.futures
import contextlib
import functools
import http.client
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.http as httpclient
import xxhash
from tritonclient.utils import InferenceServerException

from ray_cluster import (RayCluster, listening_sockets, on_loopback, process_titles,
                         processes_in_session as ray_cluster_processes_in_session)
from serving_models import compile_model, free_port, int_add, mlp

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build")).resolve()
RTOL = ATOL = 1e-5
ONNX_NAME = {"output_0": "y", "output_1": "s"}  # kiln's output names, the ONNX model's
DEPLOY_SECONDS = 180
RECOVER_SECONDS = 90
REPLICA_TITLE = "ray::ServeReplica:mlp:kiln-mlp"


def kiln_serve(*args, timeout=DEPLOY_SECONDS):
    # With this process's environment: RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (ray_cluster.py) lets it
    # reach the cluster at 127.0.0.1.
    return subprocess.run([sys.executable, "-m", "kiln.serve", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("libraries")
    compile_model(mlp(1), directory / "mlp.so")
    compile_model(int_add(), directory / "int_add.so")
    compile_model(mlp("N"), directory / "mlp_batch.so", "--dims", "N=1..4")  # one library for batches 1 to 4
    return directory


def for_no_cpu(library_bytes):
    """The library with 'frobnicate' added to its record of instruction-set extensions (and its
    checksum made anew, runtime/library_file.cc's format): no CPU has that."""
    assert library_bytes[-24:-16] == b"KILNSUM1"
    body = library_bytes[:-24]
    assert body[-8:] == b"KILNISA1"
    length = int.from_bytes(body[-16:-8], "little")
    text = body[-16 - length:-16] + b",frobnicate"
    body = body[:-16 - length] + text + len(text).to_bytes(8, "little") + b"KILNISA1"
    return body + b"KILNSUM1" + len(body).to_bytes(8, "little") + xxhash.xxh3_64_intdigest(body).to_bytes(8, "little")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    path = os.pathsep.join(filter(None, [str(BUILD / "python"), os.environ.get("PYTHONPATH")]))
    running = RayCluster(workers=2, worker_cpus=1, env={"PYTHONPATH": path}, log_dir=tmp_path_factory.mktemp("ray"))
    try:
        running.wait_for_nodes(3)
        yield running
    finally:
        running.stop()


class Server:
    def __init__(self, cluster, port):
        self.cluster, self.port, self.url = cluster, port, f"127.0.0.1:{port}"

    def request(self, method, path, body=None, headers=None):
        """(status, headers, body) of one HTTP request."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, path, body, headers or {})
            answer = connection.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read()
        finally:
            connection.close()

    def replica_pids(self):
        """The PIDs of this cluster's replica processes (their Ray process titles)."""
        ours = self.cluster.own_processes()
        return sorted(pid for pid in process_titles(REPLICA_TITLE) if pid in ours)

    def running_replicas(self):
        from ray import serve
        status = serve.status().applications["mlp"]
        return status.status, status.deployments["kiln-mlp"].replica_states.get("RUNNING", 0)


@pytest.fixture(scope="module")
def server(cluster, libraries):
    port = free_port()
    result = kiln_serve(libraries / "mlp.so", "--address", cluster.address, "--port", port, "--replicas", 2,
                        "--max-batch-size", 4, "--name", "mlp")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{cluster.log_text()}"
    assert f"at http://127.0.0.1:{port}/v2/models/mlp" in result.stdout
    running = Server(cluster, port)
    deadline = time.monotonic() + DEPLOY_SECONDS
    while running.running_replicas() != ("RUNNING", 2) or len(running.replica_pids()) != 2:
        assert time.monotonic() < deadline, f"not two running replicas: {running.running_replicas()}"
        time.sleep(0.5)
    return running


def off_loopback(sockets):
    """The sockets of listening_sockets() that are not on 127.0.0.1 or ::1, described."""
    return [f"{protocol} {address} port {port}: pid {pid} {title}"
            for pid, protocol, address, port, title in sockets if not on_loopback(address)]


def connect(url):
    return contextlib.closing(httpclient.InferenceServerClient(url, network_timeout=30))


def rows(seed, count=1):
    return np.random.default_rng(seed).standard_normal((count, 16)).astype(np.float32)


@functools.lru_cache(maxsize=None)
def onnxruntime_session(batch):
    return ort.InferenceSession(mlp(batch).SerializeToString(), providers=["CPUExecutionProvider"])


def reference(x, batch=1):
    y, s = onnxruntime_session(batch).run(["y", "s"], {"x": x})
    return {"output_0": y, "output_1": s}


def infer(client, x, binary_in=True, binary_out=True, version=""):
    tensor = httpclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary_in)
    outputs = [httpclient.InferRequestedOutput(name, binary_data=binary_out) for name in ONNX_NAME]
    answer = client.infer("mlp", [tensor], outputs=outputs, model_version=version)
    return {name: answer.as_numpy(name) for name in ONNX_NAME}


def check(got, x, batch=1):
    want = reference(x, batch)
    for name in ONNX_NAME:
        np.testing.assert_allclose(got[name], want[name], rtol=RTOL, atol=ATOL)


# Without a server: the protocol and the library's load.

def test_integers_through_the_protocol_are_exact(libraries):
    from kiln.serve.model import LoadedModel
    from kiln.serve.protocol import encode_response, parse_request
    model = LoadedModel((libraries / "int_add.so").read_bytes(), "int_add")
    a = np.array([[-2, -1, 0, 2**40, -(2**40)]], dtype=np.int64)
    b = np.array([[10, -20, 30, 2**41, 7]], dtype=np.int64)
    json_body = json.dumps({"inputs": [{"name": "a", "datatype": "INT64", "shape": [1, 5], "data": a.tolist()},
                                       {"name": "b", "datatype": "INT64", "shape": [1, 5], "data": b.ravel().tolist()}],
                            "outputs": [{"name": "output_0"}], "id": "r1"}).encode()
    inputs, requested, request_id = parse_request(json_body, None, model.signature)
    body, header_length = encode_response("int_add", "1", model.run(inputs), requested, model.signature, request_id)
    assert header_length is None
    answer = json.loads(body)
    assert answer["id"] == "r1" and answer["outputs"][0]["shape"] == [1, 5]
    assert answer["outputs"][0]["data"] == (a * 3 + b).ravel().tolist()
    header = json.dumps({"inputs": [{"name": n, "datatype": "INT64", "shape": [1, 5],
                                     "parameters": {"binary_data_size": 40}} for n in ("a", "b")],
                         "parameters": {"binary_data_output": True}}).encode()
    inputs, requested, _ = parse_request(header + a.tobytes() + b.tobytes(), str(len(header)), model.signature)
    body, header_length = encode_response("int_add", "1", model.run(inputs), requested, model.signature, None)
    assert json.loads(body[:header_length])["outputs"][0]["parameters"] == {"binary_data_size": 40}
    np.testing.assert_array_equal(np.frombuffer(body[header_length:], dtype=np.int64).reshape(1, 5), a * 3 + b)


def test_a_batch_dimension_runs_the_samples_of_several_requests_together(libraries):
    """A library of batches 1 to 4: requests of 1 to 4 rows are checked against that range, and
    consecutive requests run together while their rows fit one run, each answered with its rows."""
    from kiln.serve.model import LoadedModel
    from kiln.serve.protocol import ProtocolError, parse_request
    model = LoadedModel((libraries / "mlp_batch.so").read_bytes(), "mlp_batch")
    assert [t.metadata() for t in model.signature.inputs] == [{"name": "x", "datatype": "FP32", "shape": [-1, 16]}]
    assert [t.metadata()["shape"] for t in model.signature.outputs] == [[-1, 8], [-1, 1]]
    for count in (0, 5):
        body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [count, 16],
                                       "data": [0.5] * (16 * count)}]}).encode()
        with pytest.raises(ProtocolError, match=rf"has shape \[{count}, 16\]; the model takes \[N, 16\] with N from 1 to 4"):
            parse_request(body, None, model.signature)
    counts = [1, 3, 2, 1, 4, 1, 2, 2]  # runs: 1+3, 2+1, 4, 1+2, 2
    requests = [{"x": rows(40 + k, n)} for k, n in enumerate(counts)]
    results = model.run_many(requests)
    assert model.runs == 5
    for request, (ok, outputs) in zip(requests, results):
        assert ok, outputs
        check(outputs, request["x"], batch="N")


def test_outputs_of_several_rows_per_sample_are_split_at_sample_boundaries(tmp_path):
    """A batched output of 3 rows per sample ([N, 3, 4] reshaped to [3N, 4]): requests run
    together get their own 3 rows per sample back."""
    from kiln.serve.model import LoadedModel
    from onnx import TensorProto, helper, numpy_helper
    from serving_models import onnx_model
    model = onnx_model([helper.make_node("Reshape", ["x", "rows"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["R", 4])],
                       [numpy_helper.from_array(np.array([-1, 4], np.int64), "rows")])
    compile_model(model, tmp_path / "rows.so", "--dims", "N=1..4")
    loaded = LoadedModel((tmp_path / "rows.so").read_bytes(), "rows")
    requests = [{"x": np.random.default_rng(k).standard_normal((n, 3, 4)).astype(np.float32)}
                for k, n in enumerate([1, 2, 1])]
    results = loaded.run_many(requests)
    assert loaded.runs == 1
    for request, (ok, outputs) in zip(requests, results):
        assert ok, outputs
        np.testing.assert_array_equal(outputs["output_0"], np.maximum(request["x"].reshape(-1, 4), 0))


def test_a_library_for_instructions_the_cpu_lacks_is_refused(libraries, tmp_path):
    from kiln.serve.model import LibraryLoadError, LoadedModel
    stamped = for_no_cpu((libraries / "mlp.so").read_bytes())
    with pytest.raises(LibraryLoadError, match="compiled for instructions this CPU does not have: frobnicate"):
        LoadedModel(stamped, "mlp")
    (tmp_path / "nocpu.so").write_bytes(stamped)
    result = kiln_serve(tmp_path / "nocpu.so", "--port", free_port(), timeout=60)
    assert result.returncode == 1
    assert "kiln serve: model 'nocpu': kiln cannot load this library" in result.stderr
    assert "does not have: frobnicate (not known to this kiln)" in result.stderr


def test_kiln_serve_is_routed_by_the_installed_command():
    """`kiln serve ...` of the pip-installed command (kiln._cli) is `python -m kiln.serve ...`."""
    result = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['kiln', 'serve', '--help']; "
                             "from kiln._cli import main; main()"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: kiln serve [-h]") and "--address" in result.stdout


def test_one_machine(libraries, tmp_path):
    """`python -m kiln.serve mlp_batch.so` (a library of batches 1 to 4) starts Ray on this machine
    and serves concurrent requests of 1 to 4 rows, until SIGINT stops it and its local Ray."""
    port = free_port()
    ray_tmp = tempfile.mkdtemp(prefix="krl", dir="/tmp")  # short: Ray's socket paths are limited
    log = open(tmp_path / "serve.log", "w+")
    # As a user runs it: without ray_cluster.py's RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0.
    env = {name: value for name, value in os.environ.items() if name != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    process = subprocess.Popen([sys.executable, "-m", "kiln.serve", str(libraries / "mlp_batch.so"), "--port", str(port)],
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                               env=dict(env, RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=ray_tmp))
    try:
        deadline = time.monotonic() + DEPLOY_SECONDS
        while "kiln serve: model 'mlp_batch' at" not in (tmp_path / "serve.log").read_text():
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.5)
        assert f"at http://127.0.0.1:{port}/v2/models/mlp_batch" in (tmp_path / "serve.log").read_text()

        def worker(first):
            with connect(f"127.0.0.1:{port}") as client:
                for n in range(first, 64, 8):
                    x = rows(300 + n, 1 + n % 4)
                    tensor = httpclient.InferInput("x", list(x.shape), "FP32")
                    tensor.set_data_from_numpy(x, binary_data=n % 2 == 0)
                    answer = client.infer("mlp_batch", [tensor])
                    check({name: answer.as_numpy(name) for name in ONNX_NAME}, x, batch="N")

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(worker, range(8)))
        with connect(f"127.0.0.1:{port}") as client:
            assert client.get_model_metadata("mlp_batch")["inputs"][0]["shape"] == [-1, 16]
            tensor = httpclient.InferInput("x", [5, 16], "FP32")
            tensor.set_data_from_numpy(rows(1, 5))
            with pytest.raises(InferenceServerException, match=r"the model takes \[N, 16\] with N from 1 to 4"):
                client.infer("mlp_batch", [tensor])
        # Ray's local node and Serve listen on 127.0.0.1 only (kiln serve gives Ray that node address).
        sockets = listening_sockets([process.pid, *ray_cluster_processes_in_session(process.pid)])
        assert port in {socket[3] for socket in sockets}, sockets
        assert not off_loopback(sockets), "\n".join(off_loopback(sockets))
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        deadline = time.monotonic() + 15  # Ray's processes end in the seconds after ray.shutdown
        while ray_cluster_processes_in_session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = {pid: pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()[:200]
                for pid in ray_cluster_processes_in_session(process.pid)}
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert not left, f"processes left after kiln serve stopped: {left}"


# On the cluster.

def test_health_and_metadata(server):
    with connect(server.url) as client:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
        assert not client.is_model_ready("nope") and not client.is_model_ready("mlp", "2")
        assert client.get_server_metadata()["extensions"] == ["binary_tensor_data"]
        metadata = client.get_model_metadata("mlp")
        assert client.get_model_metadata("mlp", "1") == metadata
    assert metadata["versions"] == ["1"] and metadata["platform"] == "kiln"
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [1, 16]}]
    assert metadata["outputs"] == [{"name": "output_0", "datatype": "FP32", "shape": [1, 8]},
                                   {"name": "output_1", "datatype": "FP32", "shape": [1, 1]}]
    for path in ["/v2/health/live", "/v2/health/ready", "/v2/models/mlp/ready", "/v2/models/mlp/versions/1/ready"]:
        assert server.request("GET", path)[0] == 200, path
    status, _, body = server.request("GET", "/v2/models/mlp/versions/2")
    assert status == 404 and "has no version '2'" in json.loads(body)["error"]


def test_every_server_of_the_cluster_listens_on_loopback_only(server):
    """The listening TCP sockets and unconnected UDP sockets of every process of the cluster (GCS,
    raylets and their object managers, dashboard and runtime-env agents, metrics exporters, Serve's
    controller, proxy and replicas) and of this driver are on 127.0.0.1 (or ::1)."""
    import ray
    nodes = [node for node in ray.nodes() if node["Alive"]]
    assert [node["NodeManagerAddress"] for node in nodes] == ["127.0.0.1"] * 3, nodes
    sockets = server.cluster.listening_sockets()
    ports = {socket[3] for socket in sockets}
    # What the check must see, lest it pass by seeing nothing: the GCS, the HTTP proxy, each replica.
    assert {server.cluster.port, server.port} <= ports, sockets
    assert set(server.replica_pids()) <= {socket[0] for socket in sockets}, sockets
    assert not off_loopback(sockets), f"{len(off_loopback(sockets))} of {len(sockets)} sockets:\n" + \
        "\n".join(off_loopback(sockets))
    print(f"\n{len(sockets)} sockets of {len({socket[0] for socket in sockets})} processes, all on 127.0.0.1")


@pytest.mark.parametrize("binary_in,binary_out", [(True, True), (False, False), (True, False), (False, True)],
                         ids=["binary", "json", "binary-in", "binary-out"])
def test_outputs_match_onnxruntime(server, binary_in, binary_out):
    with connect(server.url) as client:
        for seed in range(4):
            x = rows(seed)
            check(infer(client, x, binary_in, binary_out, version="1" if seed % 2 else ""), x)


def test_malformed_requests_are_answered_4xx_and_the_server_keeps_serving(server):
    x = rows(7)

    def body(shape=(1, 16), datatype="FP32", size=64, data=None):
        tensor = {"name": "x", "datatype": datatype, "shape": list(shape)}
        if data is None:
            tensor["parameters"] = {"binary_data_size": size}
        else:
            tensor["data"] = data
        return json.dumps({"inputs": [tensor]}).encode()

    def binary(header, payload):
        return header + payload, {"Inference-Header-Content-Length": str(len(header))}

    cases = {
        "wrong dtype": (*binary(body(datatype="FP64", size=128), x.astype(np.float64).tobytes()),
                        "input 'x' has datatype FP64; the model takes FP32"),
        "wrong shape": (*binary(body(shape=(1, 15), size=60), x[:, :15].tobytes()),
                        "input 'x' has shape [1, 15]; the model takes [1, 16]"),
        "truncated binary": (*binary(body(), x.tobytes()[:40]), "the binary data is cut short (40 bytes left of the 64"),
        "2^40 elements, binary": (*binary(body(shape=(1, 2**40), size=4 * 2**40), x.tobytes()),
                                  "has shape [1, 1099511627776]; the model takes [1, 16]"),
        "2^40 elements, JSON": (body(shape=(2**20, 2**20), data=[0.5]), {}, "has shape [1048576, 1048576]"),
        "JSON of the wrong count": (body(data=[0.5] * 15), {}, "'data' holds 15 values; shape [1, 16] needs 16"),
        "JSON of strings": (body(data=["a"] * 16), {}, "'data' holds str"),
        "header past the body": (body(), {"Inference-Header-Content-Length": "9999"}, "says 9999 bytes of JSON"),
        "not JSON": (b"{inputs", {}, "not valid JSON"),
        "no inputs": (b'{"outputs": []}', {}, "no 'inputs' list"),
        "unknown input": (json.dumps({"inputs": [{"name": "z", "datatype": "FP32", "shape": [1], "data": [1]}]}).encode(),
                          {}, "the model has no input 'z'"),
        "unknown output": (json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16],
                                                   "data": [0] * 16}], "outputs": [{"name": "y"}]}).encode(),
                           {}, "the model has no output 'y'"),
    }
    for case, (content, headers, message) in cases.items():
        status, _, answer = server.request("POST", "/v2/models/mlp/infer", content, headers)
        assert status == 400, (case, status, answer)
        assert message in json.loads(answer)["error"], (case, answer)
    status, _, answer = server.request("POST", "/v2/models/nope/infer", body(data=[0] * 16))
    assert status == 404 and "no model 'nope' here (this server serves 'mlp')" in json.loads(answer)["error"]
    status, _, answer = server.request("POST", "/v2/models/mlp/infer", b"x" * (1 << 21))
    assert status == 413 and "exceeds this model's limit" in json.loads(answer)["error"]
    # tritonclient shows the server's message.
    with connect(server.url) as client:
        tensor = httpclient.InferInput("x", [1, 16], "FP64")
        tensor.set_data_from_numpy(x.astype(np.float64))
        with pytest.raises(InferenceServerException, match="input 'x' has datatype FP64; the model takes FP32"):
            client.infer("mlp", [tensor])
        check(infer(client, x), x)
    assert server.running_replicas() == ("RUNNING", 2)


def test_requests_under_load(server):
    """2,000 requests at concurrency 16, half with JSON tensors and half binary, every answer
    checked; with KILN_RAY_LOAD (`make soak`) the replicas' resident memory is checked flat after
    the first quarter."""
    count, concurrency = map(int, os.environ.get("KILN_RAY_LOAD", "2000,16").split(","))

    def worker(first, begin, end):
        done = 0
        with connect(server.url) as client:
            for n in range(begin + first, end, concurrency):
                x = rows(1000 + n)
                check(infer(client, x, binary_in=n % 2 == 0, binary_out=n % 4 < 2), x)
                done += 1
        return done

    def send(begin, end):
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            return sum(pool.map(lambda first: worker(first, begin, end), range(concurrency)))

    began = time.monotonic()
    done = send(0, count // 4)
    settled_kib = replica_resident_kib(server)
    done += send(count // 4, count)
    elapsed = time.monotonic() - began
    grown_kib = replica_resident_kib(server) - settled_kib
    assert done == count
    print(f"\n{count} requests at concurrency {concurrency}: {elapsed:.1f} s ({count / elapsed:.0f}/s); replicas' "
          f"resident memory {settled_kib / 1024:.0f} MB after the first quarter, {grown_kib / 1024:+.1f} MB after the rest")
    if "KILN_RAY_LOAD" in os.environ:
        assert grown_kib < 32 * 1024, f"the replicas grew by {grown_kib} KiB"


def replica_resident_kib(server):
    total = 0
    for pid in server.replica_pids():
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
        total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    return total


def test_a_replica_killed_under_load_comes_back(server):
    """600 requests at concurrency 16; after the first 100 answers one replica's process is killed
    (SIGKILL). Each request may be retried at most 3 times; every one ends with a correct answer,
    and Serve has two running replicas again, one of them new."""
    before = server.replica_pids()
    assert len(before) == 2
    victim, count, concurrency, retries = before[0], 600, 16, 3
    answered, retried, lock = [0], [0], threading.Lock()

    def one(client, x):
        for attempt in range(retries + 1):
            try:
                return infer(client, x)
            except (InferenceServerException, OSError) as e:
                if attempt == retries:
                    raise AssertionError(f"no answer after {retries} retries: {e}") from e
                with lock:
                    retried[0] += 1
                time.sleep(0.5 * (attempt + 1))

    def worker(first):
        with connect(server.url) as client:
            for n in range(first, count, concurrency):
                x = rows(5000 + n)
                check(one(client, x), x)
                with lock:
                    answered[0] += 1
                    if answered[0] == 100:
                        os.kill(victim, signal.SIGKILL)

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    assert answered[0] == count
    assert not pathlib.Path(f"/proc/{victim}").exists()
    began = time.monotonic()
    while server.running_replicas() != ("RUNNING", 2) or len(server.replica_pids()) != 2:
        assert time.monotonic() - began < RECOVER_SECONDS, f"no second replica again: {server.running_replicas()}"
        time.sleep(0.5)
    after = server.replica_pids()
    assert victim not in after and before[1] in after
    print(f"\nreplica {victim} killed: {retried[0]} retries; back as {set(after) - set(before)} after "
          f"{time.monotonic() - began:.1f} s")
    with connect(server.url) as client:
        for seed in range(8):  # both replicas answer
            check(infer(client, rows(seed)), rows(seed))


def test_autoscaling_from_ray_serves_configuration(server, libraries):
    """A second application (int_add under /auto) with Ray Serve's autoscaling_config: an invalid one
    is refused by Serve's own checks; a valid one serves (int64, exact) beside mlp."""
    common = ["--address", server.cluster.address, "--port", server.port, "--route-prefix", "/auto",
              "--num-cpus", 0, "--deploy-timeout", 120]  # no CPUs reserved: mlp's replicas hold them
    result = kiln_serve(libraries / "int_add.so", *common, "--autoscaling-config",
                        '{"min_replicas": 3, "max_replicas": 2}')
    assert result.returncode == 1 and "max_replicas" in result.stderr, result.stderr
    result = kiln_serve(libraries / "int_add.so", *common, "--autoscaling-config",
                        '{"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 4}')
    try:
        assert result.returncode == 0, result.stderr
        assert f"at http://127.0.0.1:{server.port}/auto/v2/models/int_add" in result.stdout
        a = np.array([[-2, -1, 0, 2**40, -(2**40)]], dtype=np.int64)
        b = np.array([[10, -20, 30, 2**41, 7]], dtype=np.int64)
        body = json.dumps({"inputs": [{"name": "a", "datatype": "INT64", "shape": [1, 5], "data": a.tolist()},
                                      {"name": "b", "datatype": "INT64", "shape": [1, 5], "data": b.tolist()}]})
        status, _, answer = server.request("POST", "/auto/v2/models/int_add/infer", body.encode())
        assert status == 200, answer
        assert json.loads(answer)["outputs"][0]["data"] == (a * 3 + b).ravel().tolist()
        assert server.request("GET", "/auto/v2/models/mlp/ready")[0] == 404
        assert server.request("GET", "/v2/models/mlp/ready")[0] == 200
    finally:
        from ray import serve
        serve.delete("int_add")


def test_a_replica_refuses_a_library_for_instructions_its_cpu_lacks(server, libraries, tmp_path):
    (tmp_path / "nocpu.so").write_bytes(for_no_cpu((libraries / "mlp.so").read_bytes()))
    # No CPUs reserved: the two replicas of mlp hold the workers' CPUs.
    result = kiln_serve(tmp_path / "nocpu.so", "--address", server.cluster.address, "--port", server.port,
                        "--route-prefix", "/nocpu", "--num-cpus", 0, "--deploy-timeout", 120)
    try:
        assert result.returncode == 1, result.stdout + result.stderr
        assert "kiln serve: model 'nocpu' was not deployed" in result.stderr, result.stderr
        assert ("kiln-nocpu: a replica refused the library: model 'nocpu': kiln cannot load this library on "
                in result.stderr), result.stderr
        assert "does not have: frobnicate (not known to this kiln)" in result.stderr, result.stderr
        print("\n" + result.stderr[result.stderr.index("kiln serve:"):])
    finally:
        from ray import serve
        serve.delete("nocpu")
    with connect(server.url) as client:
        check(infer(client, rows(3)), rows(3))
