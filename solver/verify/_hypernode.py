"""Volcano HyperNode hard network topology, re-derived from the HyperNode objects.

A PodGroup with `spec.networkTopology` mode `hard` and a tier limit (`highestTierAllowed`,
or the tier of the HyperNodes whose `tierName` is `highestTierName`): its placed pods and
its running ones all lie on nodes of ONE HyperNode whose tier is <= the limit. The
HyperNode node sets are rebuilt here from the objects (exactMatch / regexMatch searched in
the node name / labelMatch for Node members, exactMatch children, first claimer by name
wins a child), plus the virtual cluster-top HyperNode of tier max + 1 (1 without
HyperNodes) holding every node. `soft` never fails (the root always holds the job).
"""

from __future__ import annotations

import re

from solver.model import HyperNode, LabelSelector, Node
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
    if not hard:
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
    for gid, gang in sorted(hard.items()):
        spec = gang.network_topology
        assert spec is not None
        if spec.mode == "soft":
            continue
        limit = spec.highest_tier_allowed
        if limit is None and spec.highest_tier_name:
            named = [h.tier for h in hypernodes if h.tier_name == spec.highest_tier_name]
            limit = min(named) if named else None
        if limit is None:
            continue  # Volcano leaves such a job unconstrained
        used = {ctx.target[p.key] for p in ctx.members(gid) if p.key in ctx.target}
        if not used:
            continue
        for row in ctx.snapshot.rows_of_gang(gid).tolist():
            if running.node[row] >= 0:
                used.add(running.node_name(row))
        if root_tier <= limit:
            continue  # the cluster-top HyperNode holds every node
        holders = [n for n, s in sets.items() if tiers[n] <= limit and used <= s]
        if not holders:
            problems.append(
                f"PodGroup {gid}: networkTopology hard (tier <= {limit}) but its pods on "
                f"{sorted(used)} are in no single HyperNode of tier <= {limit}"
            )
    return problems
