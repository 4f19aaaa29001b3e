"""Properties of the pure functions over every drawn Balancer (no server).

* ``validate`` never raises, never mutates, and names a field in every message;
* a spec it accepts renders children and an nginx.conf in the strict grammar
  (``nginx_grammar``), under a ConfigMap's 1 MiB; a spec it refuses makes
  ``desired_children`` raise with the same problems;
* ``render`` alone, without ``validate``, either raises ``ValueError`` or
  emits text in the grammar: no string field can inject into nginx.conf.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from balancer_strategies import EXPLICIT, balancers, reproducible
from hypothesis import example, given
from nginx_grammar import violations

from controllers.balancer import names, nginx, resources, validation

FIELD = re.compile(r"(metadata\.name|spec(\.[a-zA-Z]+|\[\d+\])*): ")
CONFIGMAP_LIMIT = 1024 * 1024


def _with_examples(test: Any) -> Any:
    for obj in reversed(EXPLICIT):
        test = example(obj=obj)(test)
    return test


@reproducible(400)
@given(obj=balancers())
@_with_examples
def test_validate_decides_and_render_never_injects(obj: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    problems = validation.validate(obj)
    assert obj == before
    for problem in problems:
        assert FIELD.match(problem), problem
        assert "\n" not in problem

    if problems:
        message = validation.message(problems)
        assert len(message) <= validation.MAX_MESSAGE_LENGTH
        assert message.startswith(problems[0].split(": ", 1)[0] + ": ")
        with pytest.raises(resources.InvalidBalancer) as info:
            resources.desired_children(obj)
        assert info.value.problems == problems
    else:
        children = resources.desired_children(obj)
        text = nginx.render(obj)
        assert violations(text) == []
        assert len(text.encode()) < CONFIGMAP_LIMIT
        backends = obj["spec"]["backends"]
        assert len(children) == len(backends) + 3
        for child in children:
            child_name = child["metadata"]["name"]
            if child["kind"] == "Service":
                assert names.is_dns1035_label(child_name), child_name
        assert obj == before

    try:
        text = nginx.render(obj)
    except ValueError:
        return
    assert violations(text, references=False) == []


def test_the_grammar_is_strict(golden_sample_text: str) -> None:
    # The grammar accepts what we emit and refuses the prior art's injection.
    assert violations(golden_sample_text) == []
    injected = golden_sample_text.replace(
        "server balancer-sample-v1-backend:80 weight=40;",
        "server balancer-sample-v1-backend:80;server 10.9.8.7:22 weight=1000;#"
        "-backend:80 weight=1;",
    )
    assert injected != golden_sample_text
    assert violations(injected)
    assert violations(golden_sample_text.replace("listen 80 ;", "listen 80 udp ;"))
    assert violations(golden_sample_text.replace("upstream_http;", "upstream_nope;"))
    assert violations(golden_sample_text + "# trailing\n")
