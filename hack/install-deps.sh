#!/usr/bin/env bash
# Installs the Debian packages the test-suite uses for real parts:
# nginx with the stream module (generated configs are checked with `nginx -t`
# and served in a data-plane test), kubectl (compatibility tests against the
# embedded API server) and iproute2 (network namespaces for backends).
set -euo pipefail
need=()
command -v nginx >/dev/null 2>&1 || need+=(nginx-light)
[ -e /usr/lib/nginx/modules/ngx_stream_module.so ] || need+=(libnginx-mod-stream)
command -v kubectl >/dev/null 2>&1 || need+=(kubernetes-client)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
  # Debian starts the packaged nginx at install time; our tests run their own
  # instances, so stop the service we just installed (and only that one).
  $SUDO service nginx stop >/dev/null 2>&1 || true
fi
echo "deps ok: $(nginx -v 2>&1), kubectl $(kubectl version --client 2>/dev/null | head -1)"
