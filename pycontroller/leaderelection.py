"""Leader election on coordination.k8s.io/v1 Leases: client-go's ``tools/leaderelection``.

Rules (client-go, see the reference §6):

- A candidate acquires the lock when it does not exist (create), when its
  holder is empty, or when the lease has expired. Expiry is judged on the
  **local** clock: ``observed_time + leaseDurationSeconds > now`` where
  ``observed_time`` is when *this* process last saw the record change.
  Timestamps written inside the Lease are never compared with local time,
  so clock skew between candidates does not matter.
- The leader renews every ``retry_period``; a renewal first tries the fast
  path (one Update built from the record it observed last); on failure it
  falls back to Get + Update. If no renewal succeeds within
  ``renew_deadline``, leadership is lost.
- ``leaseTransitions`` grows by one whenever the holder changes.
- ``on_started_leading(stop_leading)`` runs in its own thread;
  ``stop_leading`` is set when leadership ends (lost or ``stop`` set), so the
  leading work must watch it and return. If it raises, leadership ends within
  a ``retry_period`` (and the lease is released): a leader whose work died
  must not keep the lease. Returning normally does not end leadership (as in
  client-go, where it may just start goroutines). ``on_stopped_leading()`` is always
  called when ``run`` returns, even if this candidate never led.
- With ``release_on_cancel`` the lease is released on the way out
  (holderIdentity "", leaseDurationSeconds 1) so another candidate takes
  over at once rather than after the lease expires. The release only happens
  once the leading thread has returned (waiting up to ``lease_duration``);
  otherwise the lease is left to expire, so two leaders never overlap.

Validation errors are ``ValueError`` with client-go's messages.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import urllib3

from pycontroller._time import format_rfc3339
from pycontroller.client import ResourceClient
from pycontroller.clock import REAL_CLOCK, Clock
from pycontroller.errors import ApiError, ConflictError, NotFoundError

logger = logging.getLogger(__name__)

__all__ = [
    "JITTER_FACTOR",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "ResourceLock",
    "format_micro_time",
]

JITTER_FACTOR = 1.2

# Errors a lock operation may raise that mean "this attempt failed, try again later"
# (client-go treats any Get/Create/Update error as a failed try): API errors,
# transport errors, and ValueError for a reply that does not decode (non-JSON
# body) or a Lease whose fields do not parse.
_LOCK_ERRORS: tuple[type[Exception], ...] = (
    ApiError,
    OSError,
    urllib3.exceptions.HTTPError,
    ValueError,
)
# ... plus RuntimeError from LeaseLock.update before the lease was read (the fast path).
_UPDATE_ERRORS: tuple[type[Exception], ...] = (*_LOCK_ERRORS, RuntimeError)


def format_micro_time(epoch: float) -> str:
    """metav1.MicroTime: ``2006-01-02T15:04:05.000000Z`` (UTC, microseconds)."""
    return format_rfc3339(epoch, micro=True)


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The lock's content (client-go ``LeaderElectionRecord``); times are MicroTime strings."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease_spec(cls, spec: Mapping[str, Any] | None) -> LeaderElectionRecord:
        """Nil spec fields map to zero values."""
        spec = spec or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_lease_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec


class ResourceLock(Protocol):
    """What a LeaderElector needs from a lock (client-go ``resourcelock.Interface``).

    ``get`` raises ``NotFoundError`` when the lock object does not exist;
    ``create``/``update`` raise ``ApiError`` (``ConflictError`` on a stale
    write) or a transport error on failure.
    """

    @property
    def identity(self) -> str: ...

    def describe(self) -> str: ...

    def get(self) -> LeaderElectionRecord: ...

    def create(self, record: LeaderElectionRecord) -> None: ...

    def update(self, record: LeaderElectionRecord) -> None: ...

    def record_event(self, message: str) -> None: ...


class LeaseClient(Protocol):
    """The verbs LeaseLock uses (``ResourceClient`` for coordination.k8s.io/v1 leases)."""

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any]: ...

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

    def update(self, obj: dict[str, Any]) -> dict[str, Any]: ...


class _EventRecorderLike(Protocol):
    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


class LeaseLock:
    """A ``ResourceLock`` on the Lease ``namespace/name`` (coordination.k8s.io/v1).

    ``get`` and ``create`` cache the Lease; ``update`` PUTs the cached Lease
    with a new spec (so a stale cache yields ``ConflictError``) and caches
    the reply. ``update`` before any successful ``get``/``create`` raises
    RuntimeError("lease not initialized, call get or create first").
    ``labels`` are put on the Lease on create and merged in on update.
    ``client`` replaces the ResourceClient built from ``api_client`` (tests).
    ``request_timeout`` bounds each lease request (client-go uses
    ``max(renew_deadline / 2, 1 s)``; 5 s matches the default 10 s deadline):
    a hung request is only counted as a failed renewal once it returns.
    ``event_recorder`` (optional) receives "<identity> became leader" /
    "<identity> stopped leading" Normal events about the Lease.
    """

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        identity: str,
        *,
        labels: Mapping[str, str] | None = None,
        event_recorder: _EventRecorderLike | None = None,
        client: LeaseClient | None = None,
        request_timeout: float = 5.0,
    ) -> None:
        if client is None:
            client = ResourceClient(
                api_client,
                "coordination.k8s.io",
                "v1",
                "leases",
                request_timeout=request_timeout,
            )
        self._client = client
        self.namespace = namespace
        self.name = name
        self._identity = identity
        self._labels = dict(labels or {})
        self._recorder = event_recorder
        self._lease: dict[str, Any] | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self) -> LeaderElectionRecord:
        lease: dict[str, Any] = self._client.get(self.name, namespace=self.namespace)
        with self._lock:
            self._lease = lease
        return LeaderElectionRecord.from_lease_spec(lease.get("spec"))

    def create(self, record: LeaderElectionRecord) -> None:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self._labels:
            metadata["labels"] = dict(self._labels)
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": record.to_lease_spec(),
        }
        lease: dict[str, Any] = self._client.create(body, namespace=self.namespace)
        with self._lock:
            self._lease = lease

    def update(self, record: LeaderElectionRecord) -> None:
        with self._lock:
            if self._lease is None:
                raise RuntimeError("lease not initialized, call get or create first")
            body = dict(self._lease)
        metadata = dict(body.get("metadata") or {})
        if self._labels:
            metadata["labels"] = {**(metadata.get("labels") or {}), **self._labels}
        body["metadata"] = metadata
        body["spec"] = record.to_lease_spec()
        body.setdefault("apiVersion", "coordination.k8s.io/v1")
        body.setdefault("kind", "Lease")
        lease: dict[str, Any] = self._client.update(body)
        with self._lock:
            self._lease = lease

    def record_event(self, message: str) -> None:
        if self._recorder is None:
            return
        with self._lock:
            lease = self._lease
        obj: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": dict((lease or {}).get("metadata") or {})
            or {"name": self.name, "namespace": self.namespace},
        }
        self._recorder.event(obj, "Normal", "LeaderElection", f"{self._identity} {message}")


class LeaderElector:
    """Runs a leader election on ``lock``; see the module docstring for the rules.

    Durations are seconds. Construction validates as client-go's
    ``NewLeaderElector`` and raises ``ValueError`` with its messages.
    ``run`` may be called once per elector. Callbacks are user code called
    with no elector lock held: ``on_started_leading`` in a new thread,
    ``on_new_leader`` in a new thread per change, ``on_stopped_leading`` in
    ``run``'s thread just before it returns.
    """

    def __init__(
        self,
        lock: ResourceLock | None,
        lease_duration: float = 15,
        renew_deadline: float = 10,
        retry_period: float = 2,
        on_started_leading: Callable[[threading.Event], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        release_on_cancel: bool = True,
        *,
        clock: Clock = REAL_CLOCK,
        name: str = "",
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if lease_duration < 1e-9:
            raise ValueError("leaseDuration must be greater than zero")
        if renew_deadline < 1e-9:
            raise ValueError("renewDeadline must be greater than zero")
        if retry_period < 1e-9:
            raise ValueError("retryPeriod must be greater than zero")
        if on_started_leading is None:
            raise ValueError("OnStartedLeading callback must not be nil")
        if on_stopped_leading is None:
            raise ValueError("OnStoppedLeading callback must not be nil")
        if lock is None:
            raise ValueError("Lock must not be nil.")
        if not lock.identity:
            raise ValueError("Lock identity is empty")
        self.lock = lock
        self.lease_duration = float(lease_duration)
        self.renew_deadline = float(renew_deadline)
        self.retry_period = float(retry_period)
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self.release_on_cancel = release_on_cancel
        self.name = name or lock.describe()
        self._clock = clock
        self._state_lock = threading.Lock()
        self._observed_record = LeaderElectionRecord()
        self._observed_time = 0.0  # clock.now() when the observed record last changed
        self._reported_leader = ""
        self._leading = False
        self._started = False
        self._leading_crashed = threading.Event()

    # -- public -----------------------------------------------------------

    def is_leader(self) -> bool:
        """True while this candidate holds the lease and is leading (between acquire and loss)."""
        with self._state_lock:
            return self._leading and self._observed_record.holder_identity == self.lock.identity

    def get_leader(self) -> str:
        """The last observed holder identity ("" if none observed)."""
        with self._state_lock:
            return self._observed_record.holder_identity

    def check(self, max_tolerable_expired_lease: float) -> str | None:
        """Watchdog: an error message if leading but not renewed for lease_duration + tolerance."""
        with self._state_lock:
            holder = self._observed_record.holder_identity == self.lock.identity
            since = self._clock.now() - self._observed_time
        if holder and self._leading and since > self.lease_duration + max_tolerable_expired_lease:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    def health_check(self, max_tolerable_expired_lease: float = 20.0) -> Callable[[], bool]:
        """A ``/healthz`` check (client-go's HealthzAdaptor): False once ``check`` fails.

        Plug it into ``serve_metrics_and_health(..., health_checks=...)`` so a
        leader stuck without renewing is restarted by its liveness probe.
        """

        def leader_election() -> bool:
            return self.check(max_tolerable_expired_lease) is None

        return leader_election

    def run(self, stop: threading.Event) -> None:
        """Campaign until leading, lead until leadership is lost or ``stop`` is set.

        Always calls ``on_stopped_leading`` before returning. Returns when
        ``stop`` is set or leadership is lost (it does not campaign again:
        like client-go, a process that lost its lease should exit).
        """
        with self._state_lock:
            if self._started:
                raise RuntimeError("LeaderElector.run may only be called once")
            self._started = True
        try:
            if not self._acquire(stop):
                return
            stop_leading = threading.Event()
            self._leading_crashed.clear()
            leading = threading.Thread(
                target=self._lead,
                args=(stop_leading,),
                name=f"leader-{self.name}",
                daemon=True,
            )
            leading.start()
            try:
                self._renew(stop)
            finally:
                with self._state_lock:
                    self._leading = False
                stop_leading.set()
            if self.release_on_cancel:
                leading.join(self.lease_duration)
                if leading.is_alive():
                    logger.warning(
                        "Leading work for lease %s did not stop within %ss;"
                        " not releasing, the lease will expire",
                        self.name,
                        self.lease_duration,
                    )
                else:
                    self.release()
        finally:
            self._on_stopped_leading()

    def _lead(self, stop_leading: threading.Event) -> None:
        """The leading thread: user code; if it raises, leadership is given up."""
        try:
            self._on_started_leading(stop_leading)
        except BaseException:
            # Not swallowed (re-raised for threading.excepthook): but a leader
            # whose work crashed must not keep holding the lease.
            logger.error("on_started_leading for lease %s raised; giving up leadership", self.name)
            self._leading_crashed.set()
            raise

    def release(self) -> bool:
        """Give the lease up if we hold it (holder "", leaseDurationSeconds 1). True on success.

        Gets the current record first (client-go master): if someone else
        holds it, nothing is written. Retries on Conflict.
        """
        for _ in range(5):
            try:
                current = self.lock.get()
            except _LOCK_ERRORS as err:
                logger.error("Failed to get lease %s for release: %s", self.name, err)
                return False
            if current.holder_identity != self.lock.identity:
                return True
            now = format_micro_time(self._clock.time())
            record = LeaderElectionRecord(
                holder_identity="",
                lease_duration_seconds=1,
                acquire_time=now,
                renew_time=now,
                leader_transitions=current.leader_transitions,
            )
            try:
                self.lock.update(record)
            except ConflictError:
                logger.info("Conflict releasing lease %s, retrying", self.name)
                continue
            except _LOCK_ERRORS as err:
                logger.error("Failed to release lease %s: %s", self.name, err)
                return False
            self._set_observed(record)
            logger.info("Released lease %s", self.name)
            return True
        return False

    # -- loops -------------------------------------------------------------

    def _acquire(self, stop: threading.Event) -> bool:
        logger.info("Attempting to acquire leader lease %s...", self.lock.describe())
        while not stop.is_set():
            succeeded = self._try_acquire_or_renew()
            self._maybe_report_transition()
            if succeeded:
                with self._state_lock:
                    self._leading = True
                self.lock.record_event("became leader")
                logger.info("Successfully acquired lease %s", self.lock.describe())
                return True
            logger.debug("Failed to acquire lease %s", self.lock.describe())
            period = self.retry_period + random.random() * JITTER_FACTOR * self.retry_period
            if self._clock.sleep(period, stop):
                break
        return False

    def _renew(self, stop: threading.Event) -> None:
        """Renew every retry_period; return once a renewal misses its deadline or stop is set."""
        try:
            while not stop.is_set():
                if self._leading_crashed.is_set():
                    return
                if not self._renew_once(stop):
                    if stop.is_set():
                        logger.info("Stopping leader election on lease %s", self.lock.describe())
                    else:
                        logger.info(
                            "Failed to renew lease %s within %ss",
                            self.lock.describe(),
                            self.renew_deadline,
                        )
                    return
                logger.debug("Successfully renewed lease %s", self.lock.describe())
                if self._leading_crashed.is_set() or self._clock.sleep(self.retry_period, stop):
                    return
        finally:
            self.lock.record_event("stopped leading")

    def _renew_once(self, stop: threading.Event) -> bool:
        """Try every retry_period (first at once) until success or renew_deadline passes."""
        deadline = self._clock.now() + self.renew_deadline
        try:
            while not stop.is_set():
                # A success that comes back after the deadline does not count:
                # another candidate may already consider the lease expired.
                if self._attempt_until(deadline) and self._clock.now() <= deadline:
                    return True
                remaining = deadline - self._clock.now()
                if remaining <= 0 or self._clock.sleep(min(self.retry_period, remaining), stop):
                    return False
            return False
        finally:
            self._maybe_report_transition()

    # -- one attempt ---------------------------------------------------------

    def _attempt_until(self, deadline: float) -> bool:
        """``_try_acquire_or_renew``, given up at ``deadline`` if still in flight.

        client-go passes the renew deadline's context down to the Lease GET
        and PUT, so a stalled request is cancelled and the leader steps down
        within ``renew_deadline``. A blocking HTTP call cannot be cancelled
        here: it runs on a daemon thread that is abandoned at the deadline
        (its late answer only updates the observed record), so a leader
        never outlives its own lease because one request stalls.
        """
        done = threading.Event()
        result = [False]

        def attempt() -> None:
            try:
                result[0] = self._try_acquire_or_renew()
            finally:
                done.set()

        threading.Thread(target=attempt, name=f"renew-{self.name}", daemon=True).start()
        if not done.wait(max(deadline - self._clock.now(), 0.0)):
            logger.warning("Renewing lease %s did not finish by the renew deadline", self.name)
            return False
        return result[0]

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        with self._state_lock:
            self._observed_record = record
            self._observed_time = self._clock.now()

    def _lease_valid_locked(self, now: float) -> bool:
        return self._observed_time + self._observed_record.lease_duration_seconds > now

    def _try_acquire_or_renew(self) -> bool:
        now_wall = format_micro_time(self._clock.time())
        identity = self.lock.identity
        desired = LeaderElectionRecord(
            holder_identity=identity,
            lease_duration_seconds=int(self.lease_duration),
            acquire_time=now_wall,
            renew_time=now_wall,
        )
        # 1. Fast path: we hold a still-valid lease, update from what we observed last.
        with self._state_lock:
            observed = self._observed_record
            fast = observed.holder_identity == identity and self._lease_valid_locked(
                self._clock.now()
            )
        if fast:
            record = replace(
                desired,
                acquire_time=observed.acquire_time,
                leader_transitions=observed.leader_transitions,
            )
            try:
                self.lock.update(record)
            except _UPDATE_ERRORS as err:
                logger.info(
                    "Failed to update lease %s optimistically, falling back to slow path: %s",
                    self.name,
                    err,
                )
            else:
                self._set_observed(record)
                return True

        # 2. Get (or create) the record.
        try:
            old = self.lock.get()
        except NotFoundError:
            try:
                self.lock.create(desired)
            except _LOCK_ERRORS as err:
                logger.error("Error initially creating lease %s: %s", self.name, err)
                return False
            self._set_observed(desired)
            return True
        except _LOCK_ERRORS as err:
            logger.error("Error retrieving lease %s: %s", self.name, err)
            return False

        # 3. Record obtained: note when it changed, on our clock.
        with self._state_lock:
            if old != self._observed_record:
                self._observed_record = old
                self._observed_time = self._clock.now()
            held_by_other = (
                old.holder_identity != ""
                and old.holder_identity != identity
                and self._lease_valid_locked(self._clock.now())
            )
        if held_by_other:
            logger.debug(
                "Lease %s is held by %s and has not yet expired", self.name, old.holder_identity
            )
            return False

        # 4. Take it over or renew it.
        if old.holder_identity == identity:
            record = replace(
                desired,
                acquire_time=old.acquire_time,
                leader_transitions=old.leader_transitions,
            )
        else:
            record = replace(desired, leader_transitions=old.leader_transitions + 1)
        try:
            self.lock.update(record)
        except _UPDATE_ERRORS as err:
            logger.error("Failed to update lease %s: %s", self.name, err)
            return False
        self._set_observed(record)
        return True

    def _maybe_report_transition(self) -> None:
        with self._state_lock:
            holder = self._observed_record.holder_identity
            if holder == self._reported_leader:
                return
            self._reported_leader = holder
        if self._on_new_leader is not None:
            threading.Thread(
                target=self._on_new_leader, args=(holder,), name="on-new-leader", daemon=True
            ).start()
