"""Kueue TAS over gRPC: `KueueTopology` / `KueueResourceFlavor` on the NetworkTopology, the
pod-set annotations of a Pod, and the Decision's `KueueTopologyAssignment`s. The rules are
the model's (`solver.model`: a Topology's levels, a flavor's node labels), the same the YAML
reader applies, each violation under its field path."""

from __future__ import annotations

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from solver.codec._errors import Violations, build
from solver.decision import KueueFlavorAssignment, KueueTopologyAssignment
from solver.model import (
    KueueFlavor,
    KueueRequestError,
    KueueTopology,
    NetworkTopology,
    parse_kueue_request,
)

__all__ = [
    "assignments_from_proto",
    "assignments_to_proto",
    "check_kueue_annotations",
    "flavors_from_proto",
    "flavors_to_proto",
    "kueue_from_proto",
    "kueue_to_proto",
]


def check_kueue_annotations(msg: pb.Pod, path: str, out: Violations) -> None:
    try:
        parse_kueue_request(msg.annotations)
    except KueueRequestError as err:
        key = err.field.removeprefix("metadata.annotations[").removesuffix("]")
        out.add(f"{path}.annotations[{key}]", err.message)


def kueue_from_proto(msg: pb.NetworkTopology, path: str, out: Violations) -> dict[str, object]:
    """The NetworkTopology fields of the Kueue objects."""
    topologies: list[KueueTopology] = []
    for i, t in enumerate(msg.kueue_topologies):
        where = f"{path}.kueue_topologies[{i}]"
        if (
            found := build(KueueTopology, where, out, name=t.name, levels=tuple(t.levels))
        ) is not None:
            topologies.append(found)
    names = {t.name for t in msg.kueue_topologies}
    flavors: list[KueueFlavor] = []
    for i, f in enumerate(msg.kueue_flavors):
        where = f"{path}.kueue_flavors[{i}]"
        if f.topology_name not in names:
            out.add(f"{where}.topology_name", f"Topology {f.topology_name!r} is not in the request")
        flavor = build(
            KueueFlavor,
            where,
            out,
            names={"topology": "topology_name"},
            name=f.name,
            topology=f.topology_name,
            node_labels=dict(f.node_labels),
        )
        if flavor is not None:
            flavors.append(flavor)
    return {
        "kueue_topologies": tuple(sorted(topologies, key=lambda t: t.name)),
        "kueue_flavors": tuple(sorted(flavors, key=lambda f: f.name)),
    }


def kueue_to_proto(topology: NetworkTopology, msg: pb.NetworkTopology) -> None:
    msg.kueue_topologies.extend(
        pb.KueueTopology(name=t.name, levels=t.levels) for t in topology.kueue_topologies
    )
    msg.kueue_flavors.extend(
        pb.KueueResourceFlavor(name=f.name, topology_name=f.topology, node_labels=f.node_labels)
        for f in topology.kueue_flavors
    )


def assignments_to_proto(
    assignments: tuple[KueueTopologyAssignment, ...],
) -> list[spb.KueueTopologyAssignment]:
    return [
        spb.KueueTopologyAssignment(
            podgroup=a.podgroup,
            pod_set=a.pod_set,
            levels=a.levels,
            domains=[spb.KueueTopologyDomain(values=v, count=c) for v, c in a.domains],
        )
        for a in assignments
    ]


def assignments_from_proto(
    msgs: list[spb.KueueTopologyAssignment],
) -> tuple[KueueTopologyAssignment, ...]:
    return tuple(
        KueueTopologyAssignment(
            podgroup=a.podgroup,
            pod_set=a.pod_set,
            levels=tuple(a.levels),
            domains=tuple((tuple(d.values), d.count) for d in a.domains),
        )
        for a in msgs
    )


def flavors_to_proto(
    assignments: tuple[KueueFlavorAssignment, ...],
) -> list[spb.KueueFlavorAssignment]:
    return [
        spb.KueueFlavorAssignment(
            podgroup=a.podgroup, pod_set=a.pod_set, cluster_queue=a.cluster_queue,
            flavors=dict(a.flavors),
        )
        for a in assignments
    ]  # fmt: skip


def flavors_from_proto(
    msgs: list[spb.KueueFlavorAssignment],
) -> tuple[KueueFlavorAssignment, ...]:
    return tuple(
        KueueFlavorAssignment(
            podgroup=a.podgroup, pod_set=a.pod_set, cluster_queue=a.cluster_queue,
            flavors=tuple(sorted(a.flavors.items())),
        )
        for a in msgs
    )  # fmt: skip
