"""KAI-Scheduler's objects (NVIDIA/KAI-Scheduler): PodGroup `scheduling.run.ai/v2alpha2`,
Topology `kai.scheduler/v1alpha1`, Queue `scheduling.run.ai/v2`.

Read as KAI reads them (`pkg/apis/scheduling/v2alpha2/podgroup_types.go`,
`pkg/scheduler/plugins/topology/topology_plugin_job_filtering.go`):

- a pod joins the PodGroup its annotation `pod-group-name` names (`getPodGroupID`; KAI's
  pod-grouper writes it), in the pod's namespace;
- the PodGroup is a gang of `minMember` pods (at least 1) with its `priorityClassName`;
- `topologyConstraint.requiredTopologyLevel`: every pod of the job in one domain of that
  node label, nodes without it ineligible (the one-domain rule every topology dialect
  shares, as the Workload API's `schedulingConstraints.topology`); a level its Topology
  does not list keeps the job pending with KAI's own message
  (`calculateRelevantDomainLevels`), a Topology not in the input is noted and the level
  is enforced as given;
- `subGroups` (docs/topology/multilevel.md): pods join a leaf sub-group by the label
  `kai.scheduler/subgroup-name`. Without topology on the PodGroup or its sub-groups, each
  leaf sub-group is a gang of its own `minMember` and the leaves are placed together or not
  at all (one gang group). Otherwise the PodGroup stays one gang under its own constraint,
  each leaf keeps its minMember, and each sub-group with a required level keeps the pods
  below it in one domain of that level of its own, nested in its parent's, preferring one
  of its preferred level (`allocateSubGroupSet`; `TopologySubGroup`);
- a KAI pod's label `priorityClassName` names its class before `spec.priorityClassName`
  (the pod-grouper's `calcPodGroupPriorityClass`), and KAI's own classes (`train` 50,
  `build-preemptible` 75, `build` 100, `inference` 125) stand in, with a note, when the input
  lacks them; its label `kai.scheduler/preemptibility` is read where its job's
  preemptibility is (`solver.model.kai_preemptible`);
- a pod's `runai/node-pool` label confines it to the nodes of that pool (read as a node
  selector); its queue labels, `mps` and `runai-gpu-limit` annotations are noted;
- `topologyConstraint.preferredTopologyLevel`: the levels from it up to the required one
  (or the top) become preferred keys: the job goes to one domain of the preferred level
  if one holds it, else one of the next level up, and so on (`calculateRelevantDomainLevels`,
  `sortDomainInfos`), domains tried most packed first (`sortTree`, `topology_pack`); a
  preferred level coarser than the required one is refused as KAI refuses it;
- a Queue (`solver.kube.kai_queue`): parent, priority, per resource its quota, limit and
  over-quota weight, shared by KAI's `proportion` (`solver.features.kaishare`); a PodGroup's
  `spec.queue` is its job's queue (a pod's label `kai.scheduler/queue` for a pod without
  one); `preemptibility` (kept among the gang's annotations) says whether the job is
  preemptible, else its priority does (≥ 100: non-preemptible), as KAI's
  `CalculatePreemptibility`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from solver.kube.kueue import LevelsSpec
from solver.kube.loader import RawObject
from solver.kube.objects import Metadata, _K8s
from solver.model import (
    KAI_PREEMPTIBILITY,
    MAX_SUB_GROUPS,
    Gang,
    Pod,
    TopologySubGroup,
    parent_cycle,
)

__all__ = [
    "KAI_GROUP",
    "KAI_POD_GROUP_ANNOTATION",
    "KAI_PRIORITY_CLASSES",
    "KAI_SUBGROUP_LABEL",
    "KAI_TOPOLOGY_GROUP",
    "K8sKaiTopology",
    "apply_kai",
    "is_kai",
    "kai_gang_fields",
    "kai_leaf_gangs",
    "kai_node_selector",
    "kai_pod_class",
    "kai_pod_notes",
]

KAI_GROUP = "scheduling.run.ai"
KAI_TOPOLOGY_GROUP = "kai.scheduler"
KAI_POD_GROUP_ANNOTATION = "pod-group-name"  # commonconstants.PodGroupAnnotationForPod
KAI_SUBGROUP_LABEL = "kai.scheduler/subgroup-name"  # commonconstants.SubGroupLabelKey
"""PodGroup spec fields acted on (and `queue`, `preemptibility`); the rest
(parallelism, completions, backoffLimit, markUnschedulable, schedulingBackoff) one note."""


class K8sKaiTopology(_K8s):
    """`kai.scheduler/v1alpha1` Topology: Kueue's shape (levels[].nodeLabel, 1..16)."""

    metadata: Metadata
    spec: LevelsSpec


