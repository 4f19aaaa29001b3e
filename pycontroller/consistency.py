"""Read-your-writes: a controller never acts on a cache older than its own writes (KEP-5647).

While a key is reconciled, every write made through a ``ResourceClient`` on
the worker's thread (create, update, update_status, patch, apply, delete) is
recorded with the resourceVersion the server answered. The next reconcile of
that key is *deferred* until the informers of the written resources have
observed those writes: the key is put back with ``add_after`` and a per-key
exponential backoff (``base_delay`` doubling up to ``max_delay``), never by
blocking a worker. After ``timeout`` seconds from the writes the key is
reconciled anyway and a warning is logged. This is kube-controller-manager's
``StaleControllerConsistency`` (1.36) and client-go's ``ConsistencyStore``
(``WroteAt``/``EnsureReady``/``Clear``), run for every key of a controller.

When is a write *observed*? For each informer of the written resource (full
and metadata-only informers of the Manager's factory, or those given to
``ReadYourWrites``) that has synced:

- a create, update, patch or apply at resourceVersion ``v`` (a delete that
  only set ``deletionTimestamp`` counts as an update): the object is in the
  informer's store at a resourceVersion ``>= v`` (the write itself or a later
  one). If it is absent, it was deleted since (by someone else): that is
  accepted once the informer's ``last_sync_resource_version()`` was ``>= v``
  at an earlier check of the key too — the reflector's resourceVersion moves
  when an event enters the informer's queue, a moment before the store applies it,
  so one observation is not enough;
- a delete at ``v`` (the object's last resourceVersion, as kube answers; or
  none when the answer is a ``Status``): the object is absent from the store,
  or present at a resourceVersion ``> v`` (re-created since).

The store is checked per object, not against one store-wide resourceVersion:
with a DeltaFIFO (events grouped by key, still selectable) no single
resourceVersion says that *every* earlier event was applied, while an
object's own resourceVersion in the store says exactly whether that object's
write was.

Comparing resourceVersions (KEP-5504, GA in Kubernetes 1.35): a
resourceVersion is a decimal integer without leading zeros; the longer one is
greater, equal lengths compare character by character. Servers that do not
follow it (some aggregated API servers) give resourceVersions that are not
comparable: then there is no wait (``compare_resource_versions`` returns
None). The embedded API server's resourceVersions are integers.

Not tracked (no wait): writes on other threads than the worker's (the scope
is thread-local), ``dry_run`` writes, writes to resources without a synced
informer, objects outside a factory's namespace, and every write when the
factory has a label or field selector (the informer may never see the
object).

The hot path: a worker whose key has no pending writes pays a dict lookup;
a ``ResourceClient`` write outside a tracked reconcile pays one thread-local
attribute read.

Metrics (label ``controller``): ``controller_runtime_stale_sync_skips_total``
counts reconciles deferred because the cache had not observed the key's
writes (after kube-controller-manager's alpha ``stale_sync_skips_total``);
``controller_runtime_stale_sync_timeouts_total`` counts reconciles that went
ahead at the bound with writes still unobserved.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from prometheus_client import Counter

from pycontroller._metrics import register
from pycontroller.clock import REAL_CLOCK, Clock

if TYPE_CHECKING:
    from pycontroller.cache.factory import SharedInformerFactory

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_BASE_DELAY",
    "DEFAULT_MAX_DELAY",
    "DEFAULT_TIMEOUT",
    "ObservingInformer",
    "ReadYourWrites",
    "Write",
    "compare_resource_versions",
    "record_write",
]

#: Seconds after its writes a key is reconciled even if they are still unobserved.
DEFAULT_TIMEOUT = 10.0
#: First requeue delay of a deferred key; doubles per deferral.
DEFAULT_BASE_DELAY = 0.005
#: Longest requeue delay of a deferred key.
DEFAULT_MAX_DELAY = 1.0

STALE_SYNC_SKIPS: Counter = register(
    Counter,
    "controller_runtime_stale_sync_skips_total",
    "Reconciles deferred because the cache had not yet observed the key's own writes",
    ["controller"],
)
STALE_SYNC_TIMEOUTS: Counter = register(
    Counter,
    "controller_runtime_stale_sync_timeouts_total",
    "Reconciles run at the read-your-writes bound with writes still unobserved",
    ["controller"],
)


def compare_resource_versions(a: str, b: str) -> int | None:
    """-1, 0 or 1 as ``a`` is older than, the same as or newer than ``b``;
    None when either is not a comparable resourceVersion (KEP-5504: a decimal
    integer without leading zeros; "" and "0" are not)."""
    if not a or not b or a[0] == "0" or b[0] == "0":
        return None
    if not (a.isascii() and a.isdigit() and b.isascii() and b.isdigit()):
        return None
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)


class ObservingInformer(Protocol):
    """What read-your-writes needs from an informer (``SharedIndexInformer`` has it)."""

    def has_synced(self) -> bool: ...

    def get_indexer(self) -> Any: ...

    def last_sync_resource_version(self) -> str: ...


_R = TypeVar("_R")
#: ``"group/version/plural"`` and the write's object key -> the informers that must observe it.
Resolver = Callable[[str, str], Iterable[ObservingInformer]]


@dataclass(frozen=True, slots=True)
class Write:
    """One recorded write: ``resource`` is ``"group/version/plural"``, ``key``
    the object's store key (``"ns/name"``, or ``"name"`` when cluster-scoped),
    ``resource_version`` the server's answer ("" when it had none)."""

    resource: str
    key: str
    resource_version: str
    deleted: bool = False


