"""LeaderElector conformance cases (reference §6.5) with a fake lock and a FakeClock."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pycontroller.clock import FakeClock
from pycontroller.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from pycontroller.leaderelection import (
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    format_micro_time,
)
from pycontroller.testing import wait_for


class FakeLock:
    """An in-memory lock with LeaseLock's behaviour.

    ``update`` needs a prior ``get``/``create`` (else RuntimeError, no API
    call), and fails with Conflict when the server copy changed since this
    lock last read or wrote it (resourceVersion semantics). ``ops`` lists the
    API calls made.
    """

    def __init__(self, identity: str = "baz", record: LeaderElectionRecord | None = None) -> None:
        self._identity = identity
        self.record = record
        self.version = 0
        self.cached_version: int | None = None
        self.ops: list[str] = []
        self.events: list[str] = []
        self.fail_update: list[Exception] = []
        self.fail_get: list[Exception] = []
        self.lock = threading.Lock()

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return "ns/lease"

    def get(self) -> LeaderElectionRecord:
        with self.lock:
            self.ops.append("get")
            if self.fail_get:
                raise self.fail_get.pop(0)
            if self.record is None:
                raise NotFoundError(message="not found")
            self.cached_version = self.version
            return self.record

    def create(self, record: LeaderElectionRecord) -> None:
        with self.lock:
            self.ops.append("create")
            if self.record is not None:
                raise AlreadyExistsError(409, "AlreadyExists", "exists")
            self.record = record
            self.version += 1
            self.cached_version = self.version

    def update(self, record: LeaderElectionRecord) -> None:
        with self.lock:
            if self.cached_version is None:
                raise RuntimeError("lease not initialized, call get or create first")
            self.ops.append("update")
            if self.fail_update:
                raise self.fail_update.pop(0)
            if self.cached_version != self.version:
                raise ConflictError(409, "Conflict", "the object has been modified")
            self.record = record
            self.version += 1
            self.cached_version = self.version

    def record_event(self, message: str) -> None:
        with self.lock:
            self.events.append(f"{self._identity} {message}")

    def server_write(self, record: LeaderElectionRecord) -> None:
        """Another client writes the lock."""
        with self.lock:
            self.record = record
            self.version += 1


def noop_started(stop: threading.Event) -> None:
    return None


def noop_stopped() -> None:
    return None


def elector(lock: FakeLock, clock: FakeClock, **kw: Any) -> LeaderElector:
    args: dict[str, Any] = {
        "lease_duration": 15,
        "renew_deadline": 10,
        "retry_period": 2,
        "on_started_leading": noop_started,
        "on_stopped_leading": noop_stopped,
        "clock": clock,
    }
    args.update(kw)
    return LeaderElector(lock, **args)


def bing(duration: int = 3, transitions: int = 0) -> LeaderElectionRecord:
    return LeaderElectionRecord(
        holder_identity="bing",
        lease_duration_seconds=duration,
        acquire_time="2026-01-01T00:00:00.000000Z",
        renew_time="2026-01-01T00:00:00.000000Z",
        leader_transitions=transitions,
    )


def drive(clock: FakeClock, cond: Callable[[], bool], step: float, timeout: float = 10.0) -> None:
    """Step the fake clock by ``step`` whenever someone sleeps on it, until ``cond``."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out driving the clock"
        if clock.waiters() > 0:
            clock.step(step)
        time.sleep(0.002)


# -- tryAcquireOrRenew ---------------------------------------------------------


def test_no_lease_object_creates() -> None:
    clock = FakeClock()
    lock = FakeLock()
    le = elector(lock, clock)
    assert le._try_acquire_or_renew()
    assert lock.ops == ["get", "create"]
    assert lock.record is not None
    assert lock.record.holder_identity == "baz"
    assert lock.record.lease_duration_seconds == 15
    assert lock.record.leader_transitions == 0
    assert lock.record.acquire_time == lock.record.renew_time == format_micro_time(clock.time())
    assert le.get_leader() == "baz"


def test_empty_spec_is_taken_with_transition() -> None:
    lock = FakeLock(record=LeaderElectionRecord())
    le = elector(lock, FakeClock())
    assert le._try_acquire_or_renew()
    assert lock.ops == ["get", "update"]
    assert lock.record is not None
    assert lock.record.holder_identity == "baz"
    assert lock.record.leader_transitions == 1


