"""The reconcile function of both kinds: read, diff, write children, status.

``Reconciler(kind, ...).reconcile(request)`` is level-based. It reads the
object and its children from informer listers and converges:

1. Object missing from the lister: deleted; return (the garbage collector
   removes the children through their ownerReferences).
2. Kinds with a finalizer (TCPReverseProxy, as in the original):
   being deleted -> delete the three children *that it controls* (by uid, with
   a uid precondition; the original deleted same-named objects blindly), then
   remove ``nginx.lin2ur.cn/finalizer`` with an Update carrying the
   resourceVersion (a concurrent finalizer change is a Conflict, retried;
   the original's JSON-patch ``replace`` could drop it); otherwise add the
   finalizer first if missing (same kind of Update). A deleting ReverseProxy
   needs nothing: return.
3. ``validation.validate`` finds problems: condition ``Reconciled=False``
   reason ``InvalidSpec`` with every problem in the message (each names its
   field), one Warning event when the condition is written (a resync or retry
   of the same problem writes and sends nothing), no child is written and the
   key is not requeued: the next spec change triggers.
4. Children, in the original's order (ConfigMap, Deployment, Service): a
   child whose cached copy already has every owned field (``diff.drifted``)
   is not touched, so a steady state makes zero requests. Otherwise
   ``pycontroller.create_or_update`` reads it fresh and creates it, or writes
   the owned fields over it (``diff.overlay``) with its resourceVersion. A
   same-named child controlled by anything else is never adopted or changed:
   ``ChildConflict``, Warning, re-checked after ``CONFLICT_RECHECK`` s. A 422
   from the API server (e.g. a bad ``env`` entry the CRD schema let through)
   is ``ChildInvalid``, final like an invalid spec. Any other API error is
   ``ReconcileFailed`` with a Warning event, and is raised for a retry with
   backoff; a Conflict (stale cache) is just retried.
5. ``Reconciled=True`` (reason ``Success``, ``observedGeneration``).

Status writes go through the status subresource only when the condition
changed (``meta.set_status_condition``: ``lastTransitionTime`` moves only
when the status flips); a Conflict re-reads the object and recomputes, up to
``STATUS_ATTEMPTS`` times, then raises so the key is retried (the original
logged the Conflict and dropped the status).

Objects from listers are shared with the informer cache and never mutated
here: every write starts from a deep copy.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from controllers.reverseproxy import diff, names, resources, validation
from pycontroller import Request, Result, create_or_update
from pycontroller.errors import ApiError, ConflictError, InvalidError, NotFoundError
from pycontroller.meta import (
    add_finalizer,
    contains_finalizer,
    is_controlled_by,
    remove_finalizer,
    set_status_condition,
)
from pycontroller.record import Recorder

logger = logging.getLogger(__name__)

Obj = dict[str, Any]

NORMAL = "Normal"
WARNING = "Warning"
#: Seconds before an object blocked by a foreign child is looked at again
#: (the foreign object's events do not map to us).
CONFLICT_RECHECK = 30.0
#: Attempts of a status write that keeps meeting Conflicts.
STATUS_ATTEMPTS = 5

MSG_CREATED = "Created %s %s"
MSG_UPDATED = "Updated %s %s"
MSG_CONFLICT = "%s %s exists and is not controlled by %s %s"
MSG_CHILD_INVALID = "%s %s was rejected: %s"
MSG_INVALID = "invalid spec: %s"


class Lister(Protocol):
    """The part of ``pycontroller.cache.Lister`` the reconciler uses."""

    def get(self, name: str, namespace: str | None = None) -> Any: ...


class Client(Protocol):
    """The part of ``pycontroller.ResourceClient`` the reconciler uses."""

    namespaced: bool

    def get(self, name: str, namespace: str | None = None) -> Any: ...

    def create(self, obj: Obj, namespace: str | None = None) -> Any: ...

    def update(self, obj: Obj) -> Any: ...

    def update_status(self, obj: Obj) -> Any: ...

    def delete(self, name: str, namespace: str | None = None, **kwargs: Any) -> Any: ...


class ChildConflict(Exception):
    """A child with our name exists and is not controlled by the object."""


class Reconciler:
    """Reconciles objects of one ``names.Kind``; see the module docstring.

    ``children`` maps a child kind (``"ConfigMap"``, ``"Deployment"``,
    ``"Service"``) to its (lister, client).
    """

    def __init__(
        self,
        kind: names.Kind,
        *,
        lister: Lister,
        client: Client,
        children: Mapping[str, tuple[Lister, Client]],
        recorder: Recorder,
        nginx_image: str | None = None,
    ) -> None:
        self.kind = kind
        self._lister = lister
        self._client = client
        self._children = children
        self._recorder = recorder
        self._image = nginx_image or names.default_nginx_image()

    # -- the reconcile -----------------------------------------------------------------

    def reconcile(self, request: Request) -> Result | None:
        key = str(request)
        try:
            obj: Obj = self._lister.get(request.name, request.namespace)
        except NotFoundError:
            return None
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            if self.kind.finalizer and contains_finalizer(obj, names.FINALIZER):
                return self._finalize(obj, key)
            return None
        if self.kind.finalizer and not contains_finalizer(obj, names.FINALIZER):
            obj = copy.deepcopy(obj)
            add_finalizer(obj, names.FINALIZER)
            obj = self._client.update(obj)
            logger.info("controller=%s key=%s action=add-finalizer", self.kind.controller, key)

        problems = validation.validate(obj, nginx_image=self._image)
        if problems:
            limit = validation.MAX_MESSAGE_LENGTH - len(MSG_INVALID % "")
            self._fail(
                obj, names.REASON_INVALID_SPEC, MSG_INVALID % validation.message(problems, limit)
            )
            return None
        try:
            for child in resources.desired_children(obj, nginx_image=self._image):
                self._ensure(obj, child, key)
        except ChildConflict as err:
            self._fail(obj, names.REASON_CHILD_CONFLICT, str(err))
            return Result(requeue_after=CONFLICT_RECHECK)
        except InvalidError as err:
            self._fail(obj, names.REASON_CHILD_INVALID, str(err))
            return None
        except ConflictError:
            raise  # a stale cache: the retry reads fresh state; nothing to report
        except ApiError as err:
            self._fail(obj, names.REASON_RECONCILE_FAILED, str(err), event=False)
            self._warn(obj, names.EVENT_RECONCILE_FAILED, str(err))
            raise
        self._set_condition(obj, "True", names.REASON_SUCCESS, "")
        logger.debug("controller=%s key=%s action=synced", self.kind.controller, key)
        return None

    # -- children ------------------------------------------------------------------------

    def _cached(self, child_kind: str, namespace: str, name: str) -> Obj | None:
        try:
            live: Obj = self._children[child_kind][0].get(name, namespace)
        except NotFoundError:
            return None
        return live

    def _ensure(self, obj: Obj, child: Obj, key: str) -> None:
        child_kind, meta = child["kind"], child["metadata"]
        live = self._cached(child_kind, meta["namespace"], meta["name"])
        if live is not None:
            self._check_owner(obj, live, child_kind)
            if not diff.drifted(child, live):
                return

        def mutate(target: Obj) -> None:
            if target is not desired:  # the live object, fresh from the server
                self._check_owner(obj, target, child_kind)
                merged = diff.overlay(child, target)
                target.clear()
                target.update(merged)

        desired = copy.deepcopy(child)
        client = self._children[child_kind][1]
        try:
            result = create_or_update(client, desired, mutate)
        except InvalidError as err:
            raise InvalidError(
                err.status,
                err.reason,
                MSG_CHILD_INVALID % (child_kind, meta["name"], err.message),
                err.body,
            ) from err
        if result == "unchanged":
            return
        logger.info(
            "controller=%s key=%s action=%s kind=%s name=%s",
            self.kind.controller,
            key,
            result,
            child_kind,
            meta["name"],
        )
        reason, message = (
            (names.EVENT_CREATED, MSG_CREATED)
            if result == "created"
            else (names.EVENT_UPDATED, MSG_UPDATED)
        )
        self._recorder.event(obj, NORMAL, reason, message % (child_kind, meta["name"]))

    def _check_owner(self, obj: Obj, live: Obj, child_kind: str) -> None:
        if not is_controlled_by(live, obj):
            raise ChildConflict(
                MSG_CONFLICT
                % (child_kind, live["metadata"]["name"], self.kind.kind, obj["metadata"]["name"])
            )

    def _finalize(self, obj: Obj, key: str) -> Result | None:
        meta = obj["metadata"]
        name = names.child_name(self.kind, meta["name"])
        for child_kind in ("ConfigMap", "Deployment", "Service"):
            live = self._cached(child_kind, meta["namespace"], name)
            if live is None or not is_controlled_by(live, obj):
                continue  # gone, or not ours: never delete what we do not control
            try:
                self._children[child_kind][1].delete(
                    name,
                    namespace=meta["namespace"],
                    preconditions={"uid": live["metadata"]["uid"]},
                )
            except NotFoundError:
                continue
            except ConflictError:
                continue  # the uid precondition failed: another object took the name
            except ApiError as err:
                self._warn(obj, names.EVENT_DELETE_FAILED, f"failed to delete object: {err}")
                raise
            logger.info(
                "controller=%s key=%s action=delete kind=%s name=%s",
                self.kind.controller,
                key,
                child_kind,
                name,
            )
        updated = copy.deepcopy(obj)
        remove_finalizer(updated, names.FINALIZER)
        try:
            self._client.update(updated)
        except NotFoundError:
            return None
        except ConflictError:
            # Our cache is behind: the object changed, or it is gone already (an
            # update carrying the uid of a deleted object fails kube's UID
            # precondition with 409, not 404). Look again with fresh state.
            logger.info(
                "controller=%s key=%s action=requeue reason=conflict", self.kind.controller, key
            )
            return Result(requeue=True)
        logger.info("controller=%s key=%s action=remove-finalizer", self.kind.controller, key)
        return None

    # -- status and events ---------------------------------------------------------------

    def _warn(self, obj: Obj, reason: str, message: str) -> None:
        meta = obj["metadata"]
        logger.warning(
            "controller=%s key=%s/%s action=event type=Warning reason=%s message=%s",
            self.kind.controller,
            meta.get("namespace"),
            meta.get("name"),
            reason,
            message,
        )
        self._recorder.event(obj, WARNING, reason, message)

    def _fail(self, obj: Obj, reason: str, message: str, *, event: bool = True) -> None:
        """``Reconciled=False``; a Warning event with ``reason`` when the condition is news.

        With ``event`` (a final problem) a failed status write raises (the
        retry writes it and sends the one event); without it the caller is
        about to raise its own error, which a failed status write must not mask.
        """
        try:
            changed = self._set_condition(obj, "False", reason, message)
        except ApiError as err:
            logger.warning(
                "controller=%s key=%s/%s action=status-failed error=%s",
                self.kind.controller,
                obj["metadata"].get("namespace"),
                obj["metadata"].get("name"),
                err,
            )
            if event and not isinstance(err, InvalidError):
                raise
            changed = True
        if event and changed:
            self._warn(obj, reason, message)

    def _set_condition(self, obj: Obj, status: str, reason: str, message: str) -> bool:
        """Write the ``Reconciled`` condition if it changed; True if written.

        On Conflict the object is read again from the server and the
        condition set on that copy (its other conditions and transition times
        kept), at most ``STATUS_ATTEMPTS`` times; the last Conflict is raised.
        """
        meta = obj["metadata"]
        condition: Obj = {
            "type": names.CONDITION_RECONCILED,
            "status": status,
            "reason": reason,
            "message": message,
        }
        if meta.get("generation"):
            condition["observedGeneration"] = meta["generation"]
        current = obj
        for attempt in range(STATUS_ATTEMPTS):
            updated = copy.deepcopy(current)
            st = updated.get("status")
            if not isinstance(st, dict):
                st = updated["status"] = {}
            if not isinstance(st.get("conditions"), list):
                st["conditions"] = []
            st["conditions"] = [c for c in st["conditions"] if isinstance(c, dict)]
            if not set_status_condition(st["conditions"], condition) and updated == current:
                return False
            try:
                self._client.update_status(updated)
            except ConflictError:
                if attempt == STATUS_ATTEMPTS - 1:
                    raise
                try:
                    current = self._client.get(meta["name"], namespace=meta["namespace"])
                except NotFoundError:
                    return False
                if current["metadata"].get("uid") != meta.get("uid"):
                    return False
                continue
            except NotFoundError:
                return False
            logger.info(
                "controller=%s key=%s/%s action=update-status reason=%s",
                self.kind.controller,
                meta["namespace"],
                meta["name"],
                reason,
            )
            return True
        return False
