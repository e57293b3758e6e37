"""The one-domain rule's bound: no domain the rule allows has room for the gang.

A unit under the one-domain rule (`TopologyBlock.unit_domain`: Koordinator MustGather,
Godel and the Workload API's required topology, Volcano HyperNode tiers; a Kueue pod set
with a required level, in slices or not; a KAI sub-group with a required level, when its
gang needs all its pods) places every new pod inside one domain. Both room bounds (`solver.problem.room`) are computed per domain
in one pass; when every domain fails one, no placement exists, and the certificate names
the measure that fails everywhere with the best domains:

    gang default/train needs 80 nvidia.com/gpu inside one BlockLayer domain (MustGather);
    the largest offers 56 (block-b3), then 48 (block-b1)
"""

from __future__ import annotations

import numpy as np

from solver.decision import Certificate
from solver.features.topology.block import TopologyBlock
from solver.features.topology.godel.block import godel_plan_of
from solver.features.topology.koordinator.block import is_gathered
from solver.features.topology.kueue.block import kueue_pod_sets
from solver.features.topology.kueue.podsets import KueuePodSet
from solver.problem import IntArray, Problem, Room, best_places, demand_text, room, slots_of
from solver.quantity import format_quantity

__all__ = ["one_domain_bound"]


def one_domain_bound(
    problem: Problem, gangs: list[int], free: IntArray, evicted: bool
) -> Certificate | None:
    """`free`: the room (the nodes' allocatable when `evicted`: preemption in the call)."""
    block = problem.block(TopologyBlock)
    if block is None or not block.unit_domain:
        return None
    for u in sorted({int(problem.gang_unit[h]) for h in gangs if problem.gang_pending[h] > 0}):
        if (kueue := _kueue_bound(problem, u, gangs, free)) is not None:
            return kueue
        if (sub := _sub_group_bound(problem, u, gangs, free)) is not None:
            return sub
        domain = block.domain_of(u)
        names = block.unit_domain_names[u] if block.unit_domain_names else ()
        rule = block.unit_domain_rule[u] if block.unit_domain_rule else ""
        gather = is_gathered(problem, u)  # Koordinator: all pending pods of the group, or none
        if (domain is None or not names) and gather:
            domain, names, rule = np.zeros(problem.num_nodes, dtype=np.int64), ("cluster",), ""
        elif domain is None or not names:
            continue
        members = [h for h in gangs if int(problem.gang_unit[h]) == u]
        names = tuple(n.rstrip(";") for n in names)  # Godel's "key:value;" domain names
        found = room(problem, members, free, domain, len(names), whole=gather)
        if not found.gangs or bool(found.fits.any()):
            continue
        if gather and any(problem.gang_pending[h] > problem.gang_need[h] for h in members):
            rule = f"{rule or 'the cluster'}, all its pending pods together (Koordinator gather)"
        return _certificate(problem, found, names, rule or "one domain")
    return None


def _kueue_bound(problem: Problem, u: int, gangs: list[int], free: IntArray) -> Certificate | None:
    """Kueue's `podset-required-topology`: each pod set inside one domain of its level (its
    node pool's tree), a group's leader with its workers (`podset-group-name`). A pod set
    alone must fit, whatever the gang's other pod sets take, so each is a proof of its own
    when all its pods are pending (Kueue admits a workload whole); in slices, the slices'
    bound (the workers alone)."""
    for ps in kueue_pod_sets(problem, u) or ():
        req = ps.request
        g = ps.gang
        if g not in gangs or not req.required:
            continue
        pending = sum(len(problem.type_pods[t]) for t in ps.all_types)
        if pending != ps.total or req.count != sum(len(problem.type_pods[t]) for t in ps.types):
            continue  # members running already: Kueue's assignment covers only the rest
        domain = ps.tree.node_domain(req.level)
        names = tuple("/".join(path) for path in ps.tree.paths[req.level])
        if req.slice_size != 1:
            if (sliced := _slices_bound(problem, ps, domain, names, free)) is not None:
                return sliced
            continue
        found = room(problem, [g], free, domain, len(names), only=set(ps.all_types))
        if found.gangs and not bool(found.fits.any()):
            level = ps.tree.levels[req.level]
            rule = f"one {level} domain (Kueue required)"
            if ps.leader is not None or set(ps.all_types) != set(problem.gang_types(g)):
                whom = f"pod set {ps.name}"
                if ps.leader is not None:
                    whom = f"pod sets {ps.name} and {ps.leader.name} as one group"
                rule = f"one {level} domain (Kueue required: {whom})"
            return _certificate(problem, found, names, rule)
    return None


