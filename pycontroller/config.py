"""Building a ``kubernetes.client.ApiClient`` from the usual configuration sources.

``load_config`` mirrors client-go's ``clientcmd`` precedence, as pinned in
``docs/architecture.md``:

1. an explicit ``kubeconfig`` path (an error there is final: the caller asked
   for that file, so we never silently fall back to another cluster);
2. ``$KUBECONFIG`` (one path or several joined with ``os.pathsep``, merged);
3. the in-cluster service account (``KUBERNETES_SERVICE_HOST``/``_PORT`` and
   the mounted token and CA);
4. ``~/.kube/config``.

``master`` overrides the server URL of whatever was loaded; with nothing else
available it alone makes a configuration (no credentials), like
``clientcmd.BuildConfigFromFlags(master, "")``. When no source works,
``ConfigError`` names every source that was tried and why it failed.

Only configuration, authentication and TLS come from the ``kubernetes``
package; requests go through ``pycontroller.client.ResourceClient``.

``qps`` and ``burst`` (client-go's ``rest.Config.QPS``/``Burst``, the
``--kube-api-qps``/``--kube-api-burst`` flags) set the token bucket that every
``ResourceClient`` built on the returned ``ApiClient`` shares (default 20/30).
"""

from __future__ import annotations

import logging
import os

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config import incluster_config

from pycontroller.client import DEFAULT_BURST, DEFAULT_QPS, TokenBucketRateLimiter, set_rate_limiter

__all__ = ["ConfigError", "load_config"]

logger = logging.getLogger(__name__)

# Overridable for tests; the defaults are the kubelet's mount paths.
SERVICE_TOKEN_FILENAME = incluster_config.SERVICE_TOKEN_FILENAME
SERVICE_CERT_FILENAME = incluster_config.SERVICE_CERT_FILENAME
DEFAULT_KUBECONFIG = "~/.kube/config"


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


def _from_kubeconfig(path: str, context: str | None) -> k8s_client.Configuration:
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=path, context=context, client_configuration=cfg, persist_config=False
    )
    return cfg


def _from_incluster() -> k8s_client.Configuration:
    cfg = k8s_client.Configuration()
    loader = incluster_config.InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=SERVICE_TOKEN_FILENAME,
        cert_filename=SERVICE_CERT_FILENAME,
        environ=os.environ,
    )
    loader.load_and_set(cfg)  # type: ignore[no-untyped-call]
    return cfg


def _load_configuration(
    kubeconfig: str | None, master: str | None, context: str | None
) -> k8s_client.Configuration:
    attempts: list[tuple[str, str]] = []
    if kubeconfig:
        try:
            return _from_kubeconfig(os.path.expanduser(kubeconfig), context)
        except Exception as err:
            raise ConfigError([(f"kubeconfig {kubeconfig!r}", _reason(err))]) from err

    env_path = os.environ.get("KUBECONFIG", "")
    if env_path:
        try:
            return _from_kubeconfig(env_path, context)
        except Exception as err:
            attempts.append((f"$KUBECONFIG={env_path!r}", _reason(err)))
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
            return _from_kubeconfig(home_path, context)
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
    cfg = _load_configuration(kubeconfig, master, context)
    if master:
        cfg.host = master.rstrip("/")
    api_client = k8s_client.ApiClient(configuration=cfg)
    set_rate_limiter(api_client, limiter)
    return api_client
