"""kiln's Triton backend (libtriton_kiln) in the real Triton Inference Server 2.51.0: installed by
`cmake --install` and loaded from there; configurations completed from the library; outputs over
HTTP and gRPC against ONNX Runtime (float32: rtol 1e-5, atol 1e-5; integers: exact); batches run
row by row; 2,000 requests at concurrency 16 with two instances; malformed requests answered with
errors while the server keeps serving; load and unload through the repository API; statistics and
metrics with the backend's compute time; a large input gathered from a chunked HTTP body; thread
counts following instances added and removed in place; Triton's uint32 batch size. The server listens on 127.0.0.1 only and is stopped at the
end (triton_server.py)."""
import concurrent.futures
import contextlib
import http.client
import json
import os
import pathlib
import re
import socket
import subprocess
import time

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from triton_server import NUM_THREADS, TritonServer, compile_model, image, int_add, mlp, sequence_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build"))
RTOL = ATOL = 1e-5
# kiln libraries name their outputs output_0, output_1, ... (the ONNX model's y and s).
ONNX_NAME = {"output_0": "y", "output_1": "s"}
LOADED_AT_START = ["mlp", "mlp_batch", "mlp_var", "int_add", "int_add_batch"]


def write_model(repository, name, config, library=None, tvmc_library=None, version_number=1, flags=()):
    """<repository>/<name>/config.pbtxt and a version's library (one file, or the tvmc layout),
    compiled with `flags`."""
    version = repository / name / str(version_number)
    version.mkdir(parents=True)
    if config is not None:
        (repository / name / "config.pbtxt").write_text(config)
    if library is not None:
        compile_model(library, version / "model.so", *flags)
    if tvmc_library is not None:
        compile_model(tvmc_library, version / "mod", "--format", "tvmc")
        for part in (version / "mod").iterdir():
            part.rename(version / part.name)
        (version / "mod").rmdir()


@pytest.fixture(scope="module")
def backend_directory(tmp_path_factory):
    """`cmake --install` of the runtime and the backend into a fresh prefix: Triton loads the
    installed backend, which finds libkiln_runtime by its rpath."""
    prefix = tmp_path_factory.mktemp("prefix")
    for component in ["runtime", "triton"]:
        result = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix), "--component", component],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    return prefix / "lib" / "triton" / "backends"


@pytest.fixture(scope="module")
def server(tmp_path_factory, backend_directory):
    repository = tmp_path_factory.mktemp("repository")
    write_model(repository, "mlp", 'backend: "kiln"\n', mlp(1))
    write_model(repository, "mlp_batch", """backend: "kiln"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 500 }
instance_group [ { count: 2 kind: KIND_CPU } ]
parameters { key: "warmup" value: { string_value: "true" } }
""", mlp(1))
    # Dims Triton lets through that the library does not take: kiln checks them itself.
    write_model(repository, "mlp_var", """backend: "kiln"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 1, -1 ] } ]
output [ { name: "output_0" data_type: TYPE_FP32 dims: [ -1, 8 ] } ]
parameters { key: "num_threads" value: { string_value: "2" } }
""", mlp(1))
    write_model(repository, "int_add", 'backend: "kiln"\n', int_add())
    # Rows of 40 bytes: most lie off 64-byte boundaries, so they are copied in, not read in place.
    write_model(repository, "int_add_batch", 'backend: "kiln"\nmax_batch_size: 4\n', int_add())
    write_model(repository, "mlp_tvmc", 'backend: "kiln"\n', tvmc_library=mlp(1))
    write_model(repository, "wide_batch", 'backend: "kiln"\nmax_batch_size: 4\n', mlp(4))
    write_model(repository, "versions", 'backend: "kiln"\n', mlp(1))
    log = tmp_path_factory.mktemp("log") / "tritonserver.log"
    running = TritonServer(repository, backend_directory, log,
                           ["--model-control-mode=explicit", *[f"--load-model={m}" for m in LOADED_AT_START]])
    try:
        with connect(httpclient, running.http_url) as client:
            for name in LOADED_AT_START:
                assert client.is_model_ready(name), f"{name} is not ready:\n{running.log_text()}"
        yield running
    finally:
        running.stop()


