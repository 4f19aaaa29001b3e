"""The Balancer controller: reconciles ``exposer.hliangzhao.io/v1alpha1``
``Balancer`` objects into an nginx (stream module) load balancer with
weighted upstreams.

Modules:

* ``names`` — API names, label/annotation keys, child names, condition
  types and event reasons (constants and pure name functions);
* ``validation`` — ``validate(balancer) -> list[str]``: problems the CRD
  schema cannot catch;
* ``nginx`` — ``render(balancer) -> str``: the nginx.conf text (pure);
* ``resources`` — ``desired_children(balancer) -> list[dict]`` (pure);
* ``reconcile``, ``controller``, ``__main__`` — the I/O side.

This package ``__init__`` imports nothing, so importing the pure modules
never pulls in the client or the controller machinery.
"""

from __future__ import annotations
