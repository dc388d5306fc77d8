"""``brain serve`` with several worker processes: one listening socket, bound by the
parent, shared by uvicorn workers it spawns, each building its own app.

Every worker runs every part (api.server); work that must happen once (summary refresh, model
retraining) runs in the worker that leads (brain.leadership). The gRPC service binds
its port in every worker: grpc sets SO_REUSEPORT on Linux, so the kernel spreads the
masters' connections over the workers.
"""

from __future__ import annotations

import logging
import os
import socket

import uvicorn
from fastapi import FastAPI
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from api.parent_watch import end_with_parent
from api.server import serve_app
from brain.config import Settings

# The pid of `brain serve`'s supervising process, handed to the workers it spawns.
SERVE_PID_ENV = "BRAIN_SERVE_PID"

# As `brain`'s own log lines, with the worker's process id.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"


def listening_socket(host: str, port: int) -> socket.socket:
    """The bound TCP socket the workers share.

    Created with ``IPPROTO_TCP``, not 0 as uvicorn's own multi-worker socket is: asyncio
    sets TCP_NODELAY only on connections accepted from a socket whose ``proto`` is
    ``IPPROTO_TCP``, and without it every answer waits for Nagle's algorithm and the
    client's delayed ACK. (uvloop, when uvicorn runs on it, sets it either way.)"""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def create_worker_app() -> FastAPI:
    """The app of one worker process. Workers are spawned, not forked: each reads its
    settings from the environment ``run_workers`` set, and sets up its own logging."""
    settings = Settings()
    logging.basicConfig(level=settings.log_level.upper(), format=LOG_FORMAT)
    # no orphan keeps serving and holding the port
    end_with_parent(int(os.environ.get(SERVE_PID_ENV) or os.getppid()))
    return serve_app(settings)


def run_workers(settings: Settings, workers: int) -> int:
    """Serve with ``workers`` processes until SIGTERM or SIGINT, which stop them all, or
    until a worker fails to start (uvicorn then stops the others). The exit status: 0,
    or uvicorn's start-up failure (3) when a worker failed to start, so that a service
    manager or Kubernetes sees the failure instead of a clean exit."""
    sock = listening_socket(settings.host, settings.port)
    bound_port = sock.getsockname()[1]
    # Where the command line overrode the environment, the workers must see it too.
    os.environ["BRAIN_HOST"] = settings.host
    os.environ["BRAIN_PORT"] = str(bound_port)
    # Each worker sizes its connection pool by how many share the machine.
    os.environ["BRAIN_WORKERS"] = str(workers)
    # Which process the workers must outlive: read before a worker could be orphaned.
    os.environ[SERVE_PID_ENV] = str(os.getpid())
    config = uvicorn.Config(
        f"{__name__}:{create_worker_app.__name__}",
        factory=True,
        workers=workers,
        host=settings.host,
        port=bound_port,
        log_level=settings.log_level.lower(),
        timeout_keep_alive=settings.keep_alive_s,
        # A spawned worker answers the supervisor's health pings only once it has imported
        # the program again; on a busy machine that takes more than uvicorn's default 5 s,
        # and the supervisor would kill and restart workers that were merely starting. A
        # ping sent while a worker that failed at start is exiting is never answered: the
        # supervisor notices the failure only when this timeout runs out.
        timeout_worker_healthcheck=settings.worker_healthcheck_s,
    )
    logging.getLogger(__name__).info(
        "serving on %s:%d with %d worker processes", settings.host, bound_port, workers
    )
    supervisor = Multiprocess(config, sockets=[sock])
    try:
        supervisor.run()
    finally:
        sock.close()
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        return STARTUP_FAILURE
    return 0
