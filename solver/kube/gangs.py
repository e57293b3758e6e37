"""Pod -> gang links, and gangs from PodGroup objects of every dialect.

Links, in the order they are tried (the first present wins):

0. `spec.schedulingGroup.podGroupName: <pg>` (the Kubernetes Workload API, `workload_api.py`)
1. label `pod-group.scheduling.sigs.k8s.io: <pg>` (scheduler-plugins / Koordinator CRD way),
   or `scheduling.x-k8s.io/pod-group: <pg>` (scheduler-plugins coscheduling since v0.24)
2. label `pod-group.scheduling.sigs.k8s.io/name: <pg>` (Koordinator lightweight way, with
   label `.../min-available` when no PodGroup object exists)
3. annotation `gang.scheduling.koordinator.sh/name: <pg>` (Koordinator annotation way, with
   annotation `.../min-available` when no PodGroup object exists)
4. annotation `scheduling.k8s.io/group-name: <pg>` (Volcano)
5. annotation or label `godel.bytedance.com/pod-group-name: <pg>` (Godel)
6. annotation `pod-group-name: <pg>` (KAI-Scheduler)

A pod with none of them is a gang of one. Links 0, 1, 4, 5 and 6 name a PodGroup object; when a
dump lacks it (`kubectl get pods` without `podgroups`), the pods naming it form one gang
that needs all of them, with a note saying so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solver.json_limits import read_json
from solver.kube.hypernode import read_network_topology, read_sub_group_policy
from solver.kube.kai import KAI_GROUP, KAI_POD_GROUP_ANNOTATION
from solver.kube.loader import RawObject
from solver.kube.objects import K8sPod, K8sPodGroup
from solver.kube.workload_api import WORKLOAD_API, K8sWorkloadPodGroup, workload_gang_fields
from solver.model import (
    MAX_TASK_ROLES,
    QUEUE_ANNOTATION,
    Dialect,
    Gang,
    JobAffinityError,
    MatchPolicy,
    parse_job_affinity,
)

__all__ = [
    "ANNOTATION_VOLCANO_GROUP",
    "DEFAULT_NAMESPACE",
    "GANG_ANNOTATIONS",
    "LABEL_POD_GROUP_X",
    "POD_GROUP_DIALECTS",
    "AnyPodGroup",
    "GangLinks",
    "api_group",
    "gang_from_pod_group",
    "gang_link",
]

DEFAULT_NAMESPACE = "default"
PriorityOf = Callable[[RawObject, int | None, str | None, str], tuple[int, str | None]]
AnyPodGroup = K8sPodGroup | K8sWorkloadPodGroup

# Pod -> group link keys.
LABEL_POD_GROUP = "pod-group.scheduling.sigs.k8s.io"
LABEL_POD_GROUP_X = "scheduling.x-k8s.io/pod-group"  # scheduler-plugins coscheduling >= v0.24
LABEL_LIGHTWEIGHT_NAME = "pod-group.scheduling.sigs.k8s.io/name"
LABEL_LIGHTWEIGHT_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"
ANNOTATION_VOLCANO_GROUP = "scheduling.k8s.io/group-name"
GODEL_GROUP = "godel.bytedance.com/pod-group-name"


class GANG_ANNOTATIONS:
    """Koordinator gang annotations (on a PodGroup, or on pods in the annotation way)."""

    NAME = "gang.scheduling.koordinator.sh/name"
    MIN_AVAILABLE = "gang.scheduling.koordinator.sh/min-available"
    TOTAL_NUMBER = "gang.scheduling.koordinator.sh/total-number"
    MODE = "gang.scheduling.koordinator.sh/mode"
    GROUPS = "gang.scheduling.koordinator.sh/groups"
    MATCH_POLICY = "gang.scheduling.koordinator.sh/match-policy"
    MATCH_POLICY_ALIAS = "pod-group.scheduling.sigs.k8s.io/match-policy"
    WAITING_TIME = "gang.scheduling.koordinator.sh/waiting-time"


SIGS: Dialect = "scheduling.sigs.k8s.io"
VOLCANO: Dialect = "scheduling.volcano.sh"
GODEL: Dialect = "scheduling.godel.kubewharf.io"
POD_GROUP_DIALECTS: dict[str, Dialect] = {
    "scheduling.sigs.k8s.io": "scheduling.sigs.k8s.io",
    "scheduling.x-k8s.io": "scheduling.sigs.k8s.io",
    "scheduling.volcano.sh": "scheduling.volcano.sh",
    "scheduling.godel.kubewharf.io": "scheduling.godel.kubewharf.io",
    KAI_GROUP: "scheduling.sigs.k8s.io",  # a minMember gang (kai.py reads the rest)
}


# The pod metadata that links a pod to a gang, in the order tried after the Workload API's
# `spec.schedulingGroup` (module docstring): (labels | annotations, key, the dialect of the
# PodGroup object it names; None: no object needed).
LINK_KEYS: tuple[tuple[str, str, Dialect | None], ...] = (
    ("labels", LABEL_POD_GROUP, SIGS),
    ("labels", LABEL_POD_GROUP_X, SIGS),
    ("labels", LABEL_LIGHTWEIGHT_NAME, None),
    ("annotations", GANG_ANNOTATIONS.NAME, None),
    ("annotations", ANNOTATION_VOLCANO_GROUP, VOLCANO),
    ("annotations", GODEL_GROUP, GODEL),
    ("labels", GODEL_GROUP, GODEL),
    ("annotations", KAI_POD_GROUP_ANNOTATION, SIGS),  # KAI-Scheduler (kai.py)
)


def gang_link(body: dict[str, Any]) -> str:
    """The first gang link of a pod as read (a mapping), `where.key=name`; "" for none (a
    gang of one)."""
    spec = body.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, dict) else None
    if isinstance(group, dict) and group.get("podGroupName"):
        return f"spec.schedulingGroup.podGroupName={group['podGroupName']}"
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return ""
    for where, key, _ in LINK_KEYS:
        values = meta.get(where)
        if isinstance(values, dict) and values.get(key):
            return f"{where}.{key}={values[key]}"
    return ""


def api_group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


@dataclass
class GangLinks:
    """Links pods to gangs as they are read; `finish` settles gangs of missing PodGroups."""

    pod_groups: dict[str, tuple[RawObject, AnyPodGroup]]
    priority_of: PriorityOf
    gangs: dict[str, Gang] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # gang id -> the pods' link field

    def link(self, raw: RawObject, k8s: K8sPod) -> str:
        """The gang id of a pod; creates annotation-way / lightweight / implicit gangs, and
        gangs for PodGroups that are named but missing, on the way."""
        gangs = self.gangs
        meta = k8s.metadata
        ns = meta.namespace or DEFAULT_NAMESPACE
        labels, annotations = meta.labels, meta.annotations
        # (field, group name, dialect of the PodGroup object it names; None: no object needed)
        group = k8s.spec.scheduling_group
        links: list[tuple[str, str, Dialect | None]] = [
            (
                "spec.schedulingGroup.podGroupName",
                (group.pod_group_name or "") if group else "",
                WORKLOAD_API,
            ),
            *(
                (
                    f"metadata.{where}.{key}",
                    (labels if where == "labels" else annotations).get(key, ""),
                    dialect,
                )
                for where, key, dialect in LINK_KEYS
            ),
        ]
        for field_path, name, dialect in links:
            if not name:
                continue
            gang_id = f"{ns}/{name}"
            if gang_id in gangs:
                return gang_id
            if gang_id in self.pod_groups:
                pg_raw, pg = self.pod_groups[gang_id]
                gangs[gang_id] = gang_from_pod_group(pg_raw, pg, self.priority_of)
                return gang_id
            if dialect is not None:
                # A dump without its PodGroups: the pods that name the group are its gang, all
                # of them required (minMember is set once every pod is read; see build_model).
                self.missing[gang_id] = field_path
                gangs[gang_id] = _koordinator_gang(
                    gang_id=gang_id,
                    dialect=dialect,
                    min_member=1,
                    annotations={},
                    created=meta.creation_timestamp,
                ).model_copy(
                    update={"queue": annotations.get(QUEUE_ANNOTATION, "default")}
                    if dialect == VOLCANO
                    else {}
                )
                return gang_id
            gangs[gang_id] = _gang_from_pod(raw, k8s, gang_id, field_path)
            return gang_id
        gang_id = f"{ns}/{meta.name}"
        gangs[gang_id] = Gang(
            id=gang_id,
            namespace=ns,
            name=meta.name,
            dialect="none",
            min_member=1,
            total_number=1,
            groups=(gang_id,),
            created=meta.creation_timestamp,
        )
        return gang_id

    def pod_overrides(self, gang_id: str) -> dict[str, Any]:
        """What a Workload API PodGroup imposes on its pods: its priority and preemption
        policy, which the group is scheduled and preempted with (KEP-5710)."""
        gang = self.gangs[gang_id]
        found = self.pod_groups.get(gang_id)
        if gang.dialect != WORKLOAD_API or found is None:
            return {}
        _, pg = found
        out: dict[str, Any] = {}
        if gang.priority is not None:
            out["priority"] = gang.priority
        if isinstance(pg, K8sWorkloadPodGroup) and pg.spec.preemption_policy:
            out["preemption_policy"] = pg.spec.preemption_policy
        return out

    def finish(self, members: dict[str, list[str]]) -> list[str]:
        """Every gang: missing PodGroups get minMember = their pods read; PodGroups no pod
        names are added. Returns the notes."""
        notes = []
        for gang_id, link in self.missing.items():
            count = len(members.get(gang_id, ()))
            self.gangs[gang_id] = self.gangs[gang_id].model_copy(
                update={"min_member": count, "total_number": count}
            )
            notes.append(
                f"PodGroup {gang_id!r} is not in the input: its {count} pod(s) ({link}) are "
                f"treated as one gang with minMember {count}"
            )
        for pg_id, (raw, pg) in self.pod_groups.items():
            if pg_id not in self.gangs:
                self.gangs[pg_id] = gang_from_pod_group(raw, pg, self.priority_of)
        for gang_id, gang in sorted(self.gangs.items()):
            text = gang.annotations.get(GANG_ANNOTATIONS.GROUPS)
            if text and _read_groups(text) is None:
                notes.append(
                    f"gang {gang_id}: annotation {GANG_ANNOTATIONS.GROUPS} {text[:60]!r} is not "
                    "a JSON array of 'namespace/name' strings: the gang is a group of its own "
                    "(Koordinator's rule)"
                )
        return notes


def _gang_from_pod(raw: RawObject, k8s: K8sPod, gang_id: str, field_path: str) -> Gang:
    """Koordinator's annotation way (or lightweight labels): the first pod defines the gang."""
    meta = k8s.metadata
    lightweight = field_path.startswith("metadata.labels.")
    min_key = LABEL_LIGHTWEIGHT_MIN if lightweight else GANG_ANNOTATIONS.MIN_AVAILABLE
    source = meta.labels if lightweight else meta.annotations
    where = "metadata.labels" if lightweight else "metadata.annotations"
    if min_key not in source:
        raise raw.error(
            f"names gang {gang_id!r} but there is no PodGroup of that name in the input and no "
            f"{min_key} {'label' if lightweight else 'annotation'}",
            field=field_path,
        )
    min_member = _non_negative_int(raw, source[min_key], f"{where}.{min_key}")
    return _koordinator_gang(
        gang_id=gang_id,
        dialect="lightweight" if lightweight else "koordinator-annotation",
        min_member=min_member,
        annotations=dict(meta.annotations),
        created=meta.creation_timestamp,
    )


