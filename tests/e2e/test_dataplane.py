"""Data plane: the exact ConfigMap text of the 40/20/40 sample Balancer,
served by the real nginx, splits 1,000 TCP connections 400/200/400; and a
Balancer with UDP and TCP on port 53 splits both UDP sessions and TCP
connections by weight (3/1/1).

Topology (all created by this test, removed in its finalizer)::

    netns pcb-ngx-<pid>                     netns pcb-b<i>-<pid>  (i = 0, 1, 2)
      lo 127.0.0.1                            veth "eth0"  10.<x>.<i>.2/24
      nginx, listening on :80  <-- veth -->   TCP+UDP server on :80 answering "v<i+1>"
      veth "v<i>"  10.<x>.<i>.1/24
      /etc/hosts (from /etc/netns/pcb-ngx-<pid>/hosts, bind-mounted by
      `ip netns exec`): balancer-sample-v<i+1>-backend -> 10.<x>.<i>.2

Each backend address plays the backend Service's ClusterIP (port 80; in a
cluster the Service maps it to targetPort 5678 on the pods). nginx runs the
generated text unaltered (``nginx_util``). The client runs in nginx's
namespace, first checks every backend directly (so that no upstream is
marked failed during start-up), then waits for nginx and opens 1,000
sequential connections to 127.0.0.1:80, reading each reply to EOF (UDP: one
datagram and its reply per new socket, i.e. per nginx session).

nginx's smooth weighted round-robin with one worker (the config sets no
``worker_processes``) is exact over every multiple of the total weight
(100), so the expected split is exactly 400/200/400; the assertion allows
the 2% the specification grants.

Skipped unless running as root with ``ip netns`` usable and nginx (with the
stream module) installed; CI runs as root with hack/install-deps.sh.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import nginx_util

from controllers.balancer import names
from controllers.balancer.nginx import render
from controllers.balancer.resources import desired_children

REPO = Path(__file__).resolve().parents[2]
CONNECTIONS = 1000
DEADLINE = 20.0  # seconds, for each start-up wait


_REASON = nginx_util.netns_unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=str(_REASON))

BACKEND_SERVER = r"""
import socket, sys, threading
identity, port = sys.argv[1].encode() + b"\n", int(sys.argv[2])

def tcp():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(512)
    ready.release()
    while True:
        conn, _ = srv.accept()
        try:
            conn.sendall(identity)
        finally:
            conn.close()

def udp():
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("0.0.0.0", port))
    ready.release()
    while True:
        _, peer = srv.recvfrom(2048)
        srv.sendto(identity, peer)

ready = threading.Semaphore(0)
for serve in (tcp, udp):
    threading.Thread(target=serve, daemon=True).start()
ready.acquire(); ready.acquire()
print("ready", flush=True)
threading.Event().wait()
"""

CLIENT = r"""
import collections, json, socket, sys, time
proto, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + float(sys.argv[4])
backends = sys.argv[5:]

def ask_tcp(host):
    with socket.create_connection((host, port), timeout=5) as s:
        chunks = []
        while True:
            data = s.recv(4096)
            if not data:
                return b"".join(chunks).decode().strip()
            chunks.append(data)

def ask_udp(host):
    # A new socket (source port) per call: a new nginx UDP session each time.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.connect((host, port))
        s.send(b"who?")
        return s.recv(2048).decode().strip()

ask = ask_udp if proto == "udp" else ask_tcp

def wait(host):
    while True:
        try:
            return ask(host)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)

