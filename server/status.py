"""How the servicer fails: `Abort` carries a status code and field violations, `guard`
maps every exception of a method to its status (the codes are listed in the proto's header
comment: INVALID_ARGUMENT with BadRequest field paths, NOT_FOUND, FAILED_PRECONDITION,
RESOURCE_EXHAUSTED, INTERNAL — never UNKNOWN); the request checks every method shares."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from server.store import NotFound, StaleGeneration, TooManySnapshots
from solver import ConfigError, InputError, InternalError, SchedulerConf, conf_from_text
from solver.codec import ConvertError
from solver.snapshot import DeltaError

__all__ = [
    "MAX_SEED",
    "MAX_SNAPSHOT_ID",
    "MAX_SOLVER_WORKERS",
    "Abort",
    "check_id",
    "check_search_options",
    "conf_from_text_cached",
    "guard",
]

log = logging.getLogger("gangplan.server")

MAX_SNAPSHOT_ID = 253  # a Kubernetes object name's limit: ids are echoed in errors


def check_id(snapshot_id: str, field: str) -> None:
    """An id no snapshot can have is INVALID_ARGUMENT in every method, not NOT_FOUND."""
    if len(snapshot_id) > MAX_SNAPSHOT_ID:
        message = f"longer than {MAX_SNAPSHOT_ID} characters"
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, message, [(field, message)])


class Abort(Exception):
    """Raised inside the servicer; turned into a status by `guard`."""

    def __init__(
        self, code: grpc.StatusCode, message: str, violations: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = violations or []


def abort(context: grpc.ServicerContext, err: Abort) -> NoReturn:
    if not err.violations:
        context.abort(err.code, err.message)
    bad = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=f, description=d)
            for f, d in err.violations
        ]
    )
    detail = any_pb2.Any()
    detail.Pack(bad)
    status = status_pb2.Status(code=err.code.value[0], message=err.message, details=[detail])
    context.abort_with_status(rpc_status.to_status(status))
    raise AssertionError("unreachable")  # abort raises


MAX_SOLVER_WORKERS = 64  # CP-SAT num_workers
MAX_SEED = 2**31 - 1  # CP-SAT random_seed is an int32


def check_search_options(options: Any) -> None:
    """`options.workers` and `options.seed` within what CP-SAT takes (INVALID_ARGUMENT)."""
    violations = []
    if not 0 <= options.workers <= MAX_SOLVER_WORKERS:
        violations.append(("options.workers", f"must be 0..{MAX_SOLVER_WORKERS}"))
    if not 0 <= options.seed <= MAX_SEED:
        violations.append(("options.seed", f"must be 0..{MAX_SEED}"))
    if violations:
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid search options", violations)


def guard(method: Callable[..., Any]) -> Callable[..., Any]:
    """Maps the servicer's exceptions to status codes (see the module docstring)."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Abort as err:
            abort(context, err)
        except (ConvertError, DeltaError) as err:
            abort(context, Abort(grpc.StatusCode.INVALID_ARGUMENT, str(err), err.violations))
        except NotFound as err:
            abort(context, Abort(grpc.StatusCode.NOT_FOUND, str(err)))
        except StaleGeneration as err:
            abort(context, Abort(grpc.StatusCode.FAILED_PRECONDITION, str(err)))
        except TooManySnapshots as err:
            abort(context, Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err)))
        except InputError as err:
            abort(context, Abort(grpc.StatusCode.INVALID_ARGUMENT, str(err), [("", str(err))]))
        except InternalError as err:
            log.exception("internal error")
            abort(context, Abort(grpc.StatusCode.INTERNAL, str(err)))
        except Exception:
            if context.code() is not None:  # type: ignore[attr-defined]  # grpc's abort
                raise
            # A bug, not the client's fault: INTERNAL with a log line, never UNKNOWN.
            log.exception("unexpected error in %s", method.__name__)
            abort(
                context,
                Abort(grpc.StatusCode.INTERNAL, "internal error; the server log has details"),
            )

    return wrapper


@functools.lru_cache(maxsize=32)
def conf_from_text_cached(text: str) -> SchedulerConf:
    """Parse a Volcano conf sent in a request (cached: front ends resend the same text)."""
    source = "options.scheduler_conf"
    try:
        return conf_from_text(text, source)
    except ConfigError as err:
        where = source + (f".{err.field}" if err.field else "")
        raise Abort(
            grpc.StatusCode.INVALID_ARGUMENT, f"{where}: {err.message}", [(where, err.message)]
        ) from None
