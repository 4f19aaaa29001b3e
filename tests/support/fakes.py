"""Scripted list/watch pieces for reflector and informer tests (no server)."""

from __future__ import annotations

import queue
import threading
from typing import Any

from pycontroller.cache import ListWatch

_END = object()


def obj(name: str, rv: int | str, ns: str = "ns", **labels: str) -> dict[str, Any]:
    """A minimal namespaced object with a resourceVersion (and labels, if any)."""
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": str(rv)}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta}


def page(items: list[dict[str, Any]], rv: int | str, cont: str | None = None) -> dict[str, Any]:
    """A list answer at ``rv`` (with a continue token if ``cont``)."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    return {"items": items, "metadata": meta}


def ev(etype: str, o: dict[str, Any]) -> dict[str, Any]:
    """A watch event."""
    return {"type": etype, "object": o}


class FakeWatch:
    """A thread-safe scripted watch; ``close`` from any thread ends iteration."""

    def __init__(self, events: list[dict[str, Any]] | None = None, end: bool = False) -> None:
        self.q: queue.Queue[Any] = queue.Queue()
        self.closed = threading.Event()
        for e in events or []:
            self.q.put(e)
        if end:
            self.q.put(_END)

    def push(self, etype: str, o: dict[str, Any]) -> None:
        self.q.put(ev(etype, o))

    def end(self) -> None:
        self.q.put(_END)

    def __iter__(self) -> FakeWatch:
        return self

    def __next__(self) -> dict[str, Any]:
        item = self.q.get()
        if item is _END:
            raise StopIteration
        assert isinstance(item, dict)
        return item

    def close(self) -> None:
        self.closed.set()
        self.q.put(_END)


class SleepRecorder:
    """A clock that never waits: records the requested sleeps (a 429's Retry-After, a backoff)."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def now(self) -> float:
        return 0.0

    def time(self) -> float:
        return 0.0

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        return None

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        self.sleeps.append(seconds)
        return False


class RecordingStore:
    """A reflector's store that records each call (name only) for assertions."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def add(self, o: Any) -> None:
        with self.lock:
            self.calls.append(("add", o["metadata"]["name"]))

    def update(self, o: Any) -> None:
        with self.lock:
            self.calls.append(("update", o["metadata"]["name"]))

    def delete(self, o: Any) -> None:
        with self.lock:
            self.calls.append(("delete", o["metadata"]["name"]))

    def replace(self, items: list[Any], rv: str) -> None:
        with self.lock:
            self.calls.append(("replace", sorted(i["metadata"]["name"] for i in items), rv))

    def resync(self) -> None:
        pass

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self.lock:
            return list(self.calls)


class ScriptedListerWatcher:
    """A ListerWatcher that answers from scripts: ``lists`` and ``watches``
    are consumed in order (an exception in them is raised), then an empty
    page and idle FakeWatches; every call's options are recorded."""

    supports_watch_list = True

    def __init__(self, watches: list[Any] | None = None, lists: list[Any] | None = None) -> None:
        self.watches: list[Any] = watches if watches is not None else []
        self.lists: list[Any] = lists if lists is not None else []
        self.watch_calls: list[dict[str, Any]] = []
        self.list_calls: list[dict[str, Any]] = []
        # The idle FakeWatches handed out once ``watches`` ran dry.
        self.idle: list[FakeWatch] = []
        self.lock = threading.Lock()

    def list(self, **opts: Any) -> dict[str, Any]:
        with self.lock:
            self.list_calls.append(opts)
            result = self.lists.pop(0) if self.lists else page([], 1)
        if isinstance(result, BaseException):
            raise result
        assert isinstance(result, dict)
        return result

    def watch(self, **opts: Any) -> FakeWatch:
        with self.lock:
            self.watch_calls.append(opts)
            result = self.watches.pop(0) if self.watches else None
            if result is None:
                result = FakeWatch()
                self.idle.append(result)
        if isinstance(result, BaseException):
            raise result
        assert isinstance(result, FakeWatch)
        return result

    def as_listwatch(self) -> ListWatch:
        """A plain ``ListWatch`` over these scripts: one without streaming lists."""
        return ListWatch(self.list, self.watch)

    def streamed(self) -> list[bool]:
        """Per watch call: whether it asked for a streamed list."""
        with self.lock:
            return [bool(c.get("send_initial_events")) for c in self.watch_calls]
