"""Which Balancer updates reach the work queue (the builder's ``for_`` predicate)."""

from __future__ import annotations

from typing import Any

from pycontroller.handlers import (
    UpdatePredicate,
    annotations_changed,
    deletion_timestamp_changed,
    generation_changed,
    labels_changed,
    resource_version_changed,
)


def is_resync(old: Any, new: Any) -> bool:
    """A periodic resync (or unchanged relist): old and new share a resourceVersion."""
    return not resource_version_changed(old, new)


#: Balancer updates that reach the queue: any of these holds. A status-only
#: update (our own status write included) matches none, since the API server
#: bumps ``generation`` only for spec changes. (An update whose uid changed
#: always passes: the builder's predicates never filter one.)
BALANCER_UPDATE_PREDICATES: tuple[UpdatePredicate, ...] = (
    is_resync,
    generation_changed,
    labels_changed,
    annotations_changed,
    deletion_timestamp_changed,
)


def balancer_update_relevant(old: Any, new: Any) -> bool:
    """True iff a Balancer update may change what the reconciler does.

    Periodic resyncs pass, so the level-based reconcile runs every resync
    period; status-only updates do not.
    """
    return any(p(old, new) for p in BALANCER_UPDATE_PREDICATES)
