"""Kueue Topology Aware Scheduling objects (`kueue.x-k8s.io` v1beta1 / v1beta2).

Field names from `apis/kueue/v1beta2/topology_types.go` and `resourceflavor_types.go`;
validation as the CRDs and webhooks do it (`reference/godel_kueue.md` §2.2-2.3):

- `Topology`: `spec.levels[].nodeLabel`, 1..16 levels, unique, `kubernetes.io/hostname`
  only as the last level;
- `ResourceFlavor` with `spec.topologyName` (a TAS flavor): at least one `nodeLabels`
  entry; `nodeTaints` and `tolerations` kept (the tolerations are added to its pods');
- `Workload`: expanded to pods by `solver.kube.workloads._kueue`.
"""

from __future__ import annotations

import itertools

from pydantic import Field

from solver.kube.loader import RawObject
from solver.kube.objects import Metadata, StrMap, Taint, Toleration, _K8s
from solver.kube.validate import build, taints, tolerations
from solver.model import (
    KUEUE_ANNOTATIONS,
    KueueFlavor,
    KueueRequestError,
    KueueTopology,
    NetworkTopology,
    Pod,
    parse_kueue_request,
)

__all__ = [
    "KUEUE_GROUP",
    "K8sKueueFlavor",
    "K8sKueueTopology",
    "LevelsSpec",
    "check_kueue_pod",
    "kueue_flavor",
    "kueue_topologies",
    "levels_topology",
    "unread_kueue_annotations",
]

KUEUE_GROUP = "kueue.x-k8s.io"
MAX_LEVELS = 16


class _Level(_K8s):
    node_label: str = Field(alias="nodeLabel")  # its rule is the model's (`KueueTopology`)


class LevelsSpec(_K8s):
    """A Topology's `spec` (Kueue's, which KAI's repeats): node-label levels, coarse first.
    Their rules are the model's (`KueueTopology`, built by `levels_topology`)."""

    levels: list[_Level]


class K8sKueueTopology(_K8s):
    metadata: Metadata
    spec: LevelsSpec


class _FlavorSpec(_K8s):
    node_labels: StrMap = Field(default_factory=dict, alias="nodeLabels")
    node_taints: list[Taint] = Field(default_factory=list, alias="nodeTaints")
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_name: str | None = Field(default=None, alias="topologyName")


class K8sKueueFlavor(_K8s):
    metadata: Metadata
    spec: _FlavorSpec = Field(default_factory=_FlavorSpec)


def levels_topology(raw: RawObject, name: str, spec: LevelsSpec) -> KueueTopology:
    """A Topology object (Kueue's or KAI's) as the model's, its levels checked there."""
    return build(
        raw,
        KueueTopology,
        "",
        names={"name": "metadata.name", "levels": "spec.levels"},
        name=name,
        levels=tuple(lv.node_label for lv in spec.levels),
    )


def kueue_flavor(raw: RawObject, k8s: K8sKueueFlavor) -> KueueFlavor | None:
    """The TAS flavor of a ResourceFlavor; None when it names no topology (not TAS)."""
    spec = k8s.spec
    if not spec.topology_name:
        return None
    return build(
        raw,
        KueueFlavor,
        "",
        names={
            "name": "metadata.name",
            "topology": "spec.topologyName",
            "node_labels": "spec.nodeLabels",
            "node_taints": "spec.nodeTaints",
            "tolerations": "spec.tolerations",
        },
        name=k8s.metadata.name,
        topology=spec.topology_name,
        node_labels=dict(spec.node_labels),
        node_taints=taints(raw, spec.node_taints, "spec.nodeTaints"),
        tolerations=tolerations(raw, spec.tolerations, "spec.tolerations"),
    )


def check_kueue_pod(raw: RawObject, annotations: dict[str, str]) -> None:
    """A pod's Kueue TAS annotations, checked as Kueue's webhook checks them."""
    try:
        parse_kueue_request(annotations)
    except KueueRequestError as err:
        raise raw.error(err.message, field=err.field) from None


def _order_conflict(levels: tuple[str, ...], topology: NetworkTopology) -> str | None:
    """Labels shared by a Kueue Topology and the ClusterNetworkTopology must nest the same
    way (coarse to fine) so that one node has one place in the one topology core."""
    depth: dict[str, int] = {}
    by_name = {layer.name: layer for layer in topology.layers}
    for layer in topology.layers:
        d, walk = 0, layer
        while walk.parent is not None and walk.parent in by_name and d <= len(by_name):
            d, walk = d + 1, by_name[walk.parent]
        for key in layer.label_keys:
            depth.setdefault(key, d)
    shared = [label for label in levels if label in depth]
    for coarse, fine in itertools.pairwise(shared):
        if depth[coarse] >= depth[fine]:
            return (
                f"levels {coarse!r} above {fine!r} disagree with ClusterNetworkTopology "
                f"{topology.name!r}, where {fine!r} is not below {coarse!r}"
            )
    return None


def kueue_topologies(
    objects: list[tuple[RawObject, K8sKueueTopology | K8sKueueFlavor]],
    topology: NetworkTopology | None,
) -> NetworkTopology:
    """The Kueue Topology objects and TAS flavors on the cluster's topology (one core for
    every dialect); a flavor naming a missing Topology, or levels that contradict the
    ClusterNetworkTopology's nesting, are errors naming the field."""
    topologies: list[KueueTopology] = []
    flavors: list[tuple[RawObject, KueueFlavor]] = []
    for raw, k8s in objects:
        if isinstance(k8s, K8sKueueTopology):
            found = levels_topology(raw, k8s.metadata.name, k8s.spec)
            if topology is not None and (why := _order_conflict(found.levels, topology)):
                raise raw.error(why, field="spec.levels")
            topologies.append(found)
        elif (flavor := kueue_flavor(raw, k8s)) is not None:
            flavors.append((raw, flavor))
    names = {t.name for t in topologies}
    for raw, flavor in flavors:
        if flavor.topology not in names:
            raise raw.error(
                f"Topology {flavor.topology!r} is not in the input", field="spec.topologyName"
            )
    base = topology if topology is not None else NetworkTopology()
    return base.model_copy(
        update={
            "kueue_topologies": tuple(sorted(topologies, key=lambda t: t.name)),
            "kueue_flavors": tuple(sorted((f for _, f in flavors), key=lambda f: f.name)),
        }
    )


def unread_kueue_annotations(pods: list[Pod]) -> list[str]:
    """A note per Kueue pod-set annotation gangplan does not act on (multi-layer slices,
    topology spreading, ...), with the number of pending pods carrying it."""
    counts: dict[str, int] = {}
    gated = 0
    for p in pods:
        if p.node_name is None:
            gated += KUEUE_ANNOTATIONS.SLICE_CONSTRAINTS in p.annotations
            for key in p.annotations:
                if key.startswith(KUEUE_ANNOTATIONS.PREFIX) and key not in KUEUE_ANNOTATIONS.ALL:
                    counts[key] = counts.get(key, 0) + 1
    out = [
        f"annotation {key} on {n} pending pod(s) is not acted on (Kueue TAS reads it; "
        "gangplan does not yet)"
        for key, n in sorted(counts.items())
    ]
    if gated:
        out.append(
            f"annotation {KUEUE_ANNOTATIONS.SLICE_CONSTRAINTS} on {gated} pending pod(s): "
            "multi-layer slices, acted on as Kueue does with its alpha TASMultiLayerTopology "
            "feature gate on"
        )
    return out
