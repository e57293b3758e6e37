"""Volcano HyperNode hard network topology, re-derived from the HyperNode objects.

A PodGroup with `spec.networkTopology` mode `hard` and a tier limit (`highestTierAllowed`,
or the tier of the HyperNodes whose `tierName` is `highestTierName`): its placed pods and
its running ones all lie on nodes of ONE HyperNode whose tier is <= the limit. The
HyperNode node sets are rebuilt here from the objects (exactMatch / regexMatch searched in
the node name / labelMatch for Node members, exactMatch children, first claimer by name
wins a child), plus the virtual cluster-top HyperNode of tier max + 1 (1 without
HyperNodes) holding every node. `soft` never fails (the root always holds the job).

`subGroupPolicy`: the job's placed pods are split into sub-groups again from the policies
(the first policy whose labelSelector matches and whose matchLabelKeys the pod carries
non-empty; one sub-group per value tuple); a sub-group with placed pods has at least
`subGroupSize` of them, a hard sub-group `networkTopology` holds them, with its running
members, in one HyperNode of tier <= its limit, and each policy has at least `minSubGroups` placed sub-groups.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from solver.model import Gang, HyperNode, LabelSelector, Node, VolcanoNetworkTopology
from solver.verify._context import VerifyContext
from solver.verify._predicates import label_expression_holds

__all__ = ["hypernode"]


def _selects(selector: LabelSelector, labels: dict[str, str]) -> bool:
    if not selector.match_labels and not selector.match_expressions:
        return False  # an empty labelMatch selects nothing (member_selector.go)
    return all(labels.get(k) == v for k, v in selector.match_labels) and all(
        label_expression_holds(labels, r.key, r.operator, r.values)
        for r in selector.match_expressions
    )


def _direct_nodes(hn: HyperNode, nodes: tuple[Node, ...]) -> set[str]:
    out: set[str] = set()
    for m in hn.members:
        if m.type != "Node":
            continue
        if m.exact_name:
            out.add(m.exact_name)
        if m.regex is not None:
            try:
                pattern = re.compile(m.regex)
            except re.error:
                pattern = None
            if pattern is not None:
                out |= {n.name for n in nodes if pattern.search(n.name)}
        if m.labels is not None:
            out |= {n.name for n in nodes if _selects(m.labels, dict(n.labels))}
    return out


def _node_sets(hypernodes: tuple[HyperNode, ...], nodes: tuple[Node, ...]) -> dict[str, set[str]]:
    by_name = {h.name: h for h in hypernodes}
    children: dict[str, list[str]] = {}
    claimed: set[str] = set()
    for hn in sorted(hypernodes, key=lambda h: h.name):
        for m in hn.members:
            if m.type == "HyperNode" and m.exact_name in by_name and m.exact_name not in claimed:
                claimed.add(m.exact_name)
                children.setdefault(hn.name, []).append(m.exact_name)
    memo: dict[str, set[str]] = {}

    def span(name: str, path: frozenset[str]) -> set[str]:
        if name in memo:
            return memo[name]
        out = _direct_nodes(by_name[name], nodes)
        for child in children.get(name, []):
            if child not in path:
                out |= span(child, path | {child})
        memo[name] = out
        return out

    return {h.name: span(h.name, frozenset({h.name})) for h in hypernodes}


def hypernode(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    gangs = ctx.workload.gangs
    hard = {gid: g for gid, g in gangs.items() if g.network_topology is not None}
    with_subgroups = {gid: g for gid, g in gangs.items() if g.sub_group_policy}
    if not hard and not with_subgroups:
        return problems
    topology = ctx.snapshot.topology
    hypernodes = topology.hypernodes if topology is not None else ()
    nodes = ctx.snapshot.nodes.nodes
    sets = ctx.snapshot.memo(  # once per snapshot generation, not per call
        ("verify", "hypernode node sets", hypernodes), lambda: _node_sets(hypernodes, nodes)
    )
    tiers = {h.name: h.tier for h in hypernodes}
    root_tier = max(tiers.values(), default=0) + 1
    running = ctx.snapshot.running
    holds = _Holds(sets, tiers, root_tier)
    for gid, gang in sorted(with_subgroups.items()):
        problems.extend(_subgroups(ctx, gid, gang, hypernodes, holds))
    for gid, gang in sorted(hard.items()):
        spec = gang.network_topology
        assert spec is not None
        limit = _hard_limit(spec, hypernodes)
        if limit is None:
            continue  # Volcano leaves such a job unconstrained
        used = {ctx.target[p.key] for p in ctx.members(gid) if p.key in ctx.target}
        if not used:
            continue
        for row in ctx.snapshot.rows_of_gang(gid).tolist():
            if running.node[row] >= 0:
                used.add(running.node_name(row))
        if not holds(used, limit):
            problems.append(
                f"PodGroup {gid}: networkTopology hard (tier <= {limit}) but its pods on "
                f"{sorted(used)} are in no single HyperNode of tier <= {limit}"
            )
    return problems


class _Holds:
    """Whether some HyperNode of tier <= limit (or the cluster-top) holds a node set."""

    def __init__(self, sets: dict[str, set[str]], tiers: dict[str, int], root_tier: int):
        self.sets, self.tiers, self.root_tier = sets, tiers, root_tier

    def __call__(self, used: set[str], limit: int) -> bool:
        if self.root_tier <= limit:
            return True  # the cluster-top HyperNode holds every node
        return any(self.tiers[n] <= limit and used <= s for n, s in self.sets.items())


def _hard_limit(spec: VolcanoNetworkTopology, hypernodes: tuple[HyperNode, ...]) -> int | None:
    """A hard spec's tier limit (a highestTierName through tierName); None: no rule."""
    if spec.mode == "soft":
        return None
    limit = spec.highest_tier_allowed
    if limit is None and spec.highest_tier_name:
        named = [h.tier for h in hypernodes if h.tier_name == spec.highest_tier_name]
        limit = min(named) if named else None
    return limit