direct = {b: wait(b) for b in backends}   # every backend answers
wait("127.0.0.1")                          # nginx is up (not counted)
counts = collections.Counter(ask("127.0.0.1") for _ in range(count))
print(json.dumps({"direct": direct, "counts": counts}))
"""


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr.strip()}"


def _wait_ready(proc: subprocess.Popen[str], what: str) -> None:
    """Wait (bounded) for ``proc`` to print its "ready" line."""
    assert proc.stdout is not None
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}")
        readable, _, _ = select.select([proc.stdout], [], [], 0.1)
        if readable and proc.stdout.readline().strip() == "ready":
            return
    pytest.fail(f"{what} did not become ready in {DEADLINE} s")


class Topology:
    """The namespaces, links and processes of one test run; ``close()``
    removes all of them (processes first, by pid, then namespaces)."""

    def __init__(self, tmp_path: Path) -> None:
        suffix = os.getpid()
        self.nginx_ns = f"pcb-ngx-{suffix}"
        self.backend_ns = [f"pcb-b{i}-{suffix}" for i in range(3)]
        self.subnet = 10 + suffix % 200  # 10.<subnet>.<i>.0/24, private to these namespaces
        self.etc = Path("/etc/netns") / self.nginx_ns
        self.tmp = tmp_path
        self.procs: list[subprocess.Popen[str]] = []
        self.created_etc_netns = False

    def backend_address(self, i: int) -> str:
        return f"10.{self.subnet}.{i}.2"

    def build(self, hosts: dict[str, str]) -> None:
        made = subprocess.run(
            ["ip", "netns", "add", self.nginx_ns], capture_output=True, text=True, check=False
        )
        if made.returncode != 0:  # e.g. root without CAP_SYS_ADMIN in a container
            pytest.skip(f"ip netns add failed: {made.stderr.strip()}")
        _run("ip", "-n", self.nginx_ns, "link", "set", "lo", "up")
        for i, ns in enumerate(self.backend_ns):
            _run("ip", "netns", "add", ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            # Created inside nginx's namespace: no name can clash with the host's links.
            _run("ip", "-n", self.nginx_ns, "link", "add", f"v{i}", "type", "veth",
                 "peer", "name", "eth0", "netns", ns)  # fmt: skip
            _run("ip", "-n", self.nginx_ns, "addr", "add", f"10.{self.subnet}.{i}.1/24",
                 "dev", f"v{i}")  # fmt: skip
            _run("ip", "-n", self.nginx_ns, "link", "set", "dev", f"v{i}", "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.backend_address(i)}/24", "dev", "eth0")
            _run("ip", "-n", ns, "link", "set", "dev", "eth0", "up")
        self.created_etc_netns = not self.etc.parent.exists()
        self.etc.mkdir(parents=True, exist_ok=True)
        (self.etc / "hosts").write_text(nginx_util.hosts_text(hosts))

    def spawn(self, ns: str, argv: list[str]) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for ns in [self.nginx_ns, *self.backend_ns]:
            # Anything still in our namespaces (e.g. an nginx worker) is ours.
            pids = subprocess.run(
                ["ip", "netns", "pids", ns], capture_output=True, text=True, check=False
            ).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        shutil.rmtree(self.etc, ignore_errors=True)
        if self.created_etc_netns:
            with contextlib.suppress(OSError):
                self.etc.parent.rmdir()  # only if empty


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[Topology]:
    topo = Topology(tmp_path)
    try:
        yield topo
    finally:
        topo.close()
    leftover = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert topo.nginx_ns not in leftover


def _serve(topology: Topology, balancer: dict[str, Any], tmp_path: Path) -> Served:
    """Start the backends and nginx (on the exact ConfigMap text) for ``balancer``."""
    configmap = next(c for c in desired_children(balancer) if c["kind"] == "ConfigMap")
    text: str = configmap["data"][names.NGINX_CONF_KEY]
    assert text == render(balancer)
    backends = balancer["spec"]["backends"]
    assert len(backends) == len(topology.backend_ns)
    topology.build(nginx_util.backend_hosts(balancer, topology.backend_address))
    for port in {p["port"] for p in balancer["spec"]["ports"]}:
        for i, backend in enumerate(backends):
            argv = [sys.executable, "-c", BACKEND_SERVER, backend["name"], str(port)]
            _wait_ready(topology.spawn(topology.backend_ns[i], argv), f"backend {backend['name']}")
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    nginx = topology.spawn(topology.nginx_ns, nginx_util.nginx_command(conf, tmp_path))
    return Served(topology, nginx, conf, text, tmp_path)


@dataclasses.dataclass
class Served:
    """A running nginx in front of the backends of one Balancer."""

    topology: Topology
    nginx: subprocess.Popen[str]
    conf: Path
    text: str
    workdir: Path

    def error_log(self) -> str:
        path = self.workdir / "error.log"
        return path.read_text() if path.exists() else ""

    def split(self, proto: str, port: int, count: int) -> dict[str, int]:
        """Open ``count`` connections (TCP) or sessions (UDP) to nginx's
        ``port`` and return how many each backend answered."""
        backends = [self.topology.backend_address(i) for i in range(3)]
        client = subprocess.run(
            [
                "ip", "netns", "exec", self.topology.nginx_ns, sys.executable, "-c", CLIENT,
                proto, str(port), str(count), str(DEADLINE), *backends,
            ],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert self.nginx.poll() is None, f"nginx exited: {self.error_log()}"
        assert client.returncode == 0, client.stderr + self.error_log()
        result = json.loads(client.stdout)
        assert sorted(result["direct"]) == sorted(backends)  # each backend answered directly
        counts: dict[str, int] = result["counts"]
        print(f"{proto}/{port} split:", counts)
        assert self.conf.read_text() == self.text  # served unaltered
        return counts


def _assert_split(counts: dict[str, int], weights: dict[str, int], total: int) -> None:
    assert sum(counts.values()) == total, counts
    assert set(counts) == set(weights), counts
    weight_sum = sum(weights.values())
    for name, weight in weights.items():
        expected = total * weight / weight_sum
        assert abs(counts[name] - expected) <= 0.02 * total, counts


def test_weighted_split_through_real_nginx(topology: Topology, tmp_path: Path) -> None:
    balancer: dict[str, Any] = yaml.safe_load((REPO / "crds/samples/balancer.yaml").read_text())
    balancer["metadata"].update(namespace="default", uid="dataplane")
    weights = {b["name"]: b["weight"] for b in balancer["spec"]["backends"]}
    assert weights == {"v1": 40, "v2": 20, "v3": 40}
    served = _serve(topology, balancer, tmp_path)
    _assert_split(served.split("tcp", 80, CONNECTIONS), weights, CONNECTIONS)


def test_udp_and_tcp_on_one_port(topology: Topology, tmp_path: Path) -> None:
    # `listen 53 udp;` and `listen 53 ;` side by side, each with its own
    # upstream: UDP sessions and TCP connections are both split 3/1/1.
    balancer: dict[str, Any] = {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": {"name": "dns", "namespace": "default", "uid": "dataplane-udp"},
        "spec": {
            "backends": [
                {"name": "a", "weight": 3},
                {"name": "b", "weight": 1},
                {"name": "c", "weight": 1},
            ],
            "ports": [
                {"name": "dns", "protocol": "UDP", "port": 53},
                {"name": "dnstcp", "protocol": "TCP", "port": 53},
            ],
        },
    }
    served = _serve(topology, balancer, tmp_path)
    assert "listen 53 udp;" in served.text and "listen 53 ;" in served.text
    weights = {"a": 3, "b": 1, "c": 1}
    # 100 UDP sessions stay well inside worker_connections 1024 (each holds
    # two connections until proxy_timeout).
    _assert_split(served.split("udp", 53, 100), weights, 100)
    _assert_split(served.split("tcp", 53, 500), weights, 500)
