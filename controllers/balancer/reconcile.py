"""The Balancer sync handler: read, diff, create/update/delete children, status.

``Reconciler.sync(key)`` is level-based. It reads the Balancer and its
children from informer listers, computes the desired children with the pure
``resources.desired_children`` and converges:

1. Balancer missing from the lister: it was deleted; return (the garbage
   collector removes the children through their ownerReferences).
2. ``validation.validate`` finds problems (``desired_children`` raises them):
   condition ``Reconciled=False`` (``InvalidSpec``) whose message names the
   field (``validation.message``), one Warning event (sent when the condition
   is written, so a resync or a retry of the same problem sends none), no
   child is written and the key is not requeued: an invalid spec is final,
   not an error; the next spec change re-triggers. Nothing before this step
   reads the spec, and the status path after it reads only what it has
   checked itself (see ``_count_backends``): whatever the API server admits,
   the sync ends here instead of raising (no traceback loop on clusters that
   do not enforce the CRD's schema).
3. A desired child exists but is not controlled by this Balancer (by uid):
   nothing is written, condition ``Reconciled=False`` (``ChildConflict``), one
   Warning event; the key is re-checked after ``CONFLICT_RECHECK`` seconds
   because the foreign object's events do not map to us.
4. Otherwise children are written in dependency order: backend Services,
   ConfigMap, Deployment, front Service (nginx never starts before the names
   it resolves exist). A child is written only when a field we own differs
   (``diff.needs_update``); an update overlays our fields on the live object,
   keeping its resourceVersion, so a concurrent change fails with Conflict.
   (This is ``pycontroller.create_or_update``'s diff-before-write, read from
   the listers instead of a GET per child: see ``Reconciler._apply``.)
   Then obsolete backend Services (controlled by this Balancer's uid, in its
   namespace, labelled with its name, no longer desired) are deleted.
5. The status (``activeBackendsNum``, ``obsoleteBackendsNum``,
   ``observedGeneration``, conditions ``Reconciled`` and ``Available``, set
   with ``pycontroller.meta.set_status_condition``) is written through the
   status subresource only when it changed; a Conflict is retried by
   re-reading the Balancer.

Objects from listers are shared with the informer cache and never mutated
here: every write starts from a deep copy.

A resync that finds nothing to do is cheap (``_Rendered``): the desired
children are rendered once per state of the Balancer (its uid and
resourceVersion) and reused by later syncs of that state; a live child found
in sync with them is remembered by its uid and resourceVersion, so the diff
runs again as soon as the child changes in any way (drift is still detected,
on the first sync that sees the changed child) but not for the same unchanged
object every resync; and the obsolete-Services scan reads the Services the
Balancer controls from an index by controller uid (``CONTROLLER_UID_INDEX``,
added to the Services cache the reconciler is given) instead of filtering
every Service of the namespace by label. Objects without a resourceVersion
(test doubles) are never remembered.

The Balancer is read as the generated ``types.Balancer``. Until
``validation.validate`` has passed, nothing trusts that shape (a server
without schema enforcement stores whatever it is sent): the paths that run on
invalid specs read it as a plain ``Mapping[str, Any]`` and check every field.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from controllers.balancer import diff, names, resources, validation
from controllers.balancer.names import (
    CONDITION_AVAILABLE,
    CONDITION_RECONCILED,
    EVENT_REASON_CREATE_FAILED,
    EVENT_REASON_CREATED,
    EVENT_REASON_DELETE_FAILED,
    EVENT_REASON_DELETED,
    EVENT_REASON_UPDATE_FAILED,
    EVENT_REASON_UPDATED,
    REASON_CHILD_CONFLICT,
    REASON_DEPLOYMENT_MISSING,
    REASON_DEPLOYMENT_UNAVAILABLE,
    REASON_INVALID_SPEC,
    REASON_MINIMUM_REPLICAS_AVAILABLE,
    REASON_RECONCILE_FAILED,
    REASON_SYNCED,
)
from controllers.balancer.types import Balancer
from pycontroller.cache import split_meta_namespace_key
from pycontroller.clock import REAL_CLOCK, Clock
from pycontroller.controller import Result
from pycontroller.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
)
from pycontroller.labels import is_valid_label_value
from pycontroller.meta import controller_of, is_controlled_by, set_status_condition

logger = logging.getLogger(__name__)

Obj = dict[str, Any]

CONTROLLER_NAME = "balancer"

NORMAL = "Normal"
WARNING = "Warning"

# Messages.
MSG_CREATED = "Created %s %s"
MSG_UPDATED = "Updated %s %s (%s)"
MSG_DELETED = "Deleted obsolete %s %s"
MSG_CONFLICT = "%s %s exists and is not controlled by Balancer %s"
MSG_AVAILABLE = "Deployment %s has %d available replica(s)"
MSG_UNAVAILABLE = "Deployment %s has no available replicas"
MSG_MISSING = "Deployment %s does not exist"
MSG_SYNCED = "All %d child objects are in sync"

# Seconds before a Balancer blocked by a foreign child is looked at again.
CONFLICT_RECHECK = 30.0
# Attempts for a status write that keeps hitting Conflict.
STATUS_ATTEMPTS = 5


T = TypeVar("T")


class NamespaceLister(Protocol[T]):
    def get(self, name: str) -> T: ...

    def list(self, label_selector: Any = None) -> list[T]: ...


class ObjectLister(Protocol[T]):
    """The part of ``pycontroller.cache.Lister[T]`` the reconciler uses."""

    def namespaced(self, namespace: str) -> NamespaceLister[T]: ...


class ObjectClient(Protocol):
    """The part of ``pycontroller.ResourceClient`` the reconciler uses."""

    def get(self, name: str, namespace: str | None = None) -> Any: ...

    def create(self, obj: Obj, namespace: str | None = None) -> Any: ...

    def update(self, obj: Mapping[str, Any]) -> Any: ...

    def update_status(self, obj: Mapping[str, Any]) -> Any: ...

    def delete(self, name: str, namespace: str | None = None, **kwargs: Any) -> Any: ...


class Recorder(Protocol):
    """The part of ``pycontroller.EventRecorder`` the reconciler uses."""

    def event(self, obj: Any, type: str, reason: str, message: str) -> None: ...


class _Kind:
    """Lister and client for one child kind."""

    __slots__ = ("client", "lister")

    def __init__(self, lister: ObjectLister[Obj], client: ObjectClient) -> None:
        self.lister = lister
        self.client = client


#: Index of the Services cache: the uid of each object's controller ownerReference.
CONTROLLER_UID_INDEX = "balancer.controller-uid"


def controller_uid_index(obj: Any) -> list[str]:
    """Index function for ``CONTROLLER_UID_INDEX``."""
    ref = controller_of(obj)
    uid = ref.get("uid") if ref is not None else None
    return [str(uid)] if uid else []


def _version(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(uid, resourceVersion)``: identifies one immutable state of a cached
    object; None when either is missing (nothing is remembered then)."""
    meta = obj.get("metadata") or {}
    uid, rv = meta.get("uid"), meta.get("resourceVersion")
    return (str(uid), str(rv)) if uid and rv else None


