"""The Balancer reconcile written with kopf, for ``bench_balancer.py`` to compare with ours.

What a kopf user would write for the same job: on create (and resume, and
spec update) of a Balancer, create the children ``resources.desired_children``
computes (backend Services, ConfigMap, Deployment, front Service: the same
pure function the pycontroller controller uses) with the ``kubernetes``
client, skipping those that exist (409), then set the same status fields
through kopf's ``patch`` (kopf merges it with its own bookkeeping into one
PATCH). kopf's defaults stay on, as a kopf user gets them: its
annotations/status progress storage, and no Events for the handler's log
lines (kopf posts those only with ``settings.posting.loggers = True``; it
makes none here, where ours posts one per child created).

    python hack/bench/kopf_balancer.py --kubeconfig PATH [--namespace bench]
"""

from __future__ import annotations

import argparse
import os
import threading
from typing import Any

import kopf
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from controllers.balancer import names, resources

_local = threading.local()


def _apis() -> tuple[Any, Any]:
    """Per-thread clients: kopf runs sync handlers in a thread pool."""
    if not hasattr(_local, "core"):
        api = k8s_config.new_client_from_config(os.environ["KUBECONFIG"])
        _local.core, _local.apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    return _local.core, _local.apps


def _create(child: dict[str, Any], namespace: str) -> None:
    core, apps = _apis()
    create = {
        "Service": core.create_namespaced_service,
        "ConfigMap": core.create_namespaced_config_map,
        "Deployment": apps.create_namespaced_deployment,
    }[child["kind"]]
    try:
        create(namespace, child)
    except k8s.ApiException as err:
        if err.status != 409:  # exists already: a resumed or retried handler
            raise


@kopf.on.login()
def login(**kwargs: Any) -> Any:
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.peering.standalone = True
    settings.execution.max_workers = 4  # as the pycontroller run's --workers 4


@kopf.on.resume(names.GROUP, names.VERSION, names.PLURAL)
@kopf.on.create(names.GROUP, names.VERSION, names.PLURAL)
@kopf.on.update(names.GROUP, names.VERSION, names.PLURAL, field="spec")
def reconcile(
    body: kopf.Body, meta: kopf.Meta, namespace: str, patch: kopf.Patch, **_: Any
) -> None:
    balancer = dict(body)
    children = resources.desired_children(balancer)
    for child in children:
        _create(child, namespace)
    generation = meta.get("generation")
    patch.status["activeBackendsNum"] = len(body["spec"]["backends"])
    patch.status["obsoleteBackendsNum"] = 0
    patch.status["observedGeneration"] = generation
    patch.status["conditions"] = [
        {
            "type": names.CONDITION_RECONCILED,
            "status": "True",
            "reason": names.REASON_SYNCED,
            "message": f"{len(children)} children in sync",
            "observedGeneration": generation,
            "lastTransitionTime": kopf_now(),
        },
        {
            "type": names.CONDITION_AVAILABLE,
            "status": "False",
            "reason": names.REASON_DEPLOYMENT_UNAVAILABLE,
            "message": "the nginx Deployment has no available replica yet",
            "observedGeneration": generation,
            "lastTransitionTime": kopf_now(),
        },
    ]


def kopf_now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", default="bench")
    args = parser.parse_args()
    os.environ["KUBECONFIG"] = args.kubeconfig
    kopf.configure()  # logging as `kopf run` sets it up by default (INFO)
    kopf.run(standalone=True, namespaces=[args.namespace])


if __name__ == "__main__":
    main()
