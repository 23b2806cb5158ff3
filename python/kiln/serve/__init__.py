"""kiln.serve: kiln libraries behind Ray Serve, answering the Open Inference Protocol (KServe v2)
over REST (JSON tensors and the binary tensor data extension), on one machine or across a Ray
cluster. Needs `pip install "ray[serve]"`; kiln must be importable on every node.

    from ray import serve
    import kiln.serve
    app = kiln.serve.build_app(open("model.so", "rb").read(), "mlp", num_replicas=2)
    serve.run(app, name="mlp", route_prefix="/")

or from the command line: `python -m kiln.serve model.so --replicas 2` (`kiln serve ...` when kiln
is pip-installed); `--address HOST:PORT` deploys to a running cluster. See kiln.serve.app for how
requests are batched."""
try:
    from .app import KilnDeployment, build_app
except ModuleNotFoundError as e:
    if e.name not in ("ray", "fastapi", "starlette"):
        raise
    raise ModuleNotFoundError(f'kiln.serve needs Ray Serve, and {e.name} is missing: pip install "kiln[serve]" '
                              '(or "ray[serve]")', name=e.name) from None
from .model import LibraryLoadError, LoadedModel
from .protocol import ProtocolError

__all__ = ["KilnDeployment", "LibraryLoadError", "LoadedModel", "ProtocolError", "build_app"]
