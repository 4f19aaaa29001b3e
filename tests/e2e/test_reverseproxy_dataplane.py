"""Data plane: real HTTP and TCP/UDP traffic through the exact ConfigMap text
the operator renders, served by the real nginx.

Each test gets a network namespace of its own (``rp-<pid>-<n>``, loopback
only), so the config's fixed ports (8080, probe 3001) clash with nothing, and
``/etc/netns/<ns>/hosts`` (bind-mounted by ``ip netns exec``) makes the
upstream name ``backend.test`` resolve to 127.0.0.1. Backends are small
Python servers in the same namespace; nginx runs the text unaltered
(``nginx_util``). Proven: ``proxyPass`` (and the default ``host`` header from
it), ``rewrite``, ``proxySetHeader`` (a value holding ``; return 200`` arrives
as a literal header: no injected directive), ``proxyHideHeader``,
``proxyReadTimeout`` (an upstream sleeping past it gives 504), the probe
server; TCP and UDP echo through a ``TCPReverseProxy`` with two weighted
servers.

Skipped unless running as root with ``ip netns`` usable and nginx (with the
stream module) installed; CI runs as root with hack/install-deps.sh.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import nginx_util

from controllers.reverseproxy.resources import desired_children

DEADLINE = 20.0


_REASON = nginx_util.netns_unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=str(_REASON))

HTTP_BACKEND = r"""
import http.server, json, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/slow"):
            time.sleep(3)
        headers = {k.lower(): v for k, v in self.headers.items()}
        body = json.dumps({"path": self.path, "headers": headers}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Secret", "hide-me")
        self.send_header("X-Visible", "keep-me")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("ready", flush=True)
srv.serve_forever()
"""

ECHO_BACKEND = r"""
import socket, sys, threading
tag, port = sys.argv[1].encode(), int(sys.argv[2])
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(64); ready.release()
    while True:
        c, _ = s.accept()
        def serve(c=c):
            with c:
                while data := c.recv(4096):
                    c.sendall(tag + b":" + data)
        threading.Thread(target=serve, daemon=True).start()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port)); ready.release()
    while True:
        data, peer = s.recvfrom(4096); s.sendto(tag + b":" + data, peer)
ready = threading.Semaphore(0)
for f in (tcp, udp):
    threading.Thread(target=f, daemon=True).start()
ready.acquire(); ready.acquire()
print("ready", flush=True)
threading.Event().wait()
"""

# Runs in the namespace: waits for nginx's probe, then performs the requests given as JSON.
CLIENT = r"""
import http.client, json, socket, sys, time
deadline = time.monotonic() + float(sys.argv[1])
while True:
    try:
        socket.create_connection(("127.0.0.1", 3001), timeout=1).close(); break
    except OSError:
        if time.monotonic() > deadline: raise
        time.sleep(0.05)
out = []
for kind, port, arg in json.loads(sys.argv[2]):
    if kind == "http":
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        started = time.monotonic()
        c.request("GET", arg)
        r = c.getresponse()
        out.append({"status": r.status, "headers": {k.lower(): v for k, v in r.getheaders()},
                    "body": r.read().decode(), "seconds": time.monotonic() - started})
    elif kind == "tcp":
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(arg.encode()); out.append(s.recv(4096).decode())
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(5); s.connect(("127.0.0.1", port)); s.send(arg.encode())
            out.append(s.recv(4096).decode())
