"""A migration plan re-checked from the snapshot alone (`verify_moves`).

Written from the rules, not from the planner: the moves are replayed one by one on the
nodes' allocatable and the running pods' requests — each step evicts the pod from its node
and creates it on its target, and no node may then be over its allocatable on a resource
the pod asks for (the `pods` count included). At the end the freed nodes hold no pod but
DaemonSet pods (label `pod-template-generation`) and terminating ones. A gang moves whole;
a gang that lay in one value of a where-label lies in one after; a pod lands on a Ready,
uncordoned node whose taints and labels — but the where-labels — are its old node's. A
unit (a gang, else a pod) evicts its pods together: no PodDisruptionBudget counts more of
them than it allows (its status, else the spec over the running pods it selects).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from solver.model import Node, Taint
from solver.snapshot import NONE, TERMINATING, Snapshot
from solver.verify._budgets import budget_pods

__all__ = ["verify_moves"]

_DAEMON = "pod-template-generation"
_PODS = "pods"


def verify_moves(
    snapshot: Snapshot,
    moves: Sequence[tuple[str, str, str]],
    freed_nodes: Iterable[str],
    where: Iterable[str],
    max_pods: int | None = None,
) -> list[str]:
    """Every violation of the plan `moves` (pod key, from node, to node), in order."""
    running, table = snapshot.running, snapshot.nodes
    problems: list[str] = []
    if max_pods is not None and len(moves) > max_pods:
        problems.append(f"{len(moves)} pods moved, more than the budget of {max_pods}")
    axis = running.resources
    alloc = {n.name: n for n in table.nodes}
    index = table.index
    live = running.alive & (running.node >= 0)
    usage = np.array(snapshot.used(axis), dtype=np.int64)  # [N, R], every running pod's
    count = np.bincount(running.node[live], minlength=len(table)).astype(np.int64)
    used: dict[str, dict[str, int]] = {}

    def book(node: str) -> dict[str, int]:
        if node not in used:
            row = usage[index[node]]
            used[node] = {r: int(v) for r, v in zip(axis, row.tolist(), strict=True)}
            used[node][_PODS] = int(count[index[node]])
        return used[node]

    where_keys = set(where)
    moved: dict[str, tuple[int, str]] = {}
    for step, (key, source, target) in enumerate(moves, start=1):
        row = int(running.find(key))
        if row == NONE or not running.alive[row] or running.node_name(row) != source:
            problems.append(f"step {step}: {key} is not a running pod on {source}")
            continue
        if key in moved:
            problems.append(f"step {step}: {key} moves twice")
            continue
        dest = alloc.get(target)
        if dest is None or not dest.ready or dest.unschedulable:
            problems.append(f"step {step}: {key} lands on {target}, not a Ready schedulable node")
            continue
        if _what(dest, where_keys) != _what(alloc[source], where_keys):
            problems.append(f"step {step}: {target}'s labels or taints differ from {source}'s")
        moved[key] = (row, target)
        demand = {
            r: int(v) for r, v in zip(axis, running.requests()[row].tolist(), strict=True) if v
        }
        demand[_PODS] = 1
        here, there = book(source), book(target)
        for r, v in demand.items():
            here[r] = here.get(r, 0) - v
            there[r] = there.get(r, 0) + v
            cap = dest.allocatable.get(r)
            if (cap is not None or r != _PODS) and there[r] > (cap or 0):
                problems.append(
                    f"step {step}: {target} over its allocatable {r} ({there[r]} > {cap or 0})"
                )
    problems += _freed(snapshot, set(freed_nodes), moved)
    problems += _gangs(snapshot, moved, where_keys)
    problems += _budgets(snapshot, moved)
    return problems


def _what(node: Node, where: set[str]) -> tuple[dict[str, str], tuple[Taint, ...]]:
    """What a pod's constraints may have looked at: labels but the where-labels, taints."""
    return {k: v for k, v in node.labels.items() if k not in where}, node.taints


def _where(node: Node, key: str) -> str | None:
    return node.name if key == "node" else node.labels.get(key)


def _stays(snapshot: Snapshot, row: int) -> bool:
    running = snapshot.running
    return bool(running.flags[row] & TERMINATING) or _DAEMON in running.labels(row)


def _freed(snapshot: Snapshot, nodes: set[str], moved: dict[str, tuple[int, str]]) -> list[str]:
    """Pods on a freed node at the end: those there that did not move, and moves onto one."""
    running, index = snapshot.running, snapshot.nodes.index
    out = [
        f"{key} is on {at}, a node the plan frees" for key, (_, at) in moved.items() if at in nodes
    ]
    ids = np.array([index[n] for n in nodes if n in index], dtype=np.int64)
    there = snapshot.rows_on(ids)
    for row in there.tolist():
        key = running.key(row)
        if key not in moved and not _stays(snapshot, row):
            out.append(f"{key} is on {running.node_name(row)}, a node the plan frees")
    return out


def _gangs(snapshot: Snapshot, moved: dict[str, tuple[int, str]], where: set[str]) -> list[str]:
    running, by_name = snapshot.running, snapshot.nodes.by_name
    out = []
    gangs = {int(running.gang[row]) for row, _ in moved.values()} - {NONE}
    for gang in sorted(gangs):
        name = running.gang_name(gang)
        rows = [r for r in snapshot.rows_of_gang(name).tolist() if not _stays(snapshot, r)]
        left = [running.key(r) for r in rows if running.key(r) not in moved]
        if left:
            out.append(f"gang {name} moves without {left[0]}")
            continue
        before = [by_name[running.node_name(r)] for r in rows]
        after = [by_name[moved[running.key(r)][1]] for r in rows]
        for key in sorted(where | {"node"}):
            was = {_where(n, key) for n in before}
            if (
                len(rows) > 1
                and len(was) == 1
                and None not in was
                and len({_where(n, key) for n in after}) != 1
            ):
                out.append(f"gang {name} lay in one {key} and is split by the moves")
    return out


def _budgets(snapshot: Snapshot, moved: dict[str, tuple[int, str]]) -> list[str]:
    running = snapshot.running
    out = []
    for key, budget in snapshot.budgets.items():
        counted, allowed = budget_pods(snapshot, budget)
        per_unit: dict[str, int] = {}
        for pod in counted:
            if pod in moved:
                gang = int(running.gang[moved[pod][0]])
                unit = running.gang_name(gang) if gang != NONE else pod
                per_unit[unit] = per_unit.get(unit, 0) + 1
        out += [
            f"{unit} evicts {count} pod(s) of PodDisruptionBudget {key} at once ({allowed} allowed)"
            for unit, count in sorted(per_unit.items())
            if count > allowed
        ]
    return out
