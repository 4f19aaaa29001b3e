"""Building a ``kubernetes.client.ApiClient`` from the usual configuration sources.

``load_config`` mirrors client-go's ``clientcmd`` precedence, as pinned in
``docs/architecture.md``:

1. an explicit ``kubeconfig`` path (an error there is final: the caller asked
   for that file, so we never silently fall back to another cluster);
2. ``$KUBECONFIG`` (one path or several joined with ``os.pathsep``, merged;
   only when none of its files exists is the next source tried: a file that
   exists but does not load is an error, as with an explicit path);
3. the in-cluster service account (``KUBERNETES_SERVICE_HOST``/``_PORT`` and
   the mounted token and CA);
4. ``~/.kube/config``.

``master`` overrides the server URL of whatever was loaded; with nothing else
available it alone makes a configuration (no credentials), like
``clientcmd.BuildConfigFromFlags(master, "")``. When no source works,
``ConfigError`` names every source that was tried and why it failed.

Only configuration, authentication and TLS come from the ``kubernetes``
package; requests go through ``pycontroller.client.ResourceClient``.

Kubeconfig files are read as ``clientcmd`` reads them: with several files
(``$KUBECONFIG``) the first file to define a cluster, context or user by name
wins, and so does the first ``current-context``; missing files in the list
are skipped; relative file paths (``certificate-authority``,
``client-certificate``, ``client-key``, ``tokenFile``, an exec ``command``
with a path separator) are resolved against the directory of the file that
holds them. A bearer token file (a user's ``tokenFile``, and the in-cluster
service account token) is read trimmed of surrounding whitespace and re-read
every ``TOKEN_FILE_REFRESH_PERIOD`` seconds (client-go's cached file token
source), so rotated tokens are picked up; it takes precedence over a static
``token``, and if a re-read fails the last good token keeps being used.

A server URL without a scheme gets ``https://`` when the cluster has TLS
settings, else ``http://`` (client-go's ``DefaultServerURL``); ``master``
replaces only the selected cluster's server, so its CA still applies. A
user's ``as``/``as-uid``/``as-groups``/``as-user-extra`` impersonate
(``client.set_impersonation``). In-cluster, a missing ``ca.crt`` is logged and
the system roots are used, as in ``rest.InClusterConfig``.

``qps`` and ``burst`` (client-go's ``rest.Config.QPS``/``Burst``, the
``--kube-api-qps``/``--kube-api-burst`` flags) set the token bucket that every
``ResourceClient`` built on the returned ``ApiClient`` shares (default 20/30,
controller-runtime's defaults; client-go's own ``rest.Config`` defaults are
5/10).
"""

from __future__ import annotations

import copy
import logging
import math
import os
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config import incluster_config

from pycontroller.client import (
    DEFAULT_BURST,
    DEFAULT_QPS,
    TokenBucketRateLimiter,
    set_impersonation,
    set_rate_limiter,
)

__all__ = ["ConfigError", "load_config"]

logger = logging.getLogger(__name__)

# Overridable for tests; the defaults are the kubelet's mount paths.
SERVICE_TOKEN_FILENAME = incluster_config.SERVICE_TOKEN_FILENAME
SERVICE_CERT_FILENAME = incluster_config.SERVICE_CERT_FILENAME
DEFAULT_KUBECONFIG = "~/.kube/config"
# How long a token read from a file is used before the file is read again
# (client-go's NewCachedFileTokenSource: one minute).
TOKEN_FILE_REFRESH_PERIOD = 60.0


def _reason(err: BaseException) -> str:
    return str(err) or type(err).__name__


def _describe(attempts: list[tuple[str, str]]) -> str:
    return "; ".join(f"{source}: {why}" for source, why in attempts)


class ConfigError(Exception):
    """No usable client configuration was found.

    ``attempts`` lists ``(source, reason)`` for every source that was tried,
    in order; the message says the same in prose.
    """

    def __init__(self, attempts: list[tuple[str, str]]) -> None:
        self.attempts = list(attempts)
        detail = _describe(self.attempts) or "no sources"
        super().__init__(f"unable to load a Kubernetes client configuration (tried {detail})")


