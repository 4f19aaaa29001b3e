# ruff: noqa: E501  (descriptions and messages quoted verbatim from patch_test.go)
"""Strategic merge patch against vectors from apimachinery 1.32
``pkg/util/strategicpatch/patch_test.go`` (``strategicMergePatchRawTestCases``,
``customStrategicMergePatchRawTestCases`` and the retainKeys cases of
``createStrategicMergePatchTestCaseData``): each applies the case's three-way
patch to its current object (or the two-way patch to the original, for the
error cases), with the patch meta of the test's ``MergeItem`` struct."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pycontroller.testing.apiserver.registry.patch import (
    schema_from_definitions,
    strategic_merge_patch,
)
from pycontroller.testing.apiserver.status import StatusError

_R = "#/$defs/"
_MERGE_ITEM_PROPS: dict[str, Any] = {
    "name": {"type": "string"},
    "value": {"type": "string"},
    "other": {"type": "string"},
    "mergingList": {
        "type": "array",
        "items": {"$ref": _R + "MergeItem"},
        "x-kubernetes-patch-strategy": "merge",
        "x-kubernetes-patch-merge-key": "name",
    },
    "nonMergingList": {"type": "array", "items": {"$ref": _R + "MergeItem"}},
    "mergingIntList": {
        "type": "array",
        "items": {"type": "integer"},
        "x-kubernetes-patch-strategy": "merge",
    },
    "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
    "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
    "replacingItem": {"$ref": _R + "RawExtension", "x-kubernetes-patch-strategy": "replace"},
    "retainKeysMap": {
        "$ref": _R + "RetainKeysMergeItem",
        "x-kubernetes-patch-strategy": "retainKeys",
    },
    "retainKeysMergingList": {
        "type": "array",
        "items": {"$ref": _R + "MergeItem"},
        "x-kubernetes-patch-strategy": "merge,retainKeys",
        "x-kubernetes-patch-merge-key": "name",
    },
}
_RETAIN_KEYS_FIELDS = (
    "name",
    "value",
    "other",
    "simpleMap",
    "mergingIntList",
    "mergingList",
    "nonMergingList",
)
DEFINITIONS: dict[str, Any] = {
    "MergeItem": {"type": "object", "properties": _MERGE_ITEM_PROPS},
    "RetainKeysMergeItem": {
        "type": "object",
        "properties": {k: _MERGE_ITEM_PROPS[k] for k in _RETAIN_KEYS_FIELDS},
    },
    "RawExtension": {"type": "object"},
}

VECTORS: list[dict[str, Any]] = [
    {
        "description": "nested patch merge with empty list",
        "original": {"name": "hi", "mergingList": [{"name": "hello2"}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": "hello"}, {"name": "doesntexist"}],
            "mergingList": [{"name": "hello"}],
        },
        "result": {"name": "hi", "mergingList": [{"name": "hello"}, {"name": "hello2"}]},
    },
    {
        "description": "delete items in lists of scalars",
        "original": {"mergingIntList": [1, 2, 3, 4]},
        "patch": {
            "$setElementOrder/mergingIntList": [1, 2],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        "result": {"mergingIntList": [1, 2, 4]},
    },
    {
        "description": "delete all duplicate items in lists of scalars",
        "original": {"mergingIntList": [1, 2, 3, 3, 4]},
        "patch": {
            "$setElementOrder/mergingIntList": [1, 2],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        "result": {"mergingIntList": [1, 2, 4]},
    },
    {
        "description": "add and delete items in lists of scalars",
        "original": {"mergingIntList": [1, 2, 3, 4]},
        "patch": {
            "$setElementOrder/mergingIntList": [1, 2, 4],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        "result": {"mergingIntList": [1, 2, 4]},
    },
    {
        "description": "merge lists of maps",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 4}, {"name": 1}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}],
        },
        "result": {
            "mergingList": [
                {"name": 4, "value": 4},
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": 3},
            ]
        },
    },
    {
        "description": "merge lists of maps with conflict",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 3, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 2, "value": 2}, {"name": 3, "value": 3}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": 3},
            ]
        },
    },
    {
        "description": "add field to map in merging list",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": 1}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add field to map in merging list",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": 1}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add field to map in merging list with conflict",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 3, "value": 2, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": 1}, {"name": 2, "value": 2}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2},
                {"name": 3, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add duplicate field to map in merging list",
        "original": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
        "patch": {},
        "result": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add an item that already exists in current object in merging list",
        "original": {
            "mergingList": [{"name": 1, "value": "a", "other": "x"}, {"name": 2}, {"name": 3}]
        },
        "patch": {},
        "result": {
            "mergingList": [{"name": 1, "value": "a", "other": "x"}, {"name": 2}, {"name": 3}]
        },
    },
    {
        "description": "add duplicate field to map in merging list with conflict",
        "original": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 3, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 2, "value": 2}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "replace map field value in merging list",
        "original": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": "a"}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "value": "a", "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "replace map field value in merging list with conflict",
        "original": {
            "mergingList": [
                {"name": 1, "value": 3, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": "a"}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "value": "a", "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "delete map from merging list",
        "original": {"mergingList": [{"name": 1}, {"name": 2, "other": "b"}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}],
            "mergingList": [{"name": 1, "$patch": "delete"}],
        },
        "result": {"mergingList": [{"name": 2, "other": "b"}]},
    },
    {
        "description": "delete map from merging list with conflict",
        "original": {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "other": "b"}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}],
            "mergingList": [{"name": 1, "$patch": "delete"}],
        },
        "result": {"mergingList": [{"name": 2, "other": "b"}]},
    },
    {
        "description": "delete missing map from merging list",
        "original": {"mergingList": [{"name": 2, "other": "b"}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}],
            "mergingList": [{"name": 1, "$patch": "delete"}],
        },
        "result": {"mergingList": [{"name": 2, "other": "b"}]},
    },
    {
        "description": "delete missing map from merging list with conflict",
        "original": {"mergingList": [{"name": 3, "other": "a"}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}],
            "mergingList": [{"name": 2}, {"name": 1, "$patch": "delete"}],
        },
        "result": {"mergingList": [{"name": 2}, {"name": 3, "other": "a"}]},
    },
    {
        "description": "add map and delete map from merging list",
        "original": {
            "mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
            "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}],
        },
        "result": {
            "mergingList": [{"name": 2, "other": "b"}, {"name": 4, "other": "c"}, {"name": 3}]
        },
    },
    {
        "description": "add map and delete map from merging list with conflict",
        "original": {"mergingList": [{"name": 1, "other": "a"}, {"name": 4, "other": "c"}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
            "mergingList": [{"name": 2}, {"name": 3}, {"name": 1, "$patch": "delete"}],
        },
        "result": {"mergingList": [{"name": 4, "other": "c"}, {"name": 2}, {"name": 3}]},
    },
    {
        "description": "delete field from map in merging list",
        "original": {
            "mergingList": [
                {"name": 1, "value": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": None}],
        },
        "result": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
    },
    {
        "description": "delete field from map in merging list with conflict",
        "original": {
            "mergingList": [{"name": 1, "value": "a", "other": "a"}, {"name": 2, "value": 2}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": None}],
        },
        "result": {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2}]},
    },
    {
        "description": "delete missing field from map in merging list",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": None}],
        },
        "result": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
    },
    {
        "description": "delete missing field from map in merging list with conflict",
        "original": {"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "other": "b"}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "value": None}, {"name": 2, "value": 2}],
        },
        "result": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
    },
    {
        "description": "replace non merging list nested in merging list",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 1}, {"name": 2, "value": 2}]},
                {"name": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": 1}]},
                {"name": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "replace non merging list nested in merging list with value conflict",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": "c"}]},
                {"name": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": 1}]},
                {"name": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "replace non merging list nested in merging list with deletion conflict",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 2, "value": 2}]},
                {"name": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": 1}]},
                {"name": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add field to map in merging list nested in merging list",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a", "mergingList": [{"name": 1}, {"name": 2, "value": 2}]},
                {"name": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [
                {
                    "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                    "name": 1,
                    "mergingList": [{"name": 1, "value": 1}],
                }
            ],
        },
        "result": {
            "mergingList": [
                {
                    "name": 1,
                    "other": "a",
                    "mergingList": [{"name": 1, "value": 1}, {"name": 2, "value": 2}],
                },
                {"name": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add field to map in merging list nested in merging list with value conflict",
        "original": {
            "mergingList": [
                {
                    "name": 1,
                    "other": "a",
                    "mergingList": [
                        {"name": 1, "value": "a", "other": "c"},
                        {"name": 2, "value": "b", "other": "d"},
                    ],
                },
                {"name": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [
                {
                    "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                    "name": 1,
                    "mergingList": [{"name": 1, "value": 1}, {"name": 2, "value": 2}],
                }
            ],
        },
        "result": {
            "mergingList": [
                {
                    "name": 1,
                    "other": "a",
                    "mergingList": [
                        {"name": 1, "value": 1, "other": "c"},
                        {"name": 2, "value": 2, "other": "d"},
                    ],
                },
                {"name": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add field to map in merging list nested in merging list with deletion conflict",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a", "mergingList": [{"name": 2, "value": 2, "other": "d"}]},
                {"name": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [
                {
                    "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                    "name": 1,
                    "mergingList": [{"name": 1, "value": 1}],
                }
            ],
        },
        "result": {
            "mergingList": [
                {
                    "name": 1,
                    "other": "a",
                    "mergingList": [{"name": 1, "value": 1}, {"name": 2, "value": 2, "other": "d"}],
                },
                {"name": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add field to map in merging list nested in merging list with deletion conflict",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a", "mergingList": [{"name": 2, "value": 2, "other": "d"}]},
                {"name": 2, "other": "b"},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
            "mergingList": [
                {
                    "$setElementOrder/mergingList": [{"name": 2}, {"name": 1}],
                    "name": 1,
                    "mergingList": [{"name": 1, "value": 1}],
                }
            ],
        },
        "result": {
            "mergingList": [
                {
                    "name": 1,
                    "other": "a",
                    "mergingList": [{"name": 2, "value": 2, "other": "d"}, {"name": 1, "value": 1}],
                },
                {"name": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "merge lists of scalars",
        "original": {"mergingIntList": [1, 2, 4]},
        "patch": {"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3]},
        "result": {"mergingIntList": [1, 2, 3, 4]},
    },
    {
        "description": "add duplicate field to map in merging int list",
        "original": {"mergingIntList": [1, 2, 3]},
        "patch": {},
        "result": {"mergingIntList": [1, 2, 3]},
    },
    {
        "description": "add an item in a list of primitives and preserve order",
        "original": {"mergingIntList": [1, 4, 2]},
        "patch": {"$setElementOrder/mergingIntList": [3, 1, 2], "mergingIntList": [3]},
        "result": {"mergingIntList": [3, 1, 4, 2]},
    },
    {
        "description": "delete an item in a list of primitives and preserve order",
        "original": {"mergingIntList": [1, 2, 3]},
        "patch": {
            "$setElementOrder/mergingIntList": [2, 1],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        "result": {"mergingIntList": [2, 1]},
    },
    {
        "description": "add an item in a list and preserve order",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 3}, {"name": 1}, {"name": 2}],
            "mergingList": [{"name": 3, "value": 3}],
        },
        "result": {
            "mergingList": [
                {"name": 3, "value": 3},
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
            ]
        },
    },
    {
        "description": "add multiple items in a list and preserve order",
        "original": {
            "mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 4}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}],
        },
        "result": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 4, "value": 4},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": 3},
            ]
        },
    },
    {
        "description": "delete an item in a list and preserve order",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": 3},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 1}],
            "mergingList": [{"name": 3, "$patch": "delete"}],
        },
        "result": {
            "mergingList": [{"name": 2, "value": 2, "other": "b"}, {"name": 1, "other": "a"}]
        },
    },
    {
        "description": "change an item in a list and preserve order",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": 3},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}, {"name": 1}],
            "mergingList": [{"name": 3, "value": "x"}],
        },
        "result": {
            "mergingList": [
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": "x"},
                {"name": 1, "other": "a"},
            ]
        },
    },
    {
        "description": "add and delete an item in a list and preserve order",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 3, "value": 3},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 4}, {"name": 2}, {"name": 1}],
            "mergingList": [{"name": 4, "value": 4}, {"name": 3, "$patch": "delete"}],
        },
        "result": {
            "mergingList": [
                {"name": 4, "value": 4},
                {"name": 2, "value": 2, "other": "b"},
                {"name": 1, "other": "a"},
            ]
        },
    },
    {
        "description": "set elements order in a list",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 3, "value": 3},
                {"name": 4, "value": 4},
                {"name": 2, "value": 2},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 4}, {"name": 2}, {"name": 3}, {"name": 1}]
        },
        "result": {
            "mergingList": [
                {"name": 4, "value": 4},
                {"name": 2, "value": 2},
                {"name": 3, "value": 3},
                {"name": 1, "other": "a"},
            ]
        },
    },
    {
        "description": "set elements order in a list with server-only items",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 3, "value": 3},
                {"name": 4, "value": 4},
                {"name": 2, "value": 2},
                {"name": 9},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 4}, {"name": 2}, {"name": 3}, {"name": 1}]
        },
        "result": {
            "mergingList": [
                {"name": 4, "value": 4},
                {"name": 2, "value": 2},
                {"name": 3, "value": 3},
                {"name": 1, "other": "a"},
                {"name": 9},
            ]
        },
    },
    {
        "description": "set elements order in a list with server-only items 2",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2},
                {"name": 9},
                {"name": 3, "value": 3},
                {"name": 4, "value": 4},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}]
        },
        "result": {
            "mergingList": [
                {"name": 2, "value": 2},
                {"name": 1, "other": "a"},
                {"name": 9},
                {"name": 4, "value": 4},
                {"name": 3, "value": 3},
            ]
        },
    },
    {
        "description": "set elements order in a list with server-only items 3",
        "original": {
            "mergingList": [
                {"name": 1, "other": "a"},
                {"name": 2, "value": 2},
                {"name": 7},
                {"name": 9},
                {"name": 8},
                {"name": 3, "value": 3},
                {"name": 4, "value": 4},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}]
        },
        "result": {
            "mergingList": [
                {"name": 2, "value": 2},
                {"name": 1, "other": "a"},
                {"name": 7},
                {"name": 9},
                {"name": 8},
                {"name": 4, "value": 4},
                {"name": 3, "value": 3},
            ]
        },
    },
    {
        "description": "add an item in a int list and preserve order",
        "original": {"mergingIntList": [1, 2]},
        "patch": {"$setElementOrder/mergingIntList": [3, 1, 2], "mergingIntList": [3]},
        "result": {"mergingIntList": [3, 1, 2]},
    },
    {
        "description": "add multiple items in a int list and preserve order",
        "original": {"mergingIntList": [1, 2]},
        "patch": {"$setElementOrder/mergingIntList": [1, 4, 2, 3], "mergingIntList": [4, 3]},
        "result": {"mergingIntList": [1, 4, 2, 3]},
    },
    {
        "description": "delete an item in a int list and preserve order",
        "original": {"mergingIntList": [1, 2, 3]},
        "patch": {
            "$setElementOrder/mergingIntList": [2, 1],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        "result": {"mergingIntList": [2, 1]},
    },
    {
        "description": "add and delete an item in a int list and preserve order",
        "original": {"mergingIntList": [1, 2, 3]},
        "patch": {
            "$setElementOrder/mergingIntList": [4, 2, 1],
            "mergingIntList": [4],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        "result": {"mergingIntList": [4, 2, 1]},
    },
    {
        "description": "set elements order in a int list",
        "original": {"mergingIntList": [1, 3, 4, 2]},
        "patch": {"$setElementOrder/mergingIntList": [4, 2, 3, 1]},
        "result": {"mergingIntList": [4, 2, 3, 1]},
    },
    {
        "description": "set elements order in a int list with server-only items",
        "original": {"mergingIntList": [1, 3, 4, 2, 9]},
        "patch": {"$setElementOrder/mergingIntList": [4, 2, 3, 1]},
        "result": {"mergingIntList": [4, 2, 3, 1, 9]},
    },
    {
        "description": "set elements order in a int list with server-only items 2",
        "original": {"mergingIntList": [1, 2, 9, 3, 4]},
        "patch": {"$setElementOrder/mergingIntList": [2, 1, 4, 3]},
        "result": {"mergingIntList": [2, 1, 9, 4, 3]},
    },
    {
        "description": "set elements order in a int list with server-only items 3",
        "original": {"mergingIntList": [1, 2, 7, 9, 8, 3, 4]},
        "patch": {"$setElementOrder/mergingIntList": [2, 1, 4, 3]},
        "result": {"mergingIntList": [2, 1, 7, 9, 8, 4, 3]},
    },
    {
        "description": "behavior of set element order for a merging list with duplicate",
        "original": {
            "mergingList": [
                {"name": 1},
                {"name": 2, "value": "dup1"},
                {"name": 3},
                {"name": 2, "value": "dup2"},
                {"name": 4},
            ]
        },
        "patch": {
            "$setElementOrder/mergingList": [
                {"name": 2},
                {"name": 1},
                {"name": 4},
                {"name": 3},
                {"name": 2},
            ]
        },
        "result": {
            "mergingList": [
                {"name": 2, "value": "dup1"},
                {"name": 2, "value": "dup2"},
                {"name": 1},
                {"name": 4},
                {"name": 3},
            ]
        },
    },
    {
        "description": "behavior of set element order for a merging int list with duplicate",
        "original": {"mergingIntList": [1, 2, 3, 2, 4]},
        "patch": {"$setElementOrder/mergingIntList": [2, 1, 4, 3, 2]},
        "result": {"mergingIntList": [2, 2, 1, 4, 3]},
    },
    {
        "description": "retainKeys map deletes a field",
        "original": {"retainKeysMap": {"name": "foo", "value": "bar"}},
        "patch": {"retainKeysMap": {"$retainKeys": ["name"], "value": None}},
        "result": {"retainKeysMap": {"name": "foo"}},
    },
    {
        "description": "retainKeys map deletes a field and clears a field",
        "original": {"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}},
        "patch": {"retainKeysMap": {"$retainKeys": ["name"], "value": None}},
        "result": {"retainKeysMap": {"name": "foo"}},
    },
    {
        "description": "retainKeys map clears a field",
        "original": {"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}},
        "patch": {"retainKeysMap": {"$retainKeys": ["name", "value"]}},
        "result": {"retainKeysMap": {"name": "foo", "value": "bar"}},
    },
    {
        "description": "retainKeys map deletes a field in a nested map",
        "original": {
            "retainKeysMap": {
                "name": "foo",
                "value": "bar",
                "simpleMap": {"key1": "a", "key2": "b", "key3": "c"},
            }
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["name", "simpleMap", "value"],
                "simpleMap": {"key2": None},
            }
        },
        "result": {
            "retainKeysMap": {
                "name": "foo",
                "value": "bar",
                "simpleMap": {"key1": "a", "key3": "c"},
            }
        },
    },
    {
        "description": "retainKeys map replaces non-merging list",
        "original": {
            "retainKeysMap": {
                "name": "foo",
                "value": "bar",
                "nonMergingList": [{"name": "a"}, {"name": "b"}],
            }
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["name", "nonMergingList", "value"],
                "nonMergingList": [{"name": "a"}, {"name": "c"}, {"name": "b"}],
            }
        },
        "result": {
            "retainKeysMap": {
                "name": "foo",
                "value": "bar",
                "nonMergingList": [{"name": "a"}, {"name": "c"}, {"name": "b"}],
            }
        },
    },
    {
        "description": "retainKeys map deletes nested non-merging list",
        "original": {
            "retainKeysMap": {"name": "foo", "nonMergingList": [{"name": "a"}, {"name": "b"}]}
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["name", "value"],
                "value": "bar",
                "nonMergingList": None,
            }
        },
        "result": {"retainKeysMap": {"name": "foo", "value": "bar"}},
    },
    {
        "description": "retainKeys map delete nested non-merging list with conflict",
        "original": {
            "retainKeysMap": {
                "name": "foo",
                "nonMergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            }
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["name", "value"],
                "value": "bar",
                "nonMergingList": None,
            }
        },
        "result": {"retainKeysMap": {"name": "foo", "value": "bar"}},
    },
    {
        "description": "retainKeys map nested merging int list with no change",
        "original": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3]}},
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["mergingIntList", "name", "value"],
                "$setElementOrder/mergingIntList": [1, 2],
                "value": "bar",
            }
        },
        "result": {"retainKeysMap": {"name": "foo", "value": "bar", "mergingIntList": [1, 2, 3]}},
    },
    {
        "description": "retainKeys map adds an item in nested merging int list",
        "original": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3]}},
        "patch": {
            "retainKeysMap": {
                "$setElementOrder/mergingIntList": [1, 2, 4],
                "$retainKeys": ["mergingIntList", "name"],
                "mergingIntList": [4],
            }
        },
        "result": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 4, 3]}},
    },
    {
        "description": "retainKeys map deletes an item in nested merging int list",
        "original": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3, 4]}},
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["mergingIntList", "name"],
                "$deleteFromPrimitiveList/mergingIntList": [2],
                "$setElementOrder/mergingIntList": [1, 3],
            }
        },
        "result": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 3, 4]}},
    },
    {
        "description": "retainKeys map adds an item and deletes an item in nested merging int list",
        "original": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3, 4]}},
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["mergingIntList", "name"],
                "mergingIntList": [5],
                "$deleteFromPrimitiveList/mergingIntList": [2],
                "$setElementOrder/mergingIntList": [1, 3, 5],
            }
        },
        "result": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 3, 5, 4]}},
    },
    {
        "description": "retainKeys map deletes nested merging int list",
        "original": {"retainKeysMap": {"name": "foo", "mergingIntList": [1, 2, 3]}},
        "patch": {"retainKeysMap": {"$retainKeys": ["name"], "mergingIntList": None}},
        "result": {"retainKeysMap": {"name": "foo"}},
    },
    {
        "description": "retainKeys map nested merging list with no change",
        "original": {
            "retainKeysMap": {
                "name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            }
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["mergingList", "name", "value"],
                "$setElementOrder/mergingList": [{"name": "a"}, {"name": "b"}],
                "value": "bar",
            }
        },
        "result": {
            "retainKeysMap": {
                "name": "foo",
                "value": "bar",
                "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            }
        },
    },
    {
        "description": "retainKeys map adds an item in nested merging list",
        "original": {
            "retainKeysMap": {
                "name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "x"}],
            }
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["mergingList", "name"],
                "$setElementOrder/mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                "mergingList": [{"name": "c"}],
            }
        },
        "result": {
            "retainKeysMap": {
                "name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "x"}],
            }
        },
    },
    {
        "description": "retainKeys map changes an item in nested merging list",
        "original": {
            "retainKeysMap": {
                "name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b", "value": "foo"}, {"name": "x"}],
            }
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["mergingList", "name"],
                "$setElementOrder/mergingList": [{"name": "a"}, {"name": "b"}],
                "mergingList": [{"name": "b", "value": "bar"}],
            }
        },
        "result": {
            "retainKeysMap": {
                "name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b", "value": "bar"}, {"name": "x"}],
            }
        },
    },
    {
        "description": "retainKeys map deletes nested merging list",
        "original": {
            "retainKeysMap": {"name": "foo", "mergingList": [{"name": "a"}, {"name": "b"}]}
        },
        "patch": {
            "retainKeysMap": {"$retainKeys": ["name", "value"], "value": "bar", "mergingList": None}
        },
        "result": {"retainKeysMap": {"name": "foo", "value": "bar"}},
    },
    {
        "description": "retainKeys map deletes an item in nested merging list",
        "original": {
            "retainKeysMap": {
                "name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "x"}],
            }
        },
        "patch": {
            "retainKeysMap": {
                "$retainKeys": ["mergingList", "name"],
                "$setElementOrder/mergingList": [{"name": "a"}],
                "mergingList": [{"name": "b", "$patch": "delete"}],
            }
        },
        "result": {"retainKeysMap": {"name": "foo", "mergingList": [{"name": "a"}, {"name": "x"}]}},
    },
    {
        "description": "retainKeys list of maps clears a field",
        "original": {
            "retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a", "other": "x"}]
        },
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [{"$retainKeys": ["name", "value"], "name": "foo"}],
        },
        "result": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]},
    },
    {
        "description": "retainKeys list of maps clears a field with conflict",
        "original": {
            "retainKeysMergingList": [
                {"name": "bar"},
                {"name": "foo", "value": "new", "other": "x"},
            ]
        },
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [
                {"$retainKeys": ["name", "value"], "name": "foo", "value": "modified"}
            ],
        },
        "result": {
            "retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "modified"}]
        },
    },
    {
        "description": "retainKeys list of maps changes a field and clear a field",
        "original": {
            "retainKeysMergingList": [
                {"name": "bar"},
                {"name": "foo", "value": "old", "other": "x"},
            ]
        },
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [
                {"$retainKeys": ["name", "value"], "name": "foo", "value": "new"}
            ],
        },
        "result": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "new"}]},
    },
    {
        "description": "retainKeys list of maps changes a field and clear a field with conflict",
        "original": {
            "retainKeysMergingList": [
                {"name": "bar"},
                {"name": "foo", "value": "modified", "other": "x"},
            ]
        },
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [
                {"$retainKeys": ["name", "value"], "name": "foo", "value": "new"}
            ],
        },
        "result": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "new"}]},
    },
    {
        "description": "retainKeys list of maps adds a field",
        "original": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]},
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [
                {"$retainKeys": ["name", "value"], "name": "foo", "value": "a"}
            ],
        },
        "result": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]},
    },
    {
        "description": "retainKeys list of maps adds a field and clear a field",
        "original": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "other": "x"}]},
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [
                {"$retainKeys": ["name", "value"], "name": "foo", "value": "a"}
            ],
        },
        "result": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]},
    },
    {
        "description": "retainKeys list of maps deletes a field",
        "original": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]},
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [{"$retainKeys": ["name"], "name": "foo", "value": None}],
        },
        "result": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]},
    },
    {
        "description": "retainKeys list of maps deletes a field and clear a field",
        "original": {
            "retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a", "other": "x"}]
        },
        "patch": {
            "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
            "retainKeysMergingList": [{"$retainKeys": ["name"], "name": "foo", "value": None}],
        },
        "result": {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]},
    },
    {
        "description": "should check if order in $setElementOrder and patch list match",
        "original": {"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]},
        "patch": {
            "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
            "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}],
        },
        "error": "doesn't match",
    },
    {
        "description": "$setElementOrder contains item that is not present in the int list to be merged",
        "original": {"mergingIntList": [1, 3, 2]},
        "patch": {"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]},
        "error": "doesn't match",
    },
    {
        "description": "missing merge key should error out",
        "original": {"mergingList": [{"name": 1, "value": "a"}]},
        "patch": {"mergingList": [{"value": "b"}]},
        "error": "does not contain declared merge key",
    },
]


@pytest.mark.parametrize("case", VECTORS, ids=[c["description"] for c in VECTORS])
def test_smp_kube_vector(case: dict[str, Any]) -> None:
    schema = schema_from_definitions(DEFINITIONS, "MergeItem")
    original = json.loads(json.dumps(case["original"]))
    if "error" in case:
        with pytest.raises(StatusError) as ei:
            strategic_merge_patch(original, case["patch"], schema=schema)
        assert case["error"] in ei.value.message
        return
    out = strategic_merge_patch(original, case["patch"], schema=schema)
    assert out == case["result"]
    assert original == case["original"]  # inputs untouched
