"""Per-node-group resource limits of a queue: Volcano's `volcano.sh/nodegroup-resource-limits`.

Queue annotation (upstream #4954, PR #5461; `pkg/scheduler/plugins/nodegroup/nodegroup.go`):

    volcano.sh/nodegroup-resource-limits: '{"group1": {"cpu": "3", "memory": "8Gi"}}'

For a pod of a job in queue Q on a node of group G (node label `volcano.sh/nodegroup-name`)
that Q's node-group affinity allows, Volcano's predicate checks, on every resource the
limit for G lists:

    allocated(Q, G) + the pod's request ≤ limit(Q, G)

where allocated(Q, G) sums the requests of Q's pods in an allocated state (bound, binding,
running; not terminating) on nodes of G, and grows as the cycle places pods. So the pods of
Q on G — running ones plus this cycle's — never exceed the limit, and once G is full Q
overflows to its other allowed groups. Details, as upstream:

* only the resources listed for G are limited; groups not listed are unlimited; the
  annotation is the queue's own (never inherited with `enableHierarchy`); `pods` is never
  limited (a pod's request never counts it, upstream or here);
* every listed resource is checked, also one the pod does not request: a group already over
  its limit (the limit was lowered) takes no more pods of Q at all;
* a node whose group has no room left fails with `node group resource limit exceeded`
  (counted like kube-scheduler's reasons, and shown by `explain` when the running pods
  alone fill the group);
* an annotation that is not a JSON object of group -> resource -> quantity fails every
  node for Q's pods (`node group resource limit annotation invalid`), before any other
  node-group check; the reason and the Decision's notes name the queue, the annotation and
  what is wrong with it. `null` and an empty value mean no limits; a negative quantity is
  a limit no pod fits.

Running usage is computed once per snapshot generation, vectorised over the snapshot's
columns, and only when some queue has the annotation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.features._base import CompileContext
from solver.features.nodegroup.groups import node_groups
from solver.json_limits import read_json
from solver.problem import Block, IntArray
from solver.quantity import PODS, UNLIMITED, QuantityError, to_int
from solver.snapshot import NONE, TERMINATING, Snapshot, charged_queue

__all__ = [
    "ANNOTATION",
    "REASON_LIMIT_EXCEEDED",
    "REASON_LIMIT_INVALID",
    "GroupLimits",
    "NodeGroupLimitBlock",
    "compile_limits",
    "invalid_reason",
    "parse_limits",
    "queue_limits",
    "running_use",
]

ANNOTATION = "volcano.sh/nodegroup-resource-limits"
REASON_LIMIT_INVALID = "node group resource limit annotation invalid"
REASON_LIMIT_EXCEEDED = "node group resource limit exceeded"


@dataclass(frozen=True)
class GroupLimits:
    """One queue's annotation: group -> resource -> limit (listed resources only), or why
    it cannot be read."""

    limits: Mapping[str, Mapping[str, int]]
    error: str | None = None


def _quantity(resource: str, value: object) -> int:
    """A limit quantity (a JSON string or number, as Go's Quantity unmarshals it)."""
    if value is None:
        return 0  # Go: a null Quantity is zero
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"invalid quantity {value!r}: not a string or a number")
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.startswith("-"):
        return -to_int(resource, text[1:])
    if isinstance(text, int | float) and text < 0:
        return -to_int(resource, -text)
    return to_int(resource, text)


