"""kiln.serve's Ray Serve deployment: each replica loads the kiln library from the bytes it was
given (a deployment init argument, so they reach replicas on any node through Ray) and answers the
Open Inference Protocol (KServe v2) over REST through a FastAPI ingress. Requests are gathered by
@serve.batch and run on the replica's executor thread (LoadedModel.run_many): a library of fixed
shapes runs them one after another, each request carrying the library's whole shape (there batching
saves only the hops between the event loop and the executor thread); a library with a batch
dimension (kiln compile --dims N=MIN..MAX) runs the samples of several requests in one run, up to
its largest batch. Replicas and autoscaling are Ray Serve's own deployment options."""
import asyncio
import concurrent.futures
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from ray import serve
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from .model import LoadedModel
from .protocol import HEADER_LENGTH, ProtocolError, encode_response, parse_request

__all__ = ["KilnDeployment", "build_app"]

api = FastAPI(title="kiln.serve", docs_url=None, redoc_url=None, openapi_url=None)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


@api.exception_handler(StarletteHTTPException)
async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
    return _error(error.status_code, f"{request.method} {request.url.path}: {error.detail}")


@api.exception_handler(RequestValidationError)
async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    return _error(400, f"{request.method} {request.url.path}: {error.errors()}")


@serve.deployment(max_ongoing_requests=64, ray_actor_options={"num_cpus": 1})
@serve.ingress(api)
class KilnDeployment:
    """One replica: the model `name` (version `version`) from the library's bytes. num_threads is
    the executor's thread count (0: kiln's default, the process's cores)."""

    def __init__(self, library: bytes, name: str, version: str = "1", num_threads: int = 1,
                 max_batch_size: int = 8, batch_wait_timeout_s: float = 0.002) -> None:
        self.model = LoadedModel(library, name, num_threads)
        self.name, self.version = name, version
        # The largest body a request may send: its inputs as JSON numbers, with room to spare.
        count = sum(spec.count for spec in self.model.signature.inputs)
        self.max_body = (1 << 20) + 64 * count
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kiln-serve")
        self._run_batch.set_max_batch_size(max_batch_size)
        self._run_batch.set_batch_wait_timeout_s(batch_wait_timeout_s)

    def _check_model(self, name: str, version: Optional[str]) -> None:
        if name != self.name:
            raise ProtocolError(404, f"no model '{name[:100]}' here (this server serves '{self.name}')")
        if version is not None and version != self.version:
            raise ProtocolError(404, f"model '{name}' has no version '{version[:100]}' (it has '{self.version}')")

    @api.get("/v2")
    async def server_metadata(self) -> Dict[str, Any]:
        return {"name": "kiln", "version": __version__, "extensions": ["binary_tensor_data"]}

    @api.get("/v2/health/live")
    async def live(self) -> Response:
        return Response(status_code=200)

    @api.get("/v2/health/ready")
    async def ready(self) -> Response:
        return Response(status_code=200)

    def _metadata(self, name: str, version: Optional[str]) -> Response:
        try:
            self._check_model(name, version)
        except ProtocolError as e:
            return _error(e.status, e.message)
        signature = self.model.signature
        return JSONResponse({"name": self.name, "versions": [self.version], "platform": "kiln",
                             "inputs": [t.metadata() for t in signature.inputs],
                             "outputs": [t.metadata() for t in signature.outputs]})

    @api.get("/v2/models/{name}")
    async def model_metadata(self, name: str) -> Response:
        return self._metadata(name, None)

    @api.get("/v2/models/{name}/versions/{version}")
    async def version_metadata(self, name: str, version: str) -> Response:
        return self._metadata(name, version)

    def _ready(self, name: str, version: Optional[str]) -> Response:
        try:
            self._check_model(name, version)
        except ProtocolError as e:
            return _error(e.status, e.message)
        return Response(status_code=200)

    @api.get("/v2/models/{name}/ready")
    async def model_ready(self, name: str) -> Response:
        return self._ready(name, None)

    @api.get("/v2/models/{name}/versions/{version}/ready")
    async def version_ready(self, name: str, version: str) -> Response:
        return self._ready(name, version)

    @api.post("/v2/models/{name}/infer")
    async def infer(self, name: str, request: Request) -> Response:
        return await self._infer(name, None, request)

    @api.post("/v2/models/{name}/versions/{version}/infer")
    async def version_infer(self, name: str, version: str, request: Request) -> Response:
        return await self._infer(name, version, request)

    async def _read_body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            raise ProtocolError(413, f"the request body of {declared} bytes exceeds this model's limit of {self.max_body}")
        chunks: List[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise ProtocolError(413, f"the request body exceeds this model's limit of {self.max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _infer(self, name: str, version: Optional[str], request: Request) -> Response:
        try:
            self._check_model(name, version)
            body = await self._read_body(request)
            inputs, requested, request_id = parse_request(body, request.headers.get(HEADER_LENGTH),
                                                          self.model.signature)
        except ProtocolError as e:
            return _error(e.status, e.message)
        ok, result = await self._run_batch(inputs)
        if not ok:
            return _error(500, f"model '{self.name}': {result}")
        content, header_length = encode_response(self.name, self.version, result, requested,
                                                 self.model.signature, request_id)
        if header_length is None:
            return Response(content, media_type="application/json")
        return Response(content, media_type="application/octet-stream", headers={HEADER_LENGTH: str(header_length)})

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.002)
    async def _run_batch(self, batch: List[Dict[str, np.ndarray]]) -> List[Tuple[bool, Any]]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.model.run_many, batch)


def build_app(library: bytes, name: str, *, version: str = "1", max_batch_size: int = 8,
              batch_wait_timeout_s: float = 0.002, num_threads: Optional[int] = None,
              **deployment_options: Any) -> serve.Application:
    """The Ray Serve application serving the kiln library `library` (its bytes) as model `name`:
    pass it to serve.run(app, route_prefix="/"). deployment_options go to the deployment's
    .options(): num_replicas, autoscaling_config, max_ongoing_requests, ray_actor_options, ...
    num_threads defaults to the replica's num_cpus (ray_actor_options, 1 unless set)."""
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be at least 1, not {max_batch_size}")
    if num_threads is None:
        cpus = (deployment_options.get("ray_actor_options") or {}).get("num_cpus", 1)
        num_threads = max(1, int(cpus))
    deployment = KilnDeployment.options(name=f"kiln-{name}", **deployment_options)
    return deployment.bind(bytes(library), name, version, num_threads, max_batch_size, batch_wait_timeout_s)
