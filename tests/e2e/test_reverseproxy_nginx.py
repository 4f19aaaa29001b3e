"""The real nginx accepts every golden ReverseProxy/TCPReverseProxy config
(``nginx -t`` on the text unaltered, as the ConfigMap holds it), including
values that hold nginx syntax, which it reads as one quoted token each.

nginx resolves upstream host names at load time, so each check runs in a
private mount namespace whose ``/etc/hosts`` maps them to 127.0.0.1
(``nginx_util``). The configs set ``pid /tmp/nginx.pid`` and ``daemon off;``
themselves; ``-t`` writes neither. Skipped only when nginx (with its stream
module) is not installed; CI installs it with ``hack/install-deps.sh``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import nginx_util

from controllers.reverseproxy.nginx import render

pytestmark = pytest.mark.skipif(
    nginx_util.unavailable_reason() is not None, reason=str(nginx_util.unavailable_reason())
)

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "unit" / "reverseproxy" / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.yaml").is_file())
_HOST = re.compile(r"(?:proxy_pass \"https?://|server )([a-z][-a-z0-9.]*[a-z])")


def nginx_t(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``nginx -t`` on ``text`` with every upstream host name resolving to 127.0.0.1."""
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text(nginx_util.hosts_text(dict.fromkeys(_HOST.findall(text), "127.0.0.1")))
    command = nginx_util.nginx_command(conf, tmp_path, test=True, config_sets_pid_and_daemon=True)
    argv = nginx_util.with_private_hosts(hosts_file, command)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert conf.read_text() == text
    return result


@pytest.mark.parametrize("case", CASES)
def test_nginx_accepts_golden_config(case: str, tmp_path: Path) -> None:
    text = render(yaml.safe_load((GOLDEN / case / "input.yaml").read_text()))
    assert text == (GOLDEN / case / "nginx.conf").read_text()
    result = nginx_t(text, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_the_originals_injections_are_plain_values_now(tmp_path: Path) -> None:
    """The prior-art page's header injection passes ``nginx -t`` as one
    quoted value; the original rendered it as a second directive."""
    obj = {
        "kind": "ReverseProxy",
        "spec": {
            "proxyPass": "http://127.0.0.1:9",
            "proxySetHeader": {"x-a": "v; return 200 injected", "x-b": "{ } # ' \" \\"},
            "logFormat": "it's $status \\ done",
            "rewrite": [{"regex": "^/(a|b){2}\\d+$", "replacement": "/c;d"}],
        },
    }
    text = render(obj)
    assert 'proxy_set_header x-a "v; return 200 injected";' in text
    assert "return 200 injected;" not in text
    result = nginx_t(text, tmp_path)
    assert result.returncode == 0, result.stderr