def connect(client_module, url):
    """A client that closes its connections when the `with` ends (the server waits for open ones
    when it stops)."""
    return contextlib.closing(client_module.InferenceServerClient(url))


def settled_statistics(client, model, seconds=0.3, timeout=10.0):
    """The model's statistics once its success count has stopped moving for `seconds`: Triton
    counts a request after its response has gone out, so a request an earlier test sent (or the
    last ones of this test) may be counted a moment after the client has its answer."""
    deadline = time.monotonic() + timeout
    stats = client.get_inference_statistics(model)["model_stats"][0]
    while True:
        time.sleep(seconds)
        again = client.get_inference_statistics(model)["model_stats"][0]
        if again["inference_stats"]["success"]["count"] == stats["inference_stats"]["success"]["count"]:
            return again
        if time.monotonic() > deadline:
            raise AssertionError(f"the statistics of {model} did not settle in {timeout} s")
        stats = again


def reference(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def infer(client_module, url, model, inputs, outputs):
    """Runs `model` on {name: array} through the given client module (tritonclient.http or .grpc);
    returns the named outputs as {name: array}."""
    tensors = []
    for name, array in inputs.items():
        tensor = client_module.InferInput(name, list(array.shape), datatype_of(array))
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    with connect(client_module, url) as client:
        result = client.infer(model, tensors, outputs=[client_module.InferRequestedOutput(name) for name in outputs])
    return {name: result.as_numpy(name) for name in outputs}


def datatype_of(array):
    return {np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64", np.dtype(np.int64): "INT64",
            np.dtype(np.int32): "INT32", np.dtype(object): "BYTES"}[array.dtype]


def rows(seed, count):
    return np.random.default_rng(seed).standard_normal((count, 16)).astype(np.float32)


def test_one_line_config_is_completed_from_the_library(server):
    with connect(httpclient, server.http_url) as client:
        config, batch = client.get_model_config("mlp"), client.get_model_config("mlp_batch")
    assert config["backend"] == "kiln" and int(config.get("max_batch_size", 0)) == 0
    tensors = {t["name"]: (t["data_type"], [int(d) for d in t["dims"]]) for t in config["input"] + config["output"]}
    assert tensors == {"x": ("TYPE_FP32", [1, 16]), "output_0": ("TYPE_FP32", [1, 8]),
                       "output_1": ("TYPE_FP32", [1, 1])}
    assert [int(d) for d in batch["input"][0]["dims"]] == [16]  # without the batch dimension
    assert sum(int(g["count"]) for g in batch["instance_group"]) == 2
    log = server.log_text(tail=None)
    # Two instances share the server's NUM_THREADS (its KILN_NUM_THREADS); mlp_var sets its own.
    assert "model 'mlp_batch' version 1: kiln library" in log
    assert (f"max_batch_size 8, {max(1, NUM_THREADS // 2)} threads per instance ({NUM_THREADS} threads over "
            "2 instances; follows the live instances)") in log
    assert re.search(r"model 'mlp_var' version 1: .*, 2 threads per instance \(parameter num_threads\)", log)


@pytest.mark.parametrize("client_module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_outputs_match_onnxruntime(server, client_module):
    url = server.http_url if client_module is httpclient else server.grpc_url
    x = rows(1, 1)
    want = reference(mlp(1), {"x": x})
    got = infer(client_module, url, "mlp", {"x": x}, ["output_0", "output_1"])
    for name in ["output_0", "output_1"]:
        np.testing.assert_allclose(got[name], want[ONNX_NAME[name]], rtol=RTOL, atol=ATOL)
    # Only the outputs a request names are sent.
    tensor = client_module.InferInput("x", [1, 16], "FP32")
    tensor.set_data_from_numpy(x)
    with connect(client_module, url) as client:
        result = client.infer("mlp", [tensor], outputs=[client_module.InferRequestedOutput("output_1")])
    response = result.get_response(as_json=True) if client_module is grpcclient else result.get_response()
    assert [o["name"] for o in response["outputs"]] == ["output_1"]

    a = np.arange(5, dtype=np.int64).reshape(1, 5) - 2
    b = np.array([[10, -20, 30, 2**40, -(2**40)]], dtype=np.int64)
    np.testing.assert_array_equal(infer(client_module, url, "int_add", {"a": a, "b": b}, ["output_0"])["output_0"], a * 3 + b)
    a3 = np.arange(15, dtype=np.int64).reshape(3, 5) * 7 - 50
    b3 = np.arange(15, dtype=np.int64).reshape(3, 5)[::-1].copy()
    got3 = infer(client_module, url, "int_add_batch", {"a": a3, "b": b3}, ["output_0"])["output_0"]
    np.testing.assert_array_equal(got3, a3 * 3 + b3)
    # Inputs of different row counts in one request are refused (by Triton already).
    with pytest.raises(InferenceServerException, match="batch size does not match other inputs"):
        infer(client_module, url, "int_add_batch", {"a": a3, "b": b3[:2]}, ["output_0"])

    # Batches of k rows run as k runs of the library: the same as ONNX Runtime on the batch.
    x5 = rows(2, 5)
    want5 = reference(mlp("N"), {"x": x5})
    got5 = infer(client_module, url, "mlp_batch", {"x": x5}, ["output_0", "output_1"])
    for name in ["output_0", "output_1"]:
        np.testing.assert_allclose(got5[name], want5[ONNX_NAME[name]], rtol=RTOL, atol=ATOL)


def test_requests_under_load_with_two_instances(server):
    """2,000 requests of 1 to 3 rows at concurrency 16 (KILN_TRITON_LOAD="10000,32" for the long
    form, `make soak`), half over HTTP and half over gRPC; the dynamic batcher gathers them for two
    instances. Every answer is checked; the server's resident memory stays flat after the first
    quarter; statistics and metrics show kiln's compute."""
    count, concurrency = map(int, os.environ.get("KILN_TRITON_LOAD", "2000,16").split(","))
    with connect(httpclient, server.http_url) as client:
        before = settled_statistics(client, "mlp_batch")
    session = ort.InferenceSession(mlp("N").SerializeToString(), providers=["CPUExecutionProvider"])

    def worker(first, begin, end):
        checked = rows_sent = 0
        with connect(httpclient, server.http_url) as http_c, connect(grpcclient, server.grpc_url) as grpc_c:
            for n in range(begin + first, end, concurrency):
                x = rows(1000 + n, 1 + n % 3)
                module, client = (httpclient, http_c) if n % 2 == 0 else (grpcclient, grpc_c)
                tensor = module.InferInput("x", list(x.shape), "FP32")
                tensor.set_data_from_numpy(x)
                answer = client.infer("mlp_batch", [tensor], outputs=[module.InferRequestedOutput("output_0")])
                y = answer.as_numpy("output_0")
                np.testing.assert_allclose(y, session.run(["y"], {"x": x})[0], rtol=RTOL, atol=ATOL)
                checked += 1
                rows_sent += x.shape[0]
        return checked, rows_sent

    def send(begin, end):
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(lambda first: worker(first, begin, end), range(concurrency)))

    began = time.monotonic()
    results = send(0, count // 4)
    settled_kib = server.resident_kib()
    results += send(count // 4, count)
    elapsed = time.monotonic() - began
    grown_kib = server.resident_kib() - settled_kib
    assert sum(r[0] for r in results) == count
    sent_rows = sum(r[1] for r in results)
    print(f"{count} requests ({sent_rows} rows) at concurrency {concurrency}: {elapsed:.1f} s; server resident "
          f"memory {settled_kib / 1024:.0f} MB after the first quarter, {grown_kib / 1024:+.1f} MB after the rest")
    assert grown_kib < 16 * 1024, f"the server grew by {grown_kib} KiB"

    with connect(httpclient, server.http_url) as client:
        after = settled_statistics(client, "mlp_batch")
    infer_stats = after["inference_stats"]
    assert int(infer_stats["success"]["count"]) - int(before["inference_stats"]["success"]["count"]) == count
    assert int(after["inference_count"]) - int(before["inference_count"]) == sent_rows
    executions = int(after["execution_count"]) - int(before["execution_count"])
    assert 0 < executions <= count
    assert int(infer_stats["compute_infer"]["ns"]) > int(before["inference_stats"]["compute_infer"]["ns"])
    batch_sizes = {int(b["batch_size"]) for b in after["batch_stats"]}
    assert batch_sizes and max(batch_sizes) <= 8
    metrics = http.client.HTTPConnection("127.0.0.1", server.metrics_port, timeout=10)
    metrics.request("GET", "/metrics")
    text = metrics.getresponse().read().decode()
    compute = re.search(r'nv_inference_compute_infer_duration_us\{model="mlp_batch",version="1"\} (\d+)', text)
    assert compute and int(compute.group(1)) > 0, text[:2000]
    # Two instances, each warmed up at load.
    warmed = set(re.findall(r"instance '(mlp_batch[^']*)': warm-up run took", server.log_text(tail=None)))
    assert len(warmed) == 2, warmed


def post(server, path, body, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    connection.request("POST", path, body=body, headers=headers or {})
    answer = connection.getresponse()
    return answer.status, answer.read().decode(errors="replace")


def assert_still_serving(server):
    assert server.alive(), server.log_text()
    x = rows(7, 1)
    got = infer(httpclient, server.http_url, "mlp", {"x": x}, ["output_0"])["output_0"]
    np.testing.assert_allclose(got, reference(mlp(1), {"x": x})["y"], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("case", ["wrong_dtype", "wrong_shape", "kiln_checks_variable_dims", "bytes_tensor",
                                  "batch_too_large", "truncated_binary", "shape_2_pow_40", "unknown_model"])
def test_malformed_requests_are_errors_and_the_server_keeps_serving(server, case):
    if case in ("truncated_binary", "shape_2_pow_40", "unknown_model"):
        if case == "truncated_binary":
            header = json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32",
                                             "parameters": {"binary_data_size": 64}}]}).encode()
            status, text = post(server, "/v2/models/mlp/infer", header + b"\0" * 20,
                                {"Inference-Header-Content-Length": str(len(header))})
        elif case == "shape_2_pow_40":
            # 2^40 elements declared, 64 bytes sent: past Triton's dims check on mlp_var ([1, -1]),
            # where Triton finds the byte size wrong, and as 2^40 rows on mlp_batch, which Triton
            # 2.51 hands to the backend as a request of shape [16] (its batch size truncated to 0):
            # kiln refuses it. The data goes as binary: Triton 2.51's HTTP frontend itself aborts
            # (std::bad_alloc) on JSON "data" under such a shape, before any backend sees it.
            for model, shape, expected in [("mlp_var", [1, 2**40], "input byte size mismatch"),
                                           ("mlp_batch", [2**40, 16], "model 'mlp_batch': input 'x': the request's "
                                            "shape is [16], the model takes [b, 16] with b from 1 to 8")]:
                header = json.dumps({"inputs": [{"name": "x", "shape": shape, "datatype": "FP32",
                                                 "parameters": {"binary_data_size": 64}}]}).encode()
                status, text = post(server, f"/v2/models/{model}/infer", header + b"\0" * 64,
                                    {"Inference-Header-Content-Length": str(len(header))})
                assert status == 400 and expected in text, (status, text)
                tensor = grpcclient.InferInput("x", shape, "FP32")
                tensor._raw_content = b"\0" * 64
                with pytest.raises(InferenceServerException) as error, connect(grpcclient, server.grpc_url) as client:
                    client.infer(model, [tensor])
                assert expected in str(error.value)
        else:
            status, text = post(server, "/v2/models/no_such_model/infer",
                                json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32",
                                                        "data": [0.0] * 16}]}))
        assert 400 <= status < 500, (status, text)
        assert "error" in text
    else:
        model, inputs, expected = {
            "wrong_dtype": ("mlp", {"x": rows(3, 1).astype(np.float64)}, "FP64"),
            "wrong_shape": ("mlp", {"x": np.zeros((1, 15), np.float32)}, "[1,15]"),
            # Triton lets [1, 15] through dims [1, -1]; kiln names what the library takes.
            "kiln_checks_variable_dims": ("mlp_var", {"x": np.zeros((1, 15), np.float32)},
                                          "model 'mlp_var': input 'x': the request's shape is [1, 15], "
                                          "the model takes [1, 16]"),
            "bytes_tensor": ("mlp", {"x": np.array([[b"a"] * 16], dtype=object)}, "BYTES"),
            "batch_too_large": ("mlp_batch", {"x": rows(4, 9)}, "batch-size must be <= 8"),
        }[case]
        for module, url in [(httpclient, server.http_url), (grpcclient, server.grpc_url)]:
            with pytest.raises(InferenceServerException) as error:
                infer(module, url, model, inputs, ["output_0"])
            assert expected.replace(" ", "") in str(error.value).replace(" ", ""), str(error.value)
    assert_still_serving(server)


