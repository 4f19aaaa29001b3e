"""Owner-reference garbage collector, deletion finalizers and namespace cleanup.

Event-driven, like kube's (``pkg/controller/garbagecollector``): a storage
listener keeps an index of owner references and queues the work a commit
calls for; a background thread drains the queues in short batches under the
storage lock. Nothing ever rescans the whole store, so a write costs the same
at 100 objects or 100,000.

The index (``graph_builder.go``'s ``uidToNode``, reduced to what this
collector needs): ``_owners_of[dependent uid]`` is the tuple of owner uids
its ``ownerReferences`` name, and ``_dependents[owner uid]`` the set of
dependent uids naming it; the two always mirror each other and are both
updated by the listener only, from the dependent's own committed state (an
owner uid stays indexed while any dependent names it, whether or not the
owner exists).

The queues (``attemptToDelete`` / ``attemptToOrphan``), each a set processed
in insertion order:

- ``_check``: dependents whose owners must be looked up: queued when one is
  created or its owner references change while an owner it names does not
  exist (the listener looks them up: an owner that exists is watched through
  its own deletion), and when an owner it names is deleted. A dependent none
  of whose owners exists (by uid) is deleted (Background); references to
  vanished owners are dropped when some owner still exists. Terminating
  dependents are left alone.
- ``_finalize``: terminating owners carrying ``orphan`` or
  ``foregroundDeletion``: queued when they become so and whenever one of
  their dependents changes (so a foreground owner notices its last blocking
  dependent go). ``orphan``: the dependents' references to the owner are
  removed, then the finalizer. ``foregroundDeletion``: every dependent not
  yet terminating is deleted (Foreground when it has dependents itself);
  once none with ``blockOwnerDeletion: true`` remains, the finalizer is
  removed (which deletes the owner when it was the last).
- ``_namespaces``: terminating namespaces: queued when one becomes so and at
  every commit inside it. Its contents are deleted (objects with finalizers
  stay, terminating, until those are removed), progress is reported in
  ``status.conditions``, and when it is empty its ``spec.finalizers`` are
  cleared and it is removed.
- ``_crds``: terminating CRDs carrying ``customresourcecleanup``: queued when
  one becomes so and at every commit of one of its instances. apiextensions'
  CRD finalizer: its instances are deleted (those with finalizers stay,
  terminating, until the finalizers are removed), the ``Terminating``
  condition tells the progress, and once none is left the cleanup finalizer
  is removed, which removes the CRD.

Its deletions go through ``REST.delete_locked`` with the options kube's
collector, namespace deleter and CRD finalizer send (an explicit Background
or Foreground policy from the first two, none from the last; no grace period
from any), so a scheduled Pod gets its
grace period: it stays Terminating (holding a foreground owner, or its
namespace, with it) until its kubelet deletes it with grace 0.

Each of those deletes is admitted first (``REST.admit_delete_locked``), as
the user kube's controller deletes with: admission policies and webhooks see
them and may refuse them; a refused delete is retried after ``retry``
seconds, as kube's controllers retry (the object, and a namespace or CRD
waiting for it, stays until it is admitted).

Each pass takes the storage lock for at most ``batch_seconds`` at a time, so
a cascade over thousands of dependents never stalls clients' writes. The
listener is installed for the collector's whole life (not only while its
thread runs): work that arrives while it is stopped waits in the queues and
is done after ``start()``. Writes never wait on this thread: requests return
at once and the collector converges within tens of milliseconds.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from typing import Any

from pycontroller.meta import remove_finalizer
from pycontroller.testing.apiserver.http.auth import UserInfo, service_account_user
from pycontroller.testing.apiserver.registry import admission_webhook
from pycontroller.testing.apiserver.registry.loop import BackgroundLoop
from pycontroller.testing.apiserver.registry.rest import (
    CRD_RKEY,
    FOREGROUND,
    ORPHAN,
    REST,
    now_rfc3339,
    rkey,
)
from pycontroller.testing.apiserver.registry.storage import Event
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import crd as crd_mod
from pycontroller.testing.apiserver.status import StatusError

__all__ = ["GarbageCollector"]

logger = logging.getLogger(__name__)

NS_RKEY = ("", "namespaces")


# The users kube's controllers delete as.
GC_USER = service_account_user("kube-system", "generic-garbage-collector")
NAMESPACE_USER = service_account_user("kube-system", "namespace-controller")
# apiextensions-apiserver deletes a CRD's instances over its loopback client.
APISERVER_USER = UserInfo("system:apiserver", groups=("system:masters",))


class _Refused(Exception):
    """A delete admission refused: retry later, without a traceback."""


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


def _owner_uids(meta: dict[str, Any]) -> tuple[str, ...]:
    """The owner uids ``meta.ownerReferences`` names, in order, without repeats."""
    refs = meta.get("ownerReferences")
    if not refs:
        return ()
    uids = [str(r["uid"]) for r in refs if isinstance(r, dict) and r.get("uid")]
    return tuple(dict.fromkeys(uids)) if len(uids) > 1 else tuple(uids)


class GarbageCollector(BackgroundLoop):
    """See the module docstring. ``debounce``: how long the thread waits after
    being woken before a pass, to take a burst of commits in one; ``retry``:
    how long an item whose processing raised waits before it is tried again;
    ``batch_seconds``: the longest the thread holds the storage lock at once.
    """

    def __init__(
        self,
        rest: REST,
        *,
        debounce: float = 0.002,
        retry: float = 1.0,
        batch_seconds: float = 0.02,
    ) -> None:
        self.rest = rest
        super().__init__(debounce)
        self.retry = retry
        self.batch_seconds = batch_seconds
        # Guards the index and the queues below. The listener runs in writers'
        # threads (with the storage lock held); the collector thread takes this
        # lock only briefly, never while it writes (its own writes re-enter the
        # listener).
        self._mu = threading.Lock()
        self._owners_of: dict[str, tuple[str, ...]] = {}
        self._dependents: dict[str, set[str]] = {}
        # uids of terminating objects carrying ORPHAN or FOREGROUND.
        self._finalizing: set[str] = set()
        # names of terminating namespaces.
        self._terminating_ns: set[str] = set()
        # terminating CRDs with the cleanup finalizer: name -> their
        # instances' resource key, and back.
        self._terminating_crds: dict[str, tuple[str, str]] = {}
        self._crd_of: dict[tuple[str, str], str] = {}
        # The queues: insertion-ordered sets (dict keys).
        self._finalize: dict[str, None] = {}
        self._namespaces: dict[str, None] = {}
        self._crds: dict[str, None] = {}
        self._check: dict[str, None] = {}
        # (not before, queue, key) of items whose processing raised.
        self._retries: list[tuple[float, dict[str, None], str]] = []
        storage = rest.storage
        with storage.lock:
            for rk, obj in storage.all_objects():
                self._on_event(Event(0, "ADDED", rk, "", "", obj, None))
            storage.add_listener(self._on_event)

    # --- index (listener) ------------------------------------------------------------

    def _on_event(self, ev: Event) -> None:
        """Storage listener: update the index and queue work. Quick, no writes."""
        meta = _meta(ev.obj)
        uid = meta.get("uid")
        if not uid:
            return
        uid = str(uid)
        deleted = ev.type == "DELETED"
        new_owners = () if deleted else _owner_uids(meta)
        terminating = not deleted and bool(meta.get("deletionTimestamp"))
        # Owners that exist now are watched through their own DELETED events:
        # only a reference to a missing one needs a check. (Looked up before
        # taking ``_mu``: the collector thread takes ``_mu`` inside the
        # storage lock, never the other way round.)
        storage = self.rest.storage
        missing_owner = not terminating and any(
            storage.location_of_uid(o) is None for o in new_owners
        )
        wake = False
        with self._mu:
            old_owners = self._owners_of.get(uid, ())
            if new_owners != old_owners:
                self._set_owners_locked(uid, old_owners, new_owners)
                if missing_owner:
                    self._check[uid] = None
                    wake = True
            # A dependent changed: its terminating owners re-evaluate.
            for owner in (*old_owners, *new_owners) if old_owners else new_owners:
                if owner in self._finalizing:
                    self._finalize[owner] = None
                    wake = True
            fins = (meta.get("finalizers") or ()) if terminating else ()
            if ORPHAN in fins or FOREGROUND in fins:
                self._finalizing.add(uid)
                self._finalize[uid] = None
                wake = True
            elif uid in self._finalizing:
                self._finalizing.discard(uid)
            if deleted and uid in self._dependents:
                # graph_builder: a vanished owner's dependents are checked.
                self._check.update(dict.fromkeys(self._dependents[uid]))
                wake = True
            if ev.rkey == NS_RKEY:
                name = str(meta.get("name") or "")
                if terminating:
                    self._terminating_ns.add(name)
                    self._namespaces[name] = None
                    wake = True
                else:
                    self._terminating_ns.discard(name)
            elif ev.namespace and ev.namespace in self._terminating_ns:
                self._namespaces[ev.namespace] = None
                wake = True
            if ev.rkey == CRD_RKEY:
                wake |= self._crd_event_locked(ev.obj, terminating)
            elif ev.rkey in self._crd_of:
                self._crds[self._crd_of[ev.rkey]] = None
                wake = True
        if wake:
            self._wake.set()

    def _crd_event_locked(self, crd: dict[str, Any], terminating: bool) -> bool:
        """Track a CRD's termination; True if it is queued."""
        name = str(_meta(crd).get("name") or "")
        old = self._terminating_crds.pop(name, None)
        if old is not None:
            self._crd_of.pop(old, None)
        if not terminating or crd_mod.CLEANUP_FINALIZER not in (_meta(crd).get("finalizers") or ()):
            return False
        spec = crd.get("spec") or {}
        rk = (str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or ""))
        self._terminating_crds[name] = rk
        self._crd_of[rk] = name
        self._crds[name] = None
        return True

    def _set_owners_locked(self, uid: str, old: tuple[str, ...], new: tuple[str, ...]) -> None:
        for owner in old:
            if owner not in new:
                deps = self._dependents.get(owner)
                if deps is not None:
                    deps.discard(uid)
                    if not deps:
                        del self._dependents[owner]
        for owner in new:
            if owner not in old:
                self._dependents.setdefault(owner, set()).add(uid)
        if new:
            self._owners_of[uid] = new
        else:
            self._owners_of.pop(uid, None)

    def dependents_of(self, uid: str) -> list[str]:
        """Uids of the stored objects whose ``ownerReferences`` name ``uid``."""
        with self._mu:
            return sorted(self._dependents.get(uid, ()))

    def _has_dependents(self, uid: str) -> bool:
        with self._mu:
            return bool(self._dependents.get(uid))

    # --- thread ----------------------------------------------------------------------

    thread_name = "apiserver-gc"

    def run_pass(self, stop: threading.Event) -> None:
        self._drain(stop)

    def next_timeout(self) -> float | None:
        with self._mu:
            if not self._retries:
                return None
            return max(0.0, min(at for at, _, _ in self._retries) - time.monotonic())

    # --- passes ----------------------------------------------------------------------

    def _pop_locked(self) -> tuple[dict[str, None], str] | None:
        """The next queued item: terminating owners, then namespaces, then
        terminating CRDs, then dependents."""
        for queue in (self._finalize, self._namespaces, self._crds, self._check):
            if queue:
                key = next(iter(queue))
                del queue[key]
                return queue, key
        return None

    def _due_retries_locked(self) -> None:
        if not self._retries:
            return
        now = time.monotonic()
        due = [r for r in self._retries if r[0] <= now]
        if due:
            self._retries = [r for r in self._retries if r[0] > now]
            for _, queue, key in due:
                queue[key] = None

    def sync_once(self) -> int:
        """Drain the queues (retries that are due included) in this thread;
        returns the writes made."""
        return self._drain(None)

    def _drain(self, stop: threading.Event | None) -> int:
        storage = self.rest.storage
        writes = 0
        with self._mu:
            self._due_retries_locked()
        while stop is None or not stop.is_set():
            with storage.lock:
                until = time.monotonic() + self.batch_seconds
                while True:
                    with self._mu:
                        item = self._pop_locked()
                    if item is None:
                        return writes
                    queue, key = item
                    try:
                        writes += self._process(queue, key)
                    except _Refused as refused:
                        logger.info("garbage collector: %s; retrying %s", refused, key)
                        with self._mu:
                            self._retries.append((time.monotonic() + self.retry, queue, key))
                    except Exception:  # keep collecting; a bug here must not kill the thread
                        logger.exception("garbage collector failed on %s", key)
                        with self._mu:
                            self._retries.append((time.monotonic() + self.retry, queue, key))
                    if time.monotonic() >= until:
                        break
            time.sleep(0)  # let writers waiting for the storage lock in
        return writes

    def _process(self, queue: dict[str, None], key: str) -> int:
        if queue is self._check:
            return self._dependent(key)
        if queue is self._crds:
            return self._crd(key)
        if queue is self._namespaces:
            nsobj = self.rest.storage.get(NS_RKEY, "", key)
            if nsobj is None or not _meta(nsobj).get("deletionTimestamp"):
                return 0
            fins = _meta(nsobj).get("finalizers") or ()
            if ORPHAN in fins or FOREGROUND in fins:
                return 0  # its own propagation first: queued again once that is done
            return self._namespace(nsobj)
        loc = self.rest.storage.location_of_uid(key)
        if loc is None:
            return 0
        obj = self.rest.storage.get(loc[0], *loc[1])
        if obj is None or not _meta(obj).get("deletionTimestamp"):
            return 0
        return self._terminating(loc[0], obj)

    def _current(self, rk: tuple[str, str], obj: dict[str, Any]) -> dict[str, Any] | None:
        """The stored state of ``obj`` (None once it is gone or was replaced by
        another object of the same name)."""
        meta = _meta(obj)
        cur = self.rest.storage.get(rk, meta.get("namespace") or "", meta.get("name") or "")
        if cur is None or _meta(cur).get("uid") != meta.get("uid"):
            return None
        return cur

    def _by_uid(self, uid: str) -> tuple[tuple[str, str], dict[str, Any]] | None:
        storage = self.rest.storage
        loc = storage.location_of_uid(uid)
        if loc is None:
            return None
        obj = storage.get(loc[0], *loc[1])
        return None if obj is None else (loc[0], obj)

    def _terminating(self, rk: tuple[str, str], obj: dict[str, Any]) -> int:
        rest = self.rest
        rt = rest.type_for(rk)
        if rt is None:
            return 0
        writes = 0
        meta = _meta(obj)
        uid = str(meta.get("uid"))
        fins = meta.get("finalizers") or []
        deps = [d for d in (self._by_uid(u) for u in self.dependents_of(uid)) if d is not None]
        if ORPHAN in fins:
            for drk, cur in deps:
                drt = rest.type_for(drk)
                if drt is None:
                    continue
                new = copy.deepcopy(cur)
                refs = [r for r in _meta(new).get("ownerReferences") or [] if r.get("uid") != uid]
                if refs:
                    new["metadata"]["ownerReferences"] = refs
                else:
                    new["metadata"].pop("ownerReferences", None)
                rest.replace_locked(drt, cur, new)
                writes += 1
            rest.remove_finalizer_locked(rt, obj, ORPHAN)
            return writes + 1
        if FOREGROUND in fins:
            blocking = 0
            for drk, cur in deps:
                drt = rest.type_for(drk)
                if drt is None:
                    continue
                ref: dict[str, Any] = next(
                    (r for r in _meta(cur).get("ownerReferences") or [] if r.get("uid") == uid),
                    {},
                )
                if ref.get("blockOwnerDeletion"):
                    blocking += 1
                if not _meta(cur).get("deletionTimestamp"):
                    dep_uid = str(_meta(cur).get("uid"))
                    policy = "Foreground" if self._has_dependents(dep_uid) else "Background"
                    admitted = self._admitted(drk, drt, cur, GC_USER)
                    if admitted is None:
                        continue
                    rest.delete_locked(drt, admitted, policy)
                    writes += 1
            if blocking == 0:
                rest.remove_finalizer_locked(rt, obj, FOREGROUND)
                writes += 1
            return writes
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
            deleted, left = self._delete_each(
                rt, storage.items(rk, ns), "Background", NAMESPACE_USER
            )
            writes += deleted
            resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
            for obj in left:
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

    def _delete_each(
        self,
        rt: ResourceType,
        objs: list[dict[str, Any]],
        propagation: str | None,
        user: UserInfo,
    ) -> tuple[int, list[dict[str, Any]]]:
        """Delete (as ``user``) every object of ``objs`` not yet terminating
        (with ``propagation``); (deletes issued, the objects still there: kept
        by finalizers or a grace period). A delete admission refuses raises
        ``_Refused`` once the others are issued."""
        rk = rkey(rt)
        writes = 0
        left = []
        refused: _Refused | None = None
        for obj in objs:
            if not _meta(obj).get("deletionTimestamp"):
                try:
                    cur = self._admitted(rk, rt, obj, user)
                except _Refused as err:
                    refused = refused or err
                    continue
                if cur is None:
                    continue
                obj = self.rest.delete_locked(rt, cur, propagation)
                writes += 1
            if self._current(rk, obj) is not None:
                left.append(obj)
        if refused is not None:
            raise refused
        return writes, left

    def _admitted(
        self, rk: tuple[str, str], rt: ResourceType, obj: dict[str, Any], user: UserInfo
    ) -> dict[str, Any] | None:
        """``obj`` as stored now, once admission let ``user`` delete it (None:
        gone meanwhile). Raises ``_Refused`` when admission refuses."""
        cur = self._current(rk, obj)
        if cur is None or _meta(cur).get("deletionTimestamp"):
            return None
        try:
            self.rest.admit_delete_locked(rt, cur, user)
        except admission_webhook.Stale:
            raise _Refused(f"{rt.plural} {_meta(cur).get('name')} changed while admitted") from None
        except StatusError as err:
            raise _Refused(
                f"delete of {rt.plural} {_meta(cur).get('name')}: {err.message}"
            ) from None
        return self._current(rk, cur)

    def _crd(self, name: str) -> int:
        """apiextensions' CRD finalizer (``crd_finalizer.go``): delete the
        instances of a terminating CRD, wait until none is left, then set
        ``Terminating=False`` and remove the cleanup finalizer in one write
        (which removes the CRD when it was the last)."""
        rest = self.rest
        storage = rest.storage
        crd = storage.get(CRD_RKEY, "", name)
        crd_rt = rest.type_for(CRD_RKEY)
        if crd is None or crd_rt is None or not _meta(crd).get("deletionTimestamp"):
            return 0
        if crd_mod.CLEANUP_FINALIZER not in (_meta(crd).get("finalizers") or ()):
            return 0
        writes = 0
        types = rest.registry.for_crd(name)
        if crd_mod.is_condition_true(crd, "Established") and types:
            new = copy.deepcopy(crd)
            crd_mod.set_condition(
                new,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            )
            if new != crd:
                crd = rest.replace_locked(crd_rt, crd, new)
                writes += 1
            rk = (types[0].group, types[0].plural)
            rt = rest.type_for(rk)
            if rt is not None:
                # DeleteCollection with nil options: no policy, so an
                # instance's own propagation finalizer decides.
                deleted, left = self._delete_each(rt, storage.items(rk), None, APISERVER_USER)
                writes += deleted
                if left:
                    return writes  # queued again as each one goes
            done = ("False", "InstanceDeletionCompleted", "removed all instances")
        else:
            done = ("False", "NeverEstablished", "resource was never established")
        new = copy.deepcopy(crd)
        crd_mod.set_condition(new, "Terminating", *done)
        remove_finalizer(new, crd_mod.CLEANUP_FINALIZER)
        if _meta(new).get("finalizers"):
            rest.replace_locked(crd_rt, crd, new)
        else:
            rest._remove_locked(crd_rt, new)
        return writes + 1

    def _dependent(self, uid: str) -> int:
        rest = self.rest
        storage = rest.storage
        found = self._by_uid(uid)
        if found is None:
            return 0
        rk, cur = found
        rt = rest.type_for(rk)
        if rt is None or _meta(cur).get("deletionTimestamp"):
            return 0
        refs = _meta(cur).get("ownerReferences") or []
        if not refs:
            return 0
        alive: list[dict[str, Any]] = []
        dangling: list[dict[str, Any]] = []
        for ref in refs:
            if not isinstance(ref, dict):
                continue
            owner = storage.location_of_uid(str(ref.get("uid")))
            (alive if owner is not None else dangling).append(ref)
        if not alive:
            admitted = self._admitted(rk, rt, cur, GC_USER)
            if admitted is None:
                return 0
            rest.delete_locked(rt, admitted, "Background")
            return 1
        if dangling:
            new = copy.deepcopy(cur)
            new["metadata"]["ownerReferences"] = alive
            rest.replace_locked(rt, cur, new)
            return 1
        return 0