class _Constraint(_K8s):
    topology: str = ""
    required: str = Field(default="", alias="requiredTopologyLevel")
    preferred: str = Field(default="", alias="preferredTopologyLevel")


def _constraint(raw: RawObject, owner: Any = None, path: str = "spec") -> _Constraint:
    """`<path>.topologyConstraint` of the PodGroup (or of `owner`, a sub-group)."""
    if owner is None:
        owner = raw.body.get("spec")
    value = owner.get("topologyConstraint") if isinstance(owner, dict) else None
    if value is None:
        return _Constraint()
    where = f"{path}.topologyConstraint"
    if not isinstance(value, dict):
        raise raw.error("must be a mapping", field=where)
    for key in ("topology", "requiredTopologyLevel", "preferredTopologyLevel"):
        if not isinstance(value.get(key, ""), str):
            raise raw.error("must be a string", field=f"{where}.{key}")
    return _Constraint.model_validate(value)


def _level_error(c: _Constraint, topologies: dict[str, tuple[str, ...]], who: str) -> str | None:
    """KAI's `calculateRelevantDomainLevels` refusal (`newTopologyConstraintConfigError`), when
    a level is not its Topology's; a preferred level coarser than the required one is not
    found either (the search up the levels stops at the required one). `who`: `workload`,
    or `sub-group NAME`."""
    levels = topologies.get(c.topology)
    if levels is None:
        return None
    coarser = (
        c.preferred in levels
        and c.required in levels
        and levels.index(c.preferred) < levels.index(c.required)
    )
    for kind, level in (("required", c.required), ("preferred", c.preferred)):
        if level and (level not in levels or (kind == "preferred" and coarser)):
            return (
                f"topology constraint error: {who} specified '{level}' as the {kind} topology "
                f"constraint level, but the topology tree '{c.topology}' does not contain a "
                "level with this name"
            )
    return None


SUB_GROUP_FIELDS = frozenset({"name", "minMember", "parent", "topologyConstraint"})
"""A sub-group's fields gangplan reads (KAI's `SubGroup`); any other (its design's
`minSubGroup`, not in the CRD yet) is noted."""


class SubGroup(_K8s):
    name: str = Field(min_length=1, max_length=63)
    min_member: int = Field(default=0, ge=0, le=1 << 31, alias="minMember")
    parent: str | None = None


def _sub_groups(raw: RawObject) -> list[tuple[SubGroup, _Constraint]]:
    spec = raw.body.get("spec") or {}
    items = spec.get("subGroups") or []
    if not isinstance(items, list):
        raise raw.error("must be a list", field="spec.subGroups")
    if len(items) > MAX_SUB_GROUPS:
        raise raw.error(
            f"at most {MAX_SUB_GROUPS} sub-groups, got {len(items)}", field="spec.subGroups"
        )
    out = []
    for i, item in enumerate(items):
        where = f"spec.subGroups[{i}]"
        if not isinstance(item, dict):
            raise raw.error("must be a mapping", field=where)
        try:
            sub = SubGroup.model_validate(item)
        except ValueError as err:
            raise raw.error(f"not a sub-group: {str(err).splitlines()[0]}", field=where) from None
        out.append((sub, _constraint(raw, item, where)))
    names = [s.name for s, _ in out]
    for i, (sub, _) in enumerate(out):
        if names.index(sub.name) != i:
            raise raw.error(f"sub-group {sub.name!r} is listed twice", field="spec.subGroups")
        if sub.parent is not None and sub.parent not in names:
            raise raw.error(
                f"parent {sub.parent!r} is not a sub-group", field=f"spec.subGroups[{i}].parent"
            )
    if (cyclic := parent_cycle([(s.name, s.parent) for s, _ in out])) is not None:
        raise raw.error(
            f"sub-group {out[cyclic][0].name!r} is its own ancestor",
            field=f"spec.subGroups[{cyclic}].parent",
        )
    return out


