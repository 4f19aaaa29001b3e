"""Owner-reference garbage collector, deletion finalizers and namespace cleanup.

A background thread woken by storage commits that matter (deletions,
terminating objects, objects carrying ownerReferences) plus a slow periodic
rescan. Each pass, under the storage lock so it sees one consistent state:

- a dependent none of whose owners exists (by uid) is deleted (Background
  propagation, or Foreground when it has dependents itself); owner
  references to vanished owners are dropped when some owner still exists;
- an owner terminating with the ``orphan`` finalizer has its dependents'
  references to it removed, then the finalizer removed;
- an owner terminating with ``foregroundDeletion`` has its dependents
  deleted; once none with ``blockOwnerDeletion: true`` remains, the
  finalizer is removed (which deletes the owner when it was the last);
- a terminating namespace has its contents deleted; when empty, its
  ``spec.finalizers`` are cleared and it is removed.

Writes never wait on this thread: requests return at once and the GC
converges within tens of milliseconds, like kube's controllers do.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

from pycontroller.testing.apiserver.rest import FOREGROUND, ORPHAN, REST, now_rfc3339
from pycontroller.testing.apiserver.storage import Event

__all__ = ["GarbageCollector"]

logger = logging.getLogger(__name__)

NS_RKEY = ("", "namespaces")


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _deletion_conditions(
    remaining: dict[str, int], finalizers: dict[str, int]
) -> list[dict[str, str]]:
    """The conditions kube's namespace deleter reports (``deletion/status_condition_utils.go``)."""

    def cond(ctype: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {"type": ctype, "status": status, "reason": reason, "message": message}

    out = [
        cond("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered",
             "All resources successfully discovered"),
        cond("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions",
             "All legacy kube types successfully parsed"),
        cond("NamespaceDeletionContentFailure", "False", "ContentDeleted",
             "All content successfully deleted, may be waiting on finalization"),
    ]  # fmt: skip
    if remaining:
        parts = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(remaining.items()))
        out.append(cond("NamespaceContentRemaining", "True", "SomeResourcesRemain",
                        f"Some resources are remaining: {parts}"))  # fmt: skip
    else:
        out.append(cond("NamespaceContentRemaining", "False", "ContentRemoved",
                        "All content successfully removed"))  # fmt: skip
    if finalizers:
        parts = ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
        message = f"Some content in the namespace has finalizers remaining: {parts}"
        out.append(cond("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", message))
    else:
        out.append(cond("NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers",
                        "All content-preserving finalizers finished"))  # fmt: skip
    return out


def _with_conditions(status: dict[str, Any], conditions: list[dict[str, str]]) -> dict[str, Any]:
    """``status`` with ``conditions`` set; a condition keeps its
    ``lastTransitionTime`` while its status is unchanged."""
    old = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    merged = []
    for c in conditions:
        prev = old.get(c["type"])
        if prev is not None and all(prev.get(k) == c[k] for k in c):
            merged.append(prev)
            continue
        ts = (
            prev["lastTransitionTime"]
            if prev is not None and prev.get("status") == c["status"]
            else now_rfc3339()
        )
        merged.append({"type": c["type"], "status": c["status"], "lastTransitionTime": ts,
                       "reason": c["reason"], "message": c["message"]})  # fmt: skip
    return {**status, "conditions": merged}


