"""A gang's sub-groups between protobuf and the model: KAI-Scheduler sub-groups with a
required level, and Volcano's per-task minimums (`min_task_member`).

Checked as the proto comments say, violations named by field path: at most 256 sub-groups;
the label syntax of its label, values and levels (the YAML reader derives them from KAI's
objects); the rest is the model's (`TopologySubGroup`: a name of 1..253 characters, at
least one value, at most 16 levels, a minimum >= 0; `sub_groups_problem`: unique names,
levels each once, sub-groups of one label nest or are disjoint).
"""

from __future__ import annotations

from collections.abc import Sequence

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._errors import Violations, build
from solver.model import (
    MAX_SUB_GROUP_LEVELS,
    MAX_SUB_GROUPS,
    MAX_TASK_ROLES,
    TopologySubGroup,
    label_key_problem,
    label_value_problem,
    sub_groups_problem,
)

__all__ = [
    "task_member_from_proto",
    "topology_sub_groups_from_proto",
    "topology_sub_groups_to_proto",
]


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
        if why := label_key_problem(msg.label):
            out.add(f"{where}.label", why)
        if len(msg.values) > MAX_SUB_GROUPS:
            out.add(f"{where}.values", f"must name at most {MAX_SUB_GROUPS} values")
        for j, value in enumerate(msg.values[:MAX_SUB_GROUPS]):
            if not value or (why := label_value_problem(msg.label, value)):
                out.add(f"{where}.values[{j}]", why or "must not be empty")
        for name in ("levels", "preferred"):
            for j, level in enumerate(getattr(msg, name)[:MAX_SUB_GROUP_LEVELS]):
                if why := label_key_problem(level):
                    out.add(f"{where}.{name}[{j}]", why)
        if len(out.items) > before:
            continue
        sub = build(
            TopologySubGroup,
            where,
            out,
            name=msg.name,
            label=msg.label,
            values=tuple(msg.values),
            levels=tuple(msg.levels),
            min_member=msg.min_member,
            preferred=tuple(msg.preferred),
        )
        if sub is not None:
            subs.append(sub)
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


def task_member_from_proto(msg: pb.Gang, path: str, out: Violations) -> dict[str, int]:
    """`min_task_member`: at most `MAX_TASK_ROLES` roles, each non-empty with a count >= 0."""
    if len(msg.min_task_member) > MAX_TASK_ROLES:
        out.add(f"{path}.min_task_member", f"at most {MAX_TASK_ROLES} roles")
        return {}
    for role, count in msg.min_task_member.items():
        if not role or count < 0:
            out.add(
                f"{path}.min_task_member[{role!r}]", "must be a non-empty role with a count >= 0"
            )
    return {role: n for role, n in msg.min_task_member.items() if role and n >= 0}
