"""Schema: what an object may look like, and how it is read and merged.

``definitions`` (the pinned Kubernetes 1.32 definitions every other module
reads), ``kinds`` and ``builtin`` (built-in kinds from those definitions,
defaulting), ``decode`` (strict decoding: wrong types are a 400),
``validation`` (kube's field validation), ``crd`` and ``structural``
(CustomResourceDefinitions and their structural schemas), ``cel``
(x-kubernetes-validations), ``defaults``, ``openapi``/``openapi_builtin``
(the served OpenAPI v2 and v3), and server-side apply's pieces:
``typeconverter`` (schemas to merge types), ``structured_merge``,
``fieldpath``, ``fieldmanager`` (managedFields).

Kept import-free so that importing one module does not pull in the others.
"""
