"""HTTP: how requests reach the registry and how its answers leave.

``handler`` (routing, one ``_Handler`` per connection, request parsing,
watch streaming; a handled request returns a ``Reply``, errors raise
``StatusError``), ``negotiation`` (Accept parsing), ``protobuf`` (protobuf
bodies from the upstream ``.proto`` definitions), ``table`` (``as=Table``),
``partial`` (``PartialObjectMetadata``), ``discovery`` (``/api``, ``/apis``,
``/version``), ``auth`` (authentication and the authorizers), ``faults``
(injected failures, latency, dropped watches).

Nothing here stores or validates an object: that is the registry's and the
schema's work. Kept import-free so that importing one module does not pull in
the others.
"""
