"""`Why`: a gang's certificate, the changes that would let it run and its start estimate.

The cycle is the one PlaceJob runs (the servicer's pipeline, verified); the certificate is
read from its Decision. The changes (`solver.changes`) and the estimate (`solver.start`)
work on the snapshot with the request's job in it, each check a `Delta` and a scheduling
call of its own, within what is left of the call's deadline (kinds not sized by then are
left out; an estimate not reached says so); a cancelled call or the drain's end stops them
the same way.
"""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from solver.changes import changes
from solver.codec import ConvertError, certificate_to_proto, job_from_proto
from solver.config import SchedulerConf
from solver.decision import Decision
from solver.plan import Catalog
from solver.snapshot import Delta, Snapshot
from solver.start import MAX_RUNTIME, estimate, running_ends

__all__ = ["clock", "why_answer"]


def _with_job(snapshot: Snapshot, job: pb.Job) -> Snapshot:
    """The snapshot with the request's job in it (its gangs and pending pods)."""
    pods, given, _ = job_from_proto(job, "job", snapshot)
    if not pods and not given:
        return snapshot
    return snapshot.apply(Delta(upsert_gangs=tuple(given.values()), upsert_pods=tuple(pods)))


def clock(request: spb.WhyRequest) -> tuple[datetime, timedelta | None]:
    """`now` and `default_runtime_seconds`, checked: ConvertError names the field."""
    now = datetime.now(UTC)
    if request.HasField("now"):
        try:
            now = request.now.ToDatetime(tzinfo=UTC)
        except (ValueError, OverflowError):
            raise ConvertError([("now", "not a time between years 1 and 9999")]) from None
    seconds = request.default_runtime_seconds
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_RUNTIME.total_seconds():
        reason = f"must be 0 (none) or a positive number of seconds up to {MAX_RUNTIME.days}d"
        raise ConvertError([("default_runtime_seconds", reason)])
    return now, timedelta(seconds=seconds) if seconds > 0 else None


def why_answer(
    snapshot: Snapshot,
    request: spb.WhyRequest,
    decision: Decision,
    conf: SchedulerConf,
    deadline: float,
    stop: threading.Event | None = None,
    *,
    catalog: Catalog | None = None,
) -> tuple[bool, spb.WhyResponse]:
    """(placed, the response without its Decision and generation) for `request.gang`;
    `catalog`: the request's node types (`catalog_of`), which the `nodes` change buys."""
    gang = request.gang
    placed = decision.gang_placed(gang)
    response = spb.WhyResponse(placed=placed)
    if placed:
        return True, response
    cert = decision.certificates.get(gang)
    if cert is not None:
        response.certificate.CopyFrom(certificate_to_proto(cert))
    base = _with_job(snapshot, request.job)
    half = time.perf_counter() + (deadline - time.perf_counter()) / 2
    for change in changes(base, conf, gang, cert, deadline=half, stop=stop, catalog=catalog):
        response.changes.append(
            spb.Change(
                kind=change.kind,
                change=change.text,
                size=change.size,
                target=change.target,
                dimension=change.dimension,
            )
        )
    now = request.now.ToDatetime(tzinfo=UTC) if request.HasField("now") else datetime.now(UTC)
    runtime = (
        timedelta(seconds=request.default_runtime_seconds)
        if request.default_runtime_seconds > 0
        else None
    )
    ends, unknown = running_ends(base, runtime, conf.runtimes)
    found = estimate(base, conf, gang, now, ends, unknown, deadline=deadline, stop=stop)
    if found is None:
        response.start.text = "not estimated: the call's deadline ran out or the call ended"
        return False, response
    if found.at is not None:
        at = Timestamp()
        at.FromDatetime(found.at)
        response.start.at.CopyFrom(at)
    response.start.nodes.extend(found.nodes)
    response.start.after.extend(found.after)
    response.start.ahead.extend(found.ahead)
    response.start.unknown_ends = found.unknown
    response.start.text = found.text()
    return False, response
