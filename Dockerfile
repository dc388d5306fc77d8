# Brain's image: `brain serve` as an unprivileged user, with the `k8s` extra that
# BRAIN_K8S_LOOKUP needs. Two stages: the build stage installs into a virtual
# environment, the final one copies only that (no pip cache, no sources, no compilers).

FROM python:3.11-slim AS build
RUN python -m venv /opt/brain
WORKDIR /src
COPY pyproject.toml README.md ./
COPY brain brain
COPY api api
COPY optimizers optimizers
COPY collectors collectors
COPY migrations migrations
RUN /opt/brain/bin/pip install --no-cache-dir '.[k8s]'

FROM python:3.11-slim
# The same numeric user and group the Kubernetes manifests run as (runAsUser 10001).
RUN groupadd --system --gid 10001 brain \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/brain --create-home brain
COPY --from=build /opt/brain /opt/brain
# BRAIN_DATABASE_URL: the SQLite default, in the brain user's writable home (mount a
# volume there to keep it); set a PostgreSQL URL for anything beyond a trial.
ENV PATH=/opt/brain/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    BRAIN_HOST=0.0.0.0 \
    BRAIN_PORT=8080 \
    BRAIN_DATABASE_URL=sqlite:////var/lib/brain/brain.db \
    BRAIN_MODEL_DIR=/var/lib/brain/models
WORKDIR /var/lib/brain
USER 10001:10001
# 50001: DLRover's gRPC brain.Brain when BRAIN_GRPC_PORT is set (as in docker-compose.yml).
EXPOSE 8080 50001
# Alive when /healthz answers on BRAIN_PORT; Python's own HTTP client (no curl here).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('BRAIN_PORT', '8080'), timeout=4)"]
# Beyond loopback Brain needs an API token to start: pass BRAIN_BOOTSTRAP_TOKEN (or
# BRAIN_AUTH=disabled where the port stays private, as docker-compose.yml does).
CMD ["brain", "serve", "--migrate"]