class _FileTokenSource:
    """client-go's ``cachedFileTokenSource``: the trimmed contents of a token
    file, re-read once ``TOKEN_FILE_REFRESH_PERIOD`` has passed; when a re-read
    fails (or finds an empty file) the last good token, else ``fallback``, is
    used, and only with neither is the error raised."""

    def __init__(self, path: str, fallback: str | None = None) -> None:
        self.path = path
        self._fallback = fallback or None
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = -math.inf

    def token(self) -> str:
        with self._lock:
            now = time.monotonic()
            if self._token is not None and now < self._expires:
                return self._token
            try:
                with open(self.path, encoding="utf-8") as f:
                    token = f.read().strip()
                if not token:
                    raise ValueError(f"read empty token from file {self.path!r}")
            except (OSError, ValueError) as err:
                previous = self._token or self._fallback
                if previous is None:
                    raise
                logger.error(
                    "reading token file %s failed (using the last token): %s", self.path, err
                )
                return previous
            self._token = token
            self._expires = now + TOKEN_FILE_REFRESH_PERIOD
            return token


def _use_token_file(cfg: k8s_client.Configuration, path: str, fallback: str | None) -> None:
    """Send the (re-read, trimmed) token of ``path`` as the bearer token of ``cfg``."""
    source = _FileTokenSource(path, fallback)

    def refresh(c: Any) -> None:
        c.api_key["BearerToken"] = "Bearer " + source.token()

    refresh(cfg)  # an unreadable file with no fallback fails the load, as in client-go
    cfg.refresh_api_key_hook = refresh  # type: ignore[assignment]


class _NoKubeconfigFile(FileNotFoundError):
    """None of the kubeconfig files of a list exists."""


_PATH_KEYS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
}


def _resolve_paths(kind: str, entry: dict[str, Any], base: str) -> None:
    """``clientcmd.ResolveLocalPaths``: relative file references of one file's
    cluster or user, made absolute against that file's directory."""
    section, keys = _PATH_KEYS[kind]
    body = entry.get(section)
    if not isinstance(body, dict):
        return
    for key in keys:
        value = body.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            body[key] = os.path.join(base, value)
    exec_cfg = body.get("exec") if kind == "users" else None
    if isinstance(exec_cfg, dict):
        command = exec_cfg.get("command")
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            exec_cfg["command"] = os.path.join(base, command)


def _merge_kubeconfigs(paths: list[str], *, explicit: bool) -> dict[str, Any]:
    """Merge kubeconfig files as ``clientcmd.ClientConfigLoadingRules.Load`` does.

    The first file to name a cluster, context or user wins, and so does the
    first non-empty ``current-context``. Missing files are skipped (an
    ``explicit`` one is an error); if none exists, ``FileNotFoundError``.
    """
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    seen: dict[str, set[str]] = {key: set() for key in merged}
    found = False
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except FileNotFoundError:
            if explicit:
                raise
            continue
        found = True
        if doc is None:  # an empty file is an empty config
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: not a kubeconfig (expected a mapping)")
        base = os.path.dirname(os.path.abspath(path))
        for kind in ("clusters", "contexts", "users"):
            for entry in doc.get(kind) or []:
                if not isinstance(entry, dict) or entry.get("name") in seen[kind]:
                    continue
                entry = copy.deepcopy(entry)
                seen[kind].add(str(entry.get("name")))
                if kind in _PATH_KEYS:
                    _resolve_paths(kind, entry, base)
                merged[kind].append(entry)
        current = doc.get("current-context")
        if current and not merged.get("current-context"):
            merged["current-context"] = current
        for key, value in doc.items():
            if key not in merged and key != "current-context":
                merged[key] = copy.deepcopy(value)
    if not found:
        raise _NoKubeconfigFile(f"no kubeconfig file found at {os.pathsep.join(paths)}")
    return merged


def _default_server_url(host: str, default_tls: bool) -> str:
    """client-go's ``rest.DefaultServerURL``: a server given without a scheme
    (``host:port``) gets ``https://`` when TLS is configured (a CA, a client
    certificate or insecure-skip-tls-verify), else ``http://``."""
    host = host.strip()
    if not host:
        return host
    parts = urlsplit(host)
    if not parts.scheme or not parts.netloc:
        host = ("https://" if default_tls else "http://") + host
    return host.rstrip("/")


