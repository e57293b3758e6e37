"""Kueue TAS pod sets (`reference/godel_kueue.md` §2.3), re-derived from the pods'
annotations and the Kueue Topology objects, without the feature code:

- a pod set (a gang's pending pods sharing the `kueue.x-k8s.io/podset` label and their
  topology annotations) is placed whole or not at all;
- its pods run on nodes carrying every level label of a Topology that has its levels, and
  matching a TAS flavor of that Topology;
- `podset-required-topology: L`: all its placed pods in one domain of level L (a domain is
  the nodes' values of every level from the top down to L);
- `podset-slice-required-topology: S` + `podset-slice-size: k`: in every domain of level
  S, a multiple of k of its pods (so the set splits into whole slices, each in one domain);
  the same for every layer of `podset-slice-required-topology-constraints` (multi-layer);
- `podset-group-name: G` with `podset-required-topology: L`: the pod sets of the gang
  naming G (a leader and its workers) all placed, together in one domain of level L.
"""

from __future__ import annotations

from collections import Counter

from solver.model import (
    KUEUE_ANNOTATIONS,
    KUEUE_PODSET_LABEL,
    KueueRequest,
    KueueTopology,
    Node,
    Pod,
    parse_kueue_request,
)
from solver.verify._context import VerifyContext

__all__ = ["kueue_tas"]

_PODSET = KUEUE_PODSET_LABEL


def _pod_sets(pods: list[Pod]) -> dict[tuple[str, ...], list[Pod]]:
    out: dict[tuple[str, ...], list[Pod]] = {}
    for pod in pods:
        keys = sorted(k for k in pod.annotations if k.startswith("kueue.x-k8s.io/podset-"))
        if keys:
            key = (pod.labels.get(_PODSET, ""), *(f"{k}={pod.annotations[k]}" for k in keys))
            out.setdefault(key, []).append(pod)
    return out


def _domain(node: Node, levels: tuple[str, ...], level: str) -> tuple[str, ...] | None:
    """The node's values from the top level down to `level`; None when a label is missing."""
    path = levels[: levels.index(level) + 1]
    if any(lv not in node.labels for lv in path):
        return None
    return tuple(node.labels[lv] for lv in path)


def kueue_tas(ctx: VerifyContext) -> list[str]:
    topology = ctx.snapshot.topology
    if topology is None or not topology.kueue_topologies:
        return []
    nodes = ctx.snapshot.nodes.by_name
    problems: list[str] = []
    for gang in ctx.workload.gangs.values():
        for pods in _pod_sets(ctx.members(gang.id)).values():
            request = parse_kueue_request(pods[0].annotations)
            placed = [nodes[ctx.target[p.key]] for p in pods if p.key in ctx.target]
            if request is None or not placed:
                continue
            what = f"gang {gang.id} Kueue pod set {pods[0].labels.get(_PODSET, 'main')}"
            if len(placed) != len(pods):
                problems.append(f"{what}: {len(placed)} of {len(pods)} pods placed, not all")
            wanted = [lv for lv in (request.level, request.slice_level) if lv]
            fitting = [
                t
                for t in topology.kueue_topologies
                if all(lv in t.levels for lv in wanted)
                and any(
                    f.topology == t.name
                    and all(
                        all(n.labels.get(k) == v for k, v in f.node_labels.items())
                        and all(lv in n.labels for lv in t.levels)
                        for n in placed
                    )
                    for f in topology.kueue_flavors
                )
            ]
            if not fitting:
                problems.append(f"{what}: pods outside every TAS flavor's pool with its levels")
                continue
            problems.extend(_levels(what, fitting[0], request, placed))
        problems.extend(_groups(ctx, gang.id, topology.kueue_topologies, nodes))
    return problems


def _groups(
    ctx: VerifyContext, gang: str, topologies: tuple[KueueTopology, ...], nodes: dict[str, Node]
) -> list[str]:
    """A group's pod sets share one domain of their required level, all placed or none."""
    members: dict[str, list[Pod]] = {}
    for pod in ctx.members(gang):
        group = pod.annotations.get(KUEUE_ANNOTATIONS.GROUP_NAME)
        if group is not None:
            members.setdefault(group, []).append(pod)
    out: list[str] = []
    for group, pods in sorted(members.items()):
        placed = [nodes[ctx.target[p.key]] for p in pods if p.key in ctx.target]
        what = f"gang {gang} Kueue pod-set group {group}"
        if placed and len(placed) != len(pods):
            out.append(f"{what}: {len(placed)} of {len(pods)} pods placed, not all")
        level = pods[0].annotations.get(KUEUE_ANNOTATIONS.REQUIRED)
        if level is None or not placed:
            continue
        for topology in topologies:
            if level in topology.levels:
                domains = {_domain(n, topology.levels, level) for n in placed}
                if len(domains) > 1:
                    shown = sorted("/".join(d) for d in domains if d)
                    out.append(f"{what}: leader and workers span {level} domains {shown}")
                break
    return out


def _levels(
    what: str, topology: KueueTopology, request: KueueRequest, placed: list[Node]
) -> list[str]:
    out: list[str] = []
    level = request.level
    if request.mode == "required" and level is not None:
        domains = {_domain(n, topology.levels, level) for n in placed}
        if len(domains) > 1:
            shown = sorted("/".join(d) for d in domains if d)
            out.append(f"{what}: pods span {level} domains {shown}")
    for slice_level, size in request.layers:  # every slice layer (multi-layer too)
        if size <= 1 or slice_level not in topology.levels:
            continue
        counts = Counter(_domain(n, topology.levels, slice_level) for n in placed)
        for domain, count in sorted(counts.items(), key=lambda kv: str(kv[0])):
            if count % size:
                where = "/".join(domain or ())
                out.append(
                    f"{what}: {count} pods in {slice_level} domain {where}, not whole slices "
                    f"of {size}"
                )
    return out
