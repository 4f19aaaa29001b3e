# The Balancer controller image: `python -m controllers.balancer`.
#   docker build -t pycontroller/balancer-controller:0.1.0 .
# Two stages: the wheel is built with the full toolchain, the runtime image
# only gets the installed package, runs as an unprivileged user and needs no
# writable root filesystem (deploy/07-deployment.yaml mounts /tmp).
FROM python:3.11-slim AS build
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml setup.cfg README.md ./
COPY pycontroller ./pycontroller
COPY controllers ./controllers
RUN pip wheel --wheel-dir /wheels '.[fast]'

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-index --find-links /wheels pycontroller orjson \
 && rm -rf /wheels \
 && groupadd --gid 65532 balancer \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin balancer
# The CRD and samples, for --embedded and for reference (`find_repo_file`).
WORKDIR /app
COPY crds ./crds
USER 65532:65532
# Flags (deploy/07-deployment.yaml): --leader-elect, --metrics-bind-address, ...
ENTRYPOINT ["python", "-m", "controllers.balancer"]
