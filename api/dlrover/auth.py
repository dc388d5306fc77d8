"""The REST API's token rules on the gRPC service: the same token, sent as call metadata
``authorization: Bearer <token>``, checked by brain.services.tokens.

``get_job_metrics`` reads (scope ``read``); the other calls write (``write``). The gRPC
calls name jobs by DLRover's uid without a namespace check, so a namespace-restricted
token is refused here (PERMISSION_DENIED) rather than trusted with every namespace. The
standard health service stays open, like /healthz.
"""

from __future__ import annotations

import grpc
from sqlalchemy.exc import SQLAlchemyError

from brain.errors import Unauthorized
from brain.services.tokens import AuthPolicy, TokenScope

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
        except Unauthorized as exc:
            return _refuse(grpc.StatusCode.UNAUTHENTICATED, exc.message)
        except SQLAlchemyError:
            return _refuse(grpc.StatusCode.UNAVAILABLE, "the database cannot be reached")
        name = method.rsplit("/", 1)[-1]
        needed = TokenScope.read if name in READ_METHODS else TokenScope.write
        if not principal.allows(needed):
            return _refuse(
                grpc.StatusCode.PERMISSION_DENIED,
                f"token {principal.name!r} has scope {principal.scope}; {name} needs {needed}",
            )
        if principal.namespaces is not None:
            return _refuse(
                grpc.StatusCode.PERMISSION_DENIED,
                f"token {principal.name!r} is limited to namespaces; the gRPC service needs "
                "a token for every namespace",
            )
        return continuation(handler_call_details)


def _bearer_secret(metadata) -> str | None:
    for key, value in metadata:
        if key.lower() == "authorization":
            kind, _, secret = str(value).partition(" ")
            return secret.strip() or None if kind.lower() == "bearer" else None
    return None


def _refuse(code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    def abort(_request, context):
        context.abort(code, message)

    return grpc.unary_unary_rpc_method_handler(abort)