def kai_gang_fields(
    raw: RawObject, gang_id: str, topologies: dict[str, tuple[str, ...]], notes: list[str]
) -> dict[str, Any]:
    """The Gang fields a KAI PodGroup sets beyond a plain gang's, and its notes."""
    c = _constraint(raw)
    spec = raw.body.get("spec") or {}
    queue = spec.get("queue")
    if queue is not None and not isinstance(queue, str):
        raise raw.error("must be a string", field="spec.queue")
    out: dict[str, Any] = {"queue": queue or None, "topology_pack": KAI_PACK}
    preemptibility = spec.get("preemptibility")
    if preemptibility:
        if preemptibility not in ("preemptible", "non-preemptible"):
            raise raw.error(
                "must be preemptible or non-preemptible (or unset: the priority decides)",
                field="spec.preemptibility",
            )
        out[KAI_PREEMPTIBILITY] = preemptibility
    if not c.required and not c.preferred:
        return out
    if c.topology not in topologies:
        notes.append(
            f"KAI PodGroup {gang_id}: Topology {c.topology!r} is not in the input; its levels "
            "are taken as given"
        )
    if why := _level_error(c, topologies, "workload"):
        out["refused"] = why
        return out
    if c.required:
        out["topology_key"] = c.required
    if c.preferred:
        out["preferred_keys"] = _preferred_keys(c, topologies.get(c.topology))
    return out


KAI_PACK = ("GPU", "CPU", "Memory")
"""KAI's `sortTree`: domains by the job's share of their free room, the most packed first (its
GPU share first when it asks for GPUs); gangplan orders by GPU, then CPU, then memory room."""


def _preferred_keys(c: _Constraint, levels: tuple[str, ...] | None) -> tuple[str, ...]:
    """The levels KAI's `calculateRelevantDomainLevels` tries, from the preferred one up to,
    not including, the required one (the required level is the hard key), coarsest first;
    the preferred level alone when its Topology is not in the input."""
    if levels is None or c.preferred not in levels:
        return (c.preferred,) if c.preferred != c.required else ()
    finest = levels.index(c.preferred)
    top = levels.index(c.required) + 1 if c.required in levels else 0
    return levels[top : finest + 1]


def kai_leaf_gangs(
    raw: RawObject, gang: Gang, topologies: dict[str, tuple[str, ...]], notes: list[str]
) -> tuple[dict[str, Any], dict[str, Gang]]:
    """(an update of the PodGroup's gang, leaf sub-group name -> its gang) per the module
    docstring; no leaves when the PodGroup stays one gang."""
    subs = _sub_groups(raw)
    if not subs:
        return {}, {}
    items = (raw.body.get("spec") or {}).get("subGroups") or []
    for i, item in enumerate(items):
        if unread := sorted(set(item) - SUB_GROUP_FIELDS):
            fields = ", ".join(f"spec.subGroups[{i}].{f}" for f in unread)
            notes.append(f"KAI PodGroup {gang.id}: not acted on: {fields}")
    parents = {s.parent for s, _ in subs if s.parent is not None}
    leaves = [(s, c) for s, c in subs if s.name not in parents]
    own = gang.topology_key is not None or bool(gang.preferred_keys)
    if own or any(c.required or c.preferred for _, c in subs):
        return _own_domains(raw, gang, subs, leaves, topologies, notes), {}
    ids = tuple(f"{gang.id}.{s.name}" for s, _ in leaves)
    out: dict[str, Gang] = {}
    for (sub, _), leaf_id in zip(leaves, ids, strict=True):
        out[sub.name] = gang.model_copy(
            update={
                "id": leaf_id,
                "name": leaf_id.split("/", 1)[1],
                "min_member": sub.min_member,
                "total_number": sub.min_member,
                "groups": tuple(sorted(ids)),
            }
        )
    return {}, out