# The writes of the reconcile running on this thread (unset: none is tracked).
_scope = threading.local()


def record_write(
    resource: str,
    namespaced: bool,
    result: Any,
    *,
    name: str | None = None,
    namespace: str | None = None,
    deleted: bool = False,
    params: Mapping[str, Any] | None = None,
) -> None:
    """Called by ``ResourceClient`` after a successful write; a no-op unless a
    tracked reconcile runs on this thread. ``result`` is the server's answer;
    ``name``/``namespace`` identify a deleted object whose answer is a Status."""
    writes: list[Write] | None = getattr(_scope, "writes", None)
    if writes is None:
        return
    if params and (params.get("dry_run") or params.get("dryRun")):
        return
    meta = result.get("metadata") if isinstance(result, dict) else None
    rv = ""
    if isinstance(meta, dict) and result.get("kind") != "Status":
        name = meta.get("name") or name
        namespace = meta.get("namespace") or namespace
        rv = str(meta.get("resourceVersion") or "")
        if deleted and meta.get("deletionTimestamp"):
            deleted = False  # still there (finalizers): observed like an update
    if not name:
        return
    key = f"{namespace}/{name}" if namespaced and namespace else str(name)
    writes.append(Write(resource, key, rv, deleted))


@dataclass(slots=True)
class _Pending:
    writes: tuple[Write, ...]
    deadline: float
    deferrals: int = 0
    # Indices of writes found absent with the reflector already past them.
    passed: set[int] = field(default_factory=set)


