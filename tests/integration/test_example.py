"""The example mirror controller converges against the embedded API server."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controllers.example import MIRROR_LABEL, MirrorController
from pycontroller import EventRecorder, NotFoundError, ResourceClient
from pycontroller.testing import APIServer, wait_for

REPO = Path(__file__).resolve().parents[2]


def cm(name: str, data: dict[str, str], labelled: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labelled:
        meta["labels"] = {MIRROR_LABEL: "true"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def get_or_none(client: ResourceClient, name: str) -> dict[str, Any] | None:
    try:
        return client.get(name, "default")
    except NotFoundError:
        return None


@pytest.fixture
def running(apiserver: APIServer) -> Iterator[tuple[ResourceClient, ResourceClient]]:
    api = apiserver.api_client()
    recorder = EventRecorder(api, "example-test", retry_interval=0.1)
    ctrl = MirrorController(api, recorder=recorder)
    stop = threading.Event()
    t = threading.Thread(target=ctrl.run, args=(2, stop), daemon=True)
    t.start()
    try:
        yield ResourceClient(api, "", "v1", "configmaps"), ResourceClient(api, "", "v1", "events")
    finally:
        stop.set()
        t.join(15)
        recorder.shutdown(5)
        assert not t.is_alive()


def test_mirror_lifecycle(running: tuple[ResourceClient, ResourceClient]) -> None:
    cms, events = running
    src = cms.create(cm("app", {"a": "1"}))
    cms.create(cm("plain", {"x": "y"}, labelled=False))

    mirror = wait_for(lambda: get_or_none(cms, "app-mirror"), what="mirror created")
    assert mirror["data"] == {"a": "1"}
    (ref,) = mirror["metadata"]["ownerReferences"]
    assert ref["uid"] == src["metadata"]["uid"] and ref["controller"] is True
    assert ref["kind"] == "ConfigMap" and ref["name"] == "app"

    # Data changes propagate.
    src = cms.patch("app", {"data": {"a": "2", "b": "3"}}, "default")
    wait_for(
        lambda: (get_or_none(cms, "app-mirror") or {}).get("data") == {"a": "2", "b": "3"},
        what="mirror updated",
    )
    # Someone edits the mirror: it is put back.
    cms.patch("app-mirror", {"data": {"a": "tampered"}}, "default")
    wait_for(
        lambda: (get_or_none(cms, "app-mirror") or {}).get("data") == {"a": "2", "b": "3"},
        what="mirror restored",
    )
    # Removing the label removes the mirror.
    cms.patch("app", {"metadata": {"labels": {MIRROR_LABEL: None}}}, "default")
    wait_for(lambda: get_or_none(cms, "app-mirror") is None, what="mirror deleted")
    # Labelled again, then deleted: the garbage collector removes the mirror.
    cms.patch("app", {"metadata": {"labels": {MIRROR_LABEL: "true"}}}, "default")
    wait_for(lambda: get_or_none(cms, "app-mirror"), what="mirror recreated")
    cms.delete("app", "default")
    wait_for(lambda: get_or_none(cms, "app-mirror") is None, what="mirror garbage-collected")

    assert get_or_none(cms, "plain-mirror") is None
    synced = [
        e
        for e in events.list("default")["items"]
        if e["reason"] == "Synced" and e["involvedObject"]["name"] == "app"
    ]
    assert synced and synced[0]["source"]["component"] == "example-test"


def test_mirror_conflict_is_reported_not_overwritten(
    running: tuple[ResourceClient, ResourceClient],
) -> None:
    cms, events = running
    cms.create(cm("taken-mirror", {"mine": "yes"}, labelled=False))
    cms.create(cm("taken", {"a": "1"}))

    def warned() -> bool:
        return any(
            e["reason"] == "MirrorConflict" and e["type"] == "Warning"
            for e in events.list("default")["items"]
        )

    wait_for(warned, what="conflict warning")
    assert cms.get("taken-mirror", "default")["data"] == {"mine": "yes"}


def test_many_sources_converge(running: tuple[ResourceClient, ResourceClient]) -> None:
    cms, _ = running
    for i in range(20):
        cms.create(cm(f"s{i}", {"i": str(i)}))

    def all_mirrored() -> bool:
        items = {c["metadata"]["name"]: c for c in cms.list("default")["items"]}
        return all(items.get(f"s{i}-mirror", {}).get("data") == {"i": str(i)} for i in range(20))

    wait_for(all_mirrored, what="20 mirrors")


# -- as a process ---------------------------------------------------------------


class Proc:
    def __init__(self, args: list[str]) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        self.p = subprocess.Popen(
            [sys.executable, "-m", "controllers.example", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(REPO),
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.p.stderr is not None
        for line in self.p.stderr:
            self.lines.append(line)

    def find(self, pattern: str) -> re.Match[str] | None:
        for line in list(self.lines):
            m = re.search(pattern, line)
            if m:
                return m
        return None

    def stop(self) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(30)
        finally:
            if self.p.poll() is None:
                self.p.kill()
            self._reader.join(5)


def test_runs_as_a_process(apiserver: APIServer, tmp_path: Path) -> None:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    cms.create(cm("proc", {"k": "v"}))
    proc = Proc(
        [
            "--kubeconfig",
            kubeconfig,
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--leader-elect",
            "--workers",
            "1",
        ]
    )
    try:
        wait_for(lambda: get_or_none(cms, "proc-mirror"), what="mirror from the process")
        m = wait_for(lambda: proc.find(r"metrics and health probes on 127\.0\.0\.1:(\d+)"))
        port = int(m.group(1))
        for probe in ("readyz", "healthz"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{probe}", timeout=5) as resp:
                assert resp.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            body = resp.read().decode()
        assert 'controller_runtime_reconcile_total{controller="example-mirror"' in body
        assert 'workqueue_adds_total{name="example-mirror"}' in body
        leases = ResourceClient(apiserver.api_client(), "coordination.k8s.io", "v1", "leases")
        lease = leases.get("example-mirror-controller", "default")
        assert lease["spec"]["holderIdentity"]
    finally:
        code = proc.stop()
    assert code == 0, "".join(proc.lines[-30:])
    # Released on the way out.
    lease = leases.get("example-mirror-controller", "default")
    assert lease["spec"]["holderIdentity"] == ""
