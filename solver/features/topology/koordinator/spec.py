"""Koordinator's gather spec (`reference/koordinator.md` §3): which gang groups gather, where.

**The spec**: PodGroup annotation `gang.scheduling.koordinator.sh/network-topology-spec`
(`gatherStrategy[]`: `layer`, `strategy` MustGather|PreferGather, `podCountMultiple`). A
gang is topology-aware iff the annotation is present and parses (even `{}`). The spec of
the GangGroup's first gang (lowest id with a pending pod) applies to the whole group.

* Malformed annotation (not JSON, wrong JSON types): Koordinator's lenient rule — the gang
  is **not** topology-aware — plus a `note:` naming the PodGroup and the parse error.
* MustGather layer = the deepest MustGather rule after sorting the rules deepest first;
  layers unknown to the CR (and `ClusterTopologyLayer`) sort as if top-most (ties: a known
  layer first). If the chosen layer is unknown, Koordinator finds no domain and the gang
  can never be placed; gangplan reports that as the gang's counted reason (naming the
  unknown layer) and a note — it is not an input error. PreferGather rules have no effect
  on the search; their `podCountMultiple` does.
* No tree (no `ClusterNetworkTopology` named `default`, or a broken layer chain): every
  topology-aware gang is unschedulable with `no cluster network topology (...)`, as in
  Koordinator; the rest of the input schedules normally.

**Pod order** (`gather_rank_key`): pods with a valid `network-topology-index` annotation
(a non-negative integer) first in index order, then the rest; ties by pod name. This is the
documented intent (`SortPodsByIndex`): consecutive ranks land on consecutive slots of the
chosen domain. Upstream HEAD re-sorts pods by name right before assigning them to nodes
(`distributePods`), so there `w-10` lands before `w-2`; gangplan keeps index order.

**Existing peers**: running pods carrying `scheduling.koordinator.sh/network-topology-selector`
with the first pending pod's value, counted per node (a column of the snapshot).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from solver.features.topology.tree import TopologyTree
from solver.model import (
    CLUSTER_LAYER,
    MUST_GATHER,
    Gang,
    GatherSpec,
    GatherSpecError,
    Pod,
    parse_gather_spec,
)
from solver.problem import IntArray
from solver.snapshot import Snapshot, annotation_fact

__all__ = [
    "ANNOTATION_INDEX",
    "ANNOTATION_SELECTOR",
    "ANNOTATION_SPEC",
    "SELECTOR_FACT",
    "UnitGather",
    "gather_rank_key",
    "koordinator_spec",
    "must_gather_layer",
    "peer_counts",
    "unit_gather",
]

ANNOTATION_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
ANNOTATION_INDEX = "gang.scheduling.koordinator.sh/network-topology-index"
ANNOTATION_SELECTOR = "scheduling.koordinator.sh/network-topology-selector"
SELECTOR_FACT = annotation_fact("topology.selector", ANNOTATION_SELECTOR)

_INT = re.compile(r"^[+-]?[0-9]+$")


def gather_rank_key(pod: Pod) -> tuple[int, int, str, str]:
    """`SortPodsByIndex`: valid index (>= 0) ascending first, then un-indexed; ties by name."""
    text = pod.annotations.get(ANNOTATION_INDEX)
    index = int(text) if text is not None and _INT.match(text) else -1
    if index >= 0:
        return (0, index, pod.name, pod.key)
    return (1, 0, pod.name, pod.key)


def koordinator_spec(gang: Gang) -> GatherSpec | None:
    """The gang's parsed spec; None when absent. Raises GatherSpecError when malformed."""
    text = gang.annotations.get(ANNOTATION_SPEC)
    if not text:
        return None
    return parse_gather_spec(text)


def must_gather_layer(spec: GatherSpec, layers: Sequence[str]) -> str:
    """Koordinator's `GetMustGatherLayer` over the tree's `layers` (top -> down, root first).

    Rules sorted deepest layer first; `ClusterTopologyLayer` and unknown layers as top-most
    (a known layer before them on a tie); the first MustGather rule's layer, or "".
    """

    def key(rule_layer: str) -> tuple[int, int]:
        if rule_layer in layers and rule_layer != CLUSTER_LAYER:
            return (-layers.index(rule_layer), 0)
        return (-1, 1 if rule_layer == CLUSTER_LAYER else 2)

    for rule in sorted(spec.rules, key=lambda r: key(r.layer)):
        if rule.strategy == MUST_GATHER:
            return rule.layer
    return ""


