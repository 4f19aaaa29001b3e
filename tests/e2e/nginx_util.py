"""Helpers for tests that run the real nginx on generated configs.

The generated ``nginx.conf`` is used **unaltered**: everything a test needs
around it is passed on the command line.

* The stream module: the official nginx image compiles it in; Debian builds
  it as a dynamic module (``--with-stream=dynamic``) that
  ``/etc/nginx/modules-enabled/50-mod-stream.conf`` loads from the stock
  config. We pass ``-g "load_module <abs path>;"``: nginx parses ``-g``
  directives before the config file, so the module is loaded before the
  ``stream`` block is read.
* Paths: ``-p <dir>`` (prefix), ``-e <dir>/error.log`` (the config has no
  ``error_log``) and ``-g "pid <dir>/nginx.pid;"`` keep nginx out of
  ``/var/log/nginx`` and ``/run``.
* Name resolution: nginx resolves upstream host names once, at load, with
  the system resolver; tests give it an ``/etc/hosts`` of their own through
  a private mount namespace (``unshare --mount`` plus a bind mount), or
  ``/etc/netns/<ns>/hosts`` which ``ip netns exec`` bind-mounts itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from controllers.balancer import names

_MODULE_DIRS = ("/usr/lib/nginx/modules", "/usr/lib64/nginx/modules", "/usr/share/nginx/modules")
_MODULES_ENABLED = Path("/etc/nginx/modules-enabled")


def nginx_binary() -> str | None:
    """Path of the nginx binary, or None if nginx is not installed."""
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )


@cache
def _configure_arguments() -> str:
    binary = nginx_binary()
    if binary is None:
        return ""
    out = subprocess.run([binary, "-V"], capture_output=True, text=True, check=False)
    return out.stdout + out.stderr


def _prefix() -> str:
    match = re.search(r"--prefix=(\S+)", _configure_arguments())
    return match.group(1) if match else "/usr/share/nginx"


@cache
def stream_module_directive() -> str | None:
    """The ``load_module ...;`` directive nginx needs for the stream module:
    ``""`` if it is compiled in, None if it is not available at all."""
    args = _configure_arguments()
    if re.search(r"--with-stream(\s|$)", args):
        return ""
    if "--with-stream=dynamic" not in args:
        return None
    candidates: list[Path] = []
    if _MODULES_ENABLED.is_dir():  # Debian: load_module modules/ngx_stream_module.so;
        for conf in sorted(_MODULES_ENABLED.iterdir()):
            for m in re.finditer(r"load_module\s+(\S*ngx_stream_module\.so)\s*;", conf.read_text()):
                path = Path(m.group(1))
                candidates.append(path if path.is_absolute() else Path(_prefix()) / path)
    candidates += [Path(d) / "ngx_stream_module.so" for d in _MODULE_DIRS]
    for path in candidates:
        if path.is_file():
            return f"load_module {path.resolve()};"
    return None


def unavailable_reason() -> str | None:
    """Why nginx cannot run our configs here, or None if it can."""
    if nginx_binary() is None:
        return "nginx is not installed (hack/install-deps.sh installs it)"
    if stream_module_directive() is None:
        return "nginx has no stream module (Debian: libnginx-mod-stream)"
    return None


def netns_unavailable_reason() -> str | None:
    """Why the data-plane tests (nginx and backends in their own network
    namespaces) cannot run here, or None if they can."""
    if unavailable_reason():
        return unavailable_reason()
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    return None


def nginx_command(
    conf: Path, workdir: Path, *, test: bool = False, config_sets_pid_and_daemon: bool = False
) -> list[str]:
    """argv running (or with ``test``, checking) ``conf`` unaltered in the
    foreground, with every file nginx writes inside ``workdir``.

    ``config_sets_pid_and_daemon``: the config has its own ``pid`` and
    ``daemon off;`` (the ReverseProxy operator's does), which nginx refuses
    to see twice, so they are not passed with ``-g``."""
    binary = nginx_binary()
    module = stream_module_directive()
    assert binary is not None and module is not None, unavailable_reason()
    globals_ = module
    if not config_sets_pid_and_daemon:
        globals_ = f"{module} pid {workdir / 'nginx.pid'};"
        if not test:
            globals_ += " daemon off;"
    argv = [binary, "-p", f"{workdir}/", "-e", str(workdir / "error.log"), "-c", str(conf)]
    if globals_:
        argv += ["-g", globals_]
    if test:
        argv.append("-t")
    return argv


def with_private_hosts(hosts_file: Path, argv: list[str]) -> list[str]:
    """argv that runs ``argv`` in a private mount namespace where
    ``/etc/hosts`` is ``hosts_file``; the host's ``/etc/hosts`` is untouched
    (the bind mount dies with the namespace). Unprivileged users get a user
    namespace mapping them to root (``--map-root-user``)."""
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare.append("--map-root-user")
    script = 'mount --bind "$0" /etc/hosts && exec "$@"'
    return [*unshare, "sh", "-c", script, str(hosts_file), *argv]


def backend_hosts(
    balancer: dict[str, Any], address: Callable[[int], str] = lambda i: "127.0.0.1"
) -> dict[str, str]:
    """Each backend Service name of ``balancer`` (the upstream host names in
    its nginx.conf) mapped to ``address(i)`` for the ``i``-th backend."""
    name = balancer["metadata"]["name"]
    return {
        names.backend_service_name(name, b["name"]): address(i)
        for i, b in enumerate(balancer["spec"]["backends"])
    }


def hosts_text(entries: dict[str, str]) -> str:
    """An /etc/hosts body mapping each name to its address (plus localhost)."""
    lines = ["127.0.0.1 localhost", "::1 localhost"]
    lines += [f"{address} {name}" for name, address in entries.items()]
    return "\n".join(lines) + "\n"