def _subgroup_of(gang: Gang, labels: Mapping[str, str]) -> tuple[int, tuple[str, ...]] | None:
    for i, policy in enumerate(gang.sub_group_policy):
        if policy.label_selector is not None and not policy.label_selector.matches(labels):
            continue
        keys = policy.match_label_keys
        if keys and all(labels.get(k) for k in keys):
            return i, tuple(labels[k] for k in keys)
    return None


def _subgroups(
    ctx: VerifyContext, gid: str, gang: Gang, hypernodes: tuple[HyperNode, ...], holds: _Holds
) -> list[str]:
    members = ctx.members(gid)
    placed: dict[tuple[int, tuple[str, ...]], list[str]] = {}
    for p in members:
        key = _subgroup_of(gang, p.labels)
        if key is not None:
            placed.setdefault(key, [])
            if p.key in ctx.target:
                placed[key].append(ctx.target[p.key])
    if not any(p.key in ctx.target for p in members):
        return []
    running = ctx.snapshot.running
    ran: dict[tuple[int, tuple[str, ...]], set[str]] = {}  # running members' nodes
    for row in ctx.snapshot.rows_of_gang(gid).tolist():
        key = _subgroup_of(gang, running.labels(row))
        if key is not None and running.node[row] >= 0:
            ran.setdefault(key, set()).add(running.node_name(row))
    out: list[str] = []
    ready = [0] * len(gang.sub_group_policy)
    for (i, values), nodes in sorted(placed.items()):
        policy = gang.sub_group_policy[i]
        name = f"{policy.name}-{'-'.join(values)}"
        size = 1 if policy.sub_group_size is None else policy.sub_group_size
        if nodes and len(nodes) < size:
            out.append(
                f"PodGroup {gid}: sub-group {name} has {len(nodes)} placed pod(s), fewer than "
                f"its subGroupSize {size}"
            )
        ready[i] += len(nodes) >= size
        spec = policy.network_topology
        limit = _hard_limit(spec, hypernodes) if spec is not None else None
        used = set(nodes) | ran.get((i, values), set())
        if nodes and limit is not None and not holds(used, limit):
            out.append(
                f"PodGroup {gid}: sub-group {name} networkTopology hard (tier <= {limit}) but "
                f"its pods on {sorted(used)} (running ones included) are in no single "
                f"HyperNode of tier <= {limit}"
            )
    for i, policy in enumerate(gang.sub_group_policy):
        if ready[i] < policy.min_sub_groups:
            out.append(
                f"PodGroup {gid}: subGroupPolicy {policy.name} has {ready[i]} placed "
                f"sub-group(s), fewer than minSubGroups {policy.min_sub_groups}"
            )
    return out
