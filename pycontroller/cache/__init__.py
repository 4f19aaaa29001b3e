"""Informer machinery: keys, stores, indexers, RealFIFO/DeltaFIFO, listers (client-go
``tools/cache``).

Objects handed out by anything in this package are shared with the cache:
never mutate them; use :func:`deep_copy` for a private copy.
"""

from __future__ import annotations

from .delta_fifo import ClosedError, Delta, DeltaFIFO, Deltas, DeltaType, RequeueError
from .factory import SharedInformerFactory
from .index import (
    NAMESPACE_INDEX,
    Indexer,
    Indexers,
    IndexFunc,
    meta_namespace_index_func,
)
from .lister import LabelSelectorArg, Lister, NamespaceLister
from .listwatch import ListerWatcher, ListWatch
from .real_fifo import RealFIFO
from .reflector import ExponentialBackoff, Reflector
from .shared_informer import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from .store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyFuncError,
    KeyListerGetter,
    ReflectorStore,
    Store,
    deep_copy,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)
from .transforms import compact_metadata, strip_managed_fields

# Plain sorted() order (pinned by tests/unit/test_public_api.py), not ruff's isort-style
# order, which would put the NAMESPACE_INDEX constant first.
__all__ = [  # noqa: RUF022
    "ClosedError",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "ExponentialBackoff",
    "FilteringResourceEventHandler",
    "IndexFunc",
    "Indexer",
    "Indexers",
    "KeyFunc",
    "KeyFuncError",
    "KeyListerGetter",
    "LabelSelectorArg",
    "ListWatch",
    "Lister",
    "ListerWatcher",
    "NAMESPACE_INDEX",
    "NamespaceLister",
    "RealFIFO",
    "Reflector",
    "ReflectorStore",
    "RequeueError",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "Store",
    "compact_metadata",
    "deep_copy",
    "deletion_handling_meta_namespace_key_func",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "split_meta_namespace_key",
    "strip_managed_fields",
    "wait_for_cache_sync",
]
