"""One client variant against a server, in its own process: sync, RSS, watch ingest.

Run by ``bench_sync.py`` (one fresh interpreter per variant and round, so
memory figures and the garbage collector's state never leak between
variants). Prints one JSON line:

- ``sync_s``: start -> every object of the initial list is in the client's
  hands (raw: the last page decoded; informers: the handler got the last add,
  stamped in the handler's thread; typed: the call returned);
- ``rss_per_object``: resident memory after the sync minus before it (both
  after ``gc.collect()`` and glibc's ``malloc_trim(0)``, so freed memory is
  not counted), divided by the objects cached;
- ``ingest_s``: from ``GET /arm`` (the canned server then sends ``events``
  MODIFIED events) to the last event handled (raw: decoded).

Variants: ``raw`` (paged GET, ``limit=500``, urllib3 + ``json.loads``; items
kept), ``raw_orjson`` (same with orjson: reference), ``ours_paged``,
``ours_stream`` (streaming list), ``ours_metadata`` (metadata-only informer),
``ours_strip`` (``strip_managed_fields`` transform), ``ours_metadata_strip``
(both) -- all five with the
garbage-collector policy ``Manager.run`` installs (``pycontroller._gc``) --,
``ours_paged_stockgc`` (paged, CPython's stock collector policy), ``typed``
(``CoreV1Api().list_namespaced_pod``/``_config_map``, one unpaged call, as
users write it), ``k8s_informer`` (``kubernetes.informer.SharedInformer``).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import inspect
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import urllib3

NAMESPACE = "bench"
PAGE = 500
LIVE = False  # --live: also walk the cached objects for their live bytes
# --embedded: the server is the embedded APIServer (no /arm, /stats, /nostream)
EMBEDDED = False

try:
    _libc: Any = ctypes.CDLL("libc.so.6")
except OSError:  # not glibc: RSS then also counts freed-but-kept memory
    _libc = None


def rss() -> int:
    """Resident bytes of this process after a full collection and malloc_trim."""
    gc.collect()
    if _libc is not None:
        _libc.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


LIVE_SAMPLE = 2000  # objects walked for live_per_object


def live_per_object(objs: list[Any]) -> float:
    """Live bytes per object, walked over an evenly spaced sample of ``objs``.

    The generated objects are alike, so a random 2,000 of them give the figure to well
    under 1% (a value shared by every object is amortised over the sample
    instead of the whole cache: a few bytes per object), and the walk costs
    about a second instead of 13 s per client at 30,000 Pods, which
    ``make bench``'s 20-minute budget cannot spare.
    """
    # random, not strided: the generator varies objects with the index modulo
    # small numbers, and a stride would pick a biased subset
    sample = random.Random(0).sample(objs, min(LIVE_SAMPLE, len(objs)))
    return live_bytes(sample) / len(sample)


def live_bytes(objs: Any) -> int:
    """Bytes of every dict, list, str... reachable from ``objs`` (each counted once).

    What the cached objects themselves hold, without allocator slack: RSS
    keeps the pages of freed blocks that share an arena with live ones (so a
    transform that drops fields after decoding shows little RSS gain even
    though the memory is free for reuse).
    """
    seen: set[int] = set()
    total = 0
    stack = [objs]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple):
            stack.extend(obj)
    return total


def get(url: str) -> Any:
    return json.loads(urllib3.request("GET", url).data)


class Done:
    """Counts calls; ``event`` is set (and ``at`` stamped) at the ``target``-th."""

    def __init__(self, target: int) -> None:
        self.n = 0
        self.target = target
        self.event = threading.Event()
        self.at = 0.0

    def hit(self, *_: Any) -> None:
        self.n += 1
        if self.n == self.target:
            self.at = time.perf_counter()
            self.event.set()


def wait(done: Done, what: str, timeout: float = 900) -> float:
    if not done.event.wait(timeout):
        raise RuntimeError(f"{what}: only {done.n} of {done.target}")
    return done.at


# --------------------------------------------------------------------------- raw


def raw_sync(url: str, plural: str, loads: Callable[[bytes], Any]) -> tuple[float, list[Any]]:
    pm = urllib3.PoolManager()
    base = f"{url}/api/v1/namespaces/{NAMESPACE}/{plural}?limit={PAGE}"
    items: list[Any] = []
    t0 = time.perf_counter()
    cont = ""
    while True:
        resp = pm.request("GET", base + (f"&continue={cont}" if cont else ""))
        doc = loads(resp.data)
        items.extend(doc["items"])
        cont = doc["metadata"].get("continue") or ""
        if not cont:
            break
    return time.perf_counter() - t0, items


def raw_ingest(url: str, plural: str, events: int, loads: Callable[[bytes], Any]) -> float:
    pm = urllib3.PoolManager()
    resp = pm.request(
        "GET",
        f"{url}/api/v1/namespaces/{NAMESPACE}/{plural}?watch=true&resourceVersion=1",
        preload_content=False,
    )
    time.sleep(0.1)
    t0 = time.perf_counter()
    get(url + "/arm")
    n = 0
    buf = b""
    while n < events:
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line:
                loads(line)
                n += 1
    elapsed = time.perf_counter() - t0
    resp.release_conn()
    if n != events:
        raise RuntimeError(f"raw watch: {n} of {events} events")
    return elapsed


# --------------------------------------------------------------------------- ours


def ours_informer(url: str, plural: str, variant: str) -> Any:
    from kubernetes import client as k8s

    from pycontroller.cache import (
        NAMESPACE_INDEX,
        ListWatch,
        SharedIndexInformer,
        SharedInformerFactory,
        meta_namespace_index_func,
        strip_managed_fields,
    )
    from pycontroller.client import ResourceClient, TokenBucketRateLimiter, set_rate_limiter

    stream = variant in ("ours_stream",)
    cfg = k8s.Configuration()
    # Under /nostream the canned server answers streaming lists with 422, as a
    # server without WatchList: the informer lists with pages.
    cfg.host = url if stream or EMBEDDED else url + "/nostream"
    api = k8s.ApiClient(cfg)
    set_rate_limiter(api, TokenBucketRateLimiter(qps=0))
    if variant == "ours_metadata_strip":
        client = ResourceClient(api, "", "v1", plural, metadata_only=True)
    elif variant == "ours_metadata":
        sig = inspect.signature(SharedInformerFactory.for_resource)
        if "metadata_only" in sig.parameters:
            factory = SharedInformerFactory(api, namespace=NAMESPACE)
            return factory.for_resource("", "v1", plural, metadata_only=True)  # type: ignore[call-arg]
        client = ResourceClient(api, "", "v1", plural, metadata_only=True)
    else:
        client = ResourceClient(api, "", "v1", plural)
    kwargs: dict[str, Any] = {}
    if "use_watch_list" in inspect.signature(SharedIndexInformer).parameters:
        kwargs["use_watch_list"] = stream
    return SharedIndexInformer(
        ListWatch.from_client(client, namespace=NAMESPACE),
        0,
        {NAMESPACE_INDEX: meta_namespace_index_func},
        strip_managed_fields if variant.endswith("_strip") else None,
        f"bench-{variant}",
        **kwargs,
    )


class Handler:
    """A ``ResourceEventHandler`` counting adds and updates."""

    def __init__(self, adds: Done, updates: Done) -> None:
        self.on_add = adds.hit
        self.on_update = updates.hit

    def on_delete(self, obj: Any) -> None:
        pass


def ours(url: str, plural: str, variant: str, objects: int, events: int) -> dict[str, Any]:
    if not variant.endswith("_stockgc"):
        try:
            from pycontroller._gc import tune_gc
        except ImportError:  # older checkouts, for side-by-side runs
            pass
        else:
            tune_gc()  # what Manager.run installs
    inf = ours_informer(url, plural, variant)
    adds, updates = Done(objects), Done(events)
    inf.add_event_handler(Handler(adds, updates))
    stop = threading.Event()
    before = rss()
    t0 = time.perf_counter()
    thread = inf.start(stop)
    sync = wait(adds, "informer adds") - t0
    if not inf.has_synced():
        raise RuntimeError("every add delivered but the informer is not synced")
    after = rss()
    out = {"sync_s": sync, "rss_per_object": (after - before) / objects}
    cached = inf.get_store().list()
    out["cached"] = len(cached)
    if LIVE:
        out["live_per_object"] = live_per_object(cached)
    del cached
    if events:
        time.sleep(0.3)  # let the watch request reach the server
        gc.collect()
        t0 = time.perf_counter()
        get(url + "/arm")
        out["ingest_s"] = wait(updates, "informer updates") - t0
    stop.set()
    thread.join(10)
    return out


# --------------------------------------------------------------------------- kubernetes package


def _core(url: str) -> Any:
    from kubernetes import client as k8s

    cfg = k8s.Configuration()
    cfg.host = url
    return k8s.CoreV1Api(k8s.ApiClient(cfg))


def _list_func(core: Any, plural: str) -> Any:
    return core.list_namespaced_pod if plural == "pods" else core.list_namespaced_config_map


def typed(url: str, plural: str, objects: int) -> dict[str, Any]:
    list_func = _list_func(_core(url), plural)
    before = rss()
    t0 = time.perf_counter()
    result = list_func(NAMESPACE)
    sync = time.perf_counter() - t0
    after = rss()
    assert len(result.items) == objects, len(result.items)
    return {"sync_s": sync, "rss_per_object": (after - before) / objects, "cached": objects}


def k8s_informer(url: str, plural: str, objects: int, events: int) -> dict[str, Any]:
    try:
        from kubernetes.informer import ADDED, MODIFIED, SharedInformer
    except ImportError:
        return {"error": "kubernetes.informer is not in the installed kubernetes package"}
    inf = SharedInformer(list_func=_list_func(_core(url), plural), namespace=NAMESPACE)
    adds, updates = Done(objects), Done(events)
    inf.add_event_handler(ADDED, adds.hit)
    inf.add_event_handler(MODIFIED, updates.hit)
    before = rss()
    t0 = time.perf_counter()
    inf.start()
    sync = wait(adds, "kubernetes.informer adds") - t0
    after = rss()
    out = {"sync_s": sync, "rss_per_object": (after - before) / objects}
    out["cached"] = len(inf.cache.list_keys())
    if events:
        time.sleep(0.3)
        gc.collect()
        t0 = time.perf_counter()
        get(url + "/arm")
        out["ingest_s"] = wait(updates, "kubernetes.informer updates") - t0
    # stop() joins a thread blocked in a watch that never ends here: leave it.
    return out


# --------------------------------------------------------------------------- kopf


def kopf_index(url: str, plural: str, objects: int) -> dict[str, Any]:
    """kopf's ``@kopf.index`` over the resource, kopf run embedded in a thread.

    The sync ends when the index function has been called for every object
    (kopf indexes the initial list before it reports the operator ready).
    kopf logs in with ``kopf.login_with_kubeconfig`` (``KUBECONFIG`` points at
    the server) from an ``@kopf.on.login`` handler; peering and event posting
    are off so only the indexing is measured.
    """
    import asyncio
    import logging

    import kopf

    logging.getLogger("kopf").setLevel(logging.WARNING)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
    registry = kopf.OperatorRegistry()
    done = Done(objects)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.peering.standalone = True

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> Any:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.index("v1", plural, registry=registry)
    def by_name(name: str, namespace: str, **_: Any) -> Any:
        done.hit()
        return {(namespace, name): None}

    stop_flag = threading.Event()

    def operator() -> None:
        asyncio.run(
            kopf.operator(
                registry=registry,
                namespaces=[NAMESPACE],
                standalone=True,
                stop_flag=stop_flag,
            )
        )

    before = rss()
    t0 = time.perf_counter()
    threading.Thread(target=operator, daemon=True, name="kopf").start()
    sync = wait(done, "kopf index calls", timeout=1800) - t0
    after = rss()
    stop_flag.set()
    return {"sync_s": sync, "rss_per_object": (after - before) / objects, "cached": done.n}


# --------------------------------------------------------------------------- main


def run(url: str, variant: str, plural: str, objects: int, events: int) -> dict[str, Any]:
    from pycontroller import _json

    loads = {"raw": json.loads, "raw_orjson": _json.loads}
    if variant in loads:
        before = rss()
        sync, items = raw_sync(url, plural, loads[variant])
        after = rss()
        out = {"sync_s": sync, "rss_per_object": (after - before) / objects, "cached": len(items)}
        if LIVE:
            out["live_per_object"] = live_per_object(items)
        del items
        if events:
            gc.collect()
            out["ingest_s"] = raw_ingest(url, plural, events, loads[variant])
        return out
    if variant.startswith("ours"):
        return ours(url, plural, variant, objects, events)
    if variant == "typed":
        return typed(url, plural, objects)
    if variant == "k8s_informer":
        return k8s_informer(url, plural, objects, events)
    if variant == "kopf":
        return kopf_index(url, plural, objects)
    raise SystemExit(f"unknown variant {variant}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--variant", required=True)
    parser.add_argument("--plural", default="pods")
    parser.add_argument("--objects", type=int, required=True)
    parser.add_argument("--events", type=int, default=0)
    parser.add_argument("--live", action="store_true", help="also report live_per_object")
    parser.add_argument("--embedded", action="store_true", help="the server is an APIServer")
    parser.add_argument("--kubeconfig", help="for kopf (KUBECONFIG)")
    args = parser.parse_args()
    global LIVE, EMBEDDED
    LIVE, EMBEDDED = args.live, args.embedded
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
    if EMBEDDED:
        out = run(args.url, args.variant, args.plural, args.objects, 0)
    else:
        get(args.url + "/disarm")
        stats0 = get(args.url + "/stats")
        out = run(args.url, args.variant, args.plural, args.objects, args.events)
        stats1 = get(args.url + "/stats")
        out["requests"] = {k: stats1[k] - stats0[k] for k in stats0}
    out["variant"] = args.variant
    print(json.dumps(out), flush=True)
    sys.stdout.flush()
    os._exit(0)  # informer threads blocked in watches: do not wait for them


if __name__ == "__main__":
    main()
