"""The embedded server's CEL evaluator agrees with cel-python, CEL's maintained
Python implementation, on standard CEL.

``schema/cel.py`` is our own evaluator because it runs on every write of a
custom resource and of an admission-checked object, and cel-python costs
70-90x more per evaluation (docstring of ``cel.py``). This test keeps it
honest: for every expression of a corpus of standard CEL (field selection,
``has``, the macros, arithmetic, strings, ``in``, ternaries, and the
commutative ``&&``/``||`` absorbing errors) and every drawn ``self``, both
evaluators give the same value, or both fail. Kubernetes' extension
libraries (``lowerAscii``, ``isSorted``, ``quantity``...) are not in
cel-python and are tested against kube's documented results in
``tests/unit/testing/test_cel.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycontroller.testing.apiserver.schema import cel

celpy = pytest.importorskip("celpy")

EXPRESSIONS = [
    "self.replicas <= self.max",
    "self.replicas * 2 - 1 > self.max / 3",
    "self.replicas % 3 == 1 || self.max % 2 == 0",
    "has(self.paused) ? self.paused : self.replicas > 0",
    "has(self.paused) && self.paused == true",
    "self.backends.all(b, b.weight >= 0 && b.weight <= 100)",
    "self.backends.exists(b, b.name.startsWith('v'))",
    "self.backends.exists_one(b, b.weight > 50)",
    "self.backends.map(b, b.weight).filter(w, w > 10).size() >= 1",
    "size(self.backends) <= 3 && self.backends.all(b, size(b.name) < 8)",
    "self.backends.filter(b, b.name.endsWith('1')).size() == 0",
    "self.name.matches('^[a-z][a-z0-9-]*$')",
    "self.name.contains('-') || self.name.size() < 4",
    "'app' in self.labels ? self.labels['app'] == self.name : true",
    "self.labels.all(k, k.size() <= 8)",
    "self.name in ['a', 'b', 'web'] || self.replicas in [0, 1]",
    "[self.replicas, self.max] + [1] == [self.replicas, self.max, 1]",
    "self.missing == 1 && self.replicas < 0",
    "self.replicas < 0 || self.missing == 1",
    "self.labels[self.name] == 'x'",
    "self.backends[0].weight >= self.backends[size(self.backends) - 1].weight",
    "self.name + '-' + string(self.replicas) != 'x'",
    "int(self.replicas) + 1 == self.replicas + 1",
]

names = st.text(alphabet="abvw-01", min_size=1, max_size=6)
selves = st.fixed_dictionaries(
    {
        "replicas": st.integers(-5, 20),
        "max": st.integers(1, 20),
        "name": names,
        "labels": st.dictionaries(st.sampled_from(["app", "tier", "web", "a"]), names),
        "backends": st.lists(
            st.fixed_dictionaries({"name": names, "weight": st.integers(-10, 110)}),
            min_size=1,
            max_size=4,
        ),
    },
    optional={"paused": st.booleans()},
)

_ENV = celpy.Environment()
_PROGRAMS = {e: _ENV.program(_ENV.compile(e)) for e in EXPRESSIONS}


def ours(expression: str, self_value: dict[str, Any]) -> Any:
    try:
        return cel.evaluate(expression, self_value)
    except cel.CELError:
        return "error"


def theirs(expression: str, self_value: dict[str, Any]) -> Any:
    try:
        out = _PROGRAMS[expression].evaluate({"self": celpy.json_to_cel(self_value)})
    except celpy.CELEvalError:
        return "error"
    if isinstance(out, celpy.CELEvalError):
        return "error"
    return bool(out) if isinstance(out, celpy.celtypes.BoolType) else out


@pytest.mark.parametrize("expression", EXPRESSIONS)
@settings(max_examples=40, derandomize=True, database=None, deadline=None)
@given(self_value=selves)
def test_agrees_with_cel_python(expression: str, self_value: dict[str, Any]) -> None:
    assert ours(expression, self_value) == theirs(expression, self_value)
