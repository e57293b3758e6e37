"""May a job enter its queue (the `enqueue` action), and may a pod be allocated (the gate)?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from solver.config import SchedulerConf
from solver.features._base import EnqueueGate
from solver.features.queues.mode import QuotaMode
from solver.features.queues.tree import QueueTree, job_queue
from solver.model import Gang, Pod
from solver.snapshot import Snapshot

__all__ = ["Enqueued", "ask_gates", "gate_failure", "plan_enqueue"]


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
        return f"queue tree is invalid, the capacity plugin rejects everything: {tree.broken}"
    queue = tree.queues[leaf]
    if queue.state != "Open":
        return f"queue {leaf} is {queue.state}"
    if not queue.leaf:
        return f"queue {leaf} is not a leaf queue; only leaf queues run jobs"
    return mode.gate(tree, leaf, request, enqueue=enqueue)


def plan_enqueue(
    snapshot: Snapshot,
    conf: SchedulerConf,
    tree: QueueTree,
    mode: QuotaMode,
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
    """
    rejected: dict[str, str] = {}
    behind: dict[str, tuple[str, ...]] = {}
    start: QueueTree | None = None  # the tree before this cycle's first admission
    admitted: dict[str, list[tuple[int, str]]] = {}  # queue -> the first jobs admitted under
    #   it with a request, (walk position, gang); at most MAX_AHEAD each
    for gate in gates:
        gate.walked = True
    for position, (gid, gang, pending) in enumerate(jobs):
        leaf = job_queue(gang, pending)
        if leaf is None:  # in no queue: only the cluster-wide rules
            why = ask_gates(snapshot, conf, gid, gang, pending, gates)
            if why:
                rejected[gid] = why
            continue
        if leaf not in tree.queues:
            rejected[gid] = f"queue {leaf} does not exist"
            continue
        if not tree.queues[leaf].leaf:
            rejected[gid] = f"queue {leaf} is not a leaf queue; only leaf queues run jobs"
            continue
        if gang.phase in ("Inqueue", "Running") or snapshot.gang_running(gid) > 0:
            continue
        if "enqueue" not in conf.actions:
            continue
        request = mode.request(gang, pending, snapshot)
        why = (
            gate_failure(tree, mode, leaf, request, enqueue=True)
            if request or tree.broken
            else None
        )
        if (
            why
            and start is not None
            and gate_failure(start, mode, leaf, request, enqueue=True) is None
        ):
            ahead = {job for q in tree.path(leaf)[:-1] for job in admitted.get(q, ())}
            behind[gid] = tuple(other for _, other in sorted(ahead)[:MAX_AHEAD])
        why = why or next((w for gate in gates if (w := gate.refuse(gang, pending))), None)
        if why:
            rejected[gid] = why
            continue
        if request:
            if start is None:
                start = tree.fork()
            for q in tree.path(leaf)[:-1]:  # below the root, which only sums its children
                if len(jobs_under := admitted.setdefault(q, [])) < MAX_AHEAD:
                    jobs_under.append((position, gid))
        tree.bump(leaf, "inqueue", request)
        for gate in gates:
            gate.admit(gang, pending)
    return Enqueued(rejected, {gid: who for gid, who in behind.items() if who})


def ask_gates(
    snapshot: Snapshot,
    conf: SchedulerConf,
    gid: str,
    gang: Gang,
    pending: Sequence[Pod],
    gates: Sequence[EnqueueGate],
) -> str | None:
    """The cluster-wide rules alone for one job (one not admitted yet, with `enqueue`):
    the first refusal, else every gate counts the job."""
    if not gates or "enqueue" not in conf.actions:
        return None
    if gang.phase in ("Inqueue", "Running") or snapshot.gang_running(gid) > 0:
        return None
    why = next((w for gate in gates if (w := gate.refuse(gang, pending))), None)
    if why is None:
        for gate in gates:
            gate.admit(gang, pending)
    return why