class GarbageCollector:
    def __init__(self, rest: REST, *, period: float = 0.5, debounce: float = 0.01) -> None:
        self.rest = rest
        self.period = period
        self.debounce = debounce
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # uids some object named as its owner at the last pass (replaced, never
        # mutated, so the listener may read it without a lock). Deleting any
        # other object needs no GC pass.
        self._owner_uids: frozenset[str] = frozenset()
        rest.storage.add_listener(self._on_event)

    def _on_event(self, ev: Event) -> None:
        meta = _meta(ev.obj)
        if (
            meta.get("deletionTimestamp")
            or meta.get("ownerReferences")
            or (ev.type == "DELETED" and meta.get("uid") in self._owner_uids)
        ):
            self._wake.set()

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="apiserver-gc", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        t = self._thread
        if t is not None:
            t.join(timeout=5)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.period)
            if self._stop.is_set():
                return
            if self._wake.is_set():
                self._stop.wait(self.debounce)
            self._wake.clear()
            try:
                self.sync_once()
            except Exception:  # keep collecting; a bug here must not kill the thread
                logger.exception("garbage collector pass failed")

    def sync_once(self) -> int:
        """One pass; returns the number of writes made."""
        rest = self.rest
        storage = rest.storage
        writes = 0
        with storage.lock:
            objs = list(storage.all_objects())
            dependents: dict[str, list[tuple[tuple[str, str], dict[str, Any]]]] = {}
            for rk, obj in objs:
                for ref in _meta(obj).get("ownerReferences") or []:
                    if isinstance(ref, dict) and ref.get("uid"):
                        dependents.setdefault(str(ref["uid"]), []).append((rk, obj))
            self._owner_uids = frozenset(dependents)
            for rk, obj in objs:
                meta = _meta(obj)
                if not meta.get("deletionTimestamp"):
                    continue
                writes += self._terminating(rk, obj, dependents)
            for rk, obj in objs:
                meta = _meta(obj)
                if not meta.get("ownerReferences") or meta.get("deletionTimestamp"):
                    continue
                writes += self._dependent(rk, obj)
        return writes

    def _current(self, rk: tuple[str, str], obj: dict[str, Any]) -> dict[str, Any] | None:
        meta = _meta(obj)
        cur = self.rest.storage.get(rk, meta.get("namespace") or "", meta.get("name") or "")
        if cur is None or _meta(cur).get("uid") != meta.get("uid"):
            return None
        return cur

    def _terminating(
        self,
        rk: tuple[str, str],
        obj: dict[str, Any],
        dependents: dict[str, list[tuple[tuple[str, str], dict[str, Any]]]],
    ) -> int:
        rest = self.rest
        rt = rest.type_for(rk)
        if rt is None:
            return 0
        writes = 0
        uid = str(_meta(obj).get("uid"))
        fins = _meta(obj).get("finalizers") or []
        deps = dependents.get(uid, [])
        if ORPHAN in fins:
            for drk, dep in deps:
                cur = self._current(drk, dep)
                drt = rest.type_for(drk)
                if cur is None or drt is None:
                    continue
                new = copy.deepcopy(cur)
                refs = [r for r in _meta(new).get("ownerReferences") or [] if r.get("uid") != uid]
                if refs:
                    new["metadata"]["ownerReferences"] = refs
                else:
                    new["metadata"].pop("ownerReferences", None)
                rest.replace_locked(drt, cur, new)
                writes += 1
            cur = self._current(rk, obj)
            if cur is not None:
                rest.remove_finalizer_locked(rt, cur, ORPHAN)
                writes += 1
            return writes
        if FOREGROUND in fins:
            blocking = 0
            for drk, dep in deps:
                cur = self._current(drk, dep)
                drt = rest.type_for(drk)
                if cur is None or drt is None:
                    continue
                ref: dict[str, Any] = next(
                    (r for r in _meta(cur).get("ownerReferences") or [] if r.get("uid") == uid),
                    {},
                )
                if ref.get("blockOwnerDeletion"):
                    blocking += 1
                if not _meta(cur).get("deletionTimestamp"):
                    dep_uid = str(_meta(cur).get("uid"))
                    policy = "Foreground" if dependents.get(dep_uid) else "Background"
                    rest.delete_locked(drt, cur, policy)
                    writes += 1
            if blocking == 0:
                cur = self._current(rk, obj)
                if cur is not None:
                    rest.remove_finalizer_locked(rt, cur, FOREGROUND)
                    writes += 1
            return writes
        if rk == NS_RKEY:
            return self._namespace(obj)
        return 0

    def _namespace(self, nsobj: dict[str, Any]) -> int:
        """kube's namespace deleter: delete the content (objects with
        finalizers stay, terminating, until their finalizers are removed),
        report progress in ``status.conditions``, then clear the ``kubernetes``
        finalizer and remove the namespace."""
        rest = self.rest
        storage = rest.storage
        ns = _meta(nsobj).get("name") or ""
        writes = 0
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        for rk in storage.resource_keys():
            rt = rest.type_for(rk)
            if rt is None or not rt.namespaced:
                continue
            for obj in storage.items(rk, ns):
                if not _meta(obj).get("deletionTimestamp"):
                    obj = rest.delete_locked(rt, obj, "Background")
                    writes += 1
                if self._current(rk, obj) is None:
                    continue  # deleted at once (no finalizers)
                resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
                remaining[resource] = remaining.get(resource, 0) + 1
                for fin in _meta(obj).get("finalizers") or []:
                    finalizers[str(fin)] = finalizers.get(str(fin), 0) + 1
        ns_rt = rest.type_for(NS_RKEY)
        cur = storage.get(NS_RKEY, "", ns)
        if ns_rt is None or cur is None:
            return writes
        if remaining:
            conditions = _deletion_conditions(remaining, finalizers)
            new_status = _with_conditions(cur.get("status") or {}, conditions)
            if new_status != cur.get("status"):
                new = copy.deepcopy(cur)
                new["status"] = new_status
                rest.replace_locked(ns_rt, cur, new)
                writes += 1
            return writes
        if (cur.get("spec") or {}).get("finalizers"):
            new = copy.deepcopy(cur)
            new["spec"].pop("finalizers", None)
            new["status"] = _with_conditions(cur.get("status") or {}, _deletion_conditions({}, {}))
            cur = rest.replace_locked(ns_rt, cur, new)
            writes += 1
        if not _meta(cur).get("finalizers"):
            rest._remove_locked(ns_rt, copy.deepcopy(cur))
            writes += 1
        return writes

    def _dependent(self, rk: tuple[str, str], obj: dict[str, Any]) -> int:
        rest = self.rest
        storage = rest.storage
        rt = rest.type_for(rk)
        cur = self._current(rk, obj)
        if rt is None or cur is None or _meta(cur).get("deletionTimestamp"):
            return 0
        # Use the current references: an earlier step of this pass may have
        # changed them (orphaning).
        refs = _meta(cur).get("ownerReferences") or []
        if not refs:
            return 0
        alive: list[dict[str, Any]] = []
        dangling: list[dict[str, Any]] = []
        for ref in refs:
            if not isinstance(ref, dict):
                continue
            owner = storage.by_uid(str(ref.get("uid")))
            (alive if owner is not None else dangling).append(ref)
        if not alive:
            rest.delete_locked(rt, cur, "Background")
            return 1
        if dangling:
            new = copy.deepcopy(cur)
            new["metadata"]["ownerReferences"] = alive
            rest.replace_locked(rt, cur, new)
            return 1
        return 0
