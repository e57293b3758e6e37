"""Kueue's flavor assigner (`pkg/scheduler/flavorassigner/flavorassigner.go`) on quota alone.

For each pod type of a workload (a pod set's pods), and each resource group covering what
it requests, the flavors are tried in the ClusterQueue's order:

1. a flavor whose `nodeLabels` contradict the pods' `nodeSelector` is skipped ("flavor X
   doesn't match node affinity");
2. per covered resource, `val` = what the workload's earlier pod sets took of this
   flavor-resource + this pod set's request:
   - `val > potential available` (the most the ClusterQueue could ever get): no fit;
   - `val ≤ available`: fit, with its borrowing level;
   - otherwise it would need preemption, which gangplan does not plan for Kueue: the
     next flavor is tried (`whenCanPreempt: TryNextFlavor`, Kueue's default);
3. the first flavor that fits is taken (`whenCanBorrow: MayStopSearch`, Kueue's default:
   a flavor that fits by borrowing stops the search).

A requested resource no resource group covers refuses the workload ("resource X
unavailable in ClusterQueue"), as Kueue does. The reasons are Kueue's messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from solver.features.kueueshare.quota import KueueNodes
from solver.model import KueueQueue, Pod, flavor_resource
from solver.quantity import PODS, format_quantity

__all__ = ["Assignment", "PodSet", "assign"]


@dataclass(frozen=True)
class PodSet:
    """A pod set of a workload: one of its pods (the shape) and how many."""

    pod: Pod
    count: int


@dataclass
class Assignment:
    """A workload's flavors: per pod set, resource -> flavor; its usage per flavor-resource;
    the borrowing level; why it does not fit (None: it fits)."""

    flavors: list[dict[str, str]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    borrowing: int = 0
    why: str | None = None


def _requests(pod: Pod) -> dict[str, int]:
    return {r: v for r, v in pod.requests.items() if v > 0 and r != PODS}


def assign(nodes: KueueNodes, cq: str, spec: KueueQueue, pod_sets: Sequence[PodSet]) -> Assignment:
    """The flavors of a workload of ClusterQueue `cq` (`spec`) on the usage in `nodes`."""
    out = Assignment()
    covering = {r: i for i, g in enumerate(spec.groups) for r in g.covered}
    for ps in pod_sets:
        asked = _requests(ps.pod)
        if PODS in covering:
            asked[PODS] = 1
        chosen: dict[str, str] = {}
        for r in sorted(asked):
            if r not in covering:
                out.why = f"resource {r} unavailable in ClusterQueue {cq}"
                return out
        for group in (spec.groups[i] for i in sorted({covering[r] for r in asked})):
            wanted = {r: v * ps.count for r, v in asked.items() if r in group.covered}
            reasons: list[str] = []
            picked = None
            for flavor in group.flavors:
                if any(ps.pod.node_selector.get(k, v) != v for k, v in flavor.node_labels.items()):
                    reasons.append(f"flavor {flavor.name} doesn't match node affinity")
                    continue
                level, why = _fits(nodes, cq, flavor.name, wanted, out.usage)
                if why is None:
                    picked = flavor.name
                    out.borrowing = max(out.borrowing, level)
                    break
                reasons.extend(why)
            if picked is None:
                out.why = f"couldn't assign flavors to pod set: {', '.join(reasons)}"
                return out
            for r, v in wanted.items():
                fr = flavor_resource(picked, r)
                out.usage[fr] = out.usage.get(fr, 0) + v
                chosen[r] = picked
        out.flavors.append(chosen)
    return out


def _fits(
    nodes: KueueNodes, cq: str, flavor: str, wanted: Mapping[str, int], assumed: Mapping[str, int]
) -> tuple[int, list[str] | None]:
    """(borrowing level, None) when every resource fits in `flavor`, else Kueue's reasons."""
    level, reasons = 0, []
    for r, request in sorted(wanted.items()):
        fr = flavor_resource(flavor, r)
        before = assumed.get(fr, 0)
        val = before + request
        most = nodes.potential(cq, fr)
        if val > most:
            reasons.append(
                f"insufficient quota for {r} in flavor {flavor}, previously considered podsets "
                f"requests ({format_quantity(r, before)}) + current podset request "
                f"({format_quantity(r, request)}) > maximum capacity ({format_quantity(r, most)})"
            )
            continue
        available = max(0, nodes.available(cq, fr))
        if val > available:
            reasons.append(
                f"insufficient unused quota for {r} in flavor {flavor}, "
                f"{format_quantity(r, val - available)} more needed"
            )
            continue
        level = max(level, nodes.borrowing_level(cq, fr, val))
    return level, (reasons or None)
