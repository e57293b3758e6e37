"""Volcano HyperNodes and a gang's networkTopology between protobuf and the model.

Checked as the YAML reader checks them (`solver.kube.hypernode`), violations named by
field path: a HyperNode needs a unique non-empty name and a tier >= 0; a member needs a
type and at least one selector, a HyperNode member an exact name only; a networkTopology
mode is empty, "hard" or "soft", and gives highest_tier_allowed or highest_tier_name, not
both; a sub_group_policy entry needs a unique non-empty name, sizes >= 0 and non-empty
match_label_keys entries.
"""

from __future__ import annotations

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._constraints import label_selector_from_proto, label_selector_to_proto
from solver.codec._errors import Violations
from solver.model import (
    HyperNode,
    HyperNodeMember,
    VolcanoNetworkTopology,
    VolcanoSubGroupPolicy,
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
    exact = msg.exact_name if msg.HasField("exact_name") else None
    regex = msg.regex if msg.HasField("regex") else None
    labels = (
        label_selector_from_proto(msg.labels, f"{path}.labels", out)
        if msg.HasField("labels")
        else None
    )
    if exact is None and regex is None and labels is None:
        out.add(path, "needs exact_name, regex or labels")
    if kind == "HyperNode" and (regex is not None or labels is not None or not exact):
        out.add(path, "a HyperNode member is selected by exact_name only")
    return HyperNodeMember(type=kind, exact_name=exact, regex=regex, labels=labels)


def hypernodes_from_proto(
    msgs: list[pb.HyperNode], path: str, out: Violations
) -> tuple[HyperNode, ...]:
    seen: set[str] = set()
    result = []
    for i, msg in enumerate(msgs):
        where = f"{path}[{i}]"
        if not msg.name:
            out.add(f"{where}.name", "must not be empty")
        elif msg.name in seen:
            out.add(f"{where}.name", f"HyperNode {msg.name!r} is declared twice")
        seen.add(msg.name)
        if msg.tier < 0:
            out.add(f"{where}.tier", "must be >= 0")
        members = [_member(m, f"{where}.members[{j}]", out) for j, m in enumerate(msg.members)]
        if msg.name and msg.tier >= 0:
            result.append(
                HyperNode(
                    name=msg.name,
                    tier=msg.tier,
                    tier_name=msg.tier_name,
                    members=tuple(m for m in members if m is not None),
                )
            )
    return tuple(sorted(result, key=lambda h: h.name))


def network_topology_from_proto(
    msg: pb.VolcanoNetworkTopology, path: str, out: Violations
) -> VolcanoNetworkTopology | None:
    mode = msg.mode or "hard"
    if mode not in ("hard", "soft"):
        out.add(f"{path}.mode", "must be empty, hard or soft")
        return None
    allowed = msg.highest_tier_allowed if msg.HasField("highest_tier_allowed") else None
    if allowed is not None and allowed < 0:
        out.add(f"{path}.highest_tier_allowed", "must be >= 0")
        return None
    if allowed is not None and msg.highest_tier_name:
        out.add(
            f"{path}.highest_tier_name", "highest_tier_allowed and highest_tier_name are exclusive"
        )
        return None
    return VolcanoNetworkTopology(
        mode=mode,
        highest_tier_allowed=allowed,
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
    result: list[VolcanoSubGroupPolicy] = []
    names: set[str] = set()
    for i, msg in enumerate(msgs):
        where = f"{path}[{i}]"
        ok = True
        if not msg.name or msg.name in names:
            out.add(f"{where}.name", "must be non-empty and unique")
            ok = False
        names.add(msg.name)
        size = msg.sub_group_size if msg.HasField("sub_group_size") else None
        if size is not None and size < 0:
            out.add(f"{where}.sub_group_size", "must be >= 0")
            ok = False
        if msg.min_sub_groups < 0:
            out.add(f"{where}.min_sub_groups", "must be >= 0")
            ok = False
        for j, key in enumerate(msg.match_label_keys):
            if not key:
                out.add(f"{where}.match_label_keys[{j}]", "must be non-empty")
                ok = False
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
        if ok:
            result.append(
                VolcanoSubGroupPolicy(
                    name=msg.name,
                    sub_group_size=size,
                    min_sub_groups=msg.min_sub_groups,
                    label_selector=selector,
                    match_label_keys=tuple(msg.match_label_keys),
                    network_topology=topology,
                )
            )
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