def _select_cluster(merged: dict[str, Any], context: str | None, master: str | None) -> None:
    """The selected context's cluster as ``clientcmd`` finalises it, in place:
    ``master`` replaces its ``server`` (``ConfigOverrides.ClusterInfo.Server``,
    so its CA and TLS settings still apply) and a scheme-less server gets one
    (``_default_server_url``)."""
    ctx_name = context or merged.get("current-context")
    ctx = next((c for c in merged["contexts"] if c.get("name") == ctx_name), None)
    ctx_body = (ctx or {}).get("context") or {}
    cluster_entry = next(
        (c for c in merged["clusters"] if c.get("name") == ctx_body.get("cluster")), None
    )
    cluster = (cluster_entry or {}).get("cluster")
    if not isinstance(cluster, dict):
        return  # the python loader reports the missing cluster
    if master:
        cluster["server"] = master
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        return
    user_entry = next((u for u in merged["users"] if u.get("name") == ctx_body.get("user")), None)
    user = (user_entry or {}).get("user") or {}
    default_tls = bool(
        cluster.get("certificate-authority")
        or cluster.get("certificate-authority-data")
        or cluster.get("insecure-skip-tls-verify")
        or (
            isinstance(user, dict)
            and (user.get("client-certificate") or user.get("client-certificate-data"))
        )
    )
    cluster["server"] = _default_server_url(server, default_tls)


def _from_kubeconfig(
    paths: list[str],
    context: str | None,
    *,
    explicit: bool = False,
    master: str | None = None,
    impersonate: dict[str, Any] | None = None,
) -> k8s_client.Configuration:
    """The selected context of the merged files; the user's impersonation
    (``as``...), which the python loader ignores, is put in ``impersonate``."""
    merged = _merge_kubeconfigs(paths, explicit=explicit)
    _select_cluster(merged, context, master)
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
        config_dict=merged, context=context, client_configuration=cfg, persist_config=False
    )
    # The python loader reads tokenFile once and untrimmed (a trailing newline
    # makes an invalid header); client-go re-reads and trims it, and prefers it
    # to a static token.
    ctx_name = context or merged.get("current-context")
    ctx = next((c for c in merged["contexts"] if c.get("name") == ctx_name), None)
    user_name = ((ctx or {}).get("context") or {}).get("user")
    user_entry = next((u for u in merged["users"] if u.get("name") == user_name), None)
    user = (user_entry or {}).get("user") or {}
    token_file = user.get("tokenFile")
    if token_file and "auth-provider" not in user and "exec" not in user:
        _use_token_file(cfg, str(token_file), user.get("token") or None)
    # clientcmd's DirectClientConfig.ClientConfig: a user's "as" (with as-uid,
    # as-groups, as-user-extra) becomes rest.Config.Impersonate.
    if impersonate is not None and isinstance(user, dict) and user.get("as"):
        extra = user.get("as-user-extra") or {}
        impersonate.update(
            user=str(user["as"]),
            uid=str(user.get("as-uid") or "") or None,
            groups=[str(g) for g in user.get("as-groups") or []],
            extra={
                str(k): [str(v) for v in (vs or [])]
                for k, vs in (extra.items() if isinstance(extra, dict) else ())
            },
        )
    return cfg


def _from_incluster() -> k8s_client.Configuration:
    """client-go's ``rest.InClusterConfig``: ``https://`` + ``KUBERNETES_SERVICE_HOST``
    and ``_PORT`` (both required), the service account token (required; re-read
    and trimmed, ``BearerTokenFile``) and its ``ca.crt``, which is optional: a
    missing or empty one is logged and the system roots verify the server."""
    host = os.environ.get(incluster_config.SERVICE_HOST_ENV_NAME, "")
    port = os.environ.get(incluster_config.SERVICE_PORT_ENV_NAME, "")
    if not host or not port:
        raise ValueError(
            "unable to load in-cluster configuration, "
            f"{incluster_config.SERVICE_HOST_ENV_NAME} and "
            f"{incluster_config.SERVICE_PORT_ENV_NAME} must be defined"
        )
    cfg = k8s_client.Configuration()
    cfg.host = "https://" + incluster_config._join_host_port(host, port)  # type: ignore[no-untyped-call]
    _use_token_file(cfg, SERVICE_TOKEN_FILENAME, None)
    try:
        with open(SERVICE_CERT_FILENAME, "rb") as f:
            has_ca = bool(f.read().strip())
        if not has_ca:
            raise ValueError("the file is empty")
    except (OSError, ValueError) as err:
        logger.error(
            "Expected to load root CA config from %s, but got err: %s", SERVICE_CERT_FILENAME, err
        )
    else:
        cfg.ssl_ca_cert = SERVICE_CERT_FILENAME
    return cfg