def test_held_lease_is_acquired_once_expired_on_local_clock() -> None:
    clock = FakeClock()
    lock = FakeLock(record=bing(duration=3, transitions=4))
    le = elector(lock, clock)
    assert not le._try_acquire_or_renew()
    assert lock.ops == ["get"]
    clock.step(2.9)
    assert not le._try_acquire_or_renew()
    clock.step(0.1)  # 3 s since we first saw this record: expired
    assert le._try_acquire_or_renew()
    assert lock.record is not None
    assert lock.record.holder_identity == "baz"
    assert lock.record.leader_transitions == 5


def test_renewed_record_restarts_the_expiry_clock() -> None:
    clock = FakeClock()
    lock = FakeLock(record=bing(duration=3))
    le = elector(lock, clock)
    assert not le._try_acquire_or_renew()
    clock.step(2)
    lock.server_write(dataclasses.replace(bing(duration=3), renew_time="2026-01-01T00:00:02Z"))
    assert not le._try_acquire_or_renew()  # changed: observed time is now
    clock.step(2)
    assert not le._try_acquire_or_renew()  # only 2 s since the change
    clock.step(1)
    assert le._try_acquire_or_renew()


def test_held_lease_observed_long_ago_is_acquired() -> None:
    clock = FakeClock()
    lock = FakeLock(record=bing(duration=3))
    le = elector(lock, clock)
    le._observed_record = bing(duration=3)
    le._observed_time = clock.now() - 1000
    assert le._try_acquire_or_renew()
    assert lock.record is not None and lock.record.leader_transitions == 1


def test_empty_holder_is_ignored_even_if_recent() -> None:
    clock = FakeClock()
    empty = LeaderElectionRecord(holder_identity="", lease_duration_seconds=15)
    lock = FakeLock(record=empty)
    le = elector(lock, clock)
    le._observed_record = empty
    le._observed_time = clock.now() + 1000
    assert le._try_acquire_or_renew()
    assert lock.record is not None and lock.record.holder_identity == "baz"


def test_held_and_observed_in_future_is_not_acquired() -> None:
    clock = FakeClock()
    lock = FakeLock(record=bing(duration=3))
    le = elector(lock, clock)
    le._observed_record = bing(duration=3)
    le._observed_time = clock.now() + 1000
    assert not le._try_acquire_or_renew()
    assert lock.ops == ["get"]
    assert lock.record is not None and lock.record.holder_identity == "bing"
    assert le.get_leader() == "bing"


def test_already_held_by_me_fast_path_fails_locally_then_slow_path() -> None:
    clock = FakeClock()
    mine = LeaderElectionRecord(
        holder_identity="baz",
        lease_duration_seconds=15,
        acquire_time="2026-01-01T00:00:00.000000Z",
        renew_time="2026-01-01T00:00:00.000000Z",
    )
    lock = FakeLock(record=mine)
    le = elector(lock, clock)
    le._observed_record = mine
    le._observed_time = clock.now() + 1000
    assert le._try_acquire_or_renew()
    assert lock.ops == ["get", "update"]  # the fast path made no API call
    assert lock.record is not None
    assert lock.record.leader_transitions == 0
    assert lock.record.acquire_time == "2026-01-01T00:00:00.000000Z"  # kept
    assert lock.record.renew_time == format_micro_time(clock.time())


def test_fast_path_renewal_is_one_update() -> None:
    clock = FakeClock()
    lock = FakeLock()
    le = elector(lock, clock)
    assert le._try_acquire_or_renew()
    acquired = lock.record
    clock.step(1)
    assert le._try_acquire_or_renew()
    assert lock.ops == ["get", "create", "update"]
    assert lock.record is not None and acquired is not None
    assert lock.record.acquire_time == acquired.acquire_time
    assert lock.record.renew_time == format_micro_time(clock.time())


def test_fast_path_conflict_falls_back_to_slow_path() -> None:
    clock = FakeClock()
    lock = FakeLock()
    le = elector(lock, clock)
    assert le._try_acquire_or_renew()
    lock.fail_update = [ConflictError(409, "Conflict", "x")]
    assert le._try_acquire_or_renew()
    assert lock.ops == ["get", "create", "update", "get", "update"]


