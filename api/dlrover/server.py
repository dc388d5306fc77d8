"""Start and stop the gRPC server beside the REST API, in the same process.

Inside ``brain serve`` (``api.server``) it starts when ``BRAIN_GRPC_PORT`` is set, on
the app's own engine, optimizer registry and telemetry, so both protocols share one
database and one pipeline. The
standard gRPC health service answers for ``brain.Brain``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
from dlrover.proto import brain_pb2_grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from sqlalchemy.orm import Session, sessionmaker

from api.dlrover.elasticjobs import ElasticJobLookup, custom_objects_api
from api.dlrover.servicer import BrainServicer
from brain.config import Settings
from brain.optimizing import OptimizerRegistry
from brain.optimizing.sizing_model import SizingModel
from brain.summaries.store import summarize_job_ids
from brain.telemetry import Telemetry

log = logging.getLogger(__name__)
SERVICE = "brain.Brain"
STOP_GRACE_S = 5


@dataclass
class RunningServer:
    server: grpc.Server
    port: int
    servicer: BrainServicer
    health: health.HealthServicer
    summaries: ThreadPoolExecutor

    def stop(self) -> None:
        self.health.enter_graceful_shutdown()
        self.server.stop(STOP_GRACE_S).wait()
        self.servicer.close()
        self.summaries.shutdown(wait=True)


def start(
    settings: Settings,
    session_factory: sessionmaker[Session],
    registry: OptimizerRegistry,
    telemetry: Telemetry,
    port: int,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    sizing_model: Callable[[], SizingModel | None] = lambda: None,
    elastic_jobs: ElasticJobLookup | None = None,
) -> RunningServer:
    """Serve ``brain.Brain`` on ``settings.host:port`` (0 picks a free port).

    ``interceptors`` is where a credential check on the call metadata goes;
    ``sizing_model`` gives the learned recommender current at each call;
    ``elastic_jobs`` reads unregistered jobs' requests from Kubernetes (None: never).
    """
    # Summaries of finished jobs run after the answer, one at a time, so the master's
    # exit report returns at once.
    summaries = ThreadPoolExecutor(1, thread_name_prefix="brain-grpc-summary")
    servicer = BrainServicer(
        session_factory,
        registry,
        settings,
        telemetry,
        summarize=lambda job_id: summaries.submit(summarize_job_ids, session_factory, [job_id]),
        sizing_model=sizing_model,
        elastic_jobs=elastic_jobs,
    )
    server = grpc.server(
        ThreadPoolExecutor(settings.grpc_workers, thread_name_prefix="brain-grpc"),
        interceptors=list(interceptors),
    )
    brain_pb2_grpc.add_BrainServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    for name in ("", SERVICE):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    bound = server.add_insecure_port(f"{settings.host}:{port}")
    server.start()
    log.info("gRPC %s listening on %s:%d", SERVICE, settings.host, bound)
    return RunningServer(server, bound, servicer, health_servicer, summaries)


def elastic_job_lookup(settings: Settings) -> ElasticJobLookup | None:
    """The ElasticJob lookup ``BRAIN_K8S_LOOKUP`` asks for (None: off)."""
    if not settings.k8s_lookup:
        return None
    try:
        api = custom_objects_api(settings.k8s_kubeconfig)
    except ImportError as exc:
        raise RuntimeError(
            "BRAIN_K8S_LOOKUP=true needs the Kubernetes client: pip install 'brain[k8s]'"
        ) from exc
    except Exception as exc:  # the client's ConfigException: no cluster, no kubeconfig
        raise RuntimeError(
            "BRAIN_K8S_LOOKUP=true: no Kubernetes credentials (not in a cluster, and "
            f"BRAIN_K8S_KUBECONFIG / the default kubeconfig cannot be used): {exc}"
        ) from exc
    where = settings.k8s_namespace or "every namespace"
    log.info("requests of unregistered DLRover jobs are read from ElasticJobs in %s", where)
    return ElasticJobLookup(api, settings.input_bounds, settings.k8s_namespace)