def _slices_bound(
    problem: Problem, ps: KueuePodSet, domain: IntArray, names: tuple[str, ...], free: IntArray
) -> Certificate | None:
    """A required pod set in slices of k pods, each slice inside one domain of the slice
    level: a domain holds at most Σ over its slice domains of ⌊pods they take / k⌋ whole
    slices (each node's pods counted alone; the layers below the first, if any, only cut
    this further). Fewer than count / k in every domain is a proof. One pod type only."""
    req = ps.request
    if len(ps.types) != 1 or req.count % req.slice_size:
        return None
    (t,) = ps.types
    k = req.slice_size
    inner = ps.tree.node_domain(req.slice_level)
    usable = (inner >= 0) & (domain >= 0)
    if not usable.any():
        return None
    slots = np.minimum(slots_of(problem, t, free), req.count)
    per_slice = np.bincount(inner[usable], weights=slots[usable]).astype(np.int64)
    top_of = np.full(per_slice.size, -1, dtype=np.int64)
    top_of[inner[usable]] = domain[usable]
    whole = np.bincount(
        top_of[top_of >= 0], weights=(per_slice // k)[top_of >= 0], minlength=len(names)
    ).astype(np.int64)
    wanted = req.count // k
    if (whole >= wanted).any():
        return None
    level, slice_level = ps.tree.levels[req.level], ps.tree.levels[req.slice_level]
    places = best_places(names, whole)
    said = [f"{n} ({name})" for name, n in places]
    tail = f"; the most any offers is {said[0]}" if said else "; no domain offers one"
    if len(said) > 1:
        tail += f", the next {', '.join(said[1:])}"
    rule = f"one {level} domain, in slices of {k} inside one {slice_level} each (Kueue required)"
    sentence = (
        f"gang {problem.gang_ids[ps.gang]} needs {wanted} slices of {k} pods of "
        f"{demand_text(problem, t)} inside {rule}{tail}"
    )
    return Certificate(
        "domain", rule, sentence, True, unit="slices", needed=wanted,
        offered=int(whole.max(initial=0)), places=places,
    )  # fmt: skip


def _sub_group_bound(
    problem: Problem, u: int, gangs: list[int], free: IntArray
) -> Certificate | None:
    """A KAI sub-group with a required level: its pods inside one domain of that level,
    all of them when its gang needs every pending pod (else a sub-group may place fewer,
    and the counted reason speaks)."""
    plan = godel_plan_of(problem, u)
    members = [h for h in gangs if int(problem.gang_unit[h]) == u]
    if plan is None or not plan.sub_domains:
        return None
    if any(problem.gang_need[h] < problem.gang_pending[h] for h in members):
        return None
    for sub in plan.sub_domains:
        if sub.blocked or not sub.types or not sub.required:
            continue
        found = room(problem, members, free, sub.domain, len(sub.names), only=set(sub.types))
        if found.gangs and not bool(found.fits.any()):
            return _certificate(
                problem, found, sub.names, f"one {sub.level} domain (sub-group {sub.name})"
            )
    return None


def _certificate(problem: Problem, found: Room, names: tuple[str, ...], rule: str) -> Certificate:
    who = (
        f"gang {problem.gang_ids[found.gangs[0]]} needs"
        if len(found.gangs) == 1
        else f"gangs {', '.join(problem.gang_ids[h] for h in found.gangs)} need"
    )
    short = np.flatnonzero(found.needed > found.offered.max(axis=0)).tolist()
    pods: list[int] = []
    if short:  # one resource no domain has enough of
        r = short[0]
        resource = problem.resources[r]
        offered = found.offered[:, r]
        needed = int(found.needed[r])
        what = f"{format_quantity(resource, needed)} {resource}"
        unit: str | None = resource
    else:
        pods = np.flatnonzero(found.need > found.pods.max(axis=0)).tolist()
        i = pods[0] if pods else 0
        h = found.gangs[i]
        offered = found.pods[:, i]
        needed = int(found.need[i])
        what = f"{needed} pods of {demand_text(problem, problem.gang_types(h)[0])}"
        unit = None
    places = best_places(names, offered)
    said = [f"{format_quantity(unit, v) if unit else v} ({name})" for name, v in places]
    tail = f"; the largest offers {said[0]}" if said else "; no domain offers any"
    if len(said) > 1:
        tail += f", the next {', '.join(said[1:])}"
    if not short and not pods:
        tail = "; each lacks a resource or room for the pods" + tail
    sentence = f"{who} {what} inside {rule}{tail}"
    return Certificate(
        "domain",
        rule,
        sentence,
        True,
        unit=unit or "",
        needed=needed,
        offered=int(offered.max(initial=0)),
        places=places,
    )
