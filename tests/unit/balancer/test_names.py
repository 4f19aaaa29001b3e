"""controllers.balancer.names: the Go project's spellings, pinned."""

from __future__ import annotations

import pytest

from controllers.balancer import names


def test_api_names() -> None:
    assert names.API_VERSION == "exposer.hliangzhao.io/v1alpha1"
    assert (names.KIND, names.LIST_KIND, names.PLURAL) == ("Balancer", "BalancerList", "balancers")
    assert names.CRD_NAME == "balancers.exposer.hliangzhao.io"
    assert names.SHORT_NAME == "blc"


def test_label_and_annotation_keys() -> None:
    assert names.LABEL_BALANCER_NAME == "balancer.exposer.hliangzhao.io/balancer-name"
    assert names.ANNOTATION_CONFIGMAP_HASH == "balancer.exposer.hliangzhao.io/configmap-hash"


def test_child_names() -> None:
    assert names.backend_service_name("n", "v1") == "n-v1-backend"
    assert names.configmap_name("n") == "n-proxy-configmap"
    assert names.deployment_name("n") == "n-proxy"
    assert names.frontend_service_name("n") == "n"
    assert names.upstream_name("http") == "upstream_http"
    assert names.selector_labels("n") == {names.LABEL_BALANCER_NAME: "n"}
    assert names.selector_labels("n") is not names.selector_labels("n")


def test_length_bounds_keep_backend_service_names_valid() -> None:
    longest = names.backend_service_name("n" * 1, "b" * names.MAX_BACKEND_NAME_LENGTH)
    assert len(longest) == 63 and names.is_dns1035_label(longest)
    n = "n" * (names.MAX_NAME_AND_BACKEND_LENGTH - 10)
    assert len(names.backend_service_name(n, "b" * 10)) == 63
    assert len(names.backend_service_name(n, "b" * 11)) == 64


@pytest.mark.parametrize("value", ["a", "a-1", "abc-def0", "a" * 63])
def test_dns1035_valid(value: str) -> None:
    assert names.is_dns1035_label(value)


@pytest.mark.parametrize(
    "value", ["", "A", "1a", "a-", "-a", "a.b", "a_b", "a b", "a;", "a\n", "a" * 64, None, 1]
)
def test_dns1035_invalid(value: object) -> None:
    assert not names.is_dns1035_label(value)
