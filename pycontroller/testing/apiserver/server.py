"""``APIServer``: the embedded Kubernetes API server for tests.

State (objects, resourceVersion counter, history, registered CRD types)
lives in the ``APIServer`` object, not in the HTTP server, so ``stop()``
followed by ``start()`` serves the same state on the same port, like an API
server restart: clients reconnect and resume their watches (or relist on 410).

Thread-safety: every public method may be called from any thread while the
server runs. ``request_log`` is appended under a lock; read it after the
requests of interest have completed (``list(server.request_log)``).
"""

from __future__ import annotations

import copy
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import yaml

from pycontroller.testing.apiserver.http.auth import Authenticator, make_authorizer, user_named
from pycontroller.testing.apiserver.http.faults import Faults
from pycontroller.testing.apiserver.registry.admission_plugins import (
    SYSTEM_PRIORITY_CLASSES,
    system_priority_class,
)
from pycontroller.testing.apiserver.registry.admission_policy_status import PolicyStatusController
from pycontroller.testing.apiserver.registry.gc import GarbageCollector
from pycontroller.testing.apiserver.registry.kinds_registry import Registry
from pycontroller.testing.apiserver.registry.rbac_bootstrap import (
    ClusterRoleAggregator,
    bootstrap_cluster_role_bindings,
    bootstrap_cluster_roles,
)
from pycontroller.testing.apiserver.registry.resource_quota import QuotaController
from pycontroller.testing.apiserver.registry.rest import REST, WriteOptions
from pycontroller.testing.apiserver.registry.service_accounts import (
    ServiceAccountsController,
    ensure_default,
)
from pycontroller.testing.apiserver.registry.storage import Storage
from pycontroller.testing.apiserver.registry.storage_protection import ProtectionController
from pycontroller.testing.apiserver.registry.watch import Watcher
from pycontroller.testing.apiserver.schema.builtin import Defaulter, builtin_types
from pycontroller.testing.apiserver.simulate import Simulator

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from pycontroller.testing.apiserver.http.handler import _HTTPServer

__all__ = ["APIServer", "RequestRecord", "load_crds"]

logger = logging.getLogger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class RequestRecord(NamedTuple):
    """One served request: upper-case method, path with query, HTTP status."""

    method: str
    path: str
    status: int


