"""Godel job-level affinity (`reference/godel_kueue.md` §1): one PodGroup as one unit. The
Workload API's and KAI's PodGroup topology are read as the same unit (`workload_api/`).

`spec.affinity.podGroupAffinity` of a Godel PodGroup: `nodeSelector` filters the unit's
nodes (terms ORed, expressions ANDed, `matchFields` ignored, as Godel does); `required`
keys form one combined domain (`k1:v1;k2:v2;`, keys sorted) and nodes lacking a key are
dropped; running members pin the required domain (members in different domains: the unit
fails, "assigned pods are in different topologies") and narrow each preferred term while
they agree on its value (on the first disagreement division stops). `sortRules`:
`{CPU, Capacity, Ascending}` when empty; a missing `dimension` means Capacity; any invalid
rule disables sorting **and** cut-off (Godel logs and skips). Godel breaks sort ties by Go
map order (random); gangplan breaks them by domain key, ascending. The greedy builds
NodeGroups/NodeCircles from these arrays at placement time (`greedy.py`), since
`Available` changes as units land.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from solver.features.predicates import matches_requirement
from solver.features.topology.workload_api.affinity import pod_group_affinity, rule_words, source
from solver.features.topology.workload_api.subgroups import SubDomain
from solver.model import (
    Gang,
    JobAffinity,
    Node,
    NodeSelectorTerm,
    Pod,
    parse_job_affinity,
)
from solver.problem import BoolArray, IntArray, Minimum
from solver.quantity import CPU, MEMORY
from solver.snapshot import Snapshot

__all__ = ["GODEL_METRICS", "GodelPlan", "godel_node_metrics", "godel_plan", "job_affinity"]

GPU = "nvidia.com/gpu"
GODEL_METRICS = (CPU, MEMORY, GPU)
"""Godel's sort/cut-off resources, in column order: CPU (milli), Memory (bytes), GPU (count)."""


@dataclass(frozen=True, eq=False)
class GodelPlan:
    """Godel job-level affinity of one PodGroup unit as node arrays.

    The greedy orders NodeGroups/NodeCircles from these at placement time (`Available` moves
    as units land); the hard part for any engine is the unit's one-domain rule + `eligible`.
    """

    candidate: BoolArray  # [N] node passes the PodGroup nodeSelector (Godel Locating)
    required: IntArray | None  # [N] combined required-key domain (`k1:v1;k2:v2;`); -1 unusable
    required_names: tuple[str, ...]  # name of each required domain id
    required_pinned: bool  # running members fix the domain: no sorting, no cut-off
    preferred: tuple[IntArray, ...]  # per preferred term (largest first): [N] value id, -1 = no key
    preferred_names: tuple[tuple[str, ...], ...]  # per term: `key:value;` of each value id
    preferred_pin: tuple[int, ...]  # per term: running members' value id (only that child); -1
    sort_rules: tuple[tuple[int, bool, bool], ...] | None  # (metric column of
    #   GODEL_METRICS, Available?, Ascending?); None = an invalid rule: no sort, no cut-off
    min_request: IntArray  # [3] the unit's minimum request (cpu, memory, gpu) for cut-off
    blocked: str | None = None  # why the unit can never be placed (running pods disagree)
    source: str = "Godel job-level affinity"  # what asked for one domain, for reasons
    rule: str = ""  # the one-domain rule in its dialect's words, for certificates
    required_rank: IntArray | None = None  # [D] each required domain's place in the order
    #   the greedy tries them at the start of the cycle (0 first; cut-off ones last)
    roomiest_first: bool = False  # inside a NodeGroup, fill its circles last-first (KAI's
    #   node score ranks the last preferred sub-domain of the packing order highest)
    sub_domains: tuple[SubDomain, ...] = ()  # KAI sub-groups, each in a domain of its own
    #   inside the unit's (`subgroups.py`), outer first
    sub_minimums: tuple[Minimum, ...] = ()  # KAI leaf sub-groups' minMember

    def __post_init__(self) -> None:
        for value in (self.candidate, self.required, self.min_request, *self.preferred):
            if value is not None:
                value.flags.writeable = False

    def domain_key(self, cap: IntArray, used: IntArray) -> tuple[int, ...]:
        """A domain's place in Godel's `sortRules` order (smaller first), from its summed
        allocatable `cap` and requested `used` (CPU, Memory, GPU)."""
        out: list[int] = []
        for col, available, ascending in self.sort_rules or ():
            value = int(max(cap[col] - used[col], 0)) if available else int(cap[col])
            out.append(value if ascending else -value)
        return tuple(out)

    def cut_off(self, cap: IntArray) -> bool:
        """Godel's cut-off: the unit's minimum request exceeds the domain's allocatable."""
        return bool(np.any(self.min_request > cap))


