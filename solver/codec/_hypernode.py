"""Volcano HyperNodes and a gang's networkTopology between protobuf and the model.

The wire's own shape is checked here (member types, the mode's words); the rules are the
model's (`solver.model`: a HyperNode's name and tier, a member's selectors, a
networkTopology's one limit, a sub-group policy's sizes and keys), the same ones the YAML
reader applies, each violation named by its field path; names listed twice
(`duplicate_name`) are checked here as in the YAML reader.
"""

from __future__ import annotations

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._constraints import label_selector_from_proto, label_selector_to_proto
from solver.codec._errors import Violations, build
from solver.model import (
    HyperNode,
    HyperNodeMember,
    VolcanoNetworkTopology,
    VolcanoSubGroupPolicy,
    duplicate_name,
)

__all__ = [
    "hypernodes_from_proto",
    "hypernodes_to_proto",
    "network_topology_from_proto",
    "network_topology_to_proto",
    "sub_group_policy_from_proto",
    "sub_group_policy_to_proto",
]

_TYPES = {pb.HYPER_NODE_MEMBER_TYPE_NODE: "Node", pb.HYPER_NODE_MEMBER_TYPE_HYPER_NODE: "HyperNode"}
_CODES = {name: code for code, name in _TYPES.items()}


def _member(msg: pb.HyperNodeMember, path: str, out: Violations) -> HyperNodeMember | None:
    kind = _TYPES.get(msg.type)
    if kind is None:
        out.add(f"{path}.type", "must be HYPER_NODE_MEMBER_TYPE_NODE or _HYPER_NODE")
        return None
    labels = (
        label_selector_from_proto(msg.labels, f"{path}.labels", out)
        if msg.HasField("labels")
        else None
    )
    return build(
        HyperNodeMember,
        path,
        out,
        type=kind,
        exact_name=msg.exact_name if msg.HasField("exact_name") else None,
        regex=msg.regex if msg.HasField("regex") else None,
        labels=labels,
    )


def hypernodes_from_proto(
    msgs: list[pb.HyperNode], path: str, out: Violations
) -> tuple[HyperNode, ...]:
    twice = duplicate_name(msg.name for msg in msgs)
    if twice is not None:
        out.add(f"{path}[{twice}].name", f"HyperNode {msgs[twice].name!r} is declared twice")
    result = []
    for i, msg in enumerate(msgs):
        where = f"{path}[{i}]"
        members = [_member(m, f"{where}.members[{j}]", out) for j, m in enumerate(msg.members)]
        hypernode = build(
            HyperNode,
            where,
            out,
            name=msg.name,
            tier=msg.tier,
            tier_name=msg.tier_name,
            members=tuple(m for m in members if m is not None),
        )
        if hypernode is not None:
            result.append(hypernode)
    return tuple(sorted(result, key=lambda h: h.name))


def network_topology_from_proto(
    msg: pb.VolcanoNetworkTopology, path: str, out: Violations
) -> VolcanoNetworkTopology | None:
    mode = msg.mode or "hard"
    if mode not in ("hard", "soft"):
        out.add(f"{path}.mode", "must be empty, hard or soft")
        return None
    return build(
        VolcanoNetworkTopology,
        path,
        out,
        mode=mode,
        highest_tier_allowed=msg.highest_tier_allowed
        if msg.HasField("highest_tier_allowed")
        else None,
        highest_tier_name=msg.highest_tier_name or None,
    )


def hypernodes_to_proto(hypernodes: tuple[HyperNode, ...]) -> list[pb.HyperNode]:
    out = []
    for h in hypernodes:
        msg = pb.HyperNode(name=h.name, tier=h.tier, tier_name=h.tier_name)
        for m in h.members:
            member = pb.HyperNodeMember(type=_CODES[m.type])
            if m.exact_name is not None:
                member.exact_name = m.exact_name
            if m.regex is not None:
                member.regex = m.regex
            if m.labels is not None:
                member.labels.CopyFrom(label_selector_to_proto(m.labels))
            msg.members.append(member)
        out.append(msg)
    return out


def network_topology_to_proto(spec: VolcanoNetworkTopology) -> pb.VolcanoNetworkTopology:
    msg = pb.VolcanoNetworkTopology(mode=spec.mode, highest_tier_name=spec.highest_tier_name or "")
    if spec.highest_tier_allowed is not None:
        msg.highest_tier_allowed = spec.highest_tier_allowed
    return msg


def sub_group_policy_from_proto(
    msgs: list[pb.VolcanoSubGroupPolicy], path: str, out: Violations
) -> tuple[VolcanoSubGroupPolicy, ...]:
    twice = duplicate_name(msg.name for msg in msgs)
    if twice is not None:
        out.add(f"{path}[{twice}].name", f"sub-group policy {msgs[twice].name!r} is listed twice")
    result: list[VolcanoSubGroupPolicy] = []
    for i, msg in enumerate(msgs):
        where = f"{path}[{i}]"
        selector = (
            label_selector_from_proto(msg.label_selector, f"{where}.label_selector", out)
            if msg.HasField("label_selector")
            else None
        )
        topology = (
            network_topology_from_proto(msg.network_topology, f"{where}.network_topology", out)
            if msg.HasField("network_topology")
            else None
        )
        policy = build(
            VolcanoSubGroupPolicy,
            where,
            out,
            name=msg.name,
            sub_group_size=msg.sub_group_size if msg.HasField("sub_group_size") else None,
            min_sub_groups=msg.min_sub_groups,
            label_selector=selector,
            match_label_keys=tuple(msg.match_label_keys),
            network_topology=topology,
        )
        if policy is not None:
            result.append(policy)
    return tuple(result)


def sub_group_policy_to_proto(
    policies: tuple[VolcanoSubGroupPolicy, ...],
) -> list[pb.VolcanoSubGroupPolicy]:
    out = []
    for p in policies:
        msg = pb.VolcanoSubGroupPolicy(
            name=p.name, min_sub_groups=p.min_sub_groups, match_label_keys=p.match_label_keys
        )
        if p.sub_group_size is not None:
            msg.sub_group_size = p.sub_group_size
        if p.label_selector is not None:
            msg.label_selector.CopyFrom(label_selector_to_proto(p.label_selector))
        if p.network_topology is not None:
            msg.network_topology.CopyFrom(network_topology_to_proto(p.network_topology))
        out.append(msg)
    return out