def gang_from_pod_group(raw: RawObject, pg: AnyPodGroup, priority_of: PriorityOf) -> Gang:
    ns = pg.metadata.namespace or DEFAULT_NAMESPACE
    gang_id = f"{ns}/{pg.metadata.name}"
    # a Workload API group's own `priority` (set by admission) wins over its class
    priority = pg.spec.priority if isinstance(pg, K8sWorkloadPodGroup) else None
    if priority is None and pg.spec.priority_class_name:
        priority, _ = priority_of(raw, None, pg.spec.priority_class_name, "spec.priorityClassName")
    if isinstance(pg, K8sWorkloadPodGroup):
        return Gang(
            id=gang_id,
            namespace=ns,
            name=pg.metadata.name,
            groups=(gang_id,),
            priority=priority,
            annotations=dict(pg.metadata.annotations),
            created=pg.metadata.creation_timestamp,
            phase=pg.status.phase,
            **workload_gang_fields(pg),
        )
    dialect = POD_GROUP_DIALECTS[api_group(pg.api_version)]
    gang = _koordinator_gang(
        gang_id=gang_id,
        dialect=dialect,
        min_member=1 if pg.spec.min_member is None else pg.spec.min_member,
        annotations=dict(pg.metadata.annotations),
        created=pg.metadata.creation_timestamp,
    )
    queue = pg.spec.queue or ("default" if dialect == "scheduling.volcano.sh" else None)
    if dialect == "scheduling.godel.kubewharf.io":
        try:  # typed by Godel's CRD schema: a wrong type is an input error
            parse_job_affinity(pg.spec.affinity)
        except JobAffinityError as err:
            field = "spec.affinity" + (f".{err.field}" if err.field else "")
            raise raw.error(err.message, field=field) from None
    volcano = dialect == "scheduling.volcano.sh"  # the other PodGroup CRDs have no such field
    task_member = dict(pg.spec.min_task_member or {}) if volcano else {}
    if len(task_member) > MAX_TASK_ROLES:
        raise raw.error(f"names more than {MAX_TASK_ROLES} tasks", field="spec.minTaskMember")
    return gang.model_copy(
        update={
            "min_task_member": task_member,
            "network_topology": read_network_topology(raw, pg.spec.network_topology),
            "sub_group_policy": read_sub_group_policy(raw, pg.spec.sub_group_policy),
            "queue": queue,
            "priority": priority,
            "min_resources": dict(pg.spec.min_resources),
            "phase": pg.status.phase,
            "affinity": pg.spec.affinity,
        }
    )


