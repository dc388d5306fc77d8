"""The gRPC service checks the REST API's tokens, sent as `authorization` metadata."""

from __future__ import annotations

import grpc
import pytest
from dlrover.proto import brain_pb2, brain_pb2_grpc
from fastapi.testclient import TestClient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from api.app import create_app
from api.server import dlrover_grpc
from brain.db.engine import make_session_factory
from brain.services.tokens import TokenScope, create_token
from tests.ports import free_port


@pytest.fixture
def secrets(db) -> dict[str, str]:
    with make_session_factory(db)() as session:
        made = {
            name: create_token(session, name, TokenScope(scope), namespaces).secret
            for name, scope, namespaces in [
                ("reader", "read", None),
                ("writer", "write", None),
                ("ml-only", "admin", ["ml"]),
            ]
        }
        session.commit()
    return made


def test_grpc_calls_need_a_token_of_the_right_scope(settings, secrets):
    port = free_port()
    app = create_app(settings.model_copy(update={"grpc_port": port}), parts=[dlrover_grpc])
    with TestClient(app), grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        serving = health.Check(health_pb2.HealthCheckRequest(service="brain.Brain"), timeout=10)
        assert serving.status == health_pb2.HealthCheckResponse.SERVING  # no token needed

        def code(call, request, secret=None):
            metadata = [("authorization", f"Bearer {secret}")] if secret else None
            try:
                call(request, metadata=metadata, timeout=10)
            except grpc.RpcError as exc:
                return exc.code(), exc.details()
            return grpc.StatusCode.OK, ""

        read = brain_pb2.JobMetricsRequest(job_uuid="nope")
        write = brain_pb2.JobMetrics(job_meta=brain_pb2.JobMeta(uuid="nope"))
        assert code(stub.get_job_metrics, read)[0] == grpc.StatusCode.UNAUTHENTICATED
        assert code(stub.get_job_metrics, read, "brain_wrong")[0] == grpc.StatusCode.UNAUTHENTICATED
        assert code(stub.get_job_metrics, read, secrets["reader"])[0] == grpc.StatusCode.OK
        denied = code(stub.persist_metrics, write, secrets["reader"])
        assert denied == (
            grpc.StatusCode.PERMISSION_DENIED,
            "token 'reader' has scope read; persist_metrics needs write",
        )
        assert code(stub.persist_metrics, write, secrets["writer"])[0] == grpc.StatusCode.OK
        restricted = code(stub.get_job_metrics, read, secrets["ml-only"])
        assert restricted[0] == grpc.StatusCode.PERMISSION_DENIED
        assert "limited to namespaces" in restricted[1]