def test_get_error_fails_attempt() -> None:
    lock = FakeLock()
    lock.fail_get = [ApiError(500, "InternalError", "x")]
    le = elector(lock, FakeClock())
    assert not le._try_acquire_or_renew()
    lock.fail_get = [ConnectionRefusedError("down")]
    assert not le._try_acquire_or_renew()


def test_undecodable_reply_fails_attempt() -> None:
    # A non-JSON 2xx body surfaces as ValueError from the client: a failed try, as in client-go.
    clock = FakeClock()
    lock = FakeLock()
    le = elector(lock, clock)
    lock.fail_get = [ValueError("Expecting value: line 1 column 1 (char 0)")]
    assert not le._try_acquire_or_renew()
    assert le._try_acquire_or_renew()  # the next try acquires
    lock.fail_update = [ValueError("bad body")]
    lock.fail_get = [ValueError("bad body")]
    assert not le._try_acquire_or_renew()  # fast path and slow path both fail


def test_release() -> None:
    clock = FakeClock()
    lock = FakeLock(record=LeaderElectionRecord(leader_transitions=3))
    le = elector(lock, clock)
    assert le._try_acquire_or_renew()
    lock.fail_update = [ConflictError(409, "Conflict", "x")]  # release retries on conflict
    assert le.release()
    assert lock.record is not None
    assert lock.record.holder_identity == ""
    assert lock.record.lease_duration_seconds == 1
    assert lock.record.leader_transitions == 4
    assert lock.ops[-4:] == ["get", "update", "get", "update"]


def test_release_when_not_holder_writes_nothing() -> None:
    lock = FakeLock(record=bing())
    le = elector(lock, FakeClock())
    assert le.release()
    assert lock.ops == ["get"]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"lease_duration": 10, "renew_deadline": 10},
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            {"lease_duration": 15, "renew_deadline": 2.4, "retry_period": 2},
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        (
            {"lease_duration": 15, "renew_deadline": 10, "retry_period": 0},
            "retryPeriod must be greater than zero",
        ),
        (
            {"lease_duration": 15, "renew_deadline": 0, "retry_period": -1},
            "renewDeadline must be greater than zero",
        ),
        ({"on_started_leading": None}, "OnStartedLeading callback must not be nil"),
        ({"on_stopped_leading": None}, "OnStoppedLeading callback must not be nil"),
    ],
)
def test_config_validation(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("*", r"\*")):
        elector(FakeLock(), FakeClock(), **kw)


def test_config_validation_lock() -> None:
    elector(FakeLock(), FakeClock(), lease_duration=15, renew_deadline=2, retry_period=1)
    with pytest.raises(ValueError, match="Lock identity is empty"):
        elector(FakeLock(identity=""), FakeClock())
    with pytest.raises(ValueError, match=r"Lock must not be nil\."):
        LeaderElector(None, on_started_leading=noop_started, on_stopped_leading=noop_stopped)


def test_positional_arguments_follow_the_contract() -> None:
    le = LeaderElector(FakeLock(), 15, 10, 2, noop_started, noop_stopped, None, False)
    assert le.lease_duration == 15 and le.release_on_cancel is False


def test_lease_lock_update_before_get_raises() -> None:
    lock = LeaseLock(None, "ns", "name", "me", client=object())
    with pytest.raises(RuntimeError, match="lease not initialized"):
        lock.update(LeaderElectionRecord())
    assert lock.describe() == "ns/name" and lock.identity == "me"


def test_record_lease_spec_round_trip() -> None:
    rec = bing(duration=7, transitions=2)
    spec = rec.to_lease_spec()
    assert spec == {
        "holderIdentity": "bing",
        "leaseDurationSeconds": 7,
        "leaseTransitions": 2,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:00.000000Z",
    }
    assert LeaderElectionRecord.from_lease_spec(spec) == rec
    assert LeaderElectionRecord.from_lease_spec(None) == LeaderElectionRecord()


def test_micro_time_format() -> None:
    assert format_micro_time(1_700_000_000.123456) == "2023-11-14T22:13:20.123456Z"


# -- run() ---------------------------------------------------------------------


