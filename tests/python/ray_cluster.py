"""A Ray cluster for kiln.serve's tests: a head and worker nodes on 127.0.0.1, every port chosen free,
the dashboard off and a small object store, each of its servers listening on 127.0.0.1 only;
stop() ends the processes this cluster started (everything under its node process, found by
parentage and by session, never by name) and removes its temporary directory, also when starting
failed.

Why not `ray start`: Ray 2.49 binds each of a node's servers (GCS, raylet, object manager, workers'
gRPC, dashboard and runtime-env agents, metrics exporters) to 127.0.0.1 when the node's address is
the string "127.0.0.1" and to every interface (0.0.0.0 / [::]) otherwise, and `ray start` turns a
--node-ip-address, or an --address host, of 127.0.0.1 into the machine's address first
(ray._private.services.resolve_ip_for_localhost, which ray.init applies to the cluster address as
well). It keeps 127.0.0.1 only where RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (Ray's switch for
Windows and macOS, which makes 127.0.0.1 the node address), and there `ray start --address`
refuses to start a worker node. So the nodes are started by Ray's own multi-node test harness
(ray.cluster_utils.Cluster) in one process of their own, this file run as a script, each node
given the address 127.0.0.1; and every process that connects to the cluster by 127.0.0.1 (this
one, `kiln serve --address`) runs with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, set below before Ray
is imported."""
import ipaddress
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Before Ray is imported: Ray reads it once, at import (ray._private.ray_constants).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

from serving_models import free_port  # noqa: E402

START_SECONDS = 90
OBJECT_STORE_BYTES = 100 * 1000 * 1000
LOOPBACK = "127.0.0.1"


def _node_ports():
    return {"node_manager_port": free_port(), "object_manager_port": free_port(),
            "metrics_export_port": free_port(), "dashboard_agent_listen_port": free_port(),
            "metrics_agent_port": free_port(), "runtime_env_agent_port": free_port()}


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


def _socket_table():
    """{inode: (protocol, address, port)} of this network namespace's listening TCP sockets and
    unconnected UDP sockets, from /proc/net (addresses there are 32-bit words in host order)."""
    table = {}
    for protocol, state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        try:
            lines = pathlib.Path(f"/proc/net/{protocol}").read_text().splitlines()[1:]
        except OSError:  # no IPv6 here
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != state:
                continue
            host, port = fields[1].split(":")
            raw = bytes.fromhex(host)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            table[int(fields[9])] = (protocol, ipaddress.ip_address(raw), int(port, 16))
    return table


def listening_sockets(pids):
    """[(pid, protocol, address, port, command line)] of the listening TCP and unconnected UDP
    sockets the processes hold (their /proc/PID/fd links matched to /proc/net's inodes)."""
    table = _socket_table()
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            title = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and int(target[8:-1]) in table:
                found.append((pid, *table[int(target[8:-1])], title.strip()[:120]))
    return found


def on_loopback(address):
    """127.0.0.1 or ::1 (also as ::ffff:127.0.0.1, how an IPv6 socket takes IPv4's loopback)."""
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address in (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


class RayCluster:
    """A head without CPUs for tasks (Serve's controller and proxy need none) and `workers` nodes of
    `worker_cpus` CPUs each; `address` is the head's HOST:PORT. env adds to the nodes' environment."""

    def __init__(self, workers=2, worker_cpus=1, env=None, log_dir=None):
        self.temp_dir = tempfile.mkdtemp(prefix="kr", dir="/tmp")  # short: Ray's socket paths are limited
        self.log_dir = pathlib.Path(log_dir or self.temp_dir)
        # RAY_TMPDIR/ray: where Ray's test harness notes the cluster's address (else /tmp/ray).
        os.mkdir(os.path.join(self.temp_dir, "ray"))
        self.env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=self.temp_dir, **(env or {}))
        self.port = free_port()
        self.address = f"{LOOPBACK}:{self.port}"
        common = {"node_ip_address": LOOPBACK, "object_store_memory": OBJECT_STORE_BYTES}
        nodes = {"head": {"gcs_server_port": self.port, "num_cpus": 0, "include_dashboard": False,
                          "temp_dir": self.temp_dir, **common, **_node_ports()},
                 "workers": [{"num_cpus": worker_cpus, **common, **_node_ports()} for _ in range(workers)]}
        self.log = open(self.log_dir / "ray-nodes.log", "w")
        self.starter = subprocess.Popen([sys.executable, __file__, json.dumps(nodes)], stdout=self.log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
                                        cwd=os.path.dirname(os.path.abspath(__file__)), start_new_session=True)
        try:
            self.wait_for_nodes(1 + workers)
        except BaseException:
            self.stop()
            raise

    def wait_for_nodes(self, count):
        """Connects this process to the cluster (ray.init) and waits until `count` nodes are alive."""
        import ray
        import ray._private.ray_constants
        assert not ray._private.ray_constants.ENABLE_RAY_CLUSTER, \
            "Ray was imported before ray_cluster.py set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0"
        deadline = time.monotonic() + START_SECONDS
        while True:
            self.check_alive()
            try:
                if not ray.is_initialized():
                    ray.init(address=self.address, _node_ip_address=LOOPBACK, logging_level="WARNING",
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
        if self.starter.poll() is not None:
            raise AssertionError(f"the Ray nodes' process exited with {self.starter.returncode}:\n{self.log_text()}")

    def log_text(self, tail=3000):
        self.log.flush()
        return f"--- {self.log.name}\n" + pathlib.Path(self.log.name).read_text(errors="replace")[-tail:]

    def own_processes(self, known=()):
        """The live processes among `known`, in the session of this cluster's nodes' process, or
        descended from it."""
        table = _processes()
        ours = {pid for pid in known if pid in table}
        ours |= {pid for pid, (_, session) in table.items() if session == self.starter.pid}
        if self.starter.poll() is None:
            ours.add(self.starter.pid)
        grown = True
        while grown:
            more = {pid for pid, (parent, _) in table.items() if parent in ours} - ours
            ours |= more
            grown = bool(more)
        ours.discard(os.getpid())
        return ours

    def listening_sockets(self):
        """listening_sockets() of this cluster's processes and of this process (a Ray driver's
        gRPC server)."""
        return listening_sockets(sorted(self.own_processes()) + [os.getpid()])

    def stop(self):
        """SIGTERM to the nodes' process (which stops its nodes' processes), then SIGKILL to
        whatever is left under it or in its session."""
        import ray
        if ray.is_initialized():
            ray.shutdown()
        ours = self.own_processes()  # before SIGTERM, while the process tree is whole
        if self.starter.poll() is None:
            self.starter.send_signal(signal.SIGTERM)
        try:
            self.starter.wait(timeout=20)
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
        try:
            self.starter.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.log.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _run_nodes(nodes):
    """This file run as a script: starts the head and then each worker node (ray.cluster_utils,
    arguments as ray._private.parameter.RayParams takes them), and keeps them until SIGTERM."""
    import ray.cluster_utils

    def stop(*_):
        raise SystemExit(0)

    cluster = ray.cluster_utils.Cluster(shutdown_at_exit=True)  # each node's processes also end at exit
    try:
        # One node at a time: nodes on one machine share the head's session directory, where
        # each names its sockets by the next free number.
        for node in [nodes["head"], *nodes["workers"]]:
            cluster.add_node(**node)
        signal.signal(signal.SIGTERM, stop)  # after the nodes, whose SIGTERM handlers stop one node each
        print(f"{1 + len(nodes['workers'])} nodes running at {cluster.address}", flush=True)
        while True:
            signal.pause()
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    _run_nodes(json.loads(sys.argv[1]))
