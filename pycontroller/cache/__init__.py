"""Informer machinery: keys, stores, indexers, DeltaFIFO, listers (client-go ``tools/cache``).

Objects handed out by anything in this package are shared with the cache:
never mutate them; use :func:`deep_copy` for a private copy.
"""

from __future__ import annotations

from .delta_fifo import ClosedError, Delta, DeltaFIFO, Deltas, DeltaType, RequeueError
from .index import (
    NAMESPACE_INDEX,
    Indexer,
    Indexers,
    IndexFunc,
    meta_namespace_index_func,
)
from .lister import LabelSelectorArg, Lister, NamespaceLister
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

# Plain sorted() order (pinned by tests/unit/test_public_api.py), not ruff's isort-style
# order, which would put the NAMESPACE_INDEX constant first.
__all__ = [  # noqa: RUF022
    "ClosedError",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "IndexFunc",
    "Indexer",
    "Indexers",
    "KeyFunc",
    "KeyFuncError",
    "KeyListerGetter",
    "LabelSelectorArg",
    "Lister",
    "NAMESPACE_INDEX",
    "NamespaceLister",
    "ReflectorStore",
    "RequeueError",
    "Store",
    "deep_copy",
    "deletion_handling_meta_namespace_key_func",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "split_meta_namespace_key",
]
