"""The embedded Kubernetes API server (``pycontroller.testing.APIServer``).

``server`` (APIServer: lifecycle and test controls), ``status`` (errors as
``Status``), ``resource_types``, and three subpackages, each described in its
``__init__``: ``http`` (transport), ``registry`` (verbs and storage),
``schema`` (definitions, validation, CRDs, server-side apply); ``simulate``
(optional workload simulators); ``_proto`` (generated protobuf modules).
"""

from __future__ import annotations

from pycontroller.testing.apiserver.server import APIServer, RequestRecord

__all__ = ["APIServer", "RequestRecord"]
