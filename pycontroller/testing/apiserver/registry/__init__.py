"""Registry: the verbs, the store, and what happens to objects over time.

``rest`` (``REST``: get, list, create, update, patch, delete,
delete-collection with its propagation, scale; each verb returns the
object or raises ``StatusError``), ``kinds_registry`` (the served kinds),
``storage`` (versioned store and history), ``watch`` (fan-out),
``gc`` (owner references, finalizers, namespace lifecycle), ``scale``
(the Scale mapping, written once for every kind with replicas),
``patch``, ``selectors``, ``listoptions``, ``names``, ``events`` (core/v1
and events.k8s.io/v1 sharing one store), ``reviews`` (virtual resources:
access reviews, token reviews, namespaces/finalize).

Kept import-free so that importing one module does not pull in the others.
"""
