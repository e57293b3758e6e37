"""Node-group resource limits, re-derived from the Queue annotations and the node labels.

`nodegroup` with a queue annotated `volcano.sh/nodegroup-resource-limits` (a JSON object
of node group -> resource -> quantity): for every queue Q and node group G that receive
pods in the Decision (placed or nominated), and every resource R the limit for G lists,

    requests of Q's running, non-terminating pods on G's nodes (less the victims)
  + requests of Q's pods the Decision puts on G's nodes          ≤  limit(Q, G)[R]

A queue whose annotation cannot be read gets no pod at all (every node fails upstream).
Read here with the standard JSON parser and `solver.quantity`, apart from the policy.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from solver.json_limits import read_json
from solver.quantity import QuantityError, to_int
from solver.snapshot import TERMINATING
from solver.verify._context import VerifyContext
from solver.verify._queues import NODEGROUP, _charged_queue, _queue_of

__all__ = ["nodegroup_limits"]

ANNOTATION = "volcano.sh/nodegroup-resource-limits"


def _limit(resource: str, value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        value = value.strip()
        if value.startswith("-"):
            return -to_int(resource, value[1:])
    elif isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return -to_int(resource, -value)
    return to_int(resource, value)


def _read(text: str | None) -> dict[str, dict[str, int]] | None:
    """group -> resource -> limit; None when the annotation is invalid."""
    if not text:
        return {}
    try:
        value = read_json(text, parse_constant=lambda name: float("nan"))
        if value is None:
            return {}
        if not isinstance(value, dict):
            return None
        out: dict[str, dict[str, int]] = {}
        for group, body in value.items():
            if body is not None and not isinstance(body, dict):
                return None
            out[group] = {r: _limit(r, v) for r, v in (body or {}).items() if r != "pods"}
        return out
    except (ValueError, QuantityError):
        return None


def _running(
    ctx: VerifyContext, wanted: set[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, int]]:
    """Requests of the running, non-terminating pods per (queue, group) in `wanted`, victims
    excluded. The columns only narrow the rows down (a pod naming one of the queues, or of a
    gang that does, on a node of one of the groups); each is then read on its own."""
    running = ctx.snapshot.running
    queues = {q for q, _ in wanted}
    groups = {g for _, g in wanted}
    ids = [i for q in queues if (i := running.queue_names.get(q)) >= 0]
    on_group = np.array(
        [n.labels.get(NODEGROUP) in groups for n in running.nodes.nodes] + [False], dtype=bool
    )
    gang = running.gang.astype(np.int64)
    gang_queue = ctx.snapshot.gang_queue.astype(np.int64)
    named = (
        np.where(
            (gang >= 0) & (gang < gang_queue.size),
            gang_queue[np.clip(gang, 0, gang_queue.size - 1)],
            -1,
        )
        if gang_queue.size
        else np.full(gang.size, -1)
    )
    rows = np.flatnonzero(
        running.alive
        & on_group[running.node.astype(np.int64)]
        & ((running.flags & TERMINATING) == 0)
        & (np.isin(running.queue, ids) | np.isin(named, ids))
    )
    nodes = running.nodes.nodes
    out: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    requests = running.requests()
    for row in rows.tolist():
        group = nodes[int(running.node[row])].labels.get(NODEGROUP)
        queue = _charged_queue(ctx, row)
        if queue is None or group is None or (queue, group) not in wanted:
            continue
        if running.key(row) in ctx.evicted:
            continue
        for r, v in zip(running.resources, requests[row].tolist(), strict=False):
            if v:
                out[queue, group][r] += v
    return out


def nodegroup_limits(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    limits: dict[str, dict[str, dict[str, int]] | None] = {}
    added: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for node_name, pods in sorted(ctx.new_on.items()):
        group = ctx.node(node_name).labels.get(NODEGROUP)
        for pod in pods:
            queue = _queue_of(ctx, pod.gang)
            if queue is None:
                continue
            if queue not in limits:
                spec = ctx.snapshot.queues.get(queue)
                limits[queue] = _read(spec.annotations.get(ANNOTATION) if spec else None)
            mine = limits[queue]
            if mine is None:
                problems.append(
                    f"{pod.key}: placed although queue {queue}'s {ANNOTATION} is invalid"
                )
                continue
            if group is None or group not in mine:
                continue
            for r, v in pod.requests.items():
                added[queue, group][r] += v
    if not added:
        return problems
    used = _running(ctx, set(added))
    for (queue, group), extra in sorted(added.items()):
        limit = limits[queue] or {}
        for r, cap in sorted(limit[group].items()):
            total = used.get((queue, group), {}).get(r, 0) + extra.get(r, 0)
            if total > cap:
                problems.append(
                    f"queue {queue}: node group {group}: {r} running + placed {total} > limit {cap}"
                )
    return problems
