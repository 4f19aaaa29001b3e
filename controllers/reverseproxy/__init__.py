"""The ReverseProxy operator (seed 003, yxwuxuanl/k8s-nginx-operator) on ``pycontroller.Manager``.

Reconciles ``nginx.lin2ur.cn/v1`` ``ReverseProxy`` (an nginx HTTP proxy to
one ``proxyPass`` URL) and ``TCPReverseProxy`` (an nginx ``stream`` proxy to
N servers, TCP or UDP) into a ConfigMap (``nginx.conf``), a Deployment and a
ClusterIP Service each. The full specification of the original is
``../shared/reference/reverseproxy-prior-art.md``; what differs from it is
written where it differs.

Modules:

* ``names`` — API names, the two kinds, labels, child names, conditions,
  event reasons, the finalizer (constants and pure name functions);
* ``validation`` — ``with_defaults(obj)`` (the original's CRD and webhook
  defaults, pure) and ``validate(obj) -> list[str]``: one grammar per field,
  so no string can inject nginx syntax;
* ``nginx`` — ``render(obj) -> str``: the nginx.conf text (pure);
* ``resources`` — ``desired_children(obj) -> list[dict]`` (pure);
* ``diff`` — compare and merge only the fields the controller owns (pure);
* ``reconcile``, ``controller``, ``__main__`` — the I/O side.

This ``__init__`` imports nothing, so importing the pure modules never pulls
in the client or the controller machinery.
"""

from __future__ import annotations
