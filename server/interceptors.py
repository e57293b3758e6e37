"""Server interceptors: observability (request id, metrics, one log line per RPC) and auth.

The observability interceptor is outermost, so rejected calls are counted and logged too.
The bearer-token check guards every method except the health service (Kubernetes probes
carry no token); a rejected call gets UNAUTHENTICATED before any servicer code runs, so it
touches no state.
"""

from __future__ import annotations

import contextvars
import hmac
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import grpc

from server.metrics import GRPC_CODE_NAMES, Metrics, grpc_type

__all__ = [
    "AuthInterceptor",
    "Continuation",
    "Handler",
    "JsonFormatter",
    "ObservabilityInterceptor",
    "request_id",
    "wrap_handler",
]

HEALTH_PREFIX = "/grpc.health.v1.Health/"
REQUEST_ID = "x-request-id"

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
log = logging.getLogger("gangplan.server")

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Continuation: TypeAlias = "Callable[[grpc.HandlerCallDetails], Handler | None]"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, message, request id and any `extra` fields."""

    FIELDS = ("method", "code", "ms", "peer", "snapshot", "engine", "status")

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname,
            "msg": record.getMessage(),
        }
        rid = request_id.get()
        if rid:
            data["request_id"] = rid
        for name in self.FIELDS:
            if hasattr(record, name):
                data[name] = getattr(record, name)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, sort_keys=False)


def _code(context: grpc.ServicerContext) -> grpc.StatusCode | None:
    """The code the servicer set (abort, set_code); the stubs omit `ServicerContext.code`."""
    code: grpc.StatusCode | None = context.code()  # type: ignore[attr-defined]
    return code


def _metadata(details: grpc.HandlerCallDetails) -> dict[str, str]:
    return {k: v for k, v in details.invocation_metadata or () if isinstance(v, str)}


def wrap_handler(
    handler: Handler, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> Handler:
    """The same kind of handler with its behaviour wrapped."""
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(
            wrap(handler.unary_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(
            wrap(handler.unary_stream),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(
            wrap(handler.stream_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    assert handler.stream_stream is not None
    return grpc.stream_stream_rpc_method_handler(
        wrap(handler.stream_stream),
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class AuthInterceptor(grpc.ServerInterceptor):
    """Requires `authorization: Bearer <token>` on every method but health."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> Handler | None:
        handler = continuation(details)
        if handler is None or details.method.startswith(HEALTH_PREFIX):
            return handler
        given = _metadata(details).get("authorization", "").encode()
        if hmac.compare_digest(given, self._expected):
            return handler

        def deny(_behaviour: Callable[..., Any]) -> Callable[..., Any]:
            def abort(_request: Any, context: grpc.ServicerContext) -> Any:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

            return abort

        return wrap_handler(handler, deny)


class ObservabilityInterceptor(grpc.ServerInterceptor):
    """Request id (from `x-request-id` or a new one, echoed back), the standard gRPC server
    metrics and one log line per RPC, written when the RPC ends: for a response stream (health
    `Watch`, reflection) that is when the stream ends, not when the handler returns it."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> Handler | None:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method
        rid = _metadata(details).get(REQUEST_ID) or uuid.uuid4().hex[:16]
        labels = self.metrics.rpc_labels(_rpc_type(handler), method)
        streaming_in, streaming_out = handler.request_streaming, handler.response_streaming

        def finish(peer: str, code: grpc.StatusCode, started: float) -> None:
            seconds = time.perf_counter() - started
            name = GRPC_CODE_NAMES.get(code, "Unknown")
            self.metrics.handled.labels(*labels, name).inc()
            self.metrics.handling_seconds.labels(*labels).observe(seconds)
            log.info(
                "rpc",
                extra={
                    "method": method,
                    "code": code.name,
                    "ms": round(seconds * 1000, 2),
                    "peer": peer,
                },
            )

        def counted(requests: Iterator[Any]) -> Iterator[Any]:
            for message in requests:
                self.metrics.received.labels(*labels).inc()
                yield message

        def streamed(
            responses: Iterator[Any], context: grpc.ServicerContext, started: float
        ) -> Iterator[Any]:
            token = request_id.set(rid)
            code = grpc.StatusCode.OK
            peer = context.peer()  # read now: a call that ended has none
            try:
                for message in responses:
                    self.metrics.sent.labels(*labels).inc()
                    yield message
            except GeneratorExit:  # grpc closes the stream: the client went away
                code = _gone(context)
                raise
            except Exception:
                code = _failed(context, method)
                raise
            finally:
                if code is grpc.StatusCode.OK:
                    code = _code(context) or (
                        grpc.StatusCode.OK if context.is_active() else _gone(context)
                    )
                finish(peer, code, started)
                request_id.reset(token)

        def observe(behaviour: Callable[..., Any]) -> Callable[..., Any]:
            def call(request: Any, context: grpc.ServicerContext) -> Any:
                self.metrics.started.labels(*labels).inc()
                if streaming_in:
                    request = counted(request)
                else:
                    self.metrics.received.labels(*labels).inc()
                token = request_id.set(rid)
                started = time.perf_counter()
                if streaming_out:
                    try:
                        context.send_initial_metadata(((REQUEST_ID, rid),))
                        responses = behaviour(request, context)
                    except Exception:  # refused before streaming (auth, admission)
                        finish(context.peer(), _failed(context, method), started)
                        raise
                    finally:
                        request_id.reset(token)
                    return streamed(responses, context, started)
                code = grpc.StatusCode.OK
                try:
                    context.send_initial_metadata(((REQUEST_ID, rid),))
                    response = behaviour(request, context)
                    self.metrics.sent.labels(*labels).inc()
                    return response
                except Exception:
                    code = _failed(context, method)
                    raise
                finally:
                    if code is grpc.StatusCode.OK:
                        code = _code(context) or grpc.StatusCode.OK
                    finish(context.peer(), code, started)
                    request_id.reset(token)

            return call

        return wrap_handler(handler, observe)


def _rpc_type(handler: Handler) -> str:
    """go-grpc-prometheus's `grpc_type` label."""
    return grpc_type(handler.request_streaming, handler.response_streaming)


def _failed(context: grpc.ServicerContext, method: str) -> grpc.StatusCode:
    """The code of a handler that raised: the one it aborted with, else UNKNOWN (logged)."""
    code = _code(context) or grpc.StatusCode.UNKNOWN
    if code is grpc.StatusCode.UNKNOWN:
        log.exception("unhandled error", extra={"method": method})
    return code


def _gone(context: grpc.ServicerContext) -> grpc.StatusCode:
    """Why a stream ended early: its deadline passed, or the client cancelled."""
    remaining = context.time_remaining()
    expired = remaining is not None and remaining <= 0
    return grpc.StatusCode.DEADLINE_EXCEEDED if expired else grpc.StatusCode.CANCELLED