def _own_domains(
    raw: RawObject,
    gang: Gang,
    subs: list[tuple[SubGroup, _Constraint]],
    leaves: list[tuple[SubGroup, _Constraint]],
    topologies: dict[str, tuple[str, ...]],
    notes: list[str],
) -> dict[str, Any]:
    """Sub-groups with required levels (at any depth): the PodGroup stays one gang under its
    own constraint, and each such sub-group is a `TopologySubGroup` over the pods of the
    leaves below it, in one domain of its level of its own (`allocateSubGroupSet`: a
    sub-group set's children are placed inside the domain chosen for it); each leaf's
    minMember is a `TopologySubGroup` minimum too. The gang's minMember is the larger of its
    own and its leaves' together. The gang's update."""
    parent = {s.name: s.parent for s, _ in subs}
    leaf_names = [s.name for s, _ in leaves]

    def below(name: str) -> tuple[str, ...]:
        out = []
        for leaf in leaf_names:
            at: str | None = leaf
            while at is not None and at != name:
                at = parent[at]
            if at == name:
                out.append(leaf)
        return tuple(out)

    owned: list[TopologySubGroup] = []
    refused = gang.refused
    for sub, c in subs:
        if c.required or c.preferred:
            refused = refused or _level_error(c, topologies, f"sub-group {sub.name}")
        path, preferred = _paths(c, topologies.get(c.topology))
        minimum = sub.min_member if sub.name in leaf_names else 0
        if not (path or minimum or preferred or sub.name not in leaf_names):
            notes.append(
                f"KAI PodGroup {gang.id}: spec.subGroups {sub.name} sets neither minMember "
                "nor a topology level: its pods count only toward the PodGroup's minMember"
            )
        if path or minimum or preferred:
            owned.append(
                TopologySubGroup(
                    name=sub.name,
                    label=KAI_SUBGROUP_LABEL,
                    values=below(sub.name),
                    levels=path,
                    min_member=minimum,
                    preferred=preferred,
                )
            )
    minimum = sum(s.min_member for s, _ in leaves)
    explicit = (raw.body.get("spec") or {}).get("minMember")
    need = max(gang.min_member if explicit is not None else 0, minimum) or gang.min_member
    return {
        "topology_sub_groups": tuple(owned),
        "min_member": need,
        "total_number": max(gang.total_number, need),
        "refused": refused,
    }


def _paths(
    c: _Constraint, levels: tuple[str, ...] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A sub-group's required and preferred levels as node-label paths from the top (KAI's
    domain ids); without its Topology, the levels as given (the preferred one after the
    required). A preferred level not finer than the required one adds nothing."""
    required: tuple[str, ...]
    if levels is None or (c.required and c.required not in levels):
        required = (c.required,) if c.required else ()
        preferred = (*required, c.preferred) if c.preferred and c.preferred != c.required else ()
        return required, preferred
    required = levels[: levels.index(c.required) + 1] if c.required else ()
    if c.preferred not in levels or levels.index(c.preferred) < len(required):
        return required, ()
    return required, levels[: levels.index(c.preferred) + 1]


def apply_kai(
    pod_groups: Mapping[str, tuple[RawObject, Any]],
    topologies: dict[str, tuple[str, ...]],
    gangs: dict[str, Gang],
    pods: list[Pod],
    notes: list[str],
) -> list[Pod]:
    """KAI PodGroups' own fields on their gangs, and the pods of a PodGroup with leaf
    sub-groups moved to their leaf's gang (`solver.kube.kai`)."""
    moves: dict[tuple[str, str], str] = {}  # (gang, sub-group) -> leaf gang
    for gid, (pg_raw, _) in pod_groups.items():
        if pg_raw.api_version.split("/", 1)[0] != KAI_GROUP or gid not in gangs:
            continue
        fields = kai_gang_fields(pg_raw, gid, topologies, notes)
        if KAI_PREEMPTIBILITY in fields:  # kept among the gang's annotations
            annotations = {
                **gangs[gid].annotations,
                KAI_PREEMPTIBILITY: fields.pop(KAI_PREEMPTIBILITY),
            }
            fields["annotations"] = annotations
        gangs[gid] = gangs[gid].model_copy(update=fields)
        update, leaves = kai_leaf_gangs(pg_raw, gangs[gid], topologies, notes)
        gangs[gid] = gangs[gid].model_copy(update=update)
        for sub, leaf in leaves.items():
            gangs[leaf.id] = leaf
            moves[(gid, sub)] = leaf.id
    if not moves:
        return pods
    out = []
    for pod in pods:
        leaf_id = moves.get((pod.gang, pod.labels.get(KAI_SUBGROUP_LABEL, "")))
        out.append(pod.model_copy(update={"gang": leaf_id}) if leaf_id else pod)
    for gid in {g for g, _ in moves}:
        if not any(p.gang == gid for p in out):
            del gangs[gid]  # every pod went to a leaf: the PodGroup is its leaves' group
    return out