@dataclass(frozen=True)
class UnitGather:
    """What Koordinator's gather needs for one gang group."""

    gang: str  # the gang whose spec applies
    spec: GatherSpec
    must_layer: str  # "" when no MustGather rule
    multiples: dict[str, int]  # layer name (as written) -> podCountMultiple > 1
    selector: str  # network-topology-selector of the first pending pod ("" = none)
    blocked: str | None = None  # why the group can never be placed


def unit_gather(
    gangs: Mapping[str, Gang],
    pending_of: Mapping[str, Sequence[Pod]],
    gang_ids: Sequence[str],
    tree: TopologyTree | None,
    tree_error: str | None,
) -> tuple[UnitGather | None, list[str]]:
    """The gather requirements of one gang group (its gangs `gang_ids`, their pending pods
    `pending_of[gid]`) or None, and notes."""
    notes: list[str] = []
    specs: dict[str, GatherSpec | None] = {}
    for gid in sorted(gang_ids):
        gang = gangs[gid]
        try:
            specs[gid] = koordinator_spec(gang)
        except GatherSpecError as err:
            specs[gid] = None
            notes.append(
                f"PodGroup {gid}: annotation {ANNOTATION_SPEC} ignored, as Koordinator does: {err}"
            )
    first = next((g for g in sorted(gang_ids) if pending_of.get(g)), None)
    if first is None:
        return None, notes
    spec = specs.get(first)
    group = ",".join(sorted(gang_ids))
    if spec is None:
        if any(s is not None for s in specs.values()):
            notes.append(
                f"GangGroup {group}: only the first gang's {ANNOTATION_SPEC} applies and "
                f"{first} has none; the group is placed without topology"
            )
        return None, notes
    if any(s is not None and s != spec for s in specs.values()):
        notes.append(
            f"GangGroup {group}: gangs disagree on {ANNOTATION_SPEC}; the first gang's "
            f"({first}) applies to the whole group"
        )
    gid = first
    multiples: dict[str, int] = {}
    for rule in spec.rules:
        if rule.pod_count_multiple > 1:
            multiples[rule.layer] = rule.pod_count_multiple
    pending = sorted((p for g in gang_ids for p in pending_of.get(g, ())), key=gather_rank_key)
    selector = pending[0].annotations.get(ANNOTATION_SELECTOR, "") if pending else ""
    if tree is None:
        no_tree = f"no cluster network topology ({tree_error})"
        return UnitGather(gid, spec, "", multiples, selector, no_tree), notes
    must = must_gather_layer(spec, tree.layers)
    blocked: str | None = None
    for rule in spec.rules:
        if rule.layer and rule.layer not in tree.layers:
            notes.append(
                f"PodGroup {gid}: {ANNOTATION_SPEC} names layer {rule.layer!r}, which "
                f"ClusterNetworkTopology default does not declare (layers: {', '.join(tree.layers)})"
            )
    if must and must not in tree.layers:
        blocked = (
            f"no candidate topology nodes can accommodate job: MustGather layer {must!r} is not "
            f"a layer of ClusterNetworkTopology default (layers: {', '.join(tree.layers)})"
        )
    return UnitGather(gid, spec, must, multiples, selector, blocked), notes


def peer_counts(snapshot: Snapshot, selector: str) -> IntArray:
    """Running pods per node carrying `network-topology-selector: <selector>` (ExistingPodNum)."""
    running = snapshot.running
    ident = running.value_id(selector)
    counts = np.zeros(len(snapshot.nodes), dtype=np.int64)
    if ident < 0:
        return counts
    rows = np.flatnonzero((running.fact(SELECTOR_FACT.name) == ident) & running.alive)
    nodes = running.node[rows]
    np.add.at(counts, nodes[nodes >= 0], 1)
    return counts
