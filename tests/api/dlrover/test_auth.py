"""BRAIN_GRPC_AUTH=false: the gRPC port answers without a token even while API tokens
exist (DLRover 0.6.1 masters send no metadata); test_grpc_tokens.py covers the rules."""

from __future__ import annotations

import grpc
import pytest
from dlrover.proto import brain_pb2, brain_pb2_grpc
from fastapi.testclient import TestClient

from api.app import create_app
from api.server import dlrover_grpc
from brain.db.engine import make_session_factory
from brain.services.tokens import TokenScope, create_token
from tests.builders.dlrover import JOB_UID
from tests.ports import free_port


@pytest.fixture
def secrets(db) -> dict[str, str]:
    made = {}
    with make_session_factory(db)() as session:
        for scope in ("read", "write"):
            made[scope] = create_token(session, f"{scope}-token", TokenScope(scope), None).secret
        made["ns"] = create_token(session, "ns-token", TokenScope.write, ["team-a"]).secret
        session.commit()
    return made


def _call(addr: str, secret: str | None):
    request = brain_pb2.OptimizeRequest(type="job_stage_create")
    request.jobs.add().uid = JOB_UID
    metadata = [("authorization", f"Bearer {secret}")] if secret else None
    with grpc.insecure_channel(addr) as channel:
        return brain_pb2_grpc.BrainStub(channel).optimize(request, metadata=metadata)


def test_grpc_auth_off_serves_masters_that_send_no_token(settings, secrets):
    port = free_port()
    off = settings.model_copy(update={"grpc_port": port, "grpc_auth": False})
    with TestClient(create_app(off, [dlrover_grpc])):
        assert _call(f"127.0.0.1:{port}", None).job_optimize_plans
