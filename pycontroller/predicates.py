"""Event predicates: controller-runtime's ``pkg/predicate`` for informer events.

A ``Predicate`` answers, per event, whether it should reach the controller:
``create(obj)``, ``update(old, new)``, ``delete(obj)``, ``generic(obj)``.

- ``GenerationChanged()``, ``LabelsChanged()``, ``AnnotationsChanged()``,
  ``ResourceVersionChanged()`` pass every create, delete and generic event
  and filter updates on that one field (``metadata.generation``,
  ``.labels``, ``.annotations``, ``.resourceVersion``).
- ``and_(*p)``, ``or_(*p)``, ``not_(p)`` compose them (``and_()`` of nothing
  passes everything, ``or_()`` of nothing passes nothing, as in Go).
- ``Funcs(create=..., update=..., delete=..., generic=...)`` builds one from
  functions (a missing one passes); ``new_predicate_funcs(filter)`` applies
  one object filter to every event (to the new object of an update).

One rule overrides all of them, composites and ``not_`` included: an update
whose ``metadata.uid`` changed always passes. Such an update (a relist after
the watch missed a delete and a re-create under the same name) is really a
delete plus an add, and filtering it out would leave the controller blind to
a brand-new object. ``filter_handler`` applies the same rule to predicates
it did not build.

``filter_handler(handler, *predicates)`` puts predicates in front of an
informer event handler (``pycontroller.cache.ResourceEventHandler``): an
event is forwarded only if *every* predicate passes it (controller-runtime's
per-watch predicate list). Unlike ``pycontroller.handlers.predicate_handler``
(forwards an update if *any* update predicate holds, never filters adds or
deletes), predicates here see every event type; use ``or_`` for "any".

The field comparisons are ``pycontroller.handlers``' update predicates. One
difference from Go: ``GenerationChanged`` passes an update where either
object has no ``metadata.generation`` (Go reads a missing generation as 0
and filters every update of such kinds, ConfigMaps for one; a dropped event
costs a missed reconcile, an extra one costs nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ._objmeta import unwrap as _unwrap
from .cache.shared_informer import ResourceEventHandler
from .handlers import (
    annotations_changed,
    generation_changed,
    labels_changed,
    resource_version_changed,
    uid_changed,
)

__all__ = [
    "AnnotationsChanged",
    "Funcs",
    "GenerationChanged",
    "LabelsChanged",
    "Predicate",
    "ResourceVersionChanged",
    "and_",
    "filter_handler",
    "new_predicate_funcs",
    "not_",
    "or_",
]

logger = logging.getLogger(__name__)

ObjectFilter = Callable[[Any], bool]
UpdateFilter = Callable[[Any, Any], bool]


@runtime_checkable
class Predicate(Protocol):
    """Whether an event should be processed; ``obj`` is never a tombstone here."""

    def create(self, obj: Any) -> bool: ...

    def update(self, old: Any, new: Any) -> bool: ...

    def delete(self, obj: Any) -> bool: ...

    def generic(self, obj: Any) -> bool: ...


# --------------------------------------------------------------------------- Funcs


class Funcs:
    """A predicate from functions; a function left out passes its events.

    An update whose uid changed passes whatever ``update`` says.
    """

    def __init__(
        self,
        create: ObjectFilter | None = None,
        update: UpdateFilter | None = None,
        delete: ObjectFilter | None = None,
        generic: ObjectFilter | None = None,
    ) -> None:
        self._create = create
        self._update = update
        self._delete = delete
        self._generic = generic

    def create(self, obj: Any) -> bool:
        return self._create is None or bool(self._create(obj))

    def update(self, old: Any, new: Any) -> bool:
        return self._update is None or uid_changed(old, new) or bool(self._update(old, new))

    def delete(self, obj: Any) -> bool:
        return self._delete is None or bool(self._delete(obj))

    def generic(self, obj: Any) -> bool:
        return self._generic is None or bool(self._generic(obj))


def new_predicate_funcs(filter: ObjectFilter) -> Funcs:
    """controller-runtime ``NewPredicateFuncs``: ``filter`` on every event (an update: its new)."""
    return Funcs(
        create=filter,
        update=lambda old, new: filter(new),
        delete=filter,
        generic=filter,
    )


# --------------------------------------------------------------------------- field predicates


class _UpdateOnly:
    """Passes create, delete and generic; an update passes iff ``_changed`` (or the uid changed).

    An update missing either object is dropped, as controller-runtime does
    (it logs "Update event has no old object").
    """

    _field = ""

    def create(self, obj: Any) -> bool:
        return True

    def delete(self, obj: Any) -> bool:
        return True

    def generic(self, obj: Any) -> bool:
        return True

    def update(self, old: Any, new: Any) -> bool:
        if old is None or new is None:
            logger.error(
                "%r: update event without %s object", self, "old" if old is None else "new"
            )
            return False
        return uid_changed(old, new) or self._changed(old, new)

    def _changed(self, old: Any, new: Any) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class GenerationChanged(_UpdateOnly):
    """Updates pass iff ``metadata.generation`` changed (a spec write; status writes don't bump it).

    Caveats (as in controller-runtime): status-only updates are filtered, so a
    status someone else overwrote is not restored until the next spec change;
    and some kinds (Deployments) also bump the generation on annotation writes.
    """

    def _changed(self, old: Any, new: Any) -> bool:
        return generation_changed(old, new)


class LabelsChanged(_UpdateOnly):
    """Updates pass iff ``metadata.labels`` changed (missing and empty are the same)."""

    def _changed(self, old: Any, new: Any) -> bool:
        return labels_changed(old, new)


class AnnotationsChanged(_UpdateOnly):
    """Updates pass iff ``metadata.annotations`` changed (missing and empty are the same)."""

    def _changed(self, old: Any, new: Any) -> bool:
        return annotations_changed(old, new)


class ResourceVersionChanged(_UpdateOnly):
    """Updates pass iff ``metadata.resourceVersion`` changed: drops periodic resyncs."""

    def _changed(self, old: Any, new: Any) -> bool:
        return resource_version_changed(old, new)


# --------------------------------------------------------------------------- composites


class _And:
    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self.predicates = predicates

    def create(self, obj: Any) -> bool:
        return all(p.create(obj) for p in self.predicates)

    def update(self, old: Any, new: Any) -> bool:
        return uid_changed(old, new) or all(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Any) -> bool:
        return all(p.delete(obj) for p in self.predicates)

    def generic(self, obj: Any) -> bool:
        return all(p.generic(obj) for p in self.predicates)

    def __repr__(self) -> str:
        return f"and_({', '.join(map(repr, self.predicates))})"


class _Or:
    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self.predicates = predicates

    def create(self, obj: Any) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: Any, new: Any) -> bool:
        return uid_changed(old, new) or any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Any) -> bool:
        return any(p.delete(obj) for p in self.predicates)

    def generic(self, obj: Any) -> bool:
        return any(p.generic(obj) for p in self.predicates)

    def __repr__(self) -> str:
        return f"or_({', '.join(map(repr, self.predicates))})"


class _Not:
    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate

    def create(self, obj: Any) -> bool:
        return not self.predicate.create(obj)

    def update(self, old: Any, new: Any) -> bool:
        return uid_changed(old, new) or not self.predicate.update(old, new)

    def delete(self, obj: Any) -> bool:
        return not self.predicate.delete(obj)

    def generic(self, obj: Any) -> bool:
        return not self.predicate.generic(obj)

    def __repr__(self) -> str:
        return f"not_({self.predicate!r})"


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event iff every predicate does (short-circuits; no predicates: passes all)."""
    return _And(predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event iff any predicate does (short-circuits; no predicates: passes none)."""
    return _Or(predicates)


def not_(predicate: Predicate) -> Predicate:
    """Passes an event iff ``predicate`` does not, except a uid-changing update (always passes)."""
    return _Not(predicate)


# --------------------------------------------------------------------------- informer handlers


class _FilterHandler:
    """Forwards an informer event to ``handler`` iff every predicate passes it."""

    def __init__(self, handler: ResourceEventHandler, predicates: tuple[Predicate, ...]) -> None:
        self.handler = handler
        self.predicates = predicates

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        if all(p.create(obj) for p in self.predicates):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        if uid_changed(old, new) or all(p.update(old, new) for p in self.predicates):
            self.handler.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        # Predicates judge the last known state; the handler still gets the
        # tombstone, so it can tell that state may be stale.
        inner = _unwrap(obj)
        if all(p.delete(inner) for p in self.predicates):
            self.handler.on_delete(obj)

    def __repr__(self) -> str:
        preds = ", ".join(map(repr, self.predicates))
        return f"filter_handler({self.handler!r}, {preds})"


def filter_handler(handler: ResourceEventHandler, *predicates: Predicate) -> ResourceEventHandler:
    """``handler`` behind ``predicates``: an event is forwarded iff all of them pass it.

    Adds go through ``create``, updates through ``update`` (an update whose
    uid changed is always forwarded, whatever the predicates), deletes through
    ``delete`` with a ``DeletedFinalStateUnknown`` unwrapped for the
    predicates (the handler receives the tombstone as it came). No predicates:
    every event is forwarded. Predicates run on the informer's handler
    thread, so they must be quick and must not mutate the (shared) objects.
    """
    return _FilterHandler(handler, tuple(predicates))