class ReadYourWrites:
    """Per-controller read-your-writes tracker; see the module docstring.

    ``informers`` says which informers must observe a write: a
    ``SharedInformerFactory`` (its full and metadata-only informers of the
    written resource, within its namespace), a mapping ``"group/version/plural"
    -> informer`` (or a list of informers), or a callable ``(resource, key) ->
    informers``. Give one to ``Controller(read_your_writes=...)``; Builder
    controllers get one on the Manager's factory. One controller per tracker.
    """

    def __init__(
        self,
        informers: SharedInformerFactory
        | Mapping[str, ObservingInformer | Iterable[ObservingInformer]]
        | Resolver,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        base_delay: float = DEFAULT_BASE_DELAY,
        max_delay: float = DEFAULT_MAX_DELAY,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        if not timeout >= 0:
            raise ValueError("timeout must be >= 0")
        if not 0 < base_delay <= max_delay:
            raise ValueError("need 0 < base_delay <= max_delay")
        self._resolve = _resolver(informers)
        self.timeout = float(timeout)
        self.base_delay = float(base_delay)
        self.max_delay = float(max_delay)
        self._clock = clock
        self._lock = threading.Lock()
        # Key -> its last reconcile's unobserved writes. A key is synced by one
        # worker at a time, so an entry is only ever touched by that worker.
        self._pending: dict[Any, _Pending] = {}
        self._controller = ""
        self._skips = STALE_SYNC_SKIPS.labels(controller="")
        self._timeouts = STALE_SYNC_TIMEOUTS.labels(controller="")

    def bind(self, controller: str) -> None:
        """Label the metrics and logs with ``controller`` (``Controller`` calls it)."""
        with self._lock:
            if self._controller and self._controller != controller:
                raise ValueError(f"read_your_writes already serves controller {self._controller!r}")
            self._controller = controller
        self._skips = STALE_SYNC_SKIPS.labels(controller=controller)
        self._timeouts = STALE_SYNC_TIMEOUTS.labels(controller=controller)

    def pending(self, key: Any) -> tuple[Write, ...]:
        """The writes of ``key``'s last reconcile not yet known to be observed."""
        entry = self._pending.get(key)
        return entry.writes if entry is not None else ()

    def defer(self, key: Any) -> float | None:
        """Seconds to requeue ``key`` after when its cache is still older than
        its writes (counted as a skip); None when it may be reconciled now."""
        entry = self._pending.get(key)
        if entry is None:
            return None
        if self._observed(entry):
            self._forget(key)
            return None
        now = self._clock.now()
        if now >= entry.deadline:
            self._forget(key)
            self._timeouts.inc()
            logger.warning(
                "Controller %s: key %r reconciled with its writes still unobserved"
                " after %gs (%s)",
                self._controller,
                key,
                self.timeout,
                ", ".join(
                    f"{w.resource} {w.key}@{w.resource_version or '?'}" for w in entry.writes
                ),
            )
            return None
        delay = min(self.base_delay * 2.0 ** min(entry.deferrals, 64), self.max_delay)
        entry.deferrals += 1
        self._skips.inc()
        logger.debug(
            "Controller %s: key %r deferred %.3gs: cache older than its writes",
            self._controller,
            key,
            delay,
        )
        return max(min(delay, entry.deadline - now), 0.0) or self.base_delay

    def run(self, key: Any, sync: Callable[[Any], _R]) -> _R:
        """Call ``sync(key)`` recording its writes (kept even when it raises)."""
        self._forget(key)
        outer = getattr(_scope, "writes", None)
        writes: list[Write] = []
        _scope.writes = writes
        try:
            return sync(key)
        finally:
            _scope.writes = outer
            if writes:
                self._remember(key, writes)

    def _remember(self, key: Any, writes: list[Write]) -> None:
        # A write whose resourceVersion is not comparable is not waited for.
        tracked = tuple(
            w
            for w in writes
            if w.deleted or compare_resource_versions(w.resource_version, "1") is not None
        )
        if tracked:
            with self._lock:
                self._pending[key] = _Pending(tracked, self._clock.now() + self.timeout)

    def _forget(self, key: Any) -> None:
        if key in self._pending:
            with self._lock:
                self._pending.pop(key, None)

    def _observed(self, entry: _Pending) -> bool:
        for i, write in enumerate(entry.writes):
            for informer in self._resolve(write.resource, write.key):
                if not informer.has_synced():
                    continue
                if not self._observed_by(informer, write, i, entry):
                    return False
        return True

    @staticmethod
    def _observed_by(informer: ObservingInformer, write: Write, i: int, entry: _Pending) -> bool:
        v = write.resource_version
        obj = informer.get_indexer().get_by_key(write.key)
        if obj is not None:
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            rv = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
            if not v:
                return not write.deleted  # a delete answered by a Status: wait for absence
            cmp = compare_resource_versions(rv, v)
            if cmp is None:
                return True  # not comparable: no wait
            return cmp > 0 if write.deleted else cmp >= 0
        if write.deleted:
            return True
        # Absent: deleted since, or the store has not applied the create yet.
        seen = compare_resource_versions(informer.last_sync_resource_version(), v)
        if seen is None:
            return True
        if seen < 0:
            return False
        if i in entry.passed:
            return True
        entry.passed.add(i)
        return False


def _resolver(
    informers: SharedInformerFactory
    | Mapping[str, ObservingInformer | Iterable[ObservingInformer]]
    | Resolver,
) -> Resolver:
    from pycontroller.cache.factory import SharedInformerFactory

    if isinstance(informers, SharedInformerFactory):
        factory = informers

        def from_factory(resource: str, key: str) -> list[ObservingInformer]:
            if factory.label_selector or factory.field_selector:
                return []
            ns = factory.namespace
            if ns and "/" in key and key.partition("/")[0] != ns:
                return []
            found = factory.informers()
            return [
                inf
                for inf in (found.get(resource), found.get(f"{resource}#metadata"))
                if inf is not None
            ]

        return from_factory
    if isinstance(informers, Mapping):
        table: dict[str, list[ObservingInformer]] = {}
        for resource, value in informers.items():
            if isinstance(value, Iterable):
                table[resource] = list(value)
            else:
                table[resource] = [value]

        def from_table(resource: str, key: str) -> list[ObservingInformer]:
            return table.get(resource, [])

        return from_table
    return informers