KAI_SCHEDULER = "kai-scheduler"
KAI_PRIORITY_LABEL = "priorityClassName"  # the pod-grouper's `PriorityLabelKey`
KAI_PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
"""The PriorityClasses KAI's install creates (docs/priority/README.md): assumed, with a note,
for a KAI object naming one the input does not hold."""


def is_kai(raw: RawObject) -> bool:
    """A KAI PodGroup, or a pod KAI schedules (`schedulerName: kai-scheduler`)."""
    if raw.api_version.split("/", 1)[0] == KAI_GROUP:
        return True
    spec = raw.body.get("spec")
    return (
        raw.kind == "Pod" and isinstance(spec, dict) and spec.get("schedulerName") == KAI_SCHEDULER
    )


def kai_pod_class(raw: RawObject, spec_class: str | None) -> tuple[str | None, str]:
    """A KAI pod's priority class as KAI's pod-grouper reads it (`calcPodGroupPriorityClass`):
    its label `priorityClassName`, else `spec.priorityClassName`; and the field it came from."""
    labels = (raw.body.get("metadata") or {}).get("labels") or {}
    label = labels.get(KAI_PRIORITY_LABEL) if isinstance(labels, dict) else None
    if is_kai(raw) and isinstance(label, str) and label:
        return label, f"metadata.labels.{KAI_PRIORITY_LABEL}"
    return spec_class, "spec.priorityClassName"


NODE_POOL_LABEL = "runai/node-pool"  # commonconstants.NodePoolNameLabel (the default key)
UNREAD_POD_KEYS: dict[tuple[str, str], str] = {
    ("labels", "runai/queue"): "KAI's legacy queue label; gangplan reads kai.scheduler/queue",
    ("annotations", "mps"): "KAI's MPS sharing is not modelled",
    ("annotations", "runai-gpu-limit"): "KAI's GPU limit is not modelled",
}
"""KAI pod metadata gangplan does not act on yet: a note with how many pending pods carry it."""


def kai_node_selector(labels: Mapping[str, str], selector: dict[str, str]) -> dict[str, str]:
    """A pod's node selector with its KAI node pool: a pod labelled `runai/node-pool: P`
    goes to the nodes of pool P (labelled the same), as the shard of that pool places it."""
    pool = labels.get(NODE_POOL_LABEL)
    if not pool or NODE_POOL_LABEL in selector:
        return selector
    return {**selector, NODE_POOL_LABEL: pool}


def kai_pod_notes(pods: Iterable[Pod]) -> list[str]:
    counts: dict[tuple[str, str], int] = {}
    for p in pods:
        if p.node_name is not None:
            continue
        for where, key in UNREAD_POD_KEYS:
            if key in (p.labels if where == "labels" else p.annotations):
                counts[(where, key)] = counts.get((where, key), 0) + 1
    out = []
    for (where, key), n in sorted(counts.items()):
        why = UNREAD_POD_KEYS[(where, key)]
        out.append(f"{n} pending pod(s) carry {where[:-1]} {key}, not acted on: {why}")
    return out
