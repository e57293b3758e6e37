"""Admission: at most `workers` placement calls run, `max_queued` more wait, and the
health service never waits behind them.

grpcio runs every RPC — health checks included — on one thread pool, so with every thread
solving, a Kubernetes probe would starve and the pod be restarted for being busy. Here the
pool has a thread for every call the server admits plus `HEALTH_THREADS`; this interceptor
admits at most `workers + max_queued` calls of the placement service (more get
RESOURCE_EXHAUSTED at once) and lets `workers` of them run, the rest waiting on a
semaphore in their own thread — so health, reflection and the waiting calls always have a
thread. A waiting call whose client has gone stops waiting. The running calls take turns
at Python through the compute gate (`solver.gate`: one computes at a time, CP-SAT
searches run beside it), which is what keeps 32 concurrent small calls as fast as one.

On SIGTERM `close()` refuses every new placement call with UNAVAILABLE (what clients and
gRPC retry policies retry on another replica) while the admitted ones finish, and
`wait_idle` tells the drain when none is left: only then does grpc's own stop run, which
would end a call still on its way in with CANCELLED.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import grpc

from server.interceptors import Continuation, Handler, wrap_handler
from solver.gate import GATE, Slots

__all__ = ["HEALTH_THREADS", "AdmissionInterceptor"]

HEALTH_THREADS = 4  # health and reflection calls served at once, whatever the solvers do
ADMITTED = ("/gangplan.v1.PlacementService/",)
POLL = 0.05  # s: how often a waiting call checks that its client is still there


class AdmissionInterceptor(grpc.ServerInterceptor):
    def __init__(self, workers: int, max_queued: int, gated: bool = True) -> None:
        self._gated = gated
        self._running = Slots(workers)
        self._limit = workers + max_queued
        self._admitted = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False

    def close(self) -> None:
        """From now on, refuse new placement calls with UNAVAILABLE."""
        with self._lock:
            self._closed = True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no admitted call is left (or `timeout` s); True when none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._admitted == 0, max(0.0, timeout))

    def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> Handler | None:
        handler = continuation(details)
        if handler is None or not details.method.startswith(ADMITTED):
            return handler
        return wrap_handler(handler, self._admit)

    def _admit(self, behaviour: Callable[..., Any]) -> Callable[..., Any]:
        def call(request: Any, context: grpc.ServicerContext) -> Any:
            with self._lock:
                closed = self._closed
                full = self._admitted >= self._limit
                if not full and not closed:
                    self._admitted += 1
            if closed:
                context.abort(
                    grpc.StatusCode.UNAVAILABLE, "the server is shutting down; retry elsewhere"
                )
            if full:
                context.abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"{self._limit} calls running or queued; retry later",
                )
            try:
                if not self._running.acquire(give_up=lambda: not context.is_active(), poll=POLL):
                    context.abort(grpc.StatusCode.CANCELLED, "the client went away")
                try:
                    return self._computing(behaviour, request, context)
                finally:
                    self._running.release()
            finally:
                with self._idle:
                    self._admitted -= 1
                    if self._admitted == 0:
                        self._idle.notify_all()

        return call

    def _computing(
        self, behaviour: Callable[..., Any], request: Any, context: grpc.ServicerContext
    ) -> Any:
        """The call, holding the compute gate (`solver.gate`): the running calls take
        turns at Python (their CP-SAT searches still run side by side)."""
        if not self._gated:
            return behaviour(request, context)
        if not GATE.acquire(give_up=lambda: not context.is_active(), poll=POLL):
            context.abort(grpc.StatusCode.CANCELLED, "the client went away")
        try:
            return behaviour(request, context)
        finally:
            GATE.release()