def test_batch_size_past_uint32_is_served_as_triton_truncates_it(server):
    """Triton 2.51 keeps a request's batch size in a uint32: 2^32+1 rows of 16 floats, declared with
    the 64 bytes of one row, reach the backend as one row and are served as one. The backend checks
    the shape and byte size it is handed, so it stays memory-safe."""
    x = rows(11, 1)
    header = json.dumps({"inputs": [{"name": "x", "shape": [2**32 + 1, 16], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 64}}],
                         "outputs": [{"name": "output_0", "parameters": {"binary_data": False}}]}).encode()
    status, text = post(server, "/v2/models/mlp_batch/infer", header + x.tobytes(),
                        {"Inference-Header-Content-Length": str(len(header))})
    assert status == 200, (status, text)
    output = json.loads(text)["outputs"][0]
    assert output["shape"] == [1, 8], output
    np.testing.assert_allclose(np.array(output["data"], np.float32).reshape(1, 8), reference(mlp(1), {"x": x})["y"],
                               rtol=RTOL, atol=ATOL)
    assert_still_serving(server)


def test_load_and_unload_through_the_repository_api(server):
    x = rows(5, 1)
    want = reference(mlp(1), {"x": x})["y"]
    with connect(httpclient, server.http_url) as http_c, connect(grpcclient, server.grpc_url) as grpc_c:
        for client in [http_c, grpc_c]:  # the tvmc layout: mod.so, mod.json, mod.params
            client.load_model("mlp_tvmc")
            assert client.is_model_ready("mlp_tvmc")
            got = infer(httpclient, server.http_url, "mlp_tvmc", {"x": x}, ["output_0"])["output_0"]
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
            client.unload_model("mlp_tvmc")
            deadline = time.monotonic() + 30
            while client.is_model_ready("mlp_tvmc") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not client.is_model_ready("mlp_tvmc")
        # A library whose leading dimension is 4 cannot batch: the load fails with kiln's reason.
        with pytest.raises(InferenceServerException) as error:
            http_c.load_model("wide_batch")
        assert "needs every input and output of the library to have a leading dimension of 1" in str(error.value)
        assert "input 'x' has shape [4, 16]" in str(error.value)
        index = {m["name"]: m.get("state") for m in http_c.get_model_repository_index()}
        assert index["mlp_tvmc"] == "UNAVAILABLE" and index["wide_batch"] == "UNAVAILABLE"

        # A new version in the repository, loaded while the old one serves: Triton's default policy
        # serves the latest, from a library of its own.
        http_c.load_model("versions")
        got = infer(httpclient, server.http_url, "versions", {"x": x}, ["output_0"])["output_0"]
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        write_model(server.repository, "versions", None, mlp(1, seed=32), version_number=2)
        http_c.load_model("versions")
        got = infer(httpclient, server.http_url, "versions", {"x": x}, ["output_0"])["output_0"]
        np.testing.assert_allclose(got, reference(mlp(1, seed=32), {"x": x})["y"], rtol=RTOL, atol=ATOL)
        assert not np.allclose(got, want)
        assert [m["version"] for m in http_c.get_model_repository_index() if m["name"] == "versions" and
                m.get("state") == "READY"] == ["2"]
        http_c.unload_model("versions")
    assert_still_serving(server)


