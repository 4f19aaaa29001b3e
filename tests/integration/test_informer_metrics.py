"""Informer metrics (KEP-4346: client-go's alpha ``informer_*`` series) of an
informer over the embedded API server."""

from __future__ import annotations

import threading

from prometheus_client import REGISTRY

from pycontroller.cache import ListWatch, SharedIndexInformer, wait_for_cache_sync
from pycontroller.client import ResourceClient
from pycontroller.testing import APIServer, wait_for


def cm(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": {"v": "1"}}


def sample(name: str, informer: str) -> float | None:
    labels = {"name": informer, "group": "", "version": "v1", "resource": "configmaps"}
    return REGISTRY.get_sample_value(name, labels)


def test_informer_metrics(apiserver: APIServer) -> None:
    client = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    for i in range(5):
        client.create(cm(f"c{i}"))
    name = "metrics-cms"
    inf = SharedIndexInformer(ListWatch.from_client(client, namespace="default"), name=name)
    stop = threading.Event()
    thread = inf.start(stop)
    try:
        assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
        wait_for(lambda: sample("informer_queued_items", name) == 0.0)
        rv = float(apiserver.resource_version)
        assert sample("informer_store_resource_version", name) == rv
        batches = sample("informer_processing_latency_seconds_count", name)
        assert batches is not None and batches >= 1
        for i in range(5, 15):
            client.create(cm(f"c{i}"))
        wait_for(lambda: sample("informer_queued_items", name) == 0.0)
        wait_for(
            lambda: sample("informer_store_resource_version", name)
            == float(apiserver.resource_version)
        )
        count = sample("informer_processing_latency_seconds_count", name)
        assert count is not None and count > batches
    finally:
        stop.set()
        thread.join(5)
    # A stopped informer's series are gone.
    assert sample("informer_queued_items", name) is None
    assert sample("informer_store_resource_version", name) is None


def test_queued_items_reads_the_fifo_without_its_lock(apiserver: APIServer) -> None:
    client = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    name = "metrics-queued"
    inf = SharedIndexInformer(ListWatch.from_client(client, namespace="default"), name=name)
    fifo = inf._fifo  # not started: nothing pops what is queued
    for i in range(3):
        fifo.add(cm(f"q{i}"))
    assert sample("informer_queued_items", name) == 3.0
    with fifo._lock:  # a batch being processed does not hold a scrape up
        assert sample("informer_queued_items", name) == 3.0
