"""The real nginx accepts every generated config (``nginx -t``), with the
text unaltered; and every spec nginx would reject is rejected by
``validate()`` before any text is rendered.

nginx resolves upstream host names at load time, so each check runs in a
private mount namespace whose ``/etc/hosts`` maps the backend Service names
(see ``nginx_util``). Skipped only when nginx (with its stream module) is not
installed; CI installs it with ``hack/install-deps.sh``.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import nginx_util

from controllers.balancer.nginx import render
from controllers.balancer.validation import validate

pytestmark = pytest.mark.skipif(
    nginx_util.unavailable_reason() is not None, reason=str(nginx_util.unavailable_reason())
)

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "unit" / "balancer" / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "balancer.yaml").is_file())


def nginx_t(text: str, hosts: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``nginx -t`` on ``text`` (written as is) with ``hosts`` resolvable."""
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text(nginx_util.hosts_text(hosts))
    argv = nginx_util.with_private_hosts(
        hosts_file, nginx_util.nginx_command(conf, tmp_path, test=True)
    )
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert conf.read_text() == text  # nothing rewrote the config
    return result


@pytest.mark.parametrize("case", CASES)
def test_nginx_accepts_golden_config(case: str, tmp_path: Path) -> None:
    balancer = yaml.safe_load((GOLDEN / case / "balancer.yaml").read_text())
    text = render(balancer)
    assert text == (GOLDEN / case / "nginx.conf").read_text()
    result = nginx_t(text, nginx_util.backend_hosts(balancer), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_nginx_accepts_the_repository_sample(tmp_path: Path) -> None:
    balancer = yaml.safe_load((REPO / "crds" / "samples" / "balancer.yaml").read_text())
    result = nginx_t(render(balancer), nginx_util.backend_hosts(balancer), tmp_path)
    assert result.returncode == 0, result.stderr


def test_the_check_is_real_unresolvable_backends_fail(tmp_path: Path) -> None:
    # Without the hosts mapping nginx refuses the config: the passing checks
    # above depend on the backend names, not on a permissive setup.
    balancer = yaml.safe_load((GOLDEN / "sample" / "balancer.yaml").read_text())
    hosts = nginx_util.backend_hosts(balancer)
    hosts.pop("balancer-sample-v2-backend")
    result = nginx_t(render(balancer), hosts, tmp_path)
    assert result.returncode != 0
    assert 'host not found in upstream "balancer-sample-v2-backend:80"' in result.stderr


def _with_ports(balancer: dict[str, Any], *ports: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(balancer)
    changed["spec"]["ports"] = list(ports)
    return changed


@pytest.mark.parametrize(
    ("ports", "nginx_error", "field"),
    [
        (
            [{"name": "p", "port": 80}, {"name": "p", "port": 81}],
            'duplicate upstream "upstream_p"',
            "spec.ports[1].name",
        ),
        (
            [{"name": "a", "port": 80}, {"name": "b", "protocol": "TCP", "port": 80}],
            'duplicate "0.0.0.0:80" address and port pair',
            "spec.ports[1].port",
        ),
    ],
    ids=["duplicate-port-name", "duplicate-port-and-protocol"],
)
def test_what_nginx_rejects_validate_rejects(
    ports: list[dict[str, Any]], nginx_error: str, field: str, tmp_path: Path
) -> None:
    balancer = _with_ports(
        yaml.safe_load((GOLDEN / "sample" / "balancer.yaml").read_text()), *ports
    )
    # render() does not look for duplicates (they cannot inject anything);
    # nginx refuses the result ...
    result = nginx_t(render(balancer), nginx_util.backend_hosts(balancer), tmp_path)
    assert result.returncode != 0
    assert nginx_error in result.stderr
    # ... and validate(), which the reconciler runs first, reports the field.
    problems = validate(balancer)
    assert any(p.startswith(field + ": duplicate") for p in problems), problems


def test_nginx_accepts_the_largest_valid_config(tmp_path: Path) -> None:
    # The CRD's limits at once: 64 backends with 63-character Service names,
    # 64 UDP ports up to 65535, the largest weight.
    from controllers.balancer import validation

    balancer = {
        "metadata": {"name": "n" * 14},
        "spec": {
            "backends": [
                {"name": f"b{i:02d}" + "b" * 37, "weight": 2**31 - 1}
                for i in range(validation.MAX_BACKENDS)
            ],
            "ports": [
                {"name": f"p{i:02d}", "port": 65535 - i, "protocol": "UDP"}
                for i in range(validation.MAX_PORTS)
            ],
        },
    }
    assert validate(balancer) == []
    result = nginx_t(render(balancer), nginx_util.backend_hosts(balancer), tmp_path)
    assert result.returncode == 0, result.stderr