def wait_for_log(server, pattern, seconds=30):
    """The matches of `pattern` in the server's log, waiting until there is one."""
    deadline = time.monotonic() + seconds
    while True:
        found = re.findall(pattern, server.log_text(tail=None))
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def instance_summaries(server, model):
    """Per ended instance of `model`: (rows run, runs, input rows read in place, copied, gathered)."""
    pattern = (rf"instance '{model}[^']*': (\d+) rows run in (\d+) runs; input rows: (\d+) read in place, (\d+) copied, "
               r"(\d+) gathered")
    return [tuple(map(int, m)) for m in wait_for_log(server, pattern)]


def post_chunked(server, path, header, data, chunk=16384):
    """POSTs a binary-data inference request with a chunked body (HTTP/1.1 chunked transfer
    encoding, chunks of `chunk` bytes, sent 10 ms apart); returns (status, JSON header, binary data)."""
    body = header + data
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
            f"Inference-Header-Content-Length: {len(header)}\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    with contextlib.closing(socket.create_connection(("127.0.0.1", server.http_port), timeout=30)) as sock:
        sock.sendall(head)
        for begin in range(0, len(body), chunk):
            part = body[begin:begin + chunk]
            sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            time.sleep(0.01)
        sock.sendall(b"0\r\n\r\n")
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        content = answer.read()
    length = int(answer.getheader("Inference-Header-Content-Length", len(content)))
    return answer.status, json.loads(content[:length]), content[length:]


