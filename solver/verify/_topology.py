"""Network topology, re-derived from the nodes' labels and the ClusterNetworkTopology.

* Koordinator gather (`network-topology`): in a GangGroup whose first gang (lowest id with a
  pending pod) carries a valid `network-topology-spec`, every newly placed pod is on a node
  of the network tree, all of them share one domain of the deepest MustGather layer — the
  domain the group's bound members run in, when it has any (late or recreated members stay
  in their gang's domain: gangplan's improvement on Koordinator, whose PR #3181 was closed)
  — and in every domain of a layer with `podCountMultiple` m their count is a multiple of m;
* Godel (`job-affinity`): a PodGroup's placed pods match its `nodeSelector`, and its placed
  and running pods share one value of every `required` topology key;
* Kubernetes Workload API (always): a PodGroup's placed and running pods are on nodes that
  carry its `schedulingConstraints.topology[0].key` label, all with one value;
* KAI sub-groups (always): once a gang places pods, each sub-group with a minimum has at
  least that many running or placed, and the placed and running pods of each sub-group
  with levels are on nodes that carry every label of its levels, all with one value each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from solver.config import Plugin
from solver.model import (
    CLUSTER_LAYER,
    MUST_GATHER,
    NODE_LAYER,
    GatherSpecError,
    NetworkTopology,
    Node,
    parse_gather_spec,
    parse_job_affinity,
)
from solver.verify._context import VerifyContext
from solver.verify._gangs import gang_groups
from solver.verify._predicates import label_expression_holds

__all__ = ["gather", "job_affinity", "sub_group_topology", "workload_topology"]

_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
_GODEL = "scheduling.godel.kubewharf.io"


def _node_paths(
    topology: NetworkTopology | None, nodes: tuple[Node, ...]
) -> tuple[list[str], dict[str, dict[str, str]]] | None:
    """Layer names top -> down and, per node in the tree, its domain name in every layer."""
    if topology is None:
        return None
    spec = {layer.name: layer for layer in topology.layers}
    chain: list[str] = []
    current = NODE_LAYER
    for _ in topology.layers:
        if current not in spec:
            return None
        chain.append(current)
        current = spec[current].parent or ""
    chain.reverse()
    if not chain or chain[-1] != NODE_LAYER:
        return None
    parent_of: dict[tuple[str, str], tuple[str, str]] = {}
    leaf: dict[str, tuple[str, str]] = {}
    for node in nodes:  # name order: the first node to name a domain attaches it
        metas: list[tuple[str, str]] = []
        for depth, layer in enumerate(chain):
            if layer == NODE_LAYER:
                metas.append((layer, node.name))
                continue
            value = next((node.labels[k] for k in spec[layer].label_keys if node.labels.get(k)), "")
            if not value and depth == len(chain) - 2:
                value = node.name
            if not value:
                break
            metas.append((layer, value))
        if len(metas) != len(chain):
            continue
        above = (CLUSTER_LAYER, "")
        for meta in metas:
            parent_of.setdefault(meta, above)
            above = meta
        leaf[node.name] = metas[-1]
    paths: dict[str, dict[str, str]] = {}
    for name, meta in leaf.items():
        path: dict[str, str] = {}
        walk: tuple[str, str] | None = meta
        while walk is not None and walk[0] != CLUSTER_LAYER:
            path[walk[0]] = walk[1]
            walk = parent_of.get(walk)
        path[CLUSTER_LAYER] = ""
        paths[name] = path
    return [CLUSTER_LAYER, *chain], paths


def gather(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    gangs = ctx.workload.gangs
    placed = ctx.target
    if not any(_SPEC in g.annotations for g in gangs.values()):
        return problems  # no gang asks to be gathered
    topology, table = ctx.snapshot.topology, ctx.snapshot.nodes
    # a fact of the nodes and the topology alone: kept while neither changes, so a front
    # end's stream of pod deltas does not pay O(nodes) per call for it
    tree = table.memo(
        ("verify", "gather paths", topology), lambda: _node_paths(topology, table.nodes)
    )
    for group in gang_groups(ctx):
        first = next((g for g in group if ctx.members(g)), None)
        text = gangs[first].annotations.get(_SPEC) if first else None
        if not text:
            continue
        try:
            spec = parse_gather_spec(text)
        except GatherSpecError:
            continue  # Koordinator ignores a malformed spec
        pods = [p.key for g in group for p in ctx.members(g) if p.key in placed]
        if not pods:
            continue
        name = ",".join(group)
        if tree is None:
            problems.append(f"gang group {name}: placed by topology without a network tree")
            continue
        layers, paths = tree
        outside = sorted({placed[k] for k in pods if placed[k] not in paths})
        if outside:
            problems.append(f"gang group {name}: pods on nodes outside the network tree: {outside}")
            continue
        depth = {layer: i for i, layer in enumerate(layers)}
        musts = [r.layer for r in spec.rules if r.strategy == MUST_GATHER]
        known = [m for m in musts if m in depth]
        if musts and not known:
            problems.append(f"gang group {name}: placed although its MustGather layer is unknown")
        elif known:
            layer = max(known, key=lambda m: depth[m])
            domains = sorted({paths[placed[k]][layer] for k in pods})
            bound = _bound_domains(ctx, group, paths, layer)
            if len(domains) > 1:
                problems.append(f"gang group {name}: MustGather {layer} spans domains {domains}")
            elif bound and bound != domains:
                problems.append(
                    f"gang group {name}: pods placed in MustGather {layer} {domains[0]}, "
                    f"away from the {layer} domain(s) of its bound members {bound}"
                )
        multiples = {r.layer: r.pod_count_multiple for r in spec.rules if r.pod_count_multiple > 1}
        for layer, m in multiples.items():
            if layer not in depth:
                continue
            counts: dict[str, int] = defaultdict(int)
            for k in pods:
                counts[paths[placed[k]][layer]] += 1
            bad = {d: c for d, c in sorted(counts.items()) if c % m}
            if bad:
                problems.append(f"gang group {name}: {layer} podCountMultiple {m} broken: {bad}")
    return problems


def _bound_domains(
    ctx: VerifyContext, group: list[str], paths: dict[str, dict[str, str]], layer: str
) -> list[str]:
    """The `layer` domains the group's running (bound) members are in, sorted."""
    running = ctx.snapshot.running
    out: set[str] = set()
    for gid in group:
        for row in ctx.snapshot.rows_of_gang(gid).tolist():
            if running.node[row] < 0:
                continue
            path = paths.get(running.node_name(row))
            out.add(path[layer] if path is not None else "(outside the tree)")
    return sorted(out)