class Callbacks:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.stop_leading: threading.Event | None = None
        self.leading_returned = threading.Event()
        self.stopped = threading.Event()
        self.new_leaders: list[str] = []
        self.order: list[str] = []

    def on_started_leading(self, stop_leading: threading.Event) -> None:
        self.order.append("started")
        self.stop_leading = stop_leading
        self.started.set()
        stop_leading.wait(30)
        self.order.append("leading-returned")
        self.leading_returned.set()

    def on_stopped_leading(self) -> None:
        self.order.append("stopped")
        self.stopped.set()

    def on_new_leader(self, identity: str) -> None:
        self.new_leaders.append(identity)


def run_in_thread(le: LeaderElector, stop: threading.Event) -> threading.Thread:
    t = threading.Thread(target=le.run, args=(stop,), daemon=True)
    t.start()
    return t


def make_run(
    lock: FakeLock, clock: FakeClock, cb: Callbacks, **kw: Any
) -> tuple[LeaderElector, threading.Event, threading.Thread]:
    args: dict[str, Any] = {
        "lease_duration": 15,
        "renew_deadline": 2,
        "retry_period": 1,
        "on_started_leading": cb.on_started_leading,
        "on_stopped_leading": cb.on_stopped_leading,
        "on_new_leader": cb.on_new_leader,
        "clock": clock,
    }
    args.update(kw)
    le = LeaderElector(lock, **args)
    stop = threading.Event()
    return le, stop, run_in_thread(le, stop)


def test_run_fast_path_ops() -> None:
    clock = FakeClock()
    lock = FakeLock()
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb, release_on_cancel=False)
    assert cb.started.wait(5)
    assert le.is_leader()
    drive(clock, lambda: lock.ops.count("update") >= 2, step=1)
    stop.set()
    t.join(5)
    assert not t.is_alive()
    assert lock.ops[:4] == ["get", "create", "update", "update"]
    assert cb.stopped.is_set()
    assert cb.leading_returned.wait(5)  # stop_leading was set
    assert not le.is_leader()
    wait_for(lambda: cb.new_leaders == ["baz"])
    assert lock.events[0] == "baz became leader"


def test_run_conflict_on_renewal_uses_slow_path() -> None:
    clock = FakeClock()
    lock = FakeLock()
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb, release_on_cancel=False)
    assert cb.started.wait(5)
    wait_for(lambda: lock.ops.count("update") >= 1)
    lock.fail_update = [ConflictError(409, "Conflict", "x")]
    drive(clock, lambda: lock.ops.count("update") >= 4, step=1)
    stop.set()
    t.join(5)
    assert lock.ops[:7] == ["get", "create", "update", "update", "get", "update", "update"]
    assert le.get_leader() == "baz"


def test_run_stop_while_leading_releases_after_leading_work_returns() -> None:
    clock = FakeClock()
    lock = FakeLock()
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb)
    assert cb.started.wait(5)
    stop.set()
    t.join(5)
    assert not t.is_alive()
    assert cb.order == ["started", "leading-returned", "stopped"]
    assert lock.record is not None
    assert lock.record.holder_identity == ""
    assert lock.record.lease_duration_seconds == 1
    assert not le.is_leader()
    assert "baz stopped leading" in lock.events


def test_run_stop_before_acquiring() -> None:
    clock = FakeClock()
    lock = FakeLock(record=bing(duration=1000))
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb)
    wait_for(lambda: clock.waiters() > 0)
    assert not le.is_leader()
    stop.set()
    t.join(5)
    assert not t.is_alive()
    assert cb.stopped.is_set() and not cb.started.is_set()
    assert lock.record is not None and lock.record.holder_identity == "bing"  # no release
    wait_for(lambda: cb.new_leaders == ["bing"])


def test_run_acquires_after_other_holder_expires() -> None:
    clock = FakeClock()
    lock = FakeLock(record=bing(duration=5, transitions=1))
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb)
    drive(clock, cb.started.is_set, step=1)
    assert lock.record is not None
    assert lock.record.holder_identity == "baz"
    assert lock.record.leader_transitions == 2
    assert clock.now() >= 1000 + 5
    wait_for(lambda: cb.new_leaders == ["bing", "baz"])
    stop.set()
    t.join(5)


