"""`gangplan serve`: run the service until SIGTERM or SIGINT, then drain.

On the signal, health goes NOT_SERVING (so load balancers and probes stop sending), new
calls are refused, and in-flight calls get `grace` seconds to finish.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

from pydantic import ValidationError

from server.app import create_server
from server.interceptors import JsonFormatter
from server.servicer import ScheduleFn
from server.settings import Settings

__all__ = ["configure_logging", "run", "serve"]

log = logging.getLogger("gangplan.server")


def configure_logging(level: str, formatter: logging.Formatter | None = None) -> None:
    """gangplan's loggers to standard error, one JSON object a line (`JsonFormatter`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter or JsonFormatter())
    root = logging.getLogger("gangplan")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


EXIT_ABORTED = 1  # a second SIGTERM/SIGINT cut the drain short


def serve(settings: Settings, *, schedule_fn: ScheduleFn | None = None) -> None:
    """Serve until SIGTERM/SIGINT (must run in the main thread)."""
    configure_logging(settings.log_level)
    srv, port = create_server(settings, schedule_fn=schedule_fn)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.is_set():  # a second signal: the operator wants out now
            log.warning(f"received {name} again: stopping without draining")
            os._exit(EXIT_ABORTED)
        log.info(f"received {name}: draining")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    srv.start()
    # the address /metrics is bound to (not the flag's default), so what it prints is reachable
    metrics = f", metrics on {srv.metrics.url}" if srv.metrics.url is not None else ""
    tls = " (TLS)" if settings.tls_cert else ""
    # One plain line on stdout that scripts (and tests) can wait for.
    print(f"gangplan serve: listening on {settings.host}:{port}{tls}{metrics}", flush=True)
    log.info("serving", extra={"peer": f"{settings.host}:{port}"})
    while not stop.wait(0.5):
        pass
    srv.stop()
    log.info("stopped")


def run(**flags: object) -> int:
    """`gangplan serve`: flags given (not None) win over `GANGPLAN_*` environment variables.

    Returns the exit status: 0 after a drain, 2 for invalid settings.
    """
    token_file = flags.pop("token_file", None)
    given = {k: v for k, v in flags.items() if v is not None}
    if token_file is not None:
        try:
            with open(str(token_file), encoding="utf-8") as f:
                given["token"] = f.read().strip()
        except OSError as err:
            print(f"error: --token-file {token_file}: cannot read: {err.strerror}", file=sys.stderr)
            return 2
        except UnicodeDecodeError:
            print(f"error: --token-file {token_file}: not UTF-8 text", file=sys.stderr)
            return 2
        if not given["token"]:
            print(f"error: --token-file {token_file}: the file is empty", file=sys.stderr)
            return 2
    try:
        settings = Settings(**given)  # type: ignore[arg-type]
    except ValidationError as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    try:
        serve(settings)
    except (OSError, RuntimeError) as err:  # the address cannot be bound
        print(f"error: cannot start: {err}", file=sys.stderr)
        return 2
    return 0


def _one_line(err: ValidationError) -> str:
    """Every bad setting in one line, named by its flag (`--tls-cert`), in our words."""
    parts = []
    for e in err.errors():
        field = ".".join(str(x) for x in e["loc"])
        flag = f"--{field.replace('_', '-')}" if field else "settings"
        parts.append(f"{flag}: {str(e['msg']).removeprefix('Value error, ')}")
    return "; ".join(parts)