def job_affinity(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    gangs = ctx.workload.gangs
    placed = ctx.target
    if not any(g.dialect == _GODEL and g.affinity is not None for g in gangs.values()):
        return problems  # no Godel job-level affinity to check
    nodes = ctx.snapshot.nodes.by_name
    for group in gang_groups(ctx):
        if len(group) != 1:
            continue
        gang = gangs[group[0]]
        if gang.dialect != _GODEL or gang.affinity is None:
            continue
        text = gang.annotations.get(_SPEC)
        if ctx.conf.enabled(Plugin.NETWORK_TOPOLOGY) and text:
            try:
                parse_gather_spec(text)
                continue  # the Koordinator spec takes precedence
            except GatherSpecError:
                pass
        affinity = parse_job_affinity(gang.affinity)
        if affinity is None:
            continue
        new = [placed[p.key] for p in ctx.members(gang.id) if p.key in placed]
        if not new:
            continue
        if affinity.node_selector is not None:
            for node_name in sorted(set(new)):
                labels = nodes[node_name].labels
                ok = any(
                    (
                        term.match_expressions
                        and all(
                            label_expression_holds(labels, e.key, e.operator, e.values)
                            for e in term.match_expressions
                        )
                    )
                    or (not term.match_expressions and term.match_fields)
                    for term in affinity.node_selector
                )
                if not ok:
                    problems.append(
                        f"gang {gang.id}: pod on {node_name} misses the PodGroup nodeSelector"
                    )
        if affinity.required:
            on = [name for _, name in _running_of(ctx, gang.id)]
            values = set()
            for node_name in set(new) | set(on):
                labels = nodes[node_name].labels
                values.add(tuple(labels.get(key) for key in sorted(set(affinity.required))))
            if len(values) != 1 or None in next(iter(values)):
                problems.append(
                    f"gang {gang.id}: pods span required topology domains {sorted(map(str, values))}"
                )
    return problems


def workload_topology(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    nodes = ctx.snapshot.nodes.by_name
    for gang in ctx.workload.gangs.values():
        key = gang.topology_key
        if key is None:
            continue
        new = [ctx.target[p.key] for p in ctx.members(gang.id) if p.key in ctx.target]
        if not new:
            continue
        on = [name for _, name in _running_of(ctx, gang.id)]
        values = {nodes[name].labels.get(key) for name in {*new, *on}}
        if None in values:
            problems.append(f"gang {gang.id}: pods on nodes without topology label {key}")
        elif len(values) > 1:
            problems.append(f"gang {gang.id}: pods span {key} domains {sorted(map(str, values))}")
    return problems


def sub_group_topology(ctx: VerifyContext) -> list[str]:
    problems: list[str] = []
    nodes = ctx.snapshot.nodes.by_name
    for gang in ctx.workload.gangs.values():
        if not gang.topology_sub_groups:
            continue
        new = [(p.labels, ctx.target[p.key]) for p in ctx.members(gang.id) if p.key in ctx.target]
        if not new:
            continue
        on = _running_of(ctx, gang.id)
        for sub in gang.topology_sub_groups:
            count = sum(1 for labels, _ in (*new, *on) if sub.holds(labels))
            if count < sub.min_member:
                problems.append(
                    f"gang {gang.id}: sub-group {sub.name} has {count} pod(s) running or "
                    f"placed, below its minMember {sub.min_member}"
                )
            if not sub.levels or not any(sub.holds(labels) for labels, _ in new):
                continue
            hosts = {name for labels, name in (*new, *on) if sub.holds(labels)}
            values = {tuple(nodes[name].labels.get(k) for k in sub.levels) for name in hosts}
            if any(None in v for v in values):
                problems.append(
                    f"gang {gang.id}: sub-group {sub.name} has pods on nodes without topology "
                    f"label(s) {', '.join(sub.levels)}"
                )
            elif len(values) > 1:
                shown = sorted(".".join(str(x) for x in v) for v in values)
                problems.append(
                    f"gang {gang.id}: sub-group {sub.name} spans {sub.levels[-1]} domains {shown}"
                )
    return problems


def _running_of(ctx: VerifyContext, gang_id: str) -> list[tuple[Mapping[str, str], str]]:
    """(labels, node) of each of the gang's running pods on a node."""
    running = ctx.snapshot.running
    return [
        (running.labels(row), running.node_name(row))
        for row in ctx.snapshot.rows_of_gang(gang_id).tolist()
        if running.node[row] >= 0
    ]
