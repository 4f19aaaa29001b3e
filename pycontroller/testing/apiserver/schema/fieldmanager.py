"""Field management: ``metadata.managedFields`` and server-side apply
(kube's ``k8s.io/apimachinery/pkg/util/managedfields``).

Every write records who set what. An entry of ``managedFields`` is one
*manager*: its name (the ``fieldManager`` query parameter, or the product
token of the User-Agent), its operation (``Apply`` or ``Update``), the
``apiVersion`` it wrote, the ``subresource`` it wrote through, when its set of
fields last grew, and that set in ``FieldsV1``. A manager's identity is
(name, operation, subresource, and the apiVersion for updaters): an applier
keeps one entry whatever version it applies.

- **Update** (create, PUT, merge/JSON/strategic patch, scale): the fields the
  write added or changed move to the writer; nobody else owns them any more.
  Fields it removed are dropped from every entry. A writer that changes
  nothing leaves ``managedFields`` as they were.
- **Apply**: the configuration is merged into the live object by schema
  (``structured_merge.py``); the applier then owns exactly the fields of its
  configuration. If that changes a field another manager owns, the apply
  fails with a 409 listing each conflict, unless ``force=true``, which takes
  the fields from them. Applying the value a field already has shares its
  ownership. A field the applier owned before and leaves out now is removed
  from the object, unless another manager (applier or updater) owns it.
  The configuration must name the endpoint's apiVersion and kind exactly
  (else 400 ``invalid object type``).
- **Unmanaged objects**: once ``managedFields`` are cleared, updates record
  nothing, and the next apply first gives what the object holds to an Update
  entry ``before-first-apply`` (kube's ``skipNonAppliedManager``).
- **kubectl**: an apply by the manager ``kubectl`` is forced over conflicts
  that are all fields its client-side ``last-applied-configuration``
  annotation sets to their live values, and rewrites that annotation (kube's
  ``lastAppliedManager``/``lastAppliedUpdater``).

Each entry's fields are paths of its own ``apiVersion``. A kind served at
several versions over one storage with a real conversion (``autoscaling/v1``
and ``v2`` HPAs, core and ``events.k8s.io`` Events: ``registry/conversion.py``)
is written in the request's version: the writer's entry and the apply are
computed on the objects as that version serves them, and what a write changes
is compared, for every other manager, on the objects converted to that
manager's version (as kube's field manager converts the live and new objects
to each version it finds in ``managedFields``). ``Views`` provides the
conversions.

Writes through the main resource never own ``.status`` of a kind with a
status subresource; writes through ``/status`` own all but the fields their
status strategy resets (kube's ``GetResetFields``: ``.spec`` for most kinds).
``apiVersion``, ``kind`` and the server-set metadata (name, namespace, uid,
resourceVersion, generation, creationTimestamp, ...) are owned by nobody.
Update entries are capped at ten; the oldest are merged into
``ancient-changes`` entries, one per apiVersion.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pycontroller._time import format_rfc3339
from pycontroller.testing.apiserver.gofmt import go_json, is_print
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema.fieldpath import FieldSet, Path, format_path
from pycontroller.testing.apiserver.schema.structured_merge import Schema
from pycontroller.testing.apiserver.schema.typeconverter import schema_for
from pycontroller.testing.apiserver.status import StatusError, bad_request

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import WriteOptions

logger = logging.getLogger(__name__)

__all__ = [
    "APPLY",
    "UPDATE",
    "Views",
    "apply",
    "apply_scale",
    "conflict_error",
    "default_manager",
    "track_create",
    "track_update",
]

APPLY = "Apply"
UPDATE = "Update"

#: ``views(api_version)``: the type of another version of the same storage and a
#: function converting an object of the written version to it; None for a
#: version that needs no conversion (or is unknown): its paths are compared as
#: the written version's.
Views = Callable[[str], "tuple[ResourceType, Callable[[dict[str, Any]], dict[str, Any]]] | None"]
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"

_STATUS = ("f", "status")


def _strip_set() -> FieldSet:
    s = FieldSet()
    for path in (
        (("f", "apiVersion"),),
        (("f", "kind"),),
        (("f", "metadata"),),
        *(
            (("f", "metadata"), ("f", name))
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    ):
        s.insert(path)
    return s


# Owned by nobody (kube's stripMetaManager).
_STRIPPED = _strip_set()


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: FieldSet

    @property
    def identity(self) -> tuple[str, str, str, str]:
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.manager:
            out["manager"] = self.manager
        out["operation"] = self.operation
        out["apiVersion"] = self.api_version
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields.to_fields_v1()
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _decode(raw: Any) -> list[_Entry]:
    """Entries of ``managedFields``; ``ValueError`` if any is malformed. Entries
    of one identity (a client renamed a manager, or dropped a subresource)
    are one manager: the last one's (kube's ``decodeManagedFields`` fills a
    map by ``BuildManagerIdentifier``)."""
    if not isinstance(raw, list):
        raise ValueError("managedFields must be a list")
    out: dict[tuple[str, str, str, str], _Entry] = {}
    for i, e in enumerate(raw):
        if not isinstance(e, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        if e.get("operation") not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        if not e.get("apiVersion"):
            raise ValueError("apiVersion must not be empty")
        if e.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid fieldsType in managed fields entry {i}")
        entry = _Entry(
            manager=str(e.get("manager") or ""),
            operation=e["operation"],
            api_version=str(e["apiVersion"]),
            subresource=str(e.get("subresource") or ""),
            time=e.get("time"),
            fields=FieldSet.from_fields_v1(e.get("fieldsV1") or {}),
        )
        out[entry.identity] = entry
    return list(out.values())


def _is_reset(raw: Any) -> bool:
    """``[]`` or ``[{}]``: the client asks to clear managedFields."""
    return isinstance(raw, list) and (raw == [] or raw == [{}])


def _encode(entries: list[_Entry]) -> list[dict[str, Any]] | None:
    live = [e for e in entries if not e.fields.empty()]
    if not live:
        return None
    live.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    return [e.encode() for e in live]


def _managed_of(obj: dict[str, Any] | None) -> Any:
    meta = (obj or {}).get("metadata")
    return meta.get("managedFields") if isinstance(meta, dict) else None


def _set_managed(obj: dict[str, Any], encoded: list[dict[str, Any]] | None) -> None:
    meta = obj.setdefault("metadata", {})
    if encoded is None:
        meta.pop("managedFields", None)
    else:
        meta["managedFields"] = encoded


def _without_managed(obj: dict[str, Any] | None) -> dict[str, Any]:
    if not obj:
        return {}
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _now() -> str:
    return format_rfc3339(time.time())


def default_manager(user_agent: str) -> str:
    """kube's default field manager: the User-Agent up to its first ``/``,
    without unprintable characters, cut to 128 bytes of UTF-8 (apiserver's
    ``handlers.prefixFromUserAgent``)."""
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not is_print(ch):
            continue
        size += len(ch.encode("utf-8", "surrogatepass"))
        if size > 128:
            break
        out.append(ch)
    return "".join(out)


# What a write through ``/status`` may not own: its status strategy's
# ``GetResetFields``. Most kinds (custom resources too) reset spec alone, so a
# status applier owns (and may conflict on) the rest of its configuration,
# metadata included, even where the strategy then drops it, as kube's does.
_SPEC: Path = (("f", "spec"),)
_META: Path = (("f", "metadata"),)
_STATUS_RESETS: dict[tuple[str, str], tuple[Path, ...]] = {
    ("", "Pod"): (_SPEC, (*_META, ("f", "deletionTimestamp")), (*_META, ("f", "ownerReferences"))),
    ("apps", "Deployment"): (_SPEC, (*_META, ("f", "labels"))),
    ("certificates.k8s.io", "CertificateSigningRequest"): (_SPEC, (_STATUS, ("f", "conditions"))),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): (_SPEC, _META),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): (_SPEC, _META),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): (_SPEC, _META),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (_SPEC, _META),
    ("apiregistration.k8s.io", "APIService"): (_SPEC, _META),
}


def _status_filter(rt: ResourceType) -> Callable[[FieldSet], FieldSet]:
    reset = FieldSet()
    for path in _STATUS_RESETS.get(("" if rt.is_crd else rt.group, rt.kind), (_SPEC,)):
        reset.insert(path)
    return lambda s: s.recursive_difference(reset)


def _reset_filter(rt: ResourceType, subresource: str) -> Callable[[FieldSet], FieldSet]:
    """What a write through ``subresource`` may own (kube's reset fields)."""
    if subresource == "status":
        return _status_filter(rt)
    if rt.has_status and subresource == "":
        status = FieldSet()
        status.insert((_STATUS,))
        return lambda s: s.recursive_difference(status)
    return lambda s: s


def _cap_updaters(entries: list[_Entry]) -> list[_Entry]:
    updaters = [e for e in entries if e.operation == UPDATE]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return entries
    updaters.sort(key=lambda e: (e.time or "", e.identity))
    keep = list(entries)
    first_of_version: dict[str, _Entry] = {}
    buckets: dict[str, _Entry] = {}
    count = len(updaters)
    for e in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        first = first_of_version.get(e.api_version)
        if first is None:
            first_of_version[e.api_version] = e
            continue
        bucket = buckets.get(e.api_version)
        if bucket is None:
            bucket = _Entry(ANCIENT_CHANGES, UPDATE, e.api_version, "", first.time, first.fields)
            keep = [x for x in keep if x is not first]
            keep.append(bucket)
            buckets[e.api_version] = bucket
        bucket.fields = bucket.fields.union(e.fields)
        bucket.time = e.time
        keep = [x for x in keep if x is not e]
        count -= 1
    return keep


# --- Update --------------------------------------------------------------------


class _Changes:
    """What a write changed and removed, in the written version and, on demand,
    in another version of the same storage (the objects converted to it)."""

    def __init__(
        self,
        rt: ResourceType,
        live: dict[str, Any] | None,
        new: dict[str, Any],
        subresource: str,
        views: Views | None,
    ) -> None:
        self._rt, self._live, self._new = rt, live, new
        self._subresource, self._views = subresource, views
        self._by_version: dict[str, tuple[FieldSet, FieldSet]] = {}
        self.changed, self.removed = self._compare(rt, live, new)
        self._by_version[rt.api_version] = (self.changed, self.removed)

    def _compare(
        self, rt: ResourceType, live: dict[str, Any] | None, new: dict[str, Any]
    ) -> tuple[FieldSet, FieldSet]:
        keep = _reset_filter(rt, self._subresource)
        cmp = schema_for(rt).compare(_without_managed(live), _without_managed(new))
        return keep(cmp.changed()), keep(cmp.removed)

    def of(self, api_version: str) -> tuple[FieldSet, FieldSet]:
        """(changed, removed) as paths of ``api_version``."""
        got = self._by_version.get(api_version)
        if got is not None:
            return got
        got = (self.changed, self.removed)
        view = self._views(api_version) if self._views is not None else None
        if view is not None:
            vrt, convert = view
            try:
                live = convert(self._live) if self._live else None
                got = self._compare(vrt, live, convert(self._new))
            except (KeyError, TypeError, ValueError, AttributeError):
                # An object the conversion cannot take (a partial one being
                # created): compare in the written version's paths.
                logger.debug("no %s view of %s", api_version, self._rt.api_version, exc_info=True)
        self._by_version[api_version] = got
        return got


def _record_update(
    rt: ResourceType,
    live: dict[str, Any] | None,
    new: dict[str, Any],
    entries: list[_Entry],
    manager: str,
    subresource: str,
    views: Views | None = None,
) -> list[_Entry]:
    changes = _Changes(rt, live, new, subresource, views)
    changed = changes.changed
    for e in entries:
        e_changed, e_removed = changes.of(e.api_version)
        e.fields = e.fields.difference(e_changed).difference(e_removed)
    taken = changed.difference(_STRIPPED)
    if not taken.empty():
        mine = _Entry(manager, UPDATE, rt.api_version, subresource, _now(), taken)
        for e in entries:
            if e.identity == mine.identity:
                e.fields, e.time = e.fields.union(taken), mine.time
                break
        else:
            entries.append(mine)
    return _cap_updaters([e for e in entries if not e.fields.empty()])


def _manager(opts: WriteOptions) -> str:
    return opts.field_manager or default_manager(opts.user_agent)


def track_create(
    rt: ResourceType, obj: dict[str, Any], opts: WriteOptions, views: Views | None = None
) -> None:
    """Set the managedFields of an object being created (after defaulting).

    An apply has computed them already (``opts.managed_fields``); any other
    create is an Update from nothing, starting from the entries the body
    carries if they are valid (kube lets a client write managedFields)."""
    if opts.managed_fields is not None:
        _set_managed(obj, opts.managed_fields)
        return
    raw = _managed_of(obj)
    try:
        entries = [] if raw is None or _is_reset(raw) else _decode(raw)
    except ValueError:
        entries = []
    result = _record_update(rt, _zero_object(rt), obj, entries, _manager(opts), "", views)
    _set_managed(obj, _encode(result))


def _zero_object(rt: ResourceType) -> dict[str, Any]:
    """What kube's create handler gives the field manager as the live object:
    the kind's Go zero value (``Creater.New``), whose non-pointer structs are
    there empty (``spec: {}``, a template's ``metadata: {creationTimestamp:
    null}``), so a create does not own them as added (no ``"."``)."""
    from pycontroller.testing.apiserver.schema import goshape

    zero: dict[str, Any] = {"apiVersion": rt.api_version, "kind": rt.kind}
    goshape.shape(rt, zero)
    return zero


def track_update(
    rt: ResourceType,
    live: dict[str, Any],
    new: dict[str, Any],
    opts: WriteOptions,
    subresource: str = "",
    views: Views | None = None,
) -> None:
    """Set the managedFields of ``new``, written over ``live``.

    The entries start from those ``new`` carries (a client may edit them;
    ``[]`` clears them), or the live ones if it carries none or invalid ones,
    or writes through a subresource."""
    if opts.managed_fields is not None:
        _set_managed(new, opts.managed_fields)
        return
    raw = _managed_of(new)
    entries: list[_Entry] | None = None
    if not subresource and raw is not None:
        if _is_reset(raw):
            entries = []
        else:
            try:
                entries = _decode(raw) or None
            except ValueError:
                entries = None
    if entries is None:
        try:
            entries = _decode(_managed_of(live) or [])
        except ValueError:
            entries = []
    if not entries:
        # An update of an object nobody manages is not tracked (kube's
        # skipNonAppliedManager.Update: managed fields empty and the live object
        # has a uid); the first apply records them (``before-first-apply``).
        _set_managed(new, None)
        return
    if subresource == "scale":
        # kube's ScaleHandler.ToSubresource: the Scale's entries are the owners
        # of the replicas field; with none, skipNonAppliedManager.Update tracks
        # nothing and ToParent keeps the parent's entries as they were. (A
        # scale write changes the replicas field only.)
        changes = _Changes(rt, live, new, subresource, views)
        if all(e.fields.intersection(changes.of(e.api_version)[0]).empty() for e in entries):
            _set_managed(new, _encode(entries))
            return
    result = _record_update(rt, live, new, entries, _manager(opts), subresource, views)
    _set_managed(new, _encode(result))


# --- Apply ---------------------------------------------------------------------

BEFORE_FIRST_APPLY = "before-first-apply"


def _gvk(api_version: str, kind: str) -> tuple[str, str, str]:
    """apimachinery's ``schema.ParseGroupVersion`` and the kind; an apiVersion
    that does not parse gives the empty GroupVersionKind (``Unstructured``'s
    ``GroupVersionKind``)."""
    if not api_version or api_version == "/":
        return ("", "", kind)
    parts = api_version.split("/")
    if len(parts) == 1:
        return ("", parts[0], kind)
    if len(parts) == 2:
        return (parts[0], parts[1], kind)
    return ("", "", "")


def _typed_patch_error(config: dict[str, Any], gvk: tuple[str, str, str], errors: list[str]) -> str:
    """``failed to create typed patch object (<ns>/<name>; <gvk>): <errors>``
    (kube's ``objectGVKNN`` of the patch, SMD's ``ValidationErrors.Error``)."""
    meta = config.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, ns = meta.get("name"), meta.get("namespace")
    who = f"{ns if isinstance(ns, str) else ''}/{name if isinstance(name, str) else ''}"
    what = errors[0] if len(errors) == 1 else "\n  ".join(["errors:", *errors])
    return f"failed to create typed patch object ({who}; {gvk[0]}/{gvk[1]}, Kind={gvk[2]}): {what}"


def check_apply_gvk(rt: ResourceType, config: Any) -> tuple[str, str, str]:
    """kube's ``versionCheckManager.Apply``, the first of the field manager's
    layers (before the name, namespace or kind checks of a create): what the
    applied configuration names must be exactly the endpoint's group,
    version and kind, else 400 ``invalid object type``. Returns it."""
    if config is None:  # an empty body: YAML null, an empty map to kube
        config = {}
    if not isinstance(config, dict):
        raise bad_request("apply patch must be an object")
    gvk = _applied_gvk(config)
    if gvk != _gvk(rt.api_version, rt.kind):
        raise bad_request(f"invalid object type: {gvk[0]}/{gvk[1]}, Kind={gvk[2]}")
    return gvk


def _applied_gvk(config: dict[str, Any]) -> tuple[str, str, str]:
    version, kind = config.get("apiVersion"), config.get("kind")
    return _gvk(version if isinstance(version, str) else "", kind if isinstance(kind, str) else "")


def _print_manager(e: _Entry) -> str:
    out = f'"{e.manager}"'
    if e.subresource:
        out += f' with subresource "{e.subresource}"'
    if e.operation == UPDATE:
        out += f" using {e.api_version}"
    return out


def conflict_error(conflicts: list[tuple[_Entry, Path]]) -> StatusError:
    """kube's apply conflict: a 409 whose causes name each field and owner."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_print_manager(e)}",
            "field": format_path(p),
        }
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        e, p = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_print_manager(e)}: {format_path(p)}"
        )
    else:
        lines: list[str] = []
        by_manager: dict[str, list[Path]] = {}
        for e, p in conflicts:
            by_manager.setdefault(_print_manager(e), []).append(p)
        for name in sorted(by_manager):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {format_path(p)}" for p in by_manager[name])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


def _prune(
    schema: Schema,
    merged: dict[str, Any],
    last: FieldSet,
    entries: list[_Entry],
    applied: FieldSet,
) -> Any:
    """Remove what the applier set last time, dropped now, and nobody else
    owns: SMD's ``prune`` (remove the last applied paths with all under them),
    ``addBackOwnedItems`` (put back what another manager, or the applier now,
    owns a path of, but through declared struct fields only: a list item or
    map key owned by nobody goes with what others own under it) and
    ``addBackDanglingItems`` (put back what was not the applier's)."""
    if last.empty():
        return merged
    named = schema.ensure_named_fields
    managed = applied.union(_STRIPPED)
    for e in entries:
        managed = managed.union(e.fields)
    last_n = named(last)
    merged_n = named(schema.to_field_set(merged))
    pruned = schema.remove(merged, last_n)
    pruned_n = named(schema.to_field_set(pruned))
    pruned = schema.remove(merged, merged_n.difference(pruned_n.union(named(managed))))
    pruned_n = named(schema.to_field_set(pruned))
    gone = merged_n.difference(pruned_n).intersection(last_n)
    if gone.empty():
        return merged
    return schema.remove(merged, gone)


def apply(
    rt: ResourceType,
    live: dict[str, Any] | None,
    config: Any,
    opts: WriteOptions,
    subresource: str = "",
    views: Views | None = None,
) -> dict[str, Any]:
    """Merge ``config`` into ``live`` (``None``: the object is being created)
    as ``opts.field_manager``; returns the new object and leaves the entries
    to store in ``opts.managed_fields``. Raises the 409 of ``conflict_error``
    unless ``opts.force``."""
    if config is None:  # an empty body: YAML null, an empty map to kube
        config = {}
    gvk = check_apply_gvk(rt, config)
    cmeta = config.get("metadata")
    if isinstance(cmeta, dict) and cmeta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    schema = schema_for(rt)
    errors = schema.patch_errors(config, missing_keys=rt.schema is not None)
    if errors:
        # kube's structuredMergeManager.Apply: the configuration that SMD cannot
        # type is a plain error, a 500 of reason Unknown (ErrorToAPIStatus).
        raise StatusError(500, "", _typed_patch_error(config, gvk, errors))
    keep = _reset_filter(rt, subresource)
    try:
        entries = _decode(_managed_of(live) or [])
    except ValueError:
        entries = []
    base = _without_managed(live)
    if live is None:
        base = {"apiVersion": rt.api_version, "kind": rt.kind}
    elif not entries:
        # kube's skipNonAppliedManager.Apply: an object nobody manages gets an
        # Update entry ``before-first-apply`` owning what it holds (an update
        # from the empty object), which the apply may then conflict with.
        entries = _record_update(rt, None, base, [], BEFORE_FIRST_APPLY, subresource)
    merged = schema.merge(base, config)
    applied = keep(schema.to_field_set(config))

    me = _Entry(opts.field_manager, APPLY, rt.api_version, subresource, None, applied)
    others = [e for e in entries if e.identity != me.identity]
    previous = next((e for e in entries if e.identity == me.identity), None)
    if previous is not None:
        me.time = previous.time
        merged = _prune(schema, merged, previous.fields, others, applied)

    changes = _Changes(rt, base, merged, subresource, views)
    conflicts: list[tuple[_Entry, Path]] = []
    for e in sorted(others, key=lambda e: e.identity):
        e_changed = changes.of(e.api_version)[0]
        conflicts.extend((e, p) for p in e.fields.intersection(e_changed).paths())
    if conflicts and not opts.force and opts.field_manager == KUBECTL:
        conflicts = _not_last_applied(schema, rt, base, conflicts)
    if conflicts and not opts.force:
        raise conflict_error(conflicts)
    for e in others:
        e_changed, e_removed = changes.of(e.api_version)
        e.fields = e.fields.difference(e_changed).difference(e_removed)
    me.fields = applied.difference(_STRIPPED)
    if merged != base:
        me.time = _now()
    if opts.field_manager == KUBECTL:
        # After the entry's time (lastAppliedUpdater wraps managedFieldsUpdater).
        merged = _sync_last_applied(merged, config)
    opts.managed_fields = _encode([*others, me])
    out: dict[str, Any] = copy.deepcopy(merged) if merged is base else merged
    return out


# --- kubectl's last-applied annotation ----------------------------------------

KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _last_applied(obj: dict[str, Any]) -> str:
    annotations = (obj.get("metadata") or {}).get("annotations")
    value = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) else ""


def _not_last_applied(
    schema: Schema, rt: ResourceType, live: dict[str, Any], conflicts: list[tuple[_Entry, Path]]
) -> list[tuple[_Entry, Path]]:
    """The conflicts of an apply by ``kubectl`` that its client-side apply
    annotation does not excuse: a field the annotation sets to the value the
    object holds was kubectl's, so taking it is no conflict; if every conflict
    is such a field the apply is forced (kube's ``lastAppliedManager.Apply``
    and ``allowedConflictsFromLastApplied``)."""
    text = _last_applied(live)
    if not text:
        return conflicts
    try:
        last = json.loads(text)
    except ValueError:
        return conflicts
    if not isinstance(last, dict) or last.get("apiVersion") != rt.api_version:
        return conflicts
    cmp = schema.compare(last, live)
    allowed = (
        schema.to_field_set(last)
        .difference(cmp.modified)
        .difference(cmp.added)
        .difference(cmp.removed)
    )
    rest = [(e, p) for e, p in conflicts if not allowed.has(p)]
    return rest


def _sync_last_applied(merged: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """An apply by ``kubectl`` to an object that carries the client-side apply
    annotation rewrites it to the applied configuration (kube's
    ``lastAppliedUpdater.Apply`` and ``buildLastApplied``: the configuration
    without that annotation, as Go's json encoder writes it)."""
    if not _last_applied(merged):
        return merged
    cmeta = config.get("metadata")
    if isinstance(cmeta, dict) and isinstance(cmeta.get("annotations"), dict):
        annotations = {k: v for k, v in cmeta["annotations"].items() if k != LAST_APPLIED}
        config = {**config, "metadata": {**cmeta, "annotations": annotations}}
    text = go_json(config) + "\n"
    if text == _last_applied(merged):
        return merged
    out = dict(merged)  # merged shares nothing with live (Schema.merge copies)
    meta = out["metadata"] = dict(out.get("metadata") or {})
    meta["annotations"] = {**meta.get("annotations", {}), LAST_APPLIED: text}
    return out


# --- Apply through /scale -------------------------------------------------------

_SCALE_REPLICAS: Path = (("f", "spec"), ("f", "replicas"))


def apply_scale(
    scale_rt: ResourceType,
    parent: dict[str, Any],
    scale: dict[str, Any],
    config: Any,
    opts: WriteOptions,
    replicas_path: tuple[str, ...],
) -> dict[str, Any]:
    """An apply through ``/scale`` (kube's ``managedfields.ScaleHandler``):
    the entries of ``parent`` that own its replicas field become ``Scale``
    entries owning ``.spec.replicas`` (``ToSubresource``), ``config`` is
    applied to ``scale`` with them (conflicts included), and the result is
    taken back to the parent (``ToParent``): an entry that lost the field in
    the Scale loses it in the parent, a new owner gets an entry of the
    parent's apiVersion owning the replicas field. Returns the applied Scale;
    ``opts.managed_fields`` holds the parent's new entries.

    Scale entries keep the parent entry's apiVersion in their identity, so a
    conflict names an updater ``using apps/v1``, as kube's does."""
    parent_path: Path = tuple(("f", key) for key in replicas_path)
    try:
        parent_entries = _decode(_managed_of(parent) or [])
    except ValueError:
        parent_entries = []
    replicas = FieldSet()
    replicas.insert(_SCALE_REPLICAS)
    scale_entries = [
        _Entry(e.manager, e.operation, e.api_version, e.subresource, e.time, replicas)
        for e in parent_entries
        if e.fields.has(parent_path)
    ]
    live = copy.deepcopy(scale)
    _set_managed(live, _encode(scale_entries))
    applied = apply(scale_rt, live, config, opts, "scale")
    by_identity = {e.identity: e for e in _decode(opts.managed_fields or [])}
    own = FieldSet()
    own.insert(parent_path)
    out: list[_Entry] = []
    for e in parent_entries:
        if e.fields.has(parent_path) and by_identity.pop(e.identity, None) is None:
            e.fields = e.fields.difference(own)  # taken through the Scale
        out.append(e)
    api_version = str(parent.get("apiVersion") or "")
    out.extend(
        _Entry(e.manager, e.operation, api_version, e.subresource, e.time, own)
        for e in by_identity.values()
        if e.fields.has(_SCALE_REPLICAS)
    )
    opts.managed_fields = _encode(out)
    return applied