def test_large_inputs_in_several_buffers_are_gathered(server):
    """A 147 KiB input over HTTP (binary) and gRPC against ONNX Runtime. An HTTP body that reaches
    Triton in two reads is handed over in two buffers (libevent's chunks), which the backend
    gathers: the instance's summary when it ends says so. (tritonclient's one write arrives in one
    buffer on this machine; gRPC's request is always one buffer.)"""
    write_model(server.repository, "image", 'backend: "kiln"\n', image())
    x = np.random.default_rng(9).standard_normal((1, 3, 112, 112)).astype(np.float32)
    want = reference(image(), {"x": x})["y"]
    ended = 0
    for module, url in [(httpclient, server.http_url), (grpcclient, server.grpc_url)]:
        with connect(httpclient, server.http_url) as client:
            client.load_model("image")
            for _ in range(3):
                got = infer(module, url, "image", {"x": x}, ["output_0"])["output_0"]
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
            if module is httpclient:
                header = json.dumps({"inputs": [{"name": "x", "shape": [1, 3, 112, 112], "datatype": "FP32",
                                                 "parameters": {"binary_data_size": x.nbytes}}],
                                     "outputs": [{"name": "output_0", "parameters": {"binary_data": True}}]}).encode()
                status, answer, data = post_chunked(server, "/v2/models/image/infer", header, x.tobytes())
                assert status == 200, (status, answer)
                got = np.frombuffer(data, np.float32).reshape(answer["outputs"][0]["shape"])
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
            client.unload_model("image")
        deadline = time.monotonic() + 30
        while len(instance_summaries(server, "image")) == ended and time.monotonic() < deadline:
            time.sleep(0.1)
        summaries = instance_summaries(server, "image")
        assert len(summaries) == ended + 1, server.log_text()
        run, runs, in_place, copied, gathered = summaries[-1]
        ended += 1
        if module is httpclient:
            assert run == runs == 4 and in_place + copied + gathered == 4 and gathered >= 1, summaries
        else:
            assert run == runs == 3 and gathered == 0, summaries
    assert_still_serving(server)