class _Rendered:
    """The desired children of one state of a Balancer, and what is known in
    sync with them.

    ``children`` is shared by every sync of that state: never mutate it (a
    create sends a deep copy, ``diff.overlay`` builds a new object).
    ``in_sync[(kind, name)]`` is the ``_version`` of the live child last found
    controlled by the Balancer and without drift against ``children``; since a
    cached object never changes without a new resourceVersion, the same
    version is still in sync. Only the worker syncing the Balancer's key
    touches its entry (the queue never hands a key to two workers at once).
    """

    __slots__ = ("children", "in_sync", "status_in_sync", "version")

    def __init__(self, version: tuple[str, str], children: list[Obj]) -> None:
        self.version = version
        self.children = children
        self.in_sync: dict[tuple[str, str], tuple[str, str]] = {}
        # The inputs of the status computation the last time it found the
        # stored status already right (None: not known).
        self.status_in_sync: tuple[Any, ...] | None = None


class ChildConflict(Exception):
    """A desired child exists and is controlled by something else."""


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _own_conditions(stored: Any) -> list[Obj]:
    """The stored conditions as a list ``set_status_condition`` can update in place.

    Without a schema the stored status may hold anything, and it is ours to
    rewrite: items that are not objects are dropped, and so is a condition of
    a type we set that has no ``lastTransitionTime`` (it is then added afresh,
    stamped now, instead of being kept without the required field).
    ``stored`` must already be a private copy: the dicts are reused.
    """
    if not isinstance(stored, list):
        return []
    ours = (CONDITION_RECONCILED, CONDITION_AVAILABLE)
    return [
        cond
        for cond in stored
        if isinstance(cond, dict)
        and (cond.get("type") not in ours or cond.get("lastTransitionTime"))
    ]


