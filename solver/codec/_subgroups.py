"""A gang's topology sub-groups (KAI-Scheduler sub-groups with a required level) between
protobuf and the model.

Checked as the proto comments say, violations named by field path: at most 256 sub-groups,
each with a unique non-empty name, a pod label key, at least one label value, at most 16
node label keys each once, a minimum >= 0, preferred levels extending its levels, at
least one of the three; sub-groups of one label nest or are disjoint (`sub_groups_problem`, the rule the model states once).
"""

from __future__ import annotations

from collections.abc import Sequence

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._errors import Violations
from solver.model import (
    MAX_SUB_GROUP_LEVELS,
    MAX_SUB_GROUPS,
    TopologySubGroup,
    label_key_problem,
    label_value_problem,
    sub_groups_problem,
)

__all__ = ["topology_sub_groups_from_proto", "topology_sub_groups_to_proto"]

MAX_NAME = 253


def topology_sub_groups_from_proto(
    items: Sequence[pb.TopologySubGroup], path: str, out: Violations
) -> tuple[TopologySubGroup, ...]:
    if len(items) > MAX_SUB_GROUPS:
        out.add(path, f"at most {MAX_SUB_GROUPS} sub-groups, got {len(items)}")
        return ()
    subs: list[TopologySubGroup] = []
    for i, msg in enumerate(items):
        where = f"{path}[{i}]"
        before = len(out.items)
        if not msg.name or len(msg.name) > MAX_NAME:
            out.add(f"{where}.name", f"must be 1 to {MAX_NAME} characters")
        if why := label_key_problem(msg.label):
            out.add(f"{where}.label", why)
        if not 1 <= len(msg.values) <= MAX_SUB_GROUPS:
            out.add(f"{where}.values", f"must name 1 to {MAX_SUB_GROUPS} values")
        for j, value in enumerate(msg.values[:MAX_SUB_GROUPS]):
            if not value or (why := label_value_problem(msg.label, value)):
                out.add(f"{where}.values[{j}]", why or "must not be empty")
        if len(msg.levels) > MAX_SUB_GROUP_LEVELS:
            out.add(f"{where}.levels", f"must list at most {MAX_SUB_GROUP_LEVELS} node labels")
        if len(msg.preferred) > MAX_SUB_GROUP_LEVELS:
            out.add(f"{where}.preferred", f"must list at most {MAX_SUB_GROUP_LEVELS} node labels")
        for j, level in enumerate(msg.preferred[:MAX_SUB_GROUP_LEVELS]):
            if why := label_key_problem(level):
                out.add(f"{where}.preferred[{j}]", why)
        if msg.min_member < 0:
            out.add(f"{where}.min_member", f"must not be negative: {msg.min_member}")
        for j, level in enumerate(msg.levels[:MAX_SUB_GROUP_LEVELS]):
            if why := label_key_problem(level):
                out.add(f"{where}.levels[{j}]", why)
        if len(out.items) == before:
            subs.append(
                TopologySubGroup(
                    name=msg.name,
                    label=msg.label,
                    values=tuple(msg.values),
                    levels=tuple(msg.levels),
                    min_member=msg.min_member,
                    preferred=tuple(msg.preferred),
                )
            )
    if len(subs) == len(items) and (found := sub_groups_problem(subs)):
        i, why = found
        out.add(f"{path}[{i}]", why)
        return ()
    return tuple(subs) if len(subs) == len(items) else ()


def topology_sub_groups_to_proto(subs: Sequence[TopologySubGroup]) -> list[pb.TopologySubGroup]:
    return [
        pb.TopologySubGroup(
            name=s.name,
            label=s.label,
            values=s.values,
            levels=s.levels,
            min_member=s.min_member,
            preferred=s.preferred,
        )
        for s in subs
    ]