def test_a_library_with_a_batch_dimension_runs_dynamic_batches_together(server):
    """mlp compiled with --dims N=1..8: the one-line configuration gets max_batch_size 8, and the
    rows of the requests a dynamic batch gathers run as one run of the library (the instance's
    summary counts fewer runs than rows); a request of more rows than the library's largest batch
    (max_batch_size 20 written) runs in several; a library of batches from 2 refuses one row with
    kiln's message. Every answer against ONNX Runtime."""
    write_model(server.repository, "dims_together", 'backend: "kiln"\ndynamic_batching { max_queue_delay_microseconds: 50000 }\n',
                mlp("N"), flags=["--dims", "N=1..8"])
    write_model(server.repository, "dims_chunked", 'backend: "kiln"\nmax_batch_size: 20\n', mlp("N"),
                flags=["--dims", "N=1..8"])
    write_model(server.repository, "dims_from_two", 'backend: "kiln"\n', mlp("N"), flags=["--dims", "N=2..8"])
    session = ort.InferenceSession(mlp("N").SerializeToString(), providers=["CPUExecutionProvider"])
    with connect(httpclient, server.http_url) as client:
        for name in ["dims_together", "dims_chunked", "dims_from_two"]:
            client.load_model(name)
        assert int(client.get_model_config("dims_together")["max_batch_size"]) == 8

        def one(n):
            x = rows(5000 + n, 1 + n % 3)
            got = infer(httpclient, server.http_url, "dims_together", {"x": x}, ["output_0", "output_1"])
            want = session.run(None, {"x": x})
            np.testing.assert_allclose(got["output_0"], want[0], rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(got["output_1"], want[1], rtol=RTOL, atol=ATOL)
            return x.shape[0]

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            sent = sum(pool.map(one, range(240)))
        x = rows(77, 20)
        got = infer(httpclient, server.http_url, "dims_chunked", {"x": x}, ["output_0"])["output_0"]
        np.testing.assert_allclose(got, session.run(["y"], {"x": x})[0], rtol=RTOL, atol=ATOL)
        x = rows(78, 2)
        got = infer(httpclient, server.http_url, "dims_from_two", {"x": x}, ["output_0"])["output_0"]
        np.testing.assert_allclose(got, session.run(["y"], {"x": x})[0], rtol=RTOL, atol=ATOL)
        with pytest.raises(InferenceServerException, match="the request has 1 rows; the library runs batches of 2 to 8"):
            infer(httpclient, server.http_url, "dims_from_two", {"x": rows(79, 1)}, ["output_0"])
        for name in ["dims_together", "dims_chunked", "dims_from_two"]:
            client.unload_model(name)
    ended = instance_summaries(server, "dims_together")  # per instance (Triton's default group)
    rows_run, runs = sum(e[0] for e in ended), sum(e[1] for e in ended)
    assert rows_run == sent and runs < 240, ended  # requests ran together
    ended = instance_summaries(server, "dims_chunked")
    assert (sum(e[0] for e in ended), sum(e[1] for e in ended)) == (20, 3), ended  # 8 + 8 + 4
    assert_still_serving(server)


def test_a_library_with_a_sequence_length_takes_every_length_in_range(server):
    """A token model compiled with --dims "N=1..4,S=1..32": the completed configuration has -1 for
    S (max_batch_size 4 from N); requests of lengths 1, 5, 17 and 32 and of 1 to 3 rows, sent at
    once to a dynamic batcher (a batch runs at one length: requests of other lengths run apart),
    each answered as ONNX Runtime answers it; lengths out of range (33 and 0) and inputs that
    disagree on S are the request's errors with kiln's messages, and the server keeps serving."""
    model = sequence_model()
    write_model(server.repository, "sequence", 'backend: "kiln"\ndynamic_batching { max_queue_delay_microseconds: 20000 }\n',
                model, flags=["--dims", "N=1..4,S=1..32"])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with connect(httpclient, server.http_url) as client:
        client.load_model("sequence")
        config = client.get_model_config("sequence")
        assert int(config["max_batch_size"]) == 4
        assert {t["name"]: [int(d) for d in t["dims"]] for t in config["input"]} == {"x": [-1, 16], "mask": [-1, 1]}
        assert {t["name"]: [int(d) for d in t["dims"]] for t in config["output"]} == {"output_0": [-1, 8],
                                                                                    "output_1": [8]}

        def one(n):
            rng = np.random.default_rng(6000 + n)
            length, count = [1, 5, 17, 32][n % 4], 1 + n % 3
            feeds = {"x": rng.standard_normal((count, length, 16)).astype(np.float32),
                     "mask": (rng.random((count, length, 1)) > 0.3).astype(np.float32)}
            got = infer(httpclient, server.http_url, "sequence", feeds, ["output_0", "output_1"])
            want = session.run(None, feeds)
            assert got["output_0"].shape == (count, length, 8) and got["output_1"].shape == (count, 8)
            np.testing.assert_allclose(got["output_0"], want[0], rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(got["output_1"], want[1], rtol=RTOL, atol=ATOL)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(48)))
        zeros = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
        for feeds, message in [
                ({"x": zeros(1, 33, 16), "mask": zeros(1, 33, 1)}, "input 'x': dimension 1 is 33, but S"),
                ({"x": zeros(2, 5, 16), "mask": zeros(2, 6, 1)},
                 "input 'mask' gives the shape dimension S the value 6, an earlier input 5"),
                ({"x": zeros(1, 0, 16), "mask": zeros(1, 0, 1)}, "input 'x': dimension 1 is 0, but S")]:
            with pytest.raises(InferenceServerException, match=message):
                infer(httpclient, server.http_url, "sequence", feeds, ["output_0"])
        client.unload_model("sequence")
    assert_still_serving(server)


