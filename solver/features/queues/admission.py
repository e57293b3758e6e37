"""May a job enter its queue (the `enqueue` action), and may a pod be allocated (the gate)?"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from solver.config import SchedulerConf
from solver.features._base import EnqueueGate
from solver.features.queues.mode import QuotaMode
from solver.features.queues.tree import QueueTree, job_queue
from solver.model import Gang, Pod
from solver.snapshot import Snapshot

__all__ = ["Enqueued", "gate_failure", "plan_enqueue"]


MAX_AHEAD = 16
"""The most jobs admitted ahead a refused job's certificate names (the first, in walk
order)."""


@dataclass
class Enqueued:
    """The enqueue walk's answer: the jobs refused, with the reason, and for those the
    queue would have taken at the start of the cycle, the jobs admitted ahead of them
    this cycle into a queue of their path (in walk order): the refusal is competition,
    not a rule of the job itself."""

    rejected: dict[str, str] = field(default_factory=dict)
    behind: dict[str, tuple[str, ...]] = field(default_factory=dict)


def gate_failure(
    tree: QueueTree, mode: QuotaMode, leaf: str, request: dict[str, int], *, enqueue: bool
) -> str | None:
    """Why `request` does not fit `leaf` and every ancestor now; None when it fits."""
    if tree.broken:
        return f"queue tree is invalid, {mode.rejecter} rejects everything: {tree.broken}"
    queue = tree.queues[leaf]
    if queue.state != "Open":
        return f"queue {leaf} is {queue.state}"
    if not queue.leaf:
        return f"queue {leaf} is not a leaf queue; only leaf queues run jobs"
    return mode.gate(tree, leaf, request, enqueue=enqueue)


QuotaCheck = Callable[[QueueTree], "str | None"]
"""A job's quota gate on a queue tree: why it may not enter, None when it may."""


class _Ahead:
    """Who was admitted ahead of a refused job, when that is why: the queue tree and the
    cluster-wide gates as they stood before the cycle's first admission, and the first jobs
    admitted (with a request: those took room), per queue below the root and in all."""

    def __init__(self, tree: QueueTree | None, gates: Sequence[EnqueueGate]) -> None:
        self.tree, self.gates = tree, gates
        self.start_tree: QueueTree | None = None
        self.start_gates: list[EnqueueGate] | None = None
        self.under: dict[str, list[tuple[int, str]]] = {}  # queue -> (walk position, gang)
        self.first: list[tuple[int, str]] = []

    def admitting(self, position: int, gid: str, leaf: str | None, request: bool) -> None:
        """Call before the job is counted anywhere."""
        if self.start_gates is None:
            self.start_gates = [gate.fork() for gate in self.gates]
        if not request:
            return
        if self.tree is not None and self.start_tree is None:
            self.start_tree = self.tree.fork()
        if len(self.first) < MAX_AHEAD:
            self.first.append((position, gid))
        for q in self.tree.path(leaf)[:-1] if self.tree is not None and leaf else ():
            if len(jobs := self.under.setdefault(q, [])) < MAX_AHEAD:  # below the root
                jobs.append((position, gid))

    def behind(
        self, gang: Gang, pending: Sequence[Pod], leaf: str | None, quota: QuotaCheck | None
    ) -> tuple[str, ...]:
        """For a refused job: the jobs admitted ahead of it when, before them, the queue
        (`quota`: a check on a tree, or None when the quota did not refuse) and every gate
        would have taken it; () otherwise."""
        if self.start_gates is None:
            return ()
        if quota is not None and (self.start_tree is None or quota(self.start_tree)):
            return ()
        if any(gate.refuse(gang, pending) for gate in self.start_gates):
            return ()
        if quota is None or self.tree is None or leaf is None:
            ahead = set(self.first)
        else:
            ahead = {job for q in self.tree.path(leaf)[:-1] for job in self.under.get(q, ())}
        return tuple(gid for _, gid in sorted(ahead)[:MAX_AHEAD])


def _quota_check(
    tree: QueueTree | None, mode: QuotaMode | None, leaf: str | None, request: dict[str, int]
) -> QuotaCheck | None:
    """The job's quota gate (None: no quota asks anything of it)."""
    if tree is None or mode is None or leaf is None or not (request or tree.broken):
        return None
    return lambda t: gate_failure(t, mode, leaf, request, enqueue=True)


def plan_enqueue(
    snapshot: Snapshot,
    conf: SchedulerConf,
    tree: QueueTree | None,
    mode: QuotaMode | None,
    jobs: Sequence[tuple[str, Gang, Sequence[Pod]]],
    gates: Sequence[EnqueueGate] = (),
) -> Enqueued:
    """Jobs (gang id, gang, pending pods; in queue order) that may not enter their queue this
    cycle, with the reason (and who was admitted ahead, when that is why: `Enqueued`).

    A job already admitted (PodGroup phase Inqueue/Running, or any running member) is not
    asked again. Without a request (`minResources`) the capacity plugin permits (Volcano's
    rule). Admission adds the request to the queue's inqueue for the jobs after it. The
    cluster-wide `gates` are asked after the quota's own (in their order); a job any of
    them refuses is not enqueued and counts nowhere, as Volcano's enqueue action does.
    Without a queue tree (`tree` None: no quota plugin) only the gates are asked.
    """
    out = Enqueued()
    ahead = _Ahead(tree, gates)
    if tree is not None:
        for gate in gates:
            gate.walked = True
    for position, (gid, gang, pending) in enumerate(jobs):
        leaf = None
        if tree is not None:
            leaf = mode.job_queue(gang, pending) if mode is not None else job_queue(gang, pending)
        if tree is not None and leaf is not None and leaf not in tree.queues:
            out.rejected[gid] = f"queue {leaf} does not exist"
            continue
        if tree is not None and leaf is not None and not tree.queues[leaf].leaf:
            out.rejected[gid] = f"queue {leaf} is not a leaf queue; only leaf queues run jobs"
            continue
        if gang.phase in ("Inqueue", "Running") or snapshot.gang_running(gid) > 0:
            continue
        if "enqueue" not in conf.actions and not (mode is not None and mode.always_walks):
            continue
        if mode is not None and (refused := mode.refuse(gid)):
            out.rejected[gid] = refused
            continue
        request = mode.request(gang, pending, snapshot) if mode is not None and leaf else {}
        quota = _quota_check(tree, mode, leaf, request)
        quota_why = quota(tree) if quota is not None and tree is not None else None
        gate_why = None if quota_why else next(
            (w for gate in gates if (w := gate.refuse(gang, pending))), None
        )  # fmt: skip
        if why := quota_why or gate_why:
            out.rejected[gid] = why
            if who := ahead.behind(gang, pending, leaf, quota if quota_why else None):
                out.behind[gid] = who
            continue
        ahead.admitting(position, gid, leaf, bool(request) or bool(gang.min_resources))
        if tree is not None and leaf is not None:
            tree.bump(leaf, "inqueue", request)
            if mode is not None:
                mode.admitted(tree, leaf, request)
        for gate in gates:
            gate.admit(gang, pending)
    return out