def _koordinator_gang(
    *, gang_id: str, dialect: Any, min_member: int, annotations: dict[str, str], created: str | None
) -> Gang:
    """Apply Koordinator's annotations and its defaults for illegal values (reference §2.1)."""
    total = _int32(annotations.get(GANG_ANNOTATIONS.TOTAL_NUMBER))
    mode = annotations.get(GANG_ANNOTATIONS.MODE, "Strict")
    policy_text = annotations.get(
        GANG_ANNOTATIONS.MATCH_POLICY, annotations.get(GANG_ANNOTATIONS.MATCH_POLICY_ALIAS, "")
    )
    policy: MatchPolicy | None = None
    if policy_text in {p.value for p in MatchPolicy}:
        policy = MatchPolicy(policy_text)
    elif dialect == "scheduling.volcano.sh":
        policy = MatchPolicy.WAITING_AND_RUNNING  # Volcano counts running tasks toward minMember
    ns, name = gang_id.split("/", 1)
    groups = _parse_groups(annotations.get(GANG_ANNOTATIONS.GROUPS), gang_id)
    return Gang(
        id=gang_id,
        namespace=ns,
        name=name,
        dialect=dialect,
        min_member=min_member,
        total_number=max(min_member, total or 0),
        mode=mode if mode in ("Strict", "NonStrict") else "Strict",
        match_policy=policy,
        groups=groups,
        annotations=annotations,
        created=created,
    )


