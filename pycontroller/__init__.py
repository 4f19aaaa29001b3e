"""pycontroller: client-go's controller machinery for Python.

The curated public surface. Subpackages carry the rest:

- ``pycontroller.workqueue``: Queue, DelayingQueue, RateLimitingQueue, rate limiters;
- ``pycontroller.cache``: Indexer, RealFIFO, DeltaFIFO, Reflector, SharedIndexInformer,
  SharedInformerFactory, Lister;
- ``pycontroller.handlers``: event-handler helpers and predicates;
- ``pycontroller.predicates``: controller-runtime's event predicates;
- ``pycontroller.meta``: owner references, status conditions, finalizers;
- ``pycontroller.testing``: the embedded API server for tests.

A minimal controller::

    import pycontroller
    from pycontroller.cache import SharedInformerFactory
    from pycontroller.handlers import enqueue_key
    from pycontroller.workqueue import RateLimitingQueue

    api = pycontroller.load_config()
    factory = SharedInformerFactory(api)
    informer = factory.for_resource("", "v1", "configmaps")
    queue = RateLimitingQueue(name="configmaps")
    informer.add_event_handler(enqueue_key(queue))

    def sync(key: str) -> None: ...

    stop = pycontroller.setup_signal_handler()
    factory.start(stop)
    controller = pycontroller.Controller(
        "configmaps", queue, sync, has_synced=[informer.has_synced]
    )
    controller.run(2, stop)
"""

from __future__ import annotations

from pycontroller._create_or_update import create_or_apply, create_or_update
from pycontroller._gc import tune_gc
from pycontroller.builder import Builder
from pycontroller.client import ResourceClient
from pycontroller.config import load_config
from pycontroller.controller import Controller, Result, TerminalError
from pycontroller.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
    TooManyRequestsError,
)
from pycontroller.leaderelection import LeaderElector, LeaseLock
from pycontroller.manager import Manager
from pycontroller.record import EventRecorder
from pycontroller.request import Request
from pycontroller.server import serve_metrics_and_health
from pycontroller.signals import setup_signal_handler

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "Builder",
    "ConflictError",
    "Controller",
    "EventRecorder",
    "GoneError",
    "InvalidError",
    "LeaderElector",
    "LeaseLock",
    "Manager",
    "NotFoundError",
    "Request",
    "ResourceClient",
    "Result",
    "TerminalError",
    "TooManyRequestsError",
    "create_or_apply",
    "create_or_update",
    "load_config",
    "serve_metrics_and_health",
    "setup_signal_handler",
    "tune_gc",
]
