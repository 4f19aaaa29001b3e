"""SharedInformerFactory: one shared informer per resource (client-go ``informers.factory``).

Every controller in a process asks the factory for the informers it needs;
asking twice for the same resource returns the same informer, so each
resource is listed and watched once however many controllers use it.
Informers made by the factory index by namespace (``NAMESPACE_INDEX``).

A metadata-only informer (``for_resource(..., metadata_only=True)``, client-go's
``metadatainformer``) is another informer of the same resource: it lists and
watches with ``Accept: ...;as=PartialObjectMetadata[List]`` and caches
``PartialObjectMetadata`` dicts (``kind``, ``apiVersion: meta.k8s.io/v1``,
``metadata`` only), a fraction of the memory of whole objects. It is keyed
``"group/version/plural#metadata"``.

Informers stream their initial list when the server supports it
(``use_watch_list``, see ``Reflector``).

Lifecycle: ``for_resource`` (and ``lister``) any number of times, then
``start(stop)`` (starts every informer not yet started; call again after
adding more), ``wait_for_cache_sync(stop)``, and finally ``shutdown()``
(or set ``stop``) which stops the informers; ``shutdown`` also joins their
threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..client import ResourceClient
from ..clock import REAL_CLOCK, Clock
from .index import NAMESPACE_INDEX, IndexFunc, meta_namespace_index_func
from .listwatch import ListWatch
from .shared_informer import FifoKind, SharedIndexInformer, wait_for_cache_sync
from .transforms import compact_metadata

if TYPE_CHECKING:
    from .lister import Lister

__all__ = ["SharedInformerFactory"]

_T = TypeVar("_T")


_STOP_POLL = 0.1


def resource_key(group: str, version: str, plural: str, metadata_only: bool = False) -> str:
    """``"group/version/plural"`` (``"/v1/pods"`` for the core group), with
    ``"#metadata"`` appended for a metadata-only informer."""
    key = f"{group}/{version}/{plural}"
    return f"{key}#metadata" if metadata_only else key


class SharedInformerFactory:
    """Builds and owns shared informers for ``api_client``.

    ``namespace`` restricts namespaced resources to one namespace (cluster-
    scoped resources are always watched cluster-wide); ``label_selector``
    applies to every informer. ``resync_period`` is each informer's default
    handler resync period. Keyword-only: ``field_selector``, ``transform``
    (applied to every object before caching, e.g. dropping managedFields),
    ``clock``, ``use_watch_list`` (each reflector's, see ``Reflector``),
    ``fifo`` (each informer's queue: ``"real"``, in order, the default, or
    ``"delta"``, see ``SharedIndexInformer``). Thread-safe.
    """

    def __init__(
        self,
        api_client: Any,
        resync_period: float = 0,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
        transform: Callable[[Any], Any] | None = None,
        clock: Clock = REAL_CLOCK,
        use_watch_list: bool | None = None,
        fifo: FifoKind = "real",
    ) -> None:
        self.api_client = api_client
        self.fifo: FifoKind = fifo
        self.use_watch_list = use_watch_list
        self.resync_period = float(resync_period)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.transform = transform
        self._clock = clock
        self._lock = threading.Lock()
        self._informers: dict[str, SharedIndexInformer] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._stop = threading.Event()
        self._shut_down = False

    def for_resource(
        self,
        group: str,
        version: str,
        plural: str,
        namespaced: bool = True,
        metadata_only: bool = False,
        *,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float | None = None,
    ) -> SharedIndexInformer:
        """The shared informer of ``group/version/plural`` (created on first request).

        ``metadata_only``: the resource's metadata-only informer instead (a
        different informer, caching ``PartialObjectMetadata`` dicts, compacted
        by ``compact_metadata`` unless the factory has a ``transform``).
        ``indexers`` and ``resync_period`` only apply when the informer is
        created; add indexes to an existing one with ``add_indexers``.
        """
        key = resource_key(group, version, plural, metadata_only)
        with self._lock:
            informer = self._informers.get(key)
            if informer is not None:
                return informer
            client = ResourceClient(
                self.api_client, group, version, plural, namespaced, metadata_only=metadata_only
            )
            lw = ListWatch.from_client(
                client,
                namespace=self.namespace if namespaced else None,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
            )
            all_indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: meta_namespace_index_func}
            all_indexers.update(indexers or {})
            transform = self.transform
            if transform is None and metadata_only:
                transform = compact_metadata
            informer = SharedIndexInformer(
                lw,
                self.resync_period if resync_period is None else resync_period,
                all_indexers,
                transform,
                key,
                clock=self._clock,
                use_watch_list=self.use_watch_list,
                fifo=self.fifo,
            )
            self._informers[key] = informer
            return informer

    @overload
    def lister(
        self, group: str, version: str, plural: str, *, metadata_only: bool = False
    ) -> Lister[Any]: ...

    @overload
    def lister(
        self, group: str, version: str, plural: str, *, type: type[_T], metadata_only: bool = False
    ) -> Lister[_T]: ...

    def lister(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        type: object = None,
        metadata_only: bool = False,
    ) -> Lister[Any]:
        """A ``Lister`` over the cache of that resource's informer (created if needed).

        ``type`` (e.g. a ``TypedDict`` from ``python -m pycontroller.gen``) only
        tells mypy what the cached dicts look like: ``Lister[type]``. It is not
        used at run time; annotating the result (``x: Lister[Network] =
        factory.lister(...)``) does the same. ``metadata_only``: over the
        metadata-only informer's cache.
        """
        from .lister import Lister

        informer = self.for_resource(group, version, plural, metadata_only=metadata_only)
        return Lister(informer.get_indexer(), resource=plural)

    def informers(self) -> dict[str, SharedIndexInformer]:
        """Every informer made so far, keyed ``"group/version/plural"`` (metadata-only
        ones ``"group/version/plural#metadata"``)."""
        with self._lock:
            return dict(self._informers)

    def start(self, stop: threading.Event) -> None:
        """Start every informer not started yet; they stop when ``stop`` is set or on shutdown."""
        with self._lock:
            if self._shut_down:
                raise RuntimeError("SharedInformerFactory.start after shutdown")
            pending = [(k, inf) for k, inf in self._informers.items() if k not in self._threads]
            for key, informer in pending:
                self._threads[key] = informer.start(self._stop)
        if pending and stop is not self._stop:
            threading.Thread(
                target=self._forward_stop, args=(stop,), name="informer-factory-stop", daemon=True
            ).start()

    def _forward_stop(self, stop: threading.Event) -> None:
        while not self._stop.is_set():
            if stop.wait(_STOP_POLL):
                self._stop.set()
                return

    def wait_for_cache_sync(
        self, stop: threading.Event, timeout: float | None = None
    ) -> dict[str, bool]:
        """Wait for every started informer to sync; returns ``{"group/version/plural": synced}``."""
        with self._lock:
            started = {k: self._informers[k] for k in self._threads}
        deadline = None if timeout is None else time.monotonic() + timeout
        result: dict[str, bool] = {}
        for key, informer in started.items():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            result[key] = wait_for_cache_sync(stop, informer.has_synced, timeout=remaining)
        return result

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop every informer and wait for their threads to finish."""
        with self._lock:
            self._shut_down = True
            threads = list(self._threads.values())
        self._stop.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in threads:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(remaining)