def parse_limits(text: str | None) -> GroupLimits:
    """The annotation's value -> limits, or the error that makes it invalid."""
    if not text:
        return GroupLimits({})
    try:
        value = read_json(text, parse_constant=_no_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return GroupLimits({}, f"invalid JSON ({why})")
    if value is None:
        return GroupLimits({})  # Go: `null` unmarshals to an empty map
    if not isinstance(value, dict):
        return GroupLimits({}, "must be a JSON object of node group name to resource list")
    out: dict[str, dict[str, int]] = {}
    for group, body in value.items():
        if body is None:
            out[group] = {}
            continue
        if not isinstance(body, dict):
            return GroupLimits(
                {}, f"node group {group}: must be a JSON object of resource name to quantity"
            )
        limits: dict[str, int] = {}
        for resource, amount in body.items():
            try:
                limits[resource] = _quantity(resource, amount)
            except QuantityError as exc:
                return GroupLimits({}, f"node group {group}: {resource}: {exc}")
        out[group] = {r: v for r, v in limits.items() if r != PODS}
    return GroupLimits(out)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # Python's json would take NaN/Infinity; Go not


def queue_limits(snapshot: Snapshot) -> dict[str, GroupLimits]:
    """The queues that carry the annotation (memoised per generation)."""

    def compute() -> dict[str, GroupLimits]:
        out: dict[str, GroupLimits] = {}
        for name, spec in snapshot.queues.items():
            parsed = parse_limits(spec.annotations.get(ANNOTATION))
            if parsed.limits or parsed.error:
                out[name] = parsed
        return out

    return snapshot.memo(("nodegroup", "limits"), compute)


def invalid_reason(snapshot: Snapshot, queue: str) -> str | None:
    """The reason every node fails for the queue's pods when its annotation is invalid."""
    parsed = queue_limits(snapshot).get(queue)
    if parsed is None or parsed.error is None:
        return None
    return f"{REASON_LIMIT_INVALID} (queue {queue}: {ANNOTATION}: {parsed.error})"


def running_use(snapshot: Snapshot) -> dict[tuple[str, str], dict[str, int]]:
    """(queue, node group) -> requests of the queue's running, non-terminating pods on the
    group's nodes, for the queues with limits (memoised per generation)."""

    def compute() -> dict[tuple[str, str], dict[str, int]]:
        limited = sorted(q for q, parsed in queue_limits(snapshot).items() if parsed.limits)
        running = snapshot.running
        ids = np.array([running.queue_names.get(q) for q in limited], dtype=np.int64)
        if not (ids != NONE).any():
            return {}
        rows = running.rows()
        rows = rows[(running.node[rows] >= 0) & ((running.flags[rows] & TERMINATING) == 0)]
        charged = charged_queue(running, rows, snapshot.gang_queue)
        lookup = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
        lookup[ids[ids != NONE]] = np.flatnonzero(ids != NONE)
        inside = (charged >= 0) & (charged < lookup.size)
        which = np.where(inside, lookup[np.where(inside, charged, 0)], -1)
        group_of, names = node_groups(running.nodes)
        group = group_of[running.node[rows].astype(np.int64)]
        keep = (which >= 0) & (group >= 0)
        resources = running.resources
        requests = np.zeros((int(keep.sum()), len(resources)), dtype=np.int64)
        stored = running.requests()[rows[keep]][:, : len(resources)]
        requests[:, : stored.shape[1]] = stored
        total = np.zeros((len(limited), len(names), len(resources)), dtype=np.int64)
        np.add.at(total, (which[keep], group[keep]), requests)
        out: dict[tuple[str, str], dict[str, int]] = {}
        for q, g in zip(*np.nonzero(total.any(axis=2)), strict=True):
            amounts = total[q, g].tolist()
            out[limited[q], names[g]] = {
                r: v for r, v in zip(resources, amounts, strict=True) if v and r != PODS
            }
        return out

    return snapshot.memo(("nodegroup", "limits", "running use"), compute)


@dataclass(frozen=True, eq=False)
class NodeGroupLimitBlock(Block):
    """The node-group limits of the call's queues: K (queue, group) limits, D resources.

    HARD, for every limit k = (q, g) and resource d its limit lists:
        Σ_t [queue(t) = q] · type_use[t, d] · (pods of type t placed on nodes of g)
            ≤ headroom[k, d]
    and no pod of q at all on g when headroom[k, d] < 0 for some listed d.
    """

    keys: tuple[tuple[str, str], ...]  # [K] (queue, group)
    dims: tuple[str, ...]  # [D] resources some limit lists
    headroom: IntArray  # [K, D] limit − running use; UNLIMITED where the limit omits d
    node_group: IntArray  # [N] group id per node (`node_groups`), -1 unlabelled
    group_names: tuple[str, ...]  # [G]
    queue_keys: IntArray  # [Q, G + 1] limit of (queue row, group id); last column:
    #   unlabelled nodes; -1 = none
    type_queue: IntArray  # [T] the type's queue row, -1 when its queue sets no limits
    type_use: IntArray  # [T, D] one pod's request of each resource
    reason_code: int  # REASON_LIMIT_EXCEEDED in the Problem's reason_texts

    @property
    def finite(self) -> np.ndarray:
        return self.headroom < UNLIMITED

    def node_key(self, t: int) -> IntArray:
        """[N] the limit a pod of type t counts against on each node, -1 none."""
        row = int(self.type_queue[t])
        if row < 0:
            return np.full(self.node_group.size, -1, dtype=np.int64)
        keys: IntArray = self.queue_keys[row][self.node_group]
        return keys

    def room(self, t: int, left: IntArray) -> IntArray:
        """[K] pods of type t each limit still takes, given `left` ([K, D] headroom)."""
        use = self.type_use[t]
        big = np.iinfo(np.int64).max
        per_dim = np.where(
            use > 0, np.maximum(left, 0) // np.maximum(use, 1), np.where(left < 0, 0, big)
        )
        return np.asarray(np.where(self.finite, per_dim, big).min(axis=1, initial=big))


def compile_limits(ctx: CompileContext, gang_queue: dict[int, str]) -> None:
    """The block and, per pod type, the nodes whose group has no room even for one of its
    pods (`node group resource limit exceeded`). After the affinity filters, so a node the
    affinity rejects keeps that reason, as upstream checks the limit last."""
    parsed = queue_limits(ctx.snapshot)
    queues = sorted({q for q in gang_queue.values() if q in parsed and parsed[q].limits})
    if not queues:
        return
    node_group, names = node_groups(ctx.nodes)
    group_id = {g: i for i, g in enumerate(names)}
    keys = [(q, g) for q in queues for g in sorted(parsed[q].limits) if g in group_id]
    if not keys:
        return
    dims = tuple(sorted({r for q, g in keys for r in parsed[q].limits[g]}))
    used = running_use(ctx.snapshot)
    headroom = np.array(
        [
            [
                parsed[q].limits[g][r] - used.get((q, g), {}).get(r, 0)
                if r in parsed[q].limits[g]
                else UNLIMITED
                for r in dims
            ]
            for q, g in keys
        ],
        dtype=np.int64,
    ).reshape(len(keys), len(dims))
    row_of = {q: i for i, q in enumerate(queues)}
    queue_keys = np.full((len(queues), len(names) + 1), -1, dtype=np.int64)
    for k, (q, g) in enumerate(keys):
        queue_keys[row_of[q], group_id[g]] = k
    type_queue = np.array(
        [row_of.get(gang_queue.get(g, ""), -1) for g in ctx.type_gang], dtype=np.int64
    )
    demand = np.array(ctx.type_demand, dtype=np.int64).reshape(ctx.num_types, -1)
    type_use = np.zeros((ctx.num_types, len(dims)), dtype=np.int64)
    for d, r in enumerate(dims):
        if r in ctx.resources:
            type_use[:, d] = demand[:, ctx.resources.index(r)]
    block = NodeGroupLimitBlock(
        keys=tuple(keys),
        dims=dims,
        headroom=headroom,
        node_group=node_group,
        group_names=names,
        queue_keys=queue_keys,
        type_queue=type_queue,
        type_use=type_use,
        reason_code=ctx.code(REASON_LIMIT_EXCEEDED),
    )
    for t in np.flatnonzero(type_queue >= 0).tolist():
        node_key = block.node_key(t)
        full = np.append(block.room(t, headroom) <= 0, False)  # key -1 -> never full
        ctx.restrict([t], ~full[node_key], REASON_LIMIT_EXCEEDED)
    ctx.add_block(block)