def test_run_renew_failures_lose_leadership() -> None:
    clock = FakeClock()
    lock = FakeLock()
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb, release_on_cancel=False)
    assert cb.started.wait(5)
    wait_for(lambda: lock.ops.count("update") >= 1)
    lock.fail_update = [ApiError(500, "InternalError", "x")] * 1000
    lock.fail_get = [ApiError(500, "InternalError", "x")] * 1000
    drive(clock, lambda: not t.is_alive(), step=0.5)
    assert cb.stop_leading is not None and cb.stop_leading.is_set()
    assert cb.stopped.is_set()
    assert not le.is_leader()
    assert not stop.is_set()


def test_run_lease_taken_by_other_loses_leadership_without_release_write() -> None:
    clock = FakeClock()
    lock = FakeLock()
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb)
    assert cb.started.wait(5)
    wait_for(lambda: lock.ops.count("update") >= 1)
    lock.server_write(bing(duration=15))  # someone took it over
    drive(clock, lambda: not t.is_alive(), step=0.5)
    assert cb.stopped.is_set()
    assert lock.record is not None and lock.record.holder_identity == "bing"
    wait_for(lambda: cb.new_leaders == ["baz", "bing"])


def test_run_does_not_release_while_leading_work_is_running() -> None:
    clock = FakeClock()
    lock = FakeLock()
    returned = threading.Event()
    started = threading.Event()

    def stubborn(stop_leading: threading.Event) -> None:
        started.set()
        returned.wait(30)

    le = elector(
        lock,
        clock,
        lease_duration=0.3,
        renew_deadline=0.2,
        retry_period=0.1,
        on_started_leading=stubborn,
    )
    stop = threading.Event()
    t = run_in_thread(le, stop)
    assert started.wait(5)
    stop.set()
    t.join(10)  # waits lease_duration (0.3 s real) for the leading work
    returned.set()
    assert not t.is_alive()
    assert lock.record is not None and lock.record.holder_identity == "baz"


def test_run_twice_raises() -> None:
    le = elector(FakeLock(), FakeClock())
    stop = threading.Event()
    stop.set()
    le.run(stop)
    with pytest.raises(RuntimeError):
        le.run(stop)


def test_check_watchdog() -> None:
    clock = FakeClock()
    lock = FakeLock()
    cb = Callbacks()
    le, stop, t = make_run(lock, clock, cb, release_on_cancel=False)
    assert cb.started.wait(5)
    assert le.check(0) is None
    stop.set()
    t.join(5)
    le._leading = True  # simulate a stuck renew loop
    clock.step(20)
    assert le.check(1) is not None
    assert le.check(10) is None


def test_on_stopped_leading_runs_even_if_acquire_raises() -> None:
    lock = FakeLock()
    lock.fail_get = [KeyError("unexpected bug")]
    cb = Callbacks()
    le = elector(
        lock,
        FakeClock(),
        on_started_leading=cb.on_started_leading,
        on_stopped_leading=cb.on_stopped_leading,
    )
    with pytest.raises(KeyError):
        le.run(threading.Event())
    assert cb.stopped.is_set()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_crashed_leading_work_gives_up_the_lease() -> None:
    clock = FakeClock()
    lock = FakeLock()
    stopped = threading.Event()

    def crash(stop_leading: threading.Event) -> None:
        raise RuntimeError("leading work crashed")

    le = elector(
        lock,
        clock,
        renew_deadline=2,
        retry_period=1,
        on_started_leading=crash,
        on_stopped_leading=stopped.set,
    )
    stop = threading.Event()
    t = run_in_thread(le, stop)
    drive(clock, lambda: not t.is_alive(), step=1)
    assert stopped.is_set()
    assert not stop.is_set()
    assert lock.record is not None and lock.record.holder_identity == ""  # released


def test_leading_work_returning_normally_keeps_leading() -> None:
    clock = FakeClock()
    lock = FakeLock()
    le = elector(lock, clock, renew_deadline=2, retry_period=1)
    stop = threading.Event()
    t = run_in_thread(le, stop)
    drive(clock, lambda: lock.ops.count("update") >= 3, step=1)
    assert le.is_leader() and t.is_alive()
    stop.set()
    t.join(5)
    assert not t.is_alive()


def test_health_check_adaptor() -> None:
    clock = FakeClock()
    le = elector(FakeLock(), clock)
    check = le.health_check(5)
    assert check()  # not leading: healthy
    assert le._try_acquire_or_renew()
    le._leading = True
    clock.step(15 + 5)
    assert check()
    clock.step(0.1)
    assert not check()
