"""The REST API's token rules on the gRPC service: the same token, sent as call metadata
``authorization: Bearer <token>``, checked by brain.services.tokens.

``get_job_metrics`` reads (scope ``read``); the other calls write (``write``). The gRPC
calls name jobs by DLRover's uid without a namespace check, so a namespace-restricted
token is refused here (PERMISSION_DENIED) rather than trusted with every namespace. The
standard health service stays open, like /healthz. Refusals take their status from
``api.dlrover.errors``.
"""

from __future__ import annotations

import grpc
from sqlalchemy.exc import SQLAlchemyError

from api.dlrover.errors import status_of
from brain.errors import BrainError, Forbidden
from brain.services.tokens import AuthPolicy, Principal, TokenScope, bearer_secret

HEALTH_PREFIX = "/grpc.health.v1.Health/"
READ_METHODS = frozenset({"get_job_metrics"})


class TokenInterceptor(grpc.ServerInterceptor):
    def __init__(self, policy: AuthPolicy) -> None:
        self.policy = policy

    def intercept_service(self, continuation, handler_call_details):
        method = handler_call_details.method
        if method.startswith(HEALTH_PREFIX):
            return continuation(handler_call_details)
        secret = _bearer_secret(handler_call_details.invocation_metadata or ())
        try:
            principal = self.policy.authenticate(secret)
            _check_allowed(principal, method.rsplit("/", 1)[-1])
        except (BrainError, SQLAlchemyError) as exc:
            return _refuse(*status_of(exc))
        return continuation(handler_call_details)


def _check_allowed(principal: Principal, name: str) -> None:
    principal.require(TokenScope.read if name in READ_METHODS else TokenScope.write, name)
    if principal.namespaces is not None:
        raise Forbidden(
            f"token {principal.name!r} is limited to namespaces; the gRPC service needs "
            "a token for every namespace"
        )


def _bearer_secret(metadata) -> str | None:
    for key, value in metadata:
        if key.lower() == "authorization":
            return bearer_secret(str(value))
    return None


def _refuse(code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    def abort(_request, context):
        context.abort(code, message)

    return grpc.unary_unary_rpc_method_handler(abort)
