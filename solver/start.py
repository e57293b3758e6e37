"""When a gang will start: a replay of the running pods' expected ends.

A running pod's end is read from its annotations, in this order:

1. `gangplan.io/expected-end`: an RFC 3339 time;
2. `gangplan.io/expected-runtime`: a duration (`90m`, `2h30m`, `3600s`, `1d`) from its
   creationTimestamp;
3. else the runtime the conf's `expectedRuntime.priorityClasses` gives its priority class
   (`gangplan.io/priority-class`: the kube reader and the codec keep `priorityClassName`
   there), from its creationTimestamp;
4. else the caller's `default_runtime`, else the conf's `expectedRuntime.default` (none:
   the pod runs on; a runtime of 0 for its class says so too).

The ends are replayed in time order: at each, the pods ended by then are gone and one
scheduling cycle (the greedy, in queue order, so the gangs ahead of this one are placed
first) is run over every pending pod; the earliest end after which the gang is placed is
its start (found by bisection: an end only frees room). The estimate names where it would
go, whose ends it waits for (the gangs of the ended pods on those nodes) and the pending
gangs of its queue placed before it then — Slurm's `squeue --start` for gangs.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from solver.changes import OutOfTime
from solver.compile import compile_problem
from solver.conf_keys import ExpectedRuntime
from solver.config import SchedulerConf
from solver.model import EXPECTED_END, EXPECTED_RUNTIME, MAX_RUNTIME_SECONDS, PRIORITY_CLASS
from solver.schedule import schedule
from solver.snapshot import Delta, Snapshot, Workload

__all__ = [
    "END",
    "MAX_RUNTIME",
    "RUNTIME",
    "End",
    "Estimate",
    "estimate",
    "parse_duration",
    "parse_time",
    "running_ends",
]

END = EXPECTED_END
RUNTIME = EXPECTED_RUNTIME
_DURATION = re.compile(r"^(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?$")
MAX_RUNTIME = timedelta(seconds=MAX_RUNTIME_SECONDS)
"""The longest runtime read; longer ones are not read (counted among the unknown ends)."""


def parse_duration(text: str) -> timedelta | None:
    """`1d2h30m15s` (any part may be left out; at least one given; at most ten years),
    else None."""
    match = _DURATION.match(text.strip()) if len(text) <= 64 else None
    if not match or not any(match.groups()):
        return None
    d, h, m, s = (int(x) if x else 0 for x in match.groups())
    found = timedelta(days=d, hours=h, minutes=m, seconds=s)
    return found if found <= MAX_RUNTIME else None


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time (a time without a zone is UTC), None when it is not one."""
    if not text or len(text) > 64:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class End:
    """A running pod's expected end, where it runs and its gang."""

    at: datetime
    node: str
    gang: str


def _fallback(
    annotations: Mapping[str, str],
    default_runtime: timedelta | None,
    runtimes: ExpectedRuntime | None,
) -> timedelta | None:
    """The runtime of a pod that states none: its class's in the conf, else the call's
    default, else the conf's (None: it runs on)."""
    name = annotations.get(PRIORITY_CLASS)
    chosen: float | None
    if runtimes is not None and name in runtimes.priority_classes:
        chosen = runtimes.priority_classes[name]
    elif default_runtime is not None:
        return default_runtime
    else:
        chosen = runtimes.default if runtimes is not None else None
    return timedelta(seconds=chosen) if chosen else None


def _end_of(
    annotations: Mapping[str, str], started: float, fallback: timedelta | None
) -> datetime | None:
    """A running pod's end: its expected-end annotation, else its creation (`started`, epoch
    seconds; NaN unknown) plus its expected runtime or the `fallback` one."""
    if (at := parse_time(annotations.get(END))) is not None:
        return at
    runtime = parse_duration(annotations.get(RUNTIME, "")) or fallback
    if math.isnan(started) or runtime is None:
        return None
    try:
        return datetime.fromtimestamp(started, UTC) + runtime
    except (OverflowError, ValueError, OSError):  # past year 9999
        return None


def running_ends(
    snapshot: Snapshot,
    default_runtime: timedelta | None = None,
    runtimes: ExpectedRuntime | None = None,
) -> tuple[dict[str, End], int]:
    """Every running pod's expected end (by key), and how many have none (or none readable:
    an unreadable annotation counts as unknown). The snapshot keeps the annotations read
    and each pod's creation time; `runtimes` is the conf's `expectedRuntime`."""
    running = snapshot.running
    sets = running.label_sets
    ends: dict[str, End] = {}
    unknown = 0
    rows = running.rows()
    started = running.started[rows].tolist()
    fallbacks: dict[int, timedelta | None] = {}  # per annotation set: few in a snapshot
    for row, set_id, begun in zip(
        rows.tolist(), running.annotation_set[rows].tolist(), started, strict=True
    ):
        key = running.key(row)
        annotations = sets[set_id] if set_id >= 0 else {}
        if set_id not in fallbacks:
            fallbacks[set_id] = _fallback(annotations, default_runtime, runtimes)
        at = _end_of(annotations, begun, fallbacks[set_id])
        if at is None:
            unknown += 1
            continue
        gang = int(running.gang[row])
        name = running.gang_name(gang) if gang >= 0 else key
        ends[key] = End(at, running.node_name(row), name)
    return ends, unknown