def unit_affinity(gang: Gang) -> JobAffinity | None:
    """The one-domain rule of a PodGroup unit: the Workload API's or KAI's topology
    (`workload_api/`), else Godel's `podGroupAffinity` (validated when the manifest was read)."""
    affinity = pod_group_affinity(gang)
    return affinity if affinity is not None else parse_job_affinity(gang.affinity)


def job_affinity(gang: Gang) -> JobAffinity:
    affinity = unit_affinity(gang)
    return affinity if affinity is not None else JobAffinity()


_RESOURCES = {"CPU": 0, "Memory": 1, "GPU": 2}


def _selector_matches(terms: tuple[NodeSelectorTerm, ...], node: Node) -> bool:
    """Godel's `MatchNodeSelectorTerms(terms, labels, nil)`: matchFields are not evaluated."""
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        if term.match_expressions and not all(
            matches_requirement(r, node.labels) for r in term.match_expressions
        ):
            continue
        return True
    return False


def _sort_rules(affinity: JobAffinity) -> tuple[tuple[int, bool, bool], ...] | None:
    rules = affinity.sort_rules or ()
    if not rules:
        return ((0, False, True),)  # defaultSortRule: CPU, Capacity, Ascending
    out: list[tuple[int, bool, bool]] = []
    for rule in rules:
        dimension = rule.dimension or "Capacity"
        if (
            rule.resource not in _RESOURCES
            or dimension not in ("Capacity", "Available")
            or rule.order not in ("Ascending", "Descending")
        ):
            return None
        out.append((_RESOURCES[rule.resource], dimension == "Available", rule.order == "Ascending"))
    return tuple(out)


def _metrics(requests: dict[str, int]) -> IntArray:
    return np.array([requests.get(r, 0) for r in GODEL_METRICS], dtype=np.int64)


def _min_request(pending: Sequence[Pod], running: int, min_member: int) -> IntArray:
    """Godel's `computeUnitMinResourceRequest`."""
    if not pending:
        return np.zeros(3, dtype=np.int64)
    if running:  # everScheduled: per-resource minimum over pending pods
        big = np.iinfo(np.int64).max
        out = np.full(3, big, dtype=np.int64)
        for p in pending:
            for i, r in enumerate(GODEL_METRICS):
                if r in p.requests:
                    out[i] = min(out[i], p.requests[r])
        out[out == big] = 0
        return out
    if min_member == len(pending):
        total: IntArray = np.sum([_metrics(p.requests) for p in pending], axis=0)
        return total.astype(np.int64)
    return _metrics(pending[0].requests) * min_member


def _values(nodes: Sequence[Node], key: str) -> tuple[IntArray, tuple[str, ...]]:
    names = sorted({n.labels[key] for n in nodes if key in n.labels})
    index = {v: i for i, v in enumerate(names)}
    row = np.array([index.get(n.labels.get(key, ""), -1) if key in n.labels else -1 for n in nodes])
    return row.astype(np.int64), tuple(f"{key}:{v};" for v in names)


