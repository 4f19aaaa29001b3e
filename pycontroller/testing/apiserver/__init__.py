"""The embedded Kubernetes API server (``pycontroller.testing.APIServer``).

Modules, one concept each: ``server`` (APIServer lifecycle and test
controls), ``http`` (request handling and routing), ``rest`` (the verbs),
``storage`` (versioned store, history), ``watch`` (watch fan-out),
``registry``/``resource_types``/``builtin`` (served kinds and defaulting),
``scale`` (the ``/scale`` subresource), ``events`` (core/v1 and
events.k8s.io/v1 Events sharing one storage), ``patch``, ``gc`` (owner references,
finalizers, namespaces), ``faults``, ``names``, ``selectors``, ``status``; and
the CRD side: ``crd``, ``schema``, ``discovery``, ``openapi``, ``table``.
"""

from __future__ import annotations

from pycontroller.testing.apiserver.server import APIServer, RequestRecord

__all__ = ["APIServer", "RequestRecord"]