@dataclass(frozen=True)
class Estimate:
    """The earliest start found (`at`, None: not within the known ends), where, and whose
    ends it waits for; `unknown`: running pods with no expected end (they run on)."""

    now: datetime
    at: datetime | None
    nodes: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    unknown: int = 0
    ahead: tuple[str, ...] = ()  # the pending gangs placed before it then, in queue order
    queue: str = ""  # its queue: `ahead` are the gangs of that queue ("": of any)

    def text(self) -> str:
        if self.at is None:
            tail = (
                f" ({self.unknown} running pod(s) have no readable expected end)"
                if self.unknown
                else ""
            )
            return f"no start found: it does not fit even after every known end{tail}"
        if self.at <= self.now:
            return "it can start now"
        wait = self.at - self.now
        hours, rest = divmod(int(wait.total_seconds()), 3600)
        when = (f"{hours} h " if hours else "") + f"{rest // 60} min"
        where = f" on {', '.join(self.nodes[:3])}" + (" …" if len(self.nodes) > 3 else "")
        after = f", after {', '.join(self.after[:3])} end" if self.after else ""
        extra = f" and {len(self.after) - 3} more" if len(self.after) > 3 else ""
        queue = f" in queue {self.queue}" if self.queue else ""
        ahead = f"; {len(self.ahead)} gang(s) ahead of it{queue}" if self.ahead else ""
        return f"starts in ~{when} ({self.at.isoformat()}){where}{after}{extra}{ahead}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat() if self.at else None,
            "nodes": list(self.nodes),
            "after": list(self.after),
            "unknownEnds": self.unknown,
            "ahead": list(self.ahead),
            "text": self.text(),
        }


def estimate(
    snapshot: Snapshot,
    conf: SchedulerConf | None,
    gang: str,
    now: datetime,
    ends: Mapping[str, End],
    unknown: int = 0,
    deadline: float | None = None,
    stop: threading.Event | None = None,
) -> Estimate | None:
    """The earliest start of `gang` (its pending pods in `snapshot`) by the running pods'
    expected `ends` (`running_ends`); None when `deadline` (a `time.perf_counter()`
    instant) passes or `stop` is set first. Each step removes the ended pods by a `Delta`."""
    conf = conf or SchedulerConf.default()
    members = [k for k, p in snapshot.pending.items() if p.gang == gang]

    def placed_at(when: datetime | None) -> dict[str, str] | None:
        late = deadline is not None and time.perf_counter() > deadline
        if late or (stop is not None and stop.is_set()):
            raise OutOfTime
        gone = tuple(sorted(k for k, e in ends.items() if when is not None and e.at <= when))
        d = schedule(snapshot.apply(Delta(remove_pods=gone)), conf, engine="greedy")
        if not d.gang_placed(gang):
            return None
        return {k: d.placed[k] for k in members if k in d.placed}

    try:
        found = _search(now, ends, unknown, placed_at)
    except OutOfTime:
        return None
    late = deadline is not None and time.perf_counter() > deadline
    if found.at is None or found.at <= now or late or (stop is not None and stop.is_set()):
        return found  # (past the deadline: without the gangs ahead, which one more cycle names)
    gone = tuple(sorted(k for k, e in ends.items() if e.at <= found.at))
    queue, ahead = _ahead(snapshot.apply(Delta(remove_pods=gone)), conf, gang)
    return replace(found, ahead=ahead, queue=queue)


def _ahead(snapshot: Snapshot, conf: SchedulerConf, gang: str) -> tuple[str, tuple[str, ...]]:
    """Its queue, and the pending gangs of that queue (of any, without one) the cycle at
    its start places before it, in the order the scheduler takes them."""
    problem = compile_problem(snapshot, conf, Workload.everything(snapshot))
    index = {gid: g for g, gid in enumerate(problem.gang_ids)}
    if gang not in index:
        return "", ()
    decision = schedule(snapshot, conf, engine="greedy")
    rank = {int(u): i for i, u in enumerate(problem.unit_order.tolist())}
    mine = rank.get(int(problem.gang_unit[index[gang]]), len(rank))
    own = snapshot.gangs[gang].queue if gang in snapshot.gangs else None
    before = sorted(
        (rank.get(int(problem.gang_unit[g]), len(rank)), gid)
        for gid, g in index.items()
        if gid != gang
        and rank.get(int(problem.gang_unit[g]), len(rank)) < mine
        and decision.gang_placed(gid)
        and (own is None or (gid in snapshot.gangs and snapshot.gangs[gid].queue == own))
    )
    return own or "", tuple(gid for _, gid in before)


def _search(
    now: datetime,
    ends: Mapping[str, End],
    unknown: int,
    placed_at: Callable[[datetime | None], dict[str, str] | None],
) -> Estimate:
    times = sorted({max(e.at, now) for e in ends.values()})
    if (where := placed_at(None)) is not None:
        return Estimate(now, now, tuple(sorted(set(where.values()))), (), unknown)
    if not times or placed_at(times[-1]) is None:
        return Estimate(now, None, unknown=unknown)
    lo, hi = 0, len(times) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if placed_at(times[mid]) is not None:
            hi = mid
        else:
            lo = mid + 1
    at = times[lo]
    where = placed_at(at) or {}
    nodes = set(where.values())
    waited = sorted({e.gang for e in ends.values() if e.at <= at and e.node in nodes})
    return Estimate(now, at, tuple(sorted(nodes)), tuple(waited), unknown)
