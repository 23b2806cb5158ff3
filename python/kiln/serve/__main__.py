"""`python -m kiln.serve MODEL.so` (and `kiln serve MODEL.so` of an installed kiln): serves a kiln
library with Ray Serve over the Open Inference Protocol. Without --address it starts Ray on this
machine, loads the library here first (so a library this CPU cannot run is refused at once), and
serves until interrupted; with --address HOST:PORT it deploys to that running Ray cluster and
returns, the application staying on the cluster (`serve shutdown` or serve.delete ends it)."""
import argparse
import json
import os
import signal
import sys
import threading
from typing import List, Optional


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kiln serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("library", help="a kiln library (kiln compile -o model.so)")
    parser.add_argument("--name", help="the model's name in URLs (default: the file's name without .so)")
    parser.add_argument("--model-version", default="1", help="the model's version (default 1)")
    parser.add_argument("--host", default="127.0.0.1", help="the HTTP address (default 127.0.0.1; 0.0.0.0 for all)")
    parser.add_argument("--port", type=int, default=8000, help="the HTTP port (default 8000)")
    parser.add_argument("--route-prefix", default="/",
                        help="where the protocol's /v2 paths start (default /; each application on a cluster needs its own)")
    parser.add_argument("--address", help="HOST:PORT of a running Ray cluster's head to deploy to")
    scaling = parser.add_mutually_exclusive_group()
    scaling.add_argument("--replicas", type=int, default=1, help="the number of replicas (default 1)")
    scaling.add_argument("--autoscaling-config", metavar="JSON",
                         help='Ray Serve\'s autoscaling_config, e.g. \'{"min_replicas": 1, "max_replicas": 4}\'')
    parser.add_argument("--max-batch-size", type=int, default=8, help="@serve.batch's max_batch_size (default 8)")
    parser.add_argument("--batch-wait-ms", type=float, default=2.0, help="@serve.batch's wait, ms (default 2)")
    parser.add_argument("--num-cpus", type=float, default=1, help="CPUs each replica reserves (default 1)")
    parser.add_argument("--threads", type=int, help="each replica's kiln threads (default: --num-cpus)")
    parser.add_argument("--deploy-timeout", type=float, default=600,
                        help="seconds to wait for the replicas to run (default 600)")
    parser.add_argument("--proxy-location", default="HeadOnly", choices=["HeadOnly", "EveryNode"],
                        help="where Ray Serve runs HTTP proxies (default HeadOnly)")
    return parser


def _deploy(args: argparse.Namespace, library: bytes, name: str, options: dict) -> Optional[str]:
    """Starts Serve's proxy and runs the application, waiting at most --deploy-timeout seconds for
    its replicas; what went wrong, or None."""
    from ray import serve

    from .app import build_app
    outcome: List[Optional[str]] = []

    def deploy() -> None:
        try:
            serve.start(proxy_location=args.proxy_location, http_options={"host": args.host, "port": args.port})
            app = build_app(library, name, version=args.model_version, max_batch_size=args.max_batch_size,
                            batch_wait_timeout_s=args.batch_wait_ms / 1000, num_threads=args.threads, **options)
            serve.run(app, name=name, route_prefix=args.route_prefix)
            outcome.append(None)
        except Exception as e:  # Serve's errors carry the replicas' (e.g. kiln's refusal at load)
            outcome.append(str(e))

    thread = threading.Thread(target=deploy, daemon=True)
    thread.start()
    thread.join(args.deploy_timeout)
    if outcome and outcome[0] is None:
        return None
    failure = outcome[0] if outcome else (f"its replicas were not running after {args.deploy_timeout:g} s "
                                          "(--deploy-timeout; are there CPUs for --replicas at --num-cpus each?)")
    return failure + "".join(f"\n  {line}" for line in _status_messages(name) if line not in failure)


def _status_messages(name: str) -> List[str]:
    """What Serve says of the application's deployments (a replica's error at load among them)."""
    from ray import serve

    from .model import LibraryLoadError
    try:
        application = serve.status().applications[name]
    except Exception:  # the status only adds detail to an error already known
        return []
    messages = [application.message] if application.message else []
    for deployment, status in application.deployments.items():
        refusal = status.message.rpartition(f"{LibraryLoadError.__module__}.{LibraryLoadError.__name__}: ")[2]
        if refusal != status.message:  # kiln's refusal, without the traceback around it
            messages.append(f"{deployment}: a replica refused the library: {refusal.splitlines()[0]}")
        elif status.message:
            messages.append(f"{deployment}: {status.message}")
    return messages


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        with open(args.library, "rb") as file:
            library = file.read()
    except OSError as e:
        print(f"kiln serve: cannot read {args.library}: {e.strerror}", file=sys.stderr)
        return 1
    name = args.name or os.path.basename(args.library).split(".")[0]
    options = {"ray_actor_options": {"num_cpus": args.num_cpus}}
    if args.autoscaling_config:
        try:
            options["autoscaling_config"] = json.loads(args.autoscaling_config)
        except ValueError as e:
            print(f"kiln serve: --autoscaling-config is not JSON: {e}", file=sys.stderr)
            return 2
    else:
        options["num_replicas"] = args.replicas

    from .model import LibraryLoadError, LoadedModel
    if not args.address:
        try:
            LoadedModel(library, name)  # refused here rather than in every replica
        except LibraryLoadError as e:
            print(f"kiln serve: {e}", file=sys.stderr)
            return 1

    import ray
    if args.address:
        # A cluster on this machine's loopback (nodes started with --node-ip-address=127.0.0.1).
        on_loopback = args.address.rsplit(":", 1)[0] in ("127.0.0.1", "localhost")
        ray.init(address=args.address, _node_ip_address="127.0.0.1" if on_loopback else None,
                 logging_level="WARNING", log_to_driver=False)
    else:
        # Serving on the loopback: the local node takes that address too.
        loopback = args.host in ("127.0.0.1", "localhost")
        ray.init(include_dashboard=False, logging_level="WARNING", _node_ip_address="127.0.0.1" if loopback else None)
    failure = _deploy(args, library, name, options)
    if failure:
        print(f"kiln serve: model '{name}' was not deployed: {failure}", file=sys.stderr)
        if not args.address:
            ray.shutdown()
        return 1
    base = f"http://{args.host}:{args.port}{args.route_prefix.rstrip('/')}"
    print(f"kiln serve: model '{name}' at {base}/v2/models/{name}", flush=True)
    if args.address:
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    ray.shutdown()  # ends the local cluster, the application with it
    return 0


if __name__ == "__main__":
    sys.exit(main())
