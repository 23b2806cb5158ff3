"""A Ray cluster for kiln.serve's tests: a head and worker nodes, each a `ray start --block` process
on 127.0.0.1 with every port chosen free, the dashboard off and a small object store; stop() ends
the processes this cluster started (each `ray start` and everything under it, found by parentage and
by session, never by name) and removes its temporary directory, also when starting failed."""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from serving_models import free_port

RAY = pathlib.Path(sys.executable).parent / "ray"
START_SECONDS = 90
OBJECT_STORE_BYTES = 100 * 1000 * 1000


def _node_ports():
    return [f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}",
            f"--metrics-export-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]


def _processes():
    """{pid: (parent pid, session id)} of the processes now running."""
    table = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), int(fields[3]))
    return table


def processes_in_session(session):
    """The PIDs of the live processes of a session (a process started with start_new_session=True
    leads one of its own number)."""
    return sorted(pid for pid, (_, sid) in _processes().items() if sid == session and pid != os.getpid())


def process_titles(prefix):
    """{pid: command line} of the processes whose command line (Ray's process title) starts with prefix."""
    found = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if line.startswith(prefix):
            found[int(entry.name)] = line
    return found


class RayCluster:
    """A head without CPUs for tasks (Serve's controller and proxy need none) and `workers` nodes of
    `worker_cpus` CPUs each; `address` is the head's HOST:PORT. env adds to the nodes' environment."""

    def __init__(self, workers=2, worker_cpus=1, env=None, log_dir=None):
        self.temp_dir = tempfile.mkdtemp(prefix="kr", dir="/tmp")  # short: Ray's socket paths are limited
        self.log_dir = pathlib.Path(log_dir or self.temp_dir)
        self.env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", **(env or {}))
        self.starters = []
        self.logs = []
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        common = ["--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                  f"--object-store-memory={OBJECT_STORE_BYTES}"]
        try:
            self._start("head", [f"--head", f"--port={self.port}", "--num-cpus=0", "--include-dashboard=false",
                                 f"--temp-dir={self.temp_dir}", f"--ray-client-server-port={free_port()}",
                                 *common, *_node_ports()])
            self.wait_for_nodes(1)
            # One node at a time: nodes on one machine share the head's session directory, where
            # each names its sockets by the next free number.
            for n in range(workers):
                self._start(f"worker{n}", [f"--address={self.address}", f"--num-cpus={worker_cpus}",
                                           *common, *_node_ports()])
                self.wait_for_nodes(2 + n)
        except BaseException:
            self.stop()
            raise

    def _start(self, name, args):
        log = open(self.log_dir / f"ray-{name}.log", "w")
        self.logs.append(log)
        self.starters.append(subprocess.Popen([str(RAY), "start", *args], stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, env=self.env, start_new_session=True))

    def wait_for_nodes(self, count):
        """Connects this process to the cluster (ray.init) and waits until `count` nodes are alive."""
        import ray
        deadline = time.monotonic() + START_SECONDS
        while True:
            self.check_alive()
            try:
                if not ray.is_initialized():
                    ray.init(address=self.address, _node_ip_address="127.0.0.1", logging_level="WARNING",
                             log_to_driver=False)
                if sum(1 for node in ray.nodes() if node["Alive"]) >= count:
                    return
            except (ConnectionError, RuntimeError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"the Ray cluster did not have {count} nodes within {START_SECONDS} s:\n"
                                     f"{self.log_text()}")
            time.sleep(0.5)

    def check_alive(self):
        for starter in self.starters:
            if starter.poll() is not None:
                raise AssertionError(f"`ray start` exited with {starter.returncode}:\n{self.log_text()}")

    def log_text(self, tail=3000):
        texts = []
        for log in self.logs:
            log.flush()
            texts.append(f"--- {log.name}\n" + pathlib.Path(log.name).read_text(errors="replace")[-tail:])
        return "\n".join(texts)

    def own_processes(self, known=()):
        """The live processes among `known`, in the sessions of this cluster's `ray start`s, or
        descended from any of them."""
        sessions = {starter.pid for starter in self.starters}  # each started a session of its own
        table = _processes()
        ours = {pid for pid in known if pid in table}
        ours |= {pid for pid, (_, session) in table.items() if session in sessions}
        ours |= {s.pid for s in self.starters if s.poll() is None}
        grown = True
        while grown:
            more = {pid for pid, (parent, _) in table.items() if parent in ours} - ours
            ours |= more
            grown = bool(more)
        ours.discard(os.getpid())
        return ours

    def stop(self):
        """SIGTERM to each `ray start --block` (which stops its node's processes), then SIGKILL to
        whatever is left under them or in their sessions."""
        import ray
        if ray.is_initialized():
            ray.shutdown()
        ours = self.own_processes()  # before SIGTERM, while the process tree is whole
        for starter in self.starters:
            if starter.poll() is None:
                starter.send_signal(signal.SIGTERM)
        for starter in self.starters:
            try:
                starter.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        for _ in range(5):
            ours = self.own_processes(ours)
            if not ours:
                break
            for pid in ours:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.5)
            ours = set()
        for starter in self.starters:
            try:
                starter.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for log in self.logs:
            log.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)