def _load_configuration(
    kubeconfig: str | None, master: str | None, context: str | None, impersonate: dict[str, Any]
) -> k8s_client.Configuration:
    attempts: list[tuple[str, str]] = []
    if kubeconfig:
        try:
            return _from_kubeconfig(
                [os.path.expanduser(kubeconfig)],
                context,
                explicit=True,
                master=master,
                impersonate=impersonate,
            )
        except Exception as err:
            raise ConfigError([(f"kubeconfig {kubeconfig!r}", _reason(err))]) from err

    env_path = os.environ.get("KUBECONFIG", "")
    if env_path:
        try:
            paths = [os.path.expanduser(p) for p in env_path.split(os.pathsep) if p]
            return _from_kubeconfig(paths, context, master=master, impersonate=impersonate)
        except _NoKubeconfigFile as err:
            attempts.append((f"$KUBECONFIG={env_path!r}", _reason(err)))
        except Exception as err:
            # A $KUBECONFIG that exists but does not load (bad context, missing
            # cluster, unreadable credentials) is final, as in controller-runtime's
            # loadConfig: with $KUBECONFIG set, clientcmd's error is returned and
            # neither in-cluster nor ~/.kube/config (another cluster!) is tried.
            attempts.append((f"$KUBECONFIG={env_path!r}", _reason(err)))
            raise ConfigError(attempts) from err
    else:
        attempts.append(("$KUBECONFIG", "not set"))

    if os.environ.get(incluster_config.SERVICE_HOST_ENV_NAME):
        try:
            return _from_incluster()
        except Exception as err:
            attempts.append(("in-cluster service account", _reason(err)))
    else:
        attempts.append(
            ("in-cluster service account", f"{incluster_config.SERVICE_HOST_ENV_NAME} not set")
        )

    home_path = os.path.expanduser(DEFAULT_KUBECONFIG)
    if os.path.exists(home_path):
        try:
            return _from_kubeconfig(
                [home_path], context, explicit=True, master=master, impersonate=impersonate
            )
        except Exception as err:
            attempts.append((home_path, _reason(err)))
    else:
        attempts.append((home_path, "does not exist"))

    if master:
        logger.warning(
            "no kubeconfig or in-cluster configuration found; using --master %s without "
            "credentials (%s)",
            master,
            _describe(attempts),
        )
        return k8s_client.Configuration()
    raise ConfigError(attempts)


def load_config(
    kubeconfig: str | None = None,
    master: str | None = None,
    context: str | None = None,
    *,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
) -> k8s_client.ApiClient:
    """Return an ``ApiClient`` for the first configuration source that works.

    ``context`` selects a kubeconfig context (ignored in-cluster). ``master``
    replaces the server URL. ``qps``/``burst`` size the client-side token
    bucket its ``ResourceClient``s share (``qps <= 0``: unlimited; ``burst``
    must then still be >= 1 when ``qps > 0``, else ``ValueError``). Raises
    ``ConfigError`` listing every source tried. The returned client owns a
    connection pool: share it (one per process is typical) and ``close()`` it
    when done.
    """
    limiter = TokenBucketRateLimiter(qps, burst)  # validates before any I/O
    impersonate: dict[str, Any] = {}
    cfg = _load_configuration(kubeconfig, master, context, impersonate)
    default_tls = bool(cfg.ssl_ca_cert or cfg.cert_file or not cfg.verify_ssl)
    cfg.host = _default_server_url(master or str(cfg.host or ""), default_tls)
    api_client = k8s_client.ApiClient(configuration=cfg)
    set_rate_limiter(api_client, limiter)
    if impersonate:
        set_impersonation(
            api_client,
            impersonate["user"],
            uid=impersonate["uid"],
            groups=impersonate["groups"],
            extra=impersonate["extra"],
        )
    return api_client