def test_thread_count_follows_instances_updated_in_place(server):
    """Triton 2.51 adds and removes instances of a loaded model in place when only its
    instance_group changes (the model is not initialized again): without a num_threads parameter,
    each instance divides the server's NUM_THREADS by the instances alive before its runs."""
    def config(count):
        return f"""backend: "kiln"
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ 1, 16 ] }} ]
output [ {{ name: "output_0" data_type: TYPE_FP32 dims: [ 1, 8 ] }} ]
instance_group [ {{ count: {count} kind: KIND_CPU }} ]
"""
    write_model(server.repository, "threads", config(1), mlp(1))
    x = rows(8, 1)
    want = reference(mlp(1), {"x": x})["y"]
    with connect(httpclient, server.http_url) as client:
        client.load_model("threads")
        np.testing.assert_allclose(infer(httpclient, server.http_url, "threads", {"x": x}, ["output_0"])["output_0"],
                                   want, rtol=RTOL, atol=ATOL)
        for count in [2, 1]:
            (server.repository / "threads" / "config.pbtxt").write_text(config(count))
            client.load_model("threads")
            expected = (rf"instance 'threads[^']*': {max(1, NUM_THREADS // count)} threads per run "
                        rf"\({NUM_THREADS} threads over {count} live instances\)")
            deadline = time.monotonic() + 30
            while not re.search(expected, server.log_text(tail=None)) and time.monotonic() < deadline:
                got = infer(httpclient, server.http_url, "threads", {"x": x}, ["output_0"])["output_0"]
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
                time.sleep(0.05)
            assert re.search(expected, server.log_text(tail=None)), server.log_text()
        client.unload_model("threads")
    # Updated in place: the model was initialized once.
    assert server.log_text(tail=None).count("model 'threads' version 1: kiln library") == 1