def resource_of(path: str) -> str | None:
    """The resource plural a request path addresses (``pods`` for
    ``/api/v1/namespaces/ns/pods/x/status``; ``namespaces`` for a namespace
    itself); None for non-resource paths."""
    parts = [p for p in urlsplit(path).path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        rest = parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        rest = parts[3:]
    else:
        return None
    if rest and rest[0] == "watch":
        rest = rest[1:]
    if not rest:
        return None
    if (
        rest[0] == "namespaces"
        and len(rest) >= 3
        and not (
            len(rest) == 3
            and rest[2]
            in (
                "status",
                "finalize",
            )
        )
    ):
        return rest[2]
    return rest[0]


def _iter_yaml_docs(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("r", encoding="utf-8") as f:
        for doc in yaml.safe_load_all(f):
            if isinstance(doc, dict):
                if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
                    yield from (d for d in doc["items"] if isinstance(d, dict))
                else:
                    yield doc


def load_crds(sources: Iterable[dict[str, Any] | str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """CRD dicts from dicts, YAML/JSON files and directories (recursively;
    non-CRD documents are ignored)."""
    out: list[dict[str, Any]] = []
    for src in sources:
        if isinstance(src, dict):
            out.append(copy.deepcopy(src))
            continue
        p = Path(src)
        files = (
            sorted(
                f for f in p.rglob("*") if f.is_file() and f.suffix in (".yaml", ".yml", ".json")
            )
            if p.is_dir()
            else [p]
        )
        for f in files:
            for doc in _iter_yaml_docs(f):
                if doc.get("kind") == "CustomResourceDefinition":
                    out.append(doc)
    return out


class APIServer:
    """An in-process Kubernetes API server over real HTTP on loopback.

    Serves the built-in kinds of ``builtin.py`` plus CRD-defined resources with
    kube-apiserver's list/watch semantics (see ``storage.py``, ``watch.py``,
    ``rest.py``). Test controls: ``compact``, ``fail_next``, ``set_latency``,
    ``delay_watch_events``, ``drop_watches``, ``request_log``/``writes``, ``install_crd``,
    ``max_watch_backlog``.

    Invariants: state survives ``stop()``/``start()``; the port chosen by the
    first ``start()`` (``port=0``) is reused on restart; ``request_log`` is
    only ever appended to (or cleared in place), so a reference to it stays
    valid; every request is logged before its response is sent.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        crds: Iterable[dict[str, Any] | str | os.PathLike[str]] = (),
        history_size: int = 10000,
        bookmark_interval: float = 60.0,
        simulate: Iterable[str] = (),
        authorizer: str = "AlwaysAllow",
    ) -> None:
        """``simulate``: names from ``simulate.SIMULATIONS`` (``"deployments"``,
        ``"kubelet"``, ``"endpoints"``, ``"disruption"``) of the kube components to run in process
        (see ``pycontroller.testing.apiserver.simulate``); none by default.

        ``authorizer``: ``"AlwaysAllow"`` (default) or ``"RBAC"``, which
        enforces the stored Roles and bindings on every request (``auth.py``);
        ``token_for``/``api_client(user=...)`` make clients of other users."""
        self.host = host
        self.port = port
        self.bookmark_interval = bookmark_interval
        # Events a watch may have queued but not yet sent before it is closed
        # as too slow (kube-apiserver terminates such watchers too).
        self.max_watch_backlog = 100_000
        # Streaming lists (watch with sendInitialEvents): True serves them (the
        # WatchList feature on); False rejects their parameters with 422, as a
        # server with the feature off; "ignore" drops the parameters and serves
        # a legacy watch, as a server (or proxy) that predates them.
        self.watch_list: bool | str = True
        self.registry = Registry(builtin_types())
        self.storage = Storage(history_size)
        self.rest = REST(self.storage, self.registry, Defaulter())
        self.gc = GarbageCollector(self.rest)
        self.policy_status = PolicyStatusController(self.rest)
        self.quota_controller = QuotaController(self.rest)
        self.storage_protection = ProtectionController(self.rest)
        self.service_accounts = ServiceAccountsController(self.rest)
        self.authenticator = Authenticator()
        self.authorizer = make_authorizer(authorizer, self.storage)
        self.faults = Faults()
        self.stopping = threading.Event()
        self.request_log: list[RequestRecord] = []
        self._log_lock = threading.Lock()
        self._watches: set[Watcher] = set()
        self._watches_lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lifecycle = threading.Lock()
        self._crd_sources = list(crds)
        self._crds_installed = False
        for ns in INITIAL_NAMESPACES:
            self.rest.create(
                self.registry.get("", "v1", "namespaces"),  # type: ignore[arg-type]
                None,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                WriteOptions(),
            )
            ensure_default(self.rest, ns)
        self._bootstrap_rbac()
        self._bootstrap_priority_classes()
        # After the initial namespaces: a simulation writes nothing until start().
        self.simulator = Simulator(self.rest, simulate)

    def _bootstrap_rbac(self) -> None:
        """The default ClusterRoles and bindings (``rbac_bootstrap.py``), with
        ``admin``/``edit``/``view`` already aggregated, as a cluster has them."""
        roles = self.registry.get("rbac.authorization.k8s.io", "v1", "clusterroles")
        bindings = self.registry.get("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
        self.rbac_aggregator = ClusterRoleAggregator(self.rest)
        if roles is None or bindings is None:
            return
        opts = WriteOptions(field_manager="kube-apiserver", user_agent="kube-apiserver")
        for role in bootstrap_cluster_roles():
            self.rest.create(roles, None, role, opts)
        for binding in bootstrap_cluster_role_bindings():
            self.rest.create(bindings, None, binding, opts)
        for _ in range(5):  # admin aggregates edit, which aggregates view
            if not self.rbac_aggregator.sync_once():
                break

    def _bootstrap_priority_classes(self) -> None:
        """``system-node-critical`` and ``system-cluster-critical``, as
        kube-apiserver's ``scheduling/bootstrap-system-priority-classes``
        post-start hook creates them."""
        classes = self.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
        if classes is None:
            return
        opts = WriteOptions(field_manager="kube-apiserver", user_agent="kube-apiserver")
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            self.rest.create(classes, None, system_priority_class(name, value, description), opts)

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> APIServer:
        """Serve (again). Idempotent. Returns self."""
        from pycontroller.testing.apiserver.http.handler import make_http_server

        with self._lifecycle:
            if self._httpd is not None:
                return self
            if not self._crds_installed:
                for crd in load_crds(self._crd_sources):
                    self.install_crd(crd)
                self._crds_installed = True
            self.stopping.clear()
            httpd = make_http_server(self.host, self.port, self)
            self.port = httpd.server_address[1]
            self._httpd = httpd
            self._thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.005},  # stop() waits for one poll
                name=f"apiserver-{self.port}",
                daemon=True,
            )
            self._thread.start()
            self.gc.start()
            self.policy_status.start()
            self.quota_controller.start()
            self.storage_protection.start()
            self.service_accounts.start()
            self.rbac_aggregator.start()
            self.simulator.start()
            logger.info("embedded API server listening on %s", self.url)
            return self

    def stop(self) -> None:
        """Stop serving: close the listener, every watch and every connection.
        State is kept for a later ``start()``."""
        with self._lifecycle:
            httpd = self._httpd
            if httpd is None:
                return
            self.stopping.set()
            httpd.shutdown()
            httpd.server_close()
            self.drop_watches()
            httpd.close_all_connections()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = None
            self._thread = None
            self.gc.stop()
            self.policy_status.stop()
            self.quota_controller.stop()
            self.storage_protection.stop()
            self.service_accounts.stop()
            self.rbac_aggregator.stop()
            self.simulator.stop()

    def __enter__(self) -> APIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def watch_cache(self) -> bool:
        """True (default): lists are served as by kube-apiserver's watch cache,
        which ignores a ``limit`` at ``resourceVersion=0`` (every object, no
        continue token). False: as with ``--watch-cache=false``, such a list
        comes from storage (etcd), which pages it, so a client's paging from
        ``resourceVersion=0`` can be tested."""
        return self.rest.watch_cache

    @watch_cache.setter
    def watch_cache(self, value: bool) -> None:
        self.rest.watch_cache = value

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def url(self) -> str:
        host = self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    # --- clients -------------------------------------------------------------------

    def token_for(self, user: str, groups: Iterable[str] = ()) -> str:
        """A bearer token that authenticates as ``user`` (a service account as
        ``system:serviceaccount:<ns>:<name>`` gets its groups) plus ``groups``."""
        return self.authenticator.issue(user_named(user, groups))

    def write_kubeconfig(
        self, path: str | os.PathLike[str], *, user: str | None = None, groups: Iterable[str] = ()
    ) -> str:
        """Write a kubeconfig pointing at this server; returns the path.
        ``user``: authenticate as that user instead of the admin."""
        token = self.token_for(user, groups) if user else "embedded"
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "embedded", "cluster": {"server": self.url}}],
            "users": [{"name": "embedded", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "embedded",
                    "context": {"cluster": "embedded", "user": "embedded", "namespace": "default"},
                }
            ],
            "current-context": "embedded",
            "preferences": {},
        }
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        return str(p)

    def api_client(self, *, user: str | None = None, groups: Iterable[str] = ()) -> ApiClient:
        """A ``kubernetes.client.ApiClient`` configured for this server
        (as ``user``, see ``token_for``; the admin by default)."""
        from kubernetes import client

        conf = client.Configuration()
        conf.host = self.url
        conf.verify_ssl = False
        conf.api_key = {"authorization": self.token_for(user, groups) if user else "embedded"}
        conf.api_key_prefix = {"authorization": "Bearer"}
        return client.ApiClient(conf)

    # --- CRDs ----------------------------------------------------------------------

    def install_crd(self, crd: dict[str, Any] | str | os.PathLike[str]) -> None:
        """Install CRD(s) from a dict or a file/dir path (create or update)."""
        for doc in load_crds([crd]):
            self.rest.install_crd(doc)

    # --- test controls -------------------------------------------------------------

    def compact(self) -> None:
        """Drop event history: watches and exact lists from older
        resourceVersions (and outstanding continue tokens) now answer 410."""
        self.storage.compact()

    def fail_next(
        self,
        status: int = 500,
        times: int = 1,
        method: str | None = None,
        path_regex: str | None = None,
        *,
        retry_after: int | None = None,
    ) -> None:
        """Answer the next ``times`` requests matching ``method`` and
        ``path_regex`` (searched in path+query) with ``status`` and a Status
        body; ``retry_after`` sets the ``Retry-After`` header (a 429 has 1 s
        by default)."""
        self.faults.fail_next(status, times, method, path_regex, retry_after=retry_after)

    def set_latency(self, seconds: float, path_regex: str | None = None) -> None:
        """Delay every request whose path+query matches ``path_regex`` (all when
        None) by ``seconds``; ``seconds=0`` removes the rule."""
        self.faults.set_latency(seconds, path_regex)

    def delay_watch_events(self, seconds: float) -> None:
        """Hold every watch event back ``seconds`` after its commit, in order
        (a lagging watch cache; open watches too); 0 stops delaying. Bookmarks
        never overtake a held-back event. ``clear_faults`` resets it."""
        self.faults.delay_watch_events(seconds)

    def clear_faults(self) -> None:
        self.faults.clear()

    def drop_watches(self) -> None:
        """Close every open watch stream abruptly (no terminating chunk)."""
        with self._watches_lock:
            watches = list(self._watches)
        for w in watches:
            w.abort()

    def watch_count(self) -> int:
        with self._watches_lock:
            return len(self._watches)

    def register_watch(self, w: Watcher) -> None:
        with self._watches_lock:
            self._watches.add(w)

    def unregister_watch(self, w: Watcher) -> None:
        with self._watches_lock:
            self._watches.discard(w)

    def record(self, method: str, path: str, status: int) -> None:
        with self._log_lock:
            self.request_log.append(RequestRecord(method.upper(), path, status))

    def writes(self, resource: str | None = None) -> int:
        """Number of POST/PUT/PATCH/DELETE requests served (any status),
        optionally only those addressing ``resource`` (a plural). Subresource
        writes (``balancers/status``) count under the main plural."""
        with self._log_lock:
            records = list(self.request_log)
        n = 0
        for r in records:
            if r.method not in WRITE_METHODS:
                continue
            if resource is not None and resource_of(r.path) != resource:
                continue
            n += 1
        return n

    def clear_request_log(self) -> None:
        with self._log_lock:
            self.request_log.clear()

    def requests(
        self, method: str | None = None, path_regex: str | None = None
    ) -> list[RequestRecord]:
        """The logged requests matching ``method`` and ``path_regex``."""
        pattern = re.compile(path_regex) if path_regex else None
        with self._log_lock:
            records = list(self.request_log)
        return [
            r
            for r in records
            if (method is None or r.method == method.upper())
            and (pattern is None or pattern.search(r.path))
        ]

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion."""
        return self.storage.resource_version

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<APIServer {self.url} {state} rv={self.resource_version}>"