def godel_plan(snapshot: Snapshot, gang: Gang, pending: Sequence[Pod]) -> GodelPlan | None:
    """Godel job-level affinity of a PodGroup (its `pending` pods from the call, its running
    ones from the snapshot), or None when it has no `podGroupAffinity`."""
    affinity = unit_affinity(gang)
    if affinity is None or (
        not affinity.groups_nodes
        and affinity.node_selector is None
        and not gang.topology_sub_groups
    ):
        return None
    nodes = snapshot.nodes.nodes
    n = len(nodes)
    candidate = np.ones(n, dtype=bool)
    if affinity.node_selector is not None:
        candidate = np.array(
            [_selector_matches(affinity.node_selector, nd) for nd in nodes], dtype=bool
        )
    running = snapshot.rows_of_gang(gang.id)
    on_node = snapshot.running.node[running]
    assigned = sorted({snapshot.nodes.names[i] for i in on_node.tolist() if i >= 0})
    node_index = snapshot.nodes.index
    blocked = None
    required: IntArray | None = None
    required_names: tuple[str, ...] = ()
    pinned = False
    if affinity.required:
        keys = sorted(set(affinity.required))
        combined = [
            "".join(f"{k}:{nd.labels[k]};" for k in keys)
            if all(k in nd.labels for k in keys)
            else ""
            for nd in nodes
        ]
        required_names = tuple(
            sorted({c for c, ok in zip(combined, candidate, strict=True) if c and ok})
        )
        ids = {c: i for i, c in enumerate(required_names)}
        required = np.array(
            [ids.get(c, -1) if ok else -1 for c, ok in zip(combined, candidate, strict=True)],
            dtype=np.int64,
        )
        if assigned:
            pinned = True
            domains = {combined[node_index[a]] for a in assigned}
            if len(domains) != 1 or "" in domains:
                blocked = "assigned pods are in different topologies"
                required = np.full(n, -1, dtype=np.int64)
            else:
                (only,) = domains
                required_names = (only,)
                required = np.where(np.array(combined) == only, 0, -1).astype(np.int64)
    preferred: list[IntArray] = []
    preferred_names: list[tuple[str, ...]] = []
    preferred_pin: list[int] = []
    for key in affinity.preferred:
        row, names = _values(nodes, key)
        pin = -1
        if assigned:
            values = {int(row[node_index[a]]) for a in assigned}
            if len(values) != 1 or -1 in values:
                break  # running members disagree: Godel stops dividing here
            (pin,) = values
        preferred.append(row)
        preferred_names.append(names)
        preferred_pin.append(pin)
    plan = GodelPlan(
        candidate=candidate,
        required=required,
        required_names=required_names,
        required_pinned=pinned,
        preferred=tuple(preferred),
        preferred_names=tuple(preferred_names),
        preferred_pin=tuple(preferred_pin),
        sort_rules=_sort_rules(affinity),
        min_request=_min_request(pending, len(running), gang.min_member),
        blocked=blocked,
        source=_source(gang),
        rule=_rule(gang, affinity.required) if required is not None else "",
        roomiest_first=bool(gang.topology_pack),
    )
    if required is None or pinned or plan.sort_rules is None:
        return plan
    cap, used = godel_node_metrics(snapshot)
    order: list[tuple[bool, tuple[int, ...], int]] = []
    for d in range(len(required_names)):
        mask = required == d
        total = cap[mask].sum(axis=0)
        order.append((plan.cut_off(total), plan.domain_key(total, used[mask].sum(axis=0)), d))
    rank = np.empty(len(order), dtype=np.int64)
    for i, (_, _, d) in enumerate(sorted(order)):
        rank[d] = i
    rank.flags.writeable = False
    return replace(plan, required_rank=rank)


def _rule(gang: Gang, keys: tuple[str, ...]) -> str:
    """The one-domain rule as the dialect that asked for it says it."""
    words = rule_words(gang) or "Godel podGroupAffinity required"
    return f"one {' + '.join(sorted(set(keys)))} domain ({words})"


def _source(gang: Gang) -> str:
    """What asked for the unit's domains, as its reasons name it."""
    return source(gang) or GodelPlan.source


def godel_node_metrics(snapshot: Snapshot) -> tuple[IntArray, IntArray]:
    """[N, 3] allocatable and running requests of CPU, Memory, GPU (Godel's sort metrics)."""
    return snapshot.nodes.capacity(GODEL_METRICS), snapshot.used(GODEL_METRICS)
