"""Malformed request bytes answered with INVALID_ARGUMENT.

grpcio answers a request its deserializer cannot parse with INTERNAL ("Exception
deserializing request!") before any servicer code runs. The client sent bad bytes, so the
contract says INVALID_ARGUMENT: the service's handlers are registered with a deserializer
that never raises — a parse failure becomes a `MalformedRequest` value — and a behaviour
that answers it with INVALID_ARGUMENT before the servicer sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import grpc

__all__ = ["MalformedRequest", "add_lenient_service"]


class MalformedRequest(NamedTuple):
    """What the deserializer returns instead of raising."""

    error: str


class _Registrations:
    """Stands in for a grpc.Server while generated code registers one service."""

    def __init__(self) -> None:
        self.service = ""
        self.handlers: Mapping[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def add_generic_rpc_handlers(self, _handlers: Any) -> None:
        pass  # the same handlers arrive in add_registered_method_handlers

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        self.service, self.handlers = service, handlers


def add_lenient_service(
    add_to_server: Callable[[Any, Any], None], servicer: object, server: grpc.Server
) -> None:
    """`add_XServicer_to_server(servicer, server)`, with every unary handler lenient."""
    captured = _Registrations()
    add_to_server(servicer, captured)
    handlers = {name: _lenient(h) for name, h in captured.handlers.items()}
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(captured.service, handlers),)
    )
    server.add_registered_method_handlers(captured.service, handlers)


def _lenient(handler: grpc.RpcMethodHandler[Any, Any]) -> grpc.RpcMethodHandler[Any, Any]:
    deserialize = handler.request_deserializer
    behaviour = handler.unary_unary
    if deserialize is None or behaviour is None:  # streaming: none in this service yet
        return handler

    def read(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # any parse failure: the client's bytes
            return MalformedRequest(str(exc) or type(exc).__name__)

    def call(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, MalformedRequest):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"malformed request bytes: {request.error}"
            )
        return behaviour(request, context)

    return grpc.unary_unary_rpc_method_handler(
        call, request_deserializer=read, response_serializer=handler.response_serializer
    )
