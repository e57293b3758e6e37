"""The snapshot as a defragmentation plan sees it: domains, what moves, where it may land.

Read once per call from one snapshot generation, as columns:

* **Pods left alone**: DaemonSet pods (label `pod-template-generation`, set by the
  DaemonSet controller only) stay on every node and do not keep a domain busy; pods already
  terminating leave on their own. Both still hold their room.
* **Units** move whole: a named gang (every running pod of it), else one pod. A unit cannot
  move when one of its pods is protected: by the goal (priority, namespace, label), by the
  preemption labels (`scheduling.koordinator.sh/disable-preemptible`, ...), by a system
  PriorityClass or `kube-system`, by a GPU-sharing annotation or device assignment (the
  device a share sits on is not re-planned), by pod (anti-)affinity terms, or — a gang —
  by a Volcano `networkTopology` (HyperNode members are named nodes, which a move changes),
  or by a PodDisruptionBudget that allows fewer evictions than it counts of the unit's pods
  (a move evicts a unit's pods together, and the Eviction API refuses one past a budget).
* **Where a pod may land** keeps every constraint it was placed under that the snapshot
  can see: a target node has the same labels and taints as the pod's node but for the
  labels that say *where* (hostname, every label key with `topology` in it — zone, region,
  `network.topology.nvidia.com/*`, ... —, the goal's level, the snapshot's network topology
  keys, the topology keys of the gangs' constraints, `topology_keys`), so node selectors,
  node affinity and tolerations hold as they held; it is Ready, not cordoned, and no running pod's required anti-affinity
  covers it; a gang that lies in one value of a where-label (one node, one rack, ...) still
  lies in one after the move.
* **Domains**: a domain can be freed when every unit on its nodes can move and their pods
  fit the budget; its cost is the pods moved (a gang counts all its pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.arrays import IntArray
from solver.defrag._goal import NODE_LEVEL, DefragGoal
from solver.features.devices.quota import SHARE_FACT
from solver.features.devices.table import ALLOCATED_FACT
from solver.features.pdb import budget_rows
from solver.features.preemption.victims import PROTECTED_FACT, SYSTEM_CRITICAL
from solver.model import SHARE_RESOURCES, allowed_disruptions
from solver.problem import BoolArray
from solver.quantity import PODS
from solver.snapshot import NONE, TERMINATING, Snapshot

__all__ = ["DAEMON_LABEL", "DefragInput", "Unit", "defrag_input"]

DAEMON_LABEL = "pod-template-generation"
_PROTECTING_FACTS = (SHARE_FACT.name, ALLOCATED_FACT.name, PROTECTED_FACT.name)


@dataclass(frozen=True, eq=False)
class Unit:
    name: str  # the gang's id, or the pod's key
    pods: IntArray  # indices into DefragInput's pod arrays
    gang: bool
    compact: tuple[int, ...]  # where-keys (indices into `where`) it lies in one value of
    movable: bool


@dataclass(frozen=True, eq=False)
class DefragInput:
    snapshot: Snapshot
    goal: DefragGoal
    axis: tuple[str, ...]
    capacity: IntArray  # [N, R]
    free: IntArray  # [N, R] allocatable − requests of every running pod
    target: BoolArray  # [N] moved pods may land here
    node_class: IntArray  # [N] equal labels (but the where-labels) and taints
    node_domain: IntArray  # [N] its domain, -1: none (no value at the level, or not the shape)
    domains: tuple[str, ...]  # [D]
    where: tuple[IntArray, ...]  # [K][N] value id per where-key, -1: unlabelled; 0 = the node
    where_keys: tuple[str, ...]  # [K]
    pod_rows: IntArray  # [P] snapshot rows of the movable units' pods
    pod_node: IntArray  # [P]
    pod_demand: IntArray  # [P, R]
    pod_unit: IntArray  # [P] the unit of each pod
    units: tuple[Unit, ...]  # [U]
    domain_units: tuple[IntArray, ...]  # [D] units on the domain's nodes
    cost: IntArray  # [D] pods moved to free it
    candidate: BoolArray  # [D] can be freed within the budget
    empty: BoolArray  # [D] free already
    blocked: Mapping[str, int]  # why domains cannot be freed: reason -> domains

    @property
    def num_domains(self) -> int:
        return len(self.domains)

    def unit_pods(self, units: IntArray | list[int]) -> int:
        return int(sum(self.units[u].pods.size for u in units))

    def domain_nodes(self, d: int) -> IntArray:
        return np.flatnonzero(self.node_domain == d)


def defrag_input(snapshot: Snapshot, goal: DefragGoal) -> DefragInput:
    running, nodes = snapshot.running, snapshot.nodes.nodes
    n = len(nodes)
    axis = tuple(r for r in running.resources if r != PODS)
    if any(PODS in node.allocatable for node in nodes):
        axis = (*axis, PODS)
    capacity = np.array(snapshot.nodes.capacity(axis), dtype=np.int64)
    rows = np.flatnonzero(running.alive & (running.node >= 0))
    demand = running.requests(axis)[rows]
    if PODS in axis:
        demand[:, -1] = 1
    used = np.zeros((n, len(axis)), dtype=np.int64)
    for r in range(len(axis)):
        used[:, r] = np.bincount(running.node[rows], weights=demand[:, r], minlength=n)
    free = capacity - used

    where_keys = _where_keys(snapshot, goal)
    where = tuple(_values(snapshot, key) for key in where_keys)
    node_class = _classes(snapshot, set(where_keys))
    node_domain, domains = _domains(snapshot, goal)
    target = np.array([node.ready and not node.unschedulable for node in nodes], dtype=bool)
    target &= ~_repelled(snapshot, rows)

    sets = running.label_sets
    daemon_set = np.array([DAEMON_LABEL in s for s in sets], dtype=bool)
    stays = daemon_set[running.label_set[rows]] | ((running.flags[rows] & TERMINATING) != 0)
    rows, demand = rows[~stays], demand[~stays]
    protected = _protected(snapshot, goal, rows)
    gang = running.gang[rows]
    unit_key = np.where(gang != NONE, gang.astype(np.int64), -(rows.astype(np.int64) + 1))
    keys, unit_of = np.unique(unit_key, return_inverse=True)
    immovable = np.zeros(keys.size, dtype=bool)
    immovable[unit_of[protected]] = True
    for u in np.flatnonzero(keys >= 0).tolist():  # a gang in a HyperNode: its membership is
        spec = snapshot.gangs.get(running.gang_name(int(keys[u])))  # names, not labels
        if spec is not None and spec.network_topology is not None:
            immovable[u] = True
    budget_held = _budget_held(snapshot, rows, unit_of, keys.size) & ~immovable

    pod_node = running.node[rows].astype(np.int64)
    order = np.argsort(unit_of, kind="stable")
    bounds = np.searchsorted(unit_of[order], np.arange(keys.size + 1))
    units = []
    for u in range(keys.size):
        pods = order[bounds[u] : bounds[u + 1]]
        named = bool(keys[u] >= 0)
        name = running.gang_name(int(keys[u])) if named else running.key(int(rows[pods[0]]))
        compact = tuple(
            k
            for k, values in enumerate(where)
            if pods.size > 1 and values[pod_node[pods[0]]] >= 0
            and bool(np.all(values[pod_node[pods]] == values[pod_node[pods[0]]]))
        )  # fmt: skip
        units.append(Unit(name, pods, named, compact, not (immovable[u] or budget_held[u])))

    d_count = len(domains)
    pod_domain = node_domain[pod_node]
    domain_units: list[IntArray] = []
    blocked: dict[str, int] = {}
    cost = np.zeros(d_count, dtype=np.int64)
    candidate = np.zeros(d_count, dtype=bool)
    empty = np.zeros(d_count, dtype=bool)
    on = np.argsort(pod_domain, kind="stable")
    cuts = np.searchsorted(pod_domain[on], np.arange(d_count + 1))
    for d in range(d_count):
        here = np.unique(unit_of[on[cuts[d] : cuts[d + 1]]])
        domain_units.append(here)
        empty[d] = here.size == 0
        cost[d] = sum(units[u].pods.size for u in here.tolist())
        reason = _why_not(goal, bool(immovable[here].any()), int(cost[d]), here.size)
        if reason is None and budget_held[here].any():
            reason = "a PodDisruptionBudget allows fewer evictions than a gang on it has pods"
        if reason is None:
            candidate[d] = not empty[d]
        else:
            blocked[reason] = blocked.get(reason, 0) + 1
    return DefragInput(
        snapshot, goal, axis, capacity, free, target, node_class, node_domain, domains,
        where, where_keys, rows, pod_node, demand, unit_of, tuple(units), tuple(domain_units), cost,
        candidate, empty, blocked,
    )  # fmt: skip


def _why_not(goal: DefragGoal, immovable: bool, cost: int, units: int) -> str | None:
    if immovable:
        return "a pod on it may not move"
    if cost > goal.max_pods:
        return f"more than {goal.max_pods} pod(s) to move (--max-pods)"
    if goal.max_cost_per_domain is not None and cost > goal.max_cost_per_domain:
        return f"costs more than {goal.max_cost_per_domain} pod(s) (--max-cost-per-domain)"
    if goal.max_gangs is not None and units > goal.max_gangs:
        return f"more than {goal.max_gangs} unit(s) to move (--max-gangs)"
    return None


def _where_keys(snapshot: Snapshot, goal: DefragGoal) -> tuple[str, ...]:
    level = [goal.level] if goal.level != NODE_LEVEL else []
    return (NODE_LEVEL, *snapshot.where_labels([*level, *goal.topology_keys]))


def _values(snapshot: Snapshot, key: str) -> IntArray:
    """[N] an id per value of the node label `key` (-1: the node has no such label)."""
    nodes = snapshot.nodes.nodes
    if key == NODE_LEVEL:
        return np.arange(len(nodes), dtype=np.int64)
    ids: dict[str, int] = {}
    return np.array(
        [
            ids.setdefault(v, len(ids)) if (v := n.labels.get(key)) is not None else -1
            for n in nodes
        ],
        dtype=np.int64,
    )


def _classes(snapshot: Snapshot, where: set[str]) -> IntArray:
    ids: dict[object, int] = {}
    return np.array(
        [
            ids.setdefault(
                (frozenset((k, v) for k, v in n.labels.items() if k not in where), n.taints),
                len(ids),
            )
            for n in snapshot.nodes.nodes
        ],
        dtype=np.int64,
    )


def _domains(snapshot: Snapshot, goal: DefragGoal) -> tuple[IntArray, tuple[str, ...]]:
    nodes = snapshot.nodes.nodes
    names = [n.name if goal.level == NODE_LEVEL else n.labels.get(goal.level) for n in nodes]
    shaped: dict[str, bool] = {}
    for name, node in zip(names, nodes, strict=True):
        if name is not None:
            fits = all(node.allocatable.get(r, 0) == q for r, q in goal.shape.items())
            shaped[name] = shaped.get(name, True) and fits
    domains = tuple(sorted(name for name, ok in shaped.items() if ok))
    index = {name: d for d, name in enumerate(domains)}
    node_domain = np.array([index.get(name, -1) if name else -1 for name in names], dtype=np.int64)
    return node_domain, domains


def _repelled(snapshot: Snapshot, rows: IntArray) -> BoolArray:
    """[N] nodes in the domain of a running pod's required anti-affinity term: whatever
    lands there might match its selector (the term's selector is not evaluated: sound)."""
    running, nodes = snapshot.running, snapshot.nodes.nodes
    out = np.zeros(len(nodes), dtype=bool)
    with_terms = rows[running.terms[rows] != NONE]
    for row in with_terms.tolist():
        node = nodes[int(running.node[row])]
        for term in running.term_sets[int(running.terms[row])].anti_affinity:
            value = node.labels.get(term.topology_key)
            if term.topology_key == "kubernetes.io/hostname" and value is None:
                out[int(running.node[row])] = True
            elif value is not None:
                out |= np.array([m.labels.get(term.topology_key) == value for m in nodes])
    return out


def _budget_held(snapshot: Snapshot, rows: IntArray, unit_of: IntArray, units: int) -> BoolArray:
    """[U] units a PodDisruptionBudget keeps: a move evicts a unit's pods together (the
    Eviction API refuses one past the budget), so a unit moves only when every budget
    allows at least as many evictions as it counts of the unit's pods."""
    held = np.zeros(units, dtype=bool)
    if not snapshot.budgets:
        return held
    position = {int(r): i for i, r in enumerate(rows.tolist())}
    for budget in snapshot.budgets.values():
        selected, counted = budget_rows(snapshot, budget)
        healthy = int(((snapshot.running.flags[selected] & TERMINATING) == 0).sum())
        allowed = allowed_disruptions(budget, healthy)
        mine = [position[r] for r in counted.tolist() if r in position]
        if mine:
            per_unit = np.bincount(unit_of[mine], minlength=units)
            held |= per_unit > allowed
    return held


def _protected(snapshot: Snapshot, goal: DefragGoal, rows: IntArray) -> BoolArray:
    running = snapshot.running
    out = running.terms[rows] != NONE
    for name in _PROTECTING_FACTS:
        if name in running.schema.names:
            out |= running.fact(name)[rows] != NONE
    out |= running.requests(SHARE_RESOURCES[1:])[rows].any(axis=1)  # a share of a device
    out |= running.priority[rows] >= SYSTEM_CRITICAL
    if goal.protect_priority is not None:
        out |= running.priority[rows] >= goal.protect_priority
    for ns in ("kube-system", *goal.protect_namespaces):
        ident = running.namespace_names.get(ns)
        if ident >= 0:
            out |= running.namespace[rows] == ident
    if goal.protect_labels:
        marked = np.array(
            [
                any(s.get(k) == v for k, v in goal.protect_labels.items())
                for s in running.label_sets
            ],
            dtype=bool,
        )
        out |= marked[running.label_set[rows]]
    return np.asarray(out, dtype=bool)