def test_installed_backend_finds_the_runtime_by_its_rpath(backend_directory):
    library = backend_directory / "kiln" / "libtriton_kiln.so"
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    assert "$ORIGIN/../../.." in dynamic and "libkiln_runtime.so" in dynamic
    assert "tritonserver" not in dynamic  # Triton's symbols come from the server process
    linked = subprocess.run(["ldd", str(library)], capture_output=True, text=True).stdout
    found = re.search(r"libkiln_runtime\.so => (\S+)", linked)
    assert found and pathlib.Path(found.group(1)).resolve() == (backend_directory.parents[1] / "libkiln_runtime.so").resolve(), linked
    exported = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
    names = sorted(line.split()[-1] for line in exported.splitlines() if " T " in line)
    assert names == sorted(["TRITONBACKEND_Initialize", "TRITONBACKEND_GetBackendAttribute", "TRITONBACKEND_ModelInitialize", "TRITONBACKEND_ModelFinalize",
                            "TRITONBACKEND_ModelInstanceInitialize", "TRITONBACKEND_ModelInstanceFinalize",
                            "TRITONBACKEND_ModelInstanceExecute"]), names


def test_python_package_carries_the_backend(tmp_path):
    """The wheel's layout without building a wheel: the `python` component that pip installs puts
    the backend in kiln/lib/triton/backends/kiln/, where its rpath finds the package's runtime
    (tests/python/test_python_wheel.py checks the same in the installed wheel)."""
    result = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(tmp_path), "--component", "python"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    library = tmp_path / "kiln" / "lib" / "triton" / "backends" / "kiln" / "libtriton_kiln.so"
    linked = subprocess.run(["ldd", str(library)], capture_output=True, text=True).stdout
    found = re.search(r"libkiln_runtime\.so => (\S+)", linked)
    assert found and pathlib.Path(found.group(1)).resolve() == (tmp_path / "kiln" / "lib" / "libkiln_runtime.so").resolve(), linked