class _ControllerIndex(Protocol):
    """The part of ``pycontroller.cache.Indexer`` the reconciler uses."""

    def get_indexers(self) -> dict[str, Any]: ...

    def add_indexers(self, indexers: Mapping[str, Callable[[Any], list[str]]]) -> None: ...

    def by_index(self, index_name: str, value: str) -> list[Any]: ...


def _controller_index(services: Any) -> _ControllerIndex | None:
    """The Services cache behind ``services`` with ``CONTROLLER_UID_INDEX``
    added (an Indexer indexes what it holds when an index is added, and keeps
    it up to date from then on); None for a lister without an indexer."""
    indexer = getattr(services, "indexer", None)
    if indexer is None or not all(
        callable(getattr(indexer, m, None)) for m in ("get_indexers", "add_indexers", "by_index")
    ):
        return None
    index: _ControllerIndex = indexer
    if CONTROLLER_UID_INDEX not in index.get_indexers():
        # ValueError: another Reconciler on the same cache added it meanwhile.
        with contextlib.suppress(ValueError):
            index.add_indexers({CONTROLLER_UID_INDEX: controller_uid_index})
    return index


class Reconciler:
    """Converges one Balancer per ``sync(key)``; safe to call from many workers.

    The work queue never hands the same key to two workers at once, so two
    syncs of one Balancer never race; syncs of different Balancers share
    nothing but the (thread-safe) listers, clients and recorder.
    """

    def __init__(
        self,
        *,
        balancers: ObjectLister[Balancer],
        services: ObjectLister[Obj],
        configmaps: ObjectLister[Obj],
        deployments: ObjectLister[Obj],
        balancer_client: ObjectClient,
        service_client: ObjectClient,
        configmap_client: ObjectClient,
        deployment_client: ObjectClient,
        recorder: Recorder,
        nginx_image: str = names.DEFAULT_NGINX_IMAGE,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._balancers = balancers
        self._balancer_client = balancer_client
        self._kinds = {
            "Service": _Kind(services, service_client),
            "ConfigMap": _Kind(configmaps, configmap_client),
            "Deployment": _Kind(deployments, deployment_client),
        }
        self._recorder = recorder
        self._nginx_image = nginx_image
        self._clock = clock
        self._rendered: dict[str, _Rendered] = {}
        self._services_by_controller = _controller_index(services)

    # -- entry point -------------------------------------------------------

    def sync(self, key: str) -> Result | None:
        """Converge the Balancer ``key`` ("ns/name"). Raises to be retried."""
        namespace, name = split_meta_namespace_key(key)
        try:
            balancer = self._balancers.namespaced(namespace).get(name)
        except NotFoundError:
            self._rendered.pop(key, None)
            logger.info("controller=%s key=%s action=skip reason=deleted", CONTROLLER_NAME, key)
            return None
        if (balancer.get("metadata") or {}).get("deletionTimestamp"):
            self._rendered.pop(key, None)
            logger.debug("controller=%s key=%s action=skip reason=deleting", CONTROLLER_NAME, key)
            return None

        try:
            rendered = self._render(key, balancer)
        except ValueError as err:
            if isinstance(err, resources.InvalidBalancer):
                problems = err.problems
            else:
                # A renderer's own check tripped on a spec validate() passed:
                # a bug in validate(), but still a spec problem that no retry
                # fixes. Report it rather than crash-loop.
                logger.error(
                    "controller=%s key=%s action=reject error=%s (validate() missed it)",
                    CONTROLLER_NAME,
                    key,
                    err,
                )
                problems = [str(err)]
            message = validation.message(problems)
            logger.debug(
                "controller=%s key=%s action=reject reason=%s message=%s",
                CONTROLLER_NAME,
                key,
                REASON_INVALID_SPEC,
                message,
            )
            self._report_failure(balancer, REASON_INVALID_SPEC, message)
            return None
        desired = rendered.children

        # Every child unchanged since it was last found controlled and in
        # sync: nothing to check or write (see _Rendered).
        unchanged = self._unchanged_children(namespace, rendered)
        if unchanged is None:
            conflicts = self._foreign_children(balancer, rendered)
            if conflicts:
                message = validation.message(conflicts)
                logger.debug(
                    "controller=%s key=%s action=blocked reason=%s message=%s",
                    CONTROLLER_NAME,
                    key,
                    REASON_CHILD_CONFLICT,
                    message,
                )
                self._report_failure(balancer, REASON_CHILD_CONFLICT, message)
                return Result(requeue_after=CONFLICT_RECHECK)

        try:
            live = self._apply_all(balancer, rendered) if unchanged is None else unchanged
            obsolete_left = self._delete_obsolete(balancer, desired)
        except ChildConflict as err:
            # Lost a race: a foreign object appeared between the check and the write.
            self._report_failure(balancer, REASON_CHILD_CONFLICT, str(err))
            return Result(requeue_after=CONFLICT_RECHECK)
        except ConflictError:
            raise  # stale cache; the retry reads fresh state, no need to alarm anyone
        except ApiError as err:
            self._report_failure(balancer, REASON_RECONCILE_FAILED, str(err), event=False)
            raise

        deployment = next((c for c in live if c.get("kind") == "Deployment"), None)

        def compute(current: Mapping[str, Any]) -> Obj:
            return self._status(
                current,
                generation=balancer["metadata"].get("generation"),
                active=len(balancer["spec"]["backends"]),  # one Service each
                obsolete=obsolete_left,
                reconciled=(
                    "True",
                    REASON_SYNCED,
                    MSG_SYNCED % len(desired),
                ),
                deployment=deployment,
                deployment_name=names.deployment_name(name),
            )

        # compute() depends on nothing else: when the same inputs gave the
        # stored status before, they give it again.
        inputs = (
            _version(balancer),
            deployment is None,
            ((deployment or {}).get("status") or {}).get("availableReplicas"),
            obsolete_left,
        )
        if inputs[0] is None or rendered.status_in_sync != inputs:
            written = self._write_status(balancer, compute)
            rendered.status_in_sync = None if written else inputs
        logger.debug("controller=%s key=%s action=synced", CONTROLLER_NAME, key)
        return None

    # -- children ----------------------------------------------------------

    def _render(self, key: str, balancer: Balancer) -> _Rendered:
        """The desired children of ``balancer`` (``resources.desired_children``),
        rendered once per state of it. Raises what ``desired_children`` raises."""
        version = _version(balancer)
        rendered = self._rendered.get(key)
        if rendered is not None and version is not None and rendered.version == version:
            return rendered
        self._rendered.pop(key, None)
        children = resources.desired_children(balancer, nginx_image=self._nginx_image)
        rendered = _Rendered(version or ("", ""), children)
        if version is not None:
            self._rendered[key] = rendered
        return rendered

    def _cached(self, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            obj: Obj = self._kinds[kind].lister.namespaced(namespace).get(name)
        except NotFoundError:
            return None
        return obj

    def _unchanged_children(self, namespace: str, rendered: _Rendered) -> list[Obj] | None:
        """The live children when every one is the very object last found in
        sync (``rendered.in_sync``), else None."""
        live: list[Obj] = []
        for child in rendered.children:
            kind, name = str(child["kind"]), _name(child)
            obj = self._cached(kind, namespace, name)
            if obj is None:
                return None
            version = _version(obj)
            if version is None or rendered.in_sync.get((kind, name)) != version:
                return None
            live.append(obj)
        return live

    def _foreign_children(self, balancer: Balancer, rendered: _Rendered) -> list[str]:
        namespace = balancer["metadata"]["namespace"]
        out = []
        for child in rendered.children:
            kind, name = str(child["kind"]), _name(child)
            live = self._cached(kind, namespace, name)
            if live is None:
                continue
            version = _version(live)
            if version is not None and rendered.in_sync.get((kind, name)) == version:
                continue  # found controlled (and in sync) before, unchanged since
            if not is_controlled_by(live, balancer):
                out.append(MSG_CONFLICT % (kind, name, _name(balancer)))
        return out

    def _apply_all(self, balancer: Balancer, rendered: _Rendered) -> list[Obj]:
        """Create or update every desired child, in order; return the live objects."""
        return [self._apply(balancer, child, rendered.in_sync) for child in rendered.children]

    def _apply(
        self, balancer: Balancer, child: Obj, in_sync: dict[tuple[str, str], tuple[str, str]]
    ) -> Obj:
        """Create ``child`` or bring its live object in line; return the live object.

        ``pycontroller.create_or_update`` does the same diff-before-write but
        GETs the object from the server first: a request per child per sync,
        every resync, for every Balancer. Here the live object comes from the
        informer cache, so a steady state makes no request at all, and the
        server is read only when the cache proved stale (AlreadyExists on
        create, Conflict on update).
        """
        kind = str(child["kind"])
        client = self._kinds[kind].client
        namespace = balancer["metadata"]["namespace"]
        name = _name(child)
        key = f"{namespace}/{_name(balancer)}"
        live = self._cached(kind, namespace, name)
        if live is None:
            try:
                created: Obj = client.create(copy.deepcopy(child), namespace=namespace)
            except AlreadyExistsError:
                # The cache lags behind our own earlier create: read and diff.
                live = client.get(name, namespace=namespace)
            except ApiError as err:
                self._warn(balancer, EVENT_REASON_CREATE_FAILED, f"Create {kind} {name}: {err}")
                raise
            else:
                logger.info(
                    "controller=%s key=%s action=create kind=%s name=%s",
                    CONTROLLER_NAME,
                    key,
                    kind,
                    name,
                )
                self._recorder.event(
                    balancer, NORMAL, EVENT_REASON_CREATED, MSG_CREATED % (kind, name)
                )
                return created
        assert live is not None
        version = _version(live)
        if version is not None and in_sync.get((kind, name)) == version:
            return live  # this very object was diffed against this desired child: in sync
        fields = self._drift(balancer, child, live)
        if not fields:
            if version is not None:
                in_sync[(kind, name)] = version
            return live
        try:
            updated: Obj = client.update(diff.overlay(child, live))
        except ConflictError:
            # Our cached copy was stale: compare against the server's and retry once.
            fresh: Obj = client.get(name, namespace=namespace)
            fields = self._drift(balancer, child, fresh)
            if not fields:
                return fresh
            updated = client.update(diff.overlay(child, fresh))
        except ApiError as err:
            self._warn(balancer, EVENT_REASON_UPDATE_FAILED, f"Update {kind} {name}: {err}")
            raise
        logger.info(
            "controller=%s key=%s action=update kind=%s name=%s fields=%s",
            CONTROLLER_NAME,
            key,
            kind,
            name,
            ",".join(fields),
        )
        self._recorder.event(
            balancer, NORMAL, EVENT_REASON_UPDATED, MSG_UPDATED % (kind, name, ", ".join(fields))
        )
        return updated

    def _drift(self, balancer: Balancer, child: Obj, live: Obj) -> list[str]:
        """The owned fields of ``live`` that differ from ``child`` (``[]``: in sync).

        Raises ``ChildConflict`` if ``live`` is not controlled by ``balancer``.
        """
        if not is_controlled_by(live, balancer):
            raise ChildConflict(MSG_CONFLICT % (child["kind"], _name(child), _name(balancer)))
        return diff.differing_fields(child, live)

    def _delete_obsolete(self, balancer: Balancer, desired: list[Obj]) -> int:
        """Delete our backend Services that are no longer desired; return how many remain.

        Only Services in the Balancer's namespace, labelled with its name and
        controlled by its uid are candidates (never a same-name Balancer's
        Services in another namespace, never the unlabelled front Service).
        """
        meta = balancer["metadata"]
        namespace = meta["namespace"]
        wanted = {_name(c) for c in desired if c.get("kind") == "Service"}
        kind = self._kinds["Service"]
        remaining = 0
        for svc in self._labelled_services(balancer):
            name = _name(svc)
            if name in wanted or not is_controlled_by(svc, balancer):
                continue
            svc_uid = (svc.get("metadata") or {}).get("uid")
            try:
                kind.client.delete(
                    name,
                    namespace=namespace,
                    preconditions={"uid": svc_uid} if svc_uid else None,
                )
            except NotFoundError:
                continue
            except ConflictError:
                # The uid precondition failed: a new object took the name; next sync decides.
                remaining += 1
                continue
            except ApiError as err:
                self._warn(balancer, EVENT_REASON_DELETE_FAILED, f"Delete Service {name}: {err}")
                raise
            logger.info(
                "controller=%s key=%s/%s action=delete kind=Service name=%s",
                CONTROLLER_NAME,
                namespace,
                meta["name"],
                name,
            )
            self._recorder.event(
                balancer, NORMAL, EVENT_REASON_DELETED, MSG_DELETED % ("Service", name)
            )
        return remaining

    def _labelled_services(self, balancer: Balancer) -> list[Obj]:
        """The cached Services in the Balancer's namespace labelled with its
        name: with the index, only those it controls (the only ones callers
        keep), read in O(its children) instead of O(Services in the namespace)."""
        meta = balancer["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        index = self._services_by_controller
        if index is None or not meta.get("uid"):
            return (
                self._kinds["Service"]
                .lister.namespaced(namespace)
                .list({names.LABEL_BALANCER_NAME: name})
            )
        return [
            svc
            for svc in index.by_index(CONTROLLER_UID_INDEX, str(meta["uid"]))
            if (svc.get("metadata") or {}).get("namespace") == namespace
            and ((svc.get("metadata") or {}).get("labels") or {}).get(names.LABEL_BALANCER_NAME)
            == name
        ]

    def _count_backends(self, balancer: Mapping[str, Any]) -> tuple[int, int]:
        """(active, obsolete) from the cache, for paths that write no children.

        Runs on specs that failed validation, so it trusts nothing in them:
        backends that are not objects with a string name are not counted as
        wanted, and a name that is not a valid label value (longer than 63
        characters, say: the API server admits 253) is never put in a label
        selector. Such a Balancer has no labelled Services: ``validate()``
        refuses its name before any write, and names are immutable, so no
        Service was ever labelled with it and ``(0, 0)`` is exact. (A hashed
        label value would let us label children of long names, but the
        name is also the front Service's, which must be a DNS-1035 label:
        such a Balancer cannot be implemented whatever its labels.)
        """
        meta = balancer["metadata"]
        name = meta["name"]
        if not isinstance(name, str) or is_valid_label_value(name):
            return 0, 0
        spec = balancer.get("spec")
        backends = spec.get("backends") if isinstance(spec, dict) else None
        wanted = {
            names.backend_service_name(name, b["name"])
            for b in (backends if isinstance(backends, list) else [])
            if isinstance(b, dict) and isinstance(b.get("name"), str)
        }
        active = obsolete = 0
        ours = (
            self._kinds["Service"]
            .lister.namespaced(meta["namespace"])
            .list({names.LABEL_BALANCER_NAME: meta["name"]})
        )
        for svc in ours:
            if not is_controlled_by(svc, balancer):
                continue
            if _name(svc) in wanted:
                active += 1
            else:
                obsolete += 1
        return active, obsolete

    # -- status ------------------------------------------------------------

    def _warn(self, balancer: Mapping[str, Any], reason: str, message: str) -> None:
        logger.warning(
            "controller=%s key=%s/%s action=event type=Warning reason=%s message=%s",
            CONTROLLER_NAME,
            balancer["metadata"].get("namespace"),
            balancer["metadata"].get("name"),
            reason,
            message,
        )
        self._recorder.event(balancer, WARNING, reason, message)

    def _report_failure(
        self, balancer: Mapping[str, Any], reason: str, message: str, *, event: bool = True
    ) -> None:
        """Condition ``Reconciled=False`` with ``reason``; a Warning event when it is news.

        The event is sent only when the condition is actually written, so a
        resync of a Balancer stuck on the same problem writes nothing, and
        it is one event per problem: with ``event`` (the problem is final
        until something changes: InvalidSpec, ChildConflict) a failed status
        write raises, to be retried with backoff, and the event waits for the
        retry that writes the condition. Without ``event`` the caller is
        about to raise its own error, which a failed status write must not
        mask. A 422 on the status write is not retried (no retry fixes it):
        logged, and the event still tells the user.
        """
        meta = balancer["metadata"]
        active, obsolete = self._count_backends(balancer)
        deployment_name = names.deployment_name(meta["name"])
        deployment = self._cached("Deployment", meta["namespace"], deployment_name)
        if deployment is not None and not is_controlled_by(deployment, balancer):
            deployment = None

        def compute(current: Mapping[str, Any]) -> Obj:
            return self._status(
                current,
                generation=meta.get("generation"),
                active=active,
                obsolete=obsolete,
                reconciled=("False", reason, message),
                deployment=deployment,
                deployment_name=deployment_name,
            )

        try:
            changed = self._write_status(balancer, compute)
        except ApiError as err:
            logger.log(
                logging.ERROR if isinstance(err, InvalidError) else logging.WARNING,
                "controller=%s key=%s/%s action=status-failed error=%s",
                CONTROLLER_NAME,
                meta.get("namespace"),
                meta.get("name"),
                err,
            )
            if event and not isinstance(err, InvalidError):
                raise
            changed = True
        if event and changed:
            self._warn(balancer, reason, message)

    def _status(
        self,
        current: Mapping[str, Any],
        *,
        generation: Any,
        active: int,
        obsolete: int,
        reconciled: tuple[str, str, str],
        deployment: Obj | None,
        deployment_name: str,
    ) -> Obj:
        # Without a schema the stored status may be anything: it is ours, start over.
        old = current.get("status")
        status: Obj = copy.deepcopy(old) if isinstance(old, dict) else {}
        status["activeBackendsNum"] = active
        status["obsoleteBackendsNum"] = obsolete
        if generation is not None:
            status["observedGeneration"] = generation
        if deployment is None:
            available = ("False", REASON_DEPLOYMENT_MISSING, MSG_MISSING % deployment_name)
        else:
            replicas = int((deployment.get("status") or {}).get("availableReplicas") or 0)
            if replicas >= 1:
                available = (
                    "True",
                    REASON_MINIMUM_REPLICAS_AVAILABLE,
                    MSG_AVAILABLE % (deployment_name, replicas),
                )
            else:
                available = (
                    "False",
                    REASON_DEPLOYMENT_UNAVAILABLE,
                    MSG_UNAVAILABLE % deployment_name,
                )
        conditions = _own_conditions(status.get("conditions"))
        for type_, (cond_status, reason, message) in (
            (CONDITION_RECONCILED, reconciled),
            (CONDITION_AVAILABLE, available),
        ):
            cond: Obj = {"type": type_, "status": cond_status, "reason": reason, "message": message}
            if generation is not None:
                cond["observedGeneration"] = generation
            set_status_condition(conditions, cond, clock=self._clock)
        status["conditions"] = conditions
        return status

    def _write_status(
        self, balancer: Mapping[str, Any], compute: Callable[[Mapping[str, Any]], Obj]
    ) -> bool:
        """Write ``compute(current)`` as the status if it differs; True if written.

        On Conflict the Balancer is re-read from the server and the status
        recomputed against it (conditions keep their transition times).
        """
        meta = balancer["metadata"]
        current: Mapping[str, Any] = balancer
        for attempt in range(STATUS_ATTEMPTS):
            status = compute(current)
            if status == (current.get("status") or {}):
                return False
            obj: Obj = {**copy.deepcopy(current), "status": status}
            try:
                self._balancer_client.update_status(obj)
            except ConflictError:
                if attempt == STATUS_ATTEMPTS - 1:
                    raise
                try:
                    current = self._balancer_client.get(meta["name"], namespace=meta["namespace"])
                except NotFoundError:
                    return False
                if (current.get("metadata") or {}).get("uid") != meta["uid"]:
                    return False
                continue
            except NotFoundError:
                return False
            logger.info(
                "controller=%s key=%s/%s action=update-status active=%s obsolete=%s",
                CONTROLLER_NAME,
                meta["namespace"],
                meta["name"],
                status.get("activeBackendsNum"),
                status.get("obsoleteBackendsNum"),
            )
            return True
        return False