print(json.dumps(out))
"""

_COUNTER = itertools.count()


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr.strip()}"


class Netns:
    """One network namespace with loopback up and its own /etc/hosts; ``close()``
    kills what runs in it (by pid) and removes it."""

    def __init__(self, tmp_path: Path) -> None:
        self.name = f"rp-{os.getpid()}-{next(_COUNTER)}"
        self.etc = Path("/etc/netns") / self.name
        self.tmp = tmp_path
        self.procs: list[subprocess.Popen[str]] = []

    def build(self, hosts: dict[str, str]) -> None:
        made = subprocess.run(["ip", "netns", "add", self.name], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"ip netns add failed: {made.stderr.strip()}")
        _run("ip", "-n", self.name, "link", "set", "lo", "up")
        self.etc.mkdir(parents=True, exist_ok=True)
        (self.etc / "hosts").write_text(nginx_util.hosts_text(hosts))

    def spawn(self, argv: list[str], *, wait_ready: bool = False) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.name, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.procs.append(proc)
        if wait_ready:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the backend prints "ready" once bound (or exits)
            assert line.strip() == "ready", f"{argv[:3]} did not start"
        return proc

    def nginx(self, text: str) -> Path:
        conf = self.tmp / "nginx.conf"
        conf.write_text(text)
        cmd = nginx_util.nginx_command(conf, self.tmp, config_sets_pid_and_daemon=True)
        self.spawn(cmd)
        return conf

    def client(self, requests: list[tuple[str, int, str]]) -> list[Any]:
        done = subprocess.run(
            ["ip", "netns", "exec", self.name, sys.executable, "-c", CLIENT, str(DEADLINE),
             json.dumps(requests)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        error_log = self.tmp / "error.log"
        assert done.returncode == 0, done.stderr + (
            error_log.read_text() if error_log.exists() else ""
        )
        result: list[Any] = json.loads(done.stdout)
        return result

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
        pids = subprocess.run(
            ["ip", "netns", "pids", self.name], capture_output=True, text=True, check=False
        ).stdout.split()
        for pid in pids:  # anything left in our namespace (an nginx worker) is ours
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)
        shutil.rmtree(self.etc, ignore_errors=True)


@pytest.fixture
def netns(tmp_path: Path) -> Iterator[Netns]:
    ns = Netns(tmp_path)
    try:
        yield ns
    finally:
        ns.close()
    assert (
        ns.name
        not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    )


def configmap_text(obj: dict[str, Any]) -> str:
    """The nginx.conf exactly as the operator's ConfigMap holds it."""
    obj["metadata"].update(namespace="default", uid="dataplane")
    cm = desired_children(obj, nginx_image="nginx")[0]
    text: str = cm["data"]["nginx.conf"]
    return text


def test_http_proxy_pass_rewrite_headers_and_timeouts(netns: Netns) -> None:
    text = configmap_text(
        {
            "kind": "ReverseProxy",
            "metadata": {"name": "web"},
            "spec": {
                "proxyPass": "http://backend.test:9000",
                "rewrite": [{"regex": "^/foo(.*)$", "replacement": "/bar$1"}],
                "proxySetHeader": {
                    "X-Injected": "v; return 200 injected",
                    "X-Client": "$remote_addr",
                },
                "proxyHideHeader": ["x-secret"],
                "proxyReadTimeout": "1s",
            },
        }
    )
    netns.build({"backend.test": "127.0.0.1"})
    netns.spawn([sys.executable, "-c", HTTP_BACKEND, "9000"], wait_ready=True)
    netns.nginx(text)
    rewritten, plain, slow, ping = netns.client(
        [("http", 8080, "/foo/x?q=1"), ("http", 8080, "/other"), ("http", 8080, "/slow"),
         ("http", 3001, "/_/ping")]
    )  # fmt: skip

    assert rewritten["status"] == 200
    seen = json.loads(rewritten["body"])
    assert seen["path"] == "/bar/x?q=1"  # rewrite ... break, args kept
    assert seen["headers"]["host"] == "backend.test:9000"  # the default host from proxyPass
    assert seen["headers"]["x-injected"] == "v; return 200 injected"  # a value, not a directive
    assert seen["headers"]["x-client"] == "127.0.0.1"
    assert "x-secret" not in rewritten["headers"]  # proxyHideHeader
    assert rewritten["headers"]["x-visible"] == "keep-me"
    assert json.loads(plain["body"])["path"] == "/other"

    assert slow["status"] == 504  # the upstream sleeps 3 s, proxyReadTimeout is 1 s
    assert 0.9 <= slow["seconds"] < 2.9
    assert (ping["status"], ping["body"]) == (200, ".")


@pytest.mark.parametrize("protocol", ["TCP", "UDP"])
def test_tcp_and_udp_stream_proxy(netns: Netns, protocol: str) -> None:
    text = configmap_text(
        {
            "kind": "TCPReverseProxy",
            "metadata": {"name": "echo"},
            "spec": {
                "protocol": protocol,
                "servers": [
                    {"server": "backend.test:9100", "weight": 1},
                    {"server": "127.0.0.1:9101", "weight": 1, "maxConns": 100},
                ],
            },
        }
    )
    netns.build({"backend.test": "127.0.0.1"})
    for tag, port in (("a", "9100"), ("b", "9101")):
        netns.spawn([sys.executable, "-c", ECHO_BACKEND, tag, port], wait_ready=True)
    netns.nginx(text)
    kind = protocol.lower()
    replies = netns.client([(kind, 8080, f"hello-{i}") for i in range(8)])
    assert [r.split(":", 1)[1] for r in replies] == [f"hello-{i}" for i in range(8)]
    tags = [r.split(":", 1)[0] for r in replies]
    # round-robin (per nginx worker: worker_processes is auto) reaches both servers
    assert set(tags) == {"a", "b"}