def _parse_groups(text: str | None, self_id: str) -> tuple[str, ...]:
    """JSON array of `ns/name`; empty or unreadable -> just this gang (Koordinator's rule;
    `Links.finish` notes the unreadable ones)."""
    value = _read_groups(text) if text else None
    return (self_id,) if value is None else tuple(sorted(set(value) | {self_id}))


def _read_groups(text: str) -> list[str] | None:
    """The gang ids of a `groups` annotation; None when it is not a non-empty JSON array of
    `namespace/name` strings (bad JSON at any depth included)."""
    try:
        value = read_json(text)
    except json.JSONDecodeError:
        return None
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and "/" in v for v in value)
    ):
        return None
    return value


_ASCII_INT = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi's digits
INT32_MAX = 2**31 - 1


def _int32(text: str | None) -> int | None:
    """`text` as an int32 the way Go's strconv parses it (ASCII digits only); None if not."""
    if text is None or len(text) > 12 or not _ASCII_INT.fullmatch(text):
        return None  # 12 characters hold every int32
    value = int(text)
    return value if -INT32_MAX - 1 <= value <= INT32_MAX else None


def _non_negative_int(raw: RawObject, text: str, field_path: str) -> int:
    value = _int32(text)
    if value is None:
        problem = "past int32" if _ASCII_INT.fullmatch(text) else "not an integer"
        raise raw.error(f"{problem}: {text!r}", field=field_path)
    if value < 0:
        raise raw.error(f"must not be negative: {value}", field=field_path)
    return value
