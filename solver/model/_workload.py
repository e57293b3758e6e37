"""Pods, gangs (PodGroups of any dialect) and queues."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field

from solver.model._cluster import NodeSelectorTerm, Toleration
from solver.model._frozen import Frozen
from solver.model._hypernode import VolcanoNetworkTopology, VolcanoSubGroupPolicy
from solver.model._interpod import (
    InterPodTerms,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
)
from solver.model._kueue_queues import KUEUE_QUEUE_LABEL, KueueQueue

QUEUE_WEIGHT_MAX = 65535
"""The largest Volcano Queue `spec.weight` (the Queue CRD allows 1..65535)."""


class MatchPolicy(StrEnum):
    """When a gang counts as satisfied (Koordinator `gang.scheduling.koordinator.sh/match-policy`)."""

    ONCE_SATISFIED = "once-satisfied"  # waiting >= min, or any member of the group ever bound
    WAITING_AND_RUNNING = "waiting-and-running"  # waiting + bound >= min
    ONLY_WAITING = "only-waiting"  # waiting >= min; bound members do not count


TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
"""KAI-Scheduler's queue label on a pod (`DefaultQueueLabel`; its pod-grouper copies it into
the PodGroup's `spec.queue`)."""
EXPECTED_END = "gangplan.io/expected-end"
"""A running pod's expected end (RFC 3339): the start estimates replay it (`solver.start`)."""
EXPECTED_RUNTIME = "gangplan.io/expected-runtime"
"""A running pod's expected runtime from its creation (`90m`, `2h30m`, `1d`)."""
PRIORITY_CLASS = "gangplan.io/priority-class"
"""A running pod's spec.priorityClassName, kept with its annotations under this key (the
conf's `expectedRuntime.priorityClasses` reads it)."""
MAX_GATES = 32
"""The most scheduling gates gangplan reads on a pod (a bound on hostile input)."""
MAX_RUNTIME_SECONDS = 3650 * 86400.0
"""The longest duration gangplan reads (ten years): runtimes, minimum runtimes."""
VOLCANO_TASK_SPEC = "volcano.sh/task-spec"
"""A Volcano Job pod's task (role): its annotation, else its label (`getTaskRole`)."""
MAX_TASK_ROLES = 256
"""The most task roles a PodGroup's `minTaskMember` may name (a bound on hostile input)."""


def task_role(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    """A pod's Volcano task role: the annotation `volcano.sh/task-spec`, else the label of
    that name, else "" (Volcano's `getTaskRole`: an empty value is none)."""
    return annotations.get(VOLCANO_TASK_SPEC) or labels.get(VOLCANO_TASK_SPEC) or ""


def duration_problem(seconds: float) -> str | None:
    """The rule of every duration gangplan reads (runtimes, minimum runtimes), for every
    reader: 0 up to ten years."""
    if not 0 <= seconds <= MAX_RUNTIME_SECONDS:
        return "must be a duration of 0 .. ten years"
    return None


class Pod(Frozen):
    namespace: str
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    requests: dict[str, int] = Field(
        default_factory=dict,
        description="effective request per resource: max(sum of containers, max init) + overhead",
    )
    node_name: str | None = Field(default=None, description="spec.nodeName: bound")
    nominated_node: str | None = None
    phase: str = ""
    priority: int = 0
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    node_selector: dict[str, str] = Field(default_factory=dict)
    required_affinity: tuple[NodeSelectorTerm, ...] | None = Field(
        default=None, description="nodeAffinity required terms (ORed); None when unset"
    )
    tolerations: tuple[Toleration, ...] = ()
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    inter_pod: InterPodTerms | None = Field(
        default=None, description="pod affinity and anti-affinity; None when unset"
    )
    spread: tuple[TopologySpreadConstraint, ...] = Field(
        default=(), description="topologySpreadConstraints"
    )
    gang: str = Field(description="id `ns/name` of the gang this pod belongs to")
    created: str | None = Field(default=None, description="metadata.creationTimestamp")
    terminating: bool = Field(default=False, description="metadata.deletionTimestamp is set")
    preempted: bool = Field(
        default=False,
        description="condition DisruptionTarget=True with reason PreemptionByScheduler",
    )
    scheduler_name: str = "default-scheduler"
    scheduling_gates: tuple[Annotated[str, Field(min_length=1, max_length=316)], ...] = Field(
        default=(),
        max_length=MAX_GATES,
        description="spec.schedulingGates: not placed until they are removed",
    )  # each a qualified name: at most 253 (prefix) + 1 + 63 characters

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def bound(self) -> bool:
        """Bound to a node and still holding its resources."""
        return self.node_name is not None and self.phase not in TERMINAL_PHASES

    @property
    def pending(self) -> bool:
        """Waiting to be scheduled: no node yet and not finished."""
        return self.node_name is None and self.phase not in TERMINAL_PHASES


Dialect = Literal[
    "scheduling.sigs.k8s.io",  # PodGroup scheduling.sigs.k8s.io/v1alpha1 (coscheduling, Koordinator)
    "scheduling.volcano.sh",  # PodGroup scheduling.volcano.sh/v1beta1
    "scheduling.godel.kubewharf.io",  # PodGroup scheduling.godel.kubewharf.io/v1alpha1
    "scheduling.k8s.io",  # Kubernetes Workload API PodGroup (v1alpha2 .. v1beta1)
    "koordinator-annotation",  # pod annotations gang.scheduling.koordinator.sh/name + min-available
    "lightweight",  # pod labels pod-group.scheduling.sigs.k8s.io/name + /min-available
    "none",  # a pod without a group: a gang of one
]


MAX_SUB_GROUP_LEVELS = 16
"""The most node labels a sub-group's domain is named by (a KAI Topology has at most 16)."""
MAX_SUB_GROUPS = 256
"""The most sub-groups a gang may list (the reader and the wire alike), each with at most
this many label values."""


class TopologySubGroup(Frozen):
    """Pods of a gang with rules of their own (KAI-Scheduler's `spec.subGroups`): every pod
    of the gang whose label `label` has one of `values`. With `levels` (a sub-group's
    `requiredTopologyLevel`), its running and placed pods are on nodes that carry every
    label of `levels` and agree on all of their values; `levels` runs from the topology's
    top level down to the required one, so a rack is named by its zone too (KAI's domain
    ids `zone.rack`). With `min_member` (a leaf sub-group's `minMember`), the gang is placed
    only with at least that many of its pods running or placed. With `preferred` (its
    `preferredTopologyLevel`), one domain of that level is preferred for its pods, then one
    of each coarser level down to its `levels`. Sub-groups of one gang nest
    or are disjoint; the gang's own `topology_key` holds all of them."""

    name: str = Field(min_length=1, max_length=253)
    label: str = Field(min_length=1, description="the pod label naming a pod's sub-group")
    values: tuple[str, ...] = Field(min_length=1, description="its values taken by this one")
    levels: tuple[str, ...] = Field(
        default=(),
        max_length=MAX_SUB_GROUP_LEVELS,
        description="node labels, top first; empty: no domain of its own",
    )
    min_member: int = Field(default=0, ge=0, le=1 << 31, description="0: no minimum")
    preferred: tuple[str, ...] = Field(
        default=(),
        max_length=MAX_SUB_GROUP_LEVELS,
        description="node labels, top first, down to its preferredTopologyLevel (`levels` "
        "then more): one domain of the finest is preferred, then of each coarser one",
    )

    def holds(self, labels: Mapping[str, str]) -> bool:
        """A pod with these labels is one of the sub-group's."""
        value = labels.get(self.label)
        return value is not None and value in self.values


def sub_groups_problem(subs: Iterable[TopologySubGroup]) -> tuple[int, str] | None:
    """(index, why) of the first sub-group that does not nest: names are unique, and two
    sub-groups of one label share no value or one's values hold the other's."""
    seen: dict[str, int] = {}
    listed = list(subs)
    for i, sub in enumerate(listed):
        if sub.name in seen:
            return i, f"sub-group {sub.name!r} is listed twice"
        seen[sub.name] = i
        if len(set(sub.levels)) != len(sub.levels) or not all(sub.levels):
            return i, "levels must be non-empty node labels, each once"
        if not sub.levels and not sub.min_member and not sub.preferred:
            return i, "a sub-group needs levels, a min_member or preferred (else it asks nothing)"
        if sub.preferred and (
            len(sub.preferred) <= len(sub.levels)
            or sub.preferred[: len(sub.levels)] != sub.levels
            or len(set(sub.preferred)) != len(sub.preferred)
            or not all(sub.preferred)
        ):
            return i, "preferred must be its levels and then finer node labels, each once"
        mine = set(sub.values)
        for other in listed[:i]:
            theirs = set(other.values)
            if other.label != sub.label or not (mine & theirs):
                continue
            if not (mine <= theirs or theirs <= mine):
                return i, (
                    f"sub-group {sub.name!r} shares pods with {other.name!r} but neither holds "
                    "the other (sub-groups nest or are disjoint)"
                )
    return None


class Gang(Frozen):
    """A PodGroup: `min_member` members must be placed together, or none of them."""

    id: str = Field(description="`namespace/name`")
    namespace: str
    name: str
    dialect: Dialect
    min_member: int = Field(ge=0)
    total_number: int = Field(ge=0, description="Koordinator total-number; >= min_member")
    mode: Literal["Strict", "NonStrict"] = "Strict"
    match_policy: MatchPolicy | None = Field(
        default=None, description="None: the gang plugin's defaultMatchPolicy decides"
    )
    groups: tuple[str, ...] = Field(
        default=(), description="gang ids of its GangGroup (annotation `groups`), self included"
    )
    queue: str | None = Field(default=None, description="Volcano spec.queue")
    priority: int | None = Field(default=None, description="from the PodGroup's priorityClassName")
    min_resources: dict[str, int] = Field(default_factory=dict)
    min_task_member: dict[str, Annotated[int, Field(ge=0, le=(1 << 31) - 1)]] = Field(
        default_factory=dict,
        max_length=MAX_TASK_ROLES,
        description="Volcano spec.minTaskMember: each task role's minimum (`task_role`), "
        "acted on when min_member is at least their sum (`role_minimums`)",
    )
    annotations: dict[str, str] = Field(default_factory=dict)
    affinity: dict[str, Any] | None = Field(default=None, description="Godel spec.affinity")
    topology_key: str | None = Field(
        default=None,
        description="Workload API schedulingConstraints.topology[0].key, KAI "
        "requiredTopologyLevel: one domain of this label",
    )
    preferred_keys: tuple[str, ...] = Field(
        default=(),
        description="KAI preferredTopologyLevel: the node labels from the preferred level up "
        "to (not including) the required one, coarsest first; one domain of the finest is "
        "preferred, then of each coarser one",
    )
    topology_pack: tuple[str, ...] = Field(
        default=(),
        description="resources (CPU, Memory, GPU) whose free room orders the candidate "
        "domains of `topology_key` and `preferred_keys`, least room first; empty: CPU. "
        "Non-empty is KAI's packing: inside the chosen domain, its finest preferred "
        "sub-domains are filled most room first (KAI's node score)",
    )
    network_topology: VolcanoNetworkTopology | None = Field(
        default=None, description="Volcano spec.networkTopology (HyperNode tiers)"
    )
    sub_group_policy: tuple[VolcanoSubGroupPolicy, ...] = Field(
        default=(), description="Volcano spec.subGroupPolicy: sub-groups with their own topology"
    )
    topology_sub_groups: tuple[TopologySubGroup, ...] = Field(
        default=(),
        description="KAI sub-groups: each leaf's minMember, and each with a required level "
        "in one domain of its own",
    )
    disruption_mode: Literal["Single", "All"] | None = Field(
        default=None, description="Workload API disruptionMode: pods evicted one by one or all"
    )
    refused: str | None = Field(
        default=None,
        description="a hard constraint of the PodGroup gangplan does not enforce: why the "
        "gang is not placed",
    )
    created: str | None = None
    phase: str = Field(
        default="", description="PodGroup status.phase (Pending, Inqueue, Running, ...)"
    )
    members: tuple[str, ...] = Field(default=(), description="pod keys, sorted")

    @property
    def implicit(self) -> bool:
        """A pod without any group, scheduled as a gang of one."""
        return self.dialect == "none"

    def role_minimums(self) -> dict[str, int]:
        """The task roles' minimums Volcano's gang plugin checks (`CheckTaskValid`,
        `CheckTaskReady`): the non-zero `min_task_member` entries, none when minMember is
        below their sum (Volcano then counts only minMember)."""
        if self.min_member < sum(self.min_task_member.values()):
            return {}
        return {role: n for role, n in sorted(self.min_task_member.items()) if n > 0}


KAI_UNLIMITED = -1.0
"""KAI-Scheduler's `UnlimitedResourceQuantity`: a quota or limit of -1 has no bound."""
KAI_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
"""The resources a KAI Queue has quotas for (`QueueResources`: CPU, memory, GPU)."""
KAI_MAX = 1e18
"""The largest quota, limit or weight gangplan reads (memory in bytes stays below it)."""


def kai_amount_problem(value: float, unlimited: bool, unit: float = 1.0) -> str | None:
    """The rule of a KAI Queue's amounts, for both readers: `value` in gangplan's units
    (`KaiQuota`), finite, >= 0 (or -1 where `unlimited`: quota and limit; not for
    over-quota weights or usage), at most `KAI_MAX`; `unit` is how many of gangplan's units
    one of the reader's is, for the words (a YAML memory quota is in MiB)."""
    if not math.isfinite(value) or not (value >= 0 or (unlimited and value == KAI_UNLIMITED)):
        return "must be -1 (unlimited) or a number ≥ 0" if unlimited else "must be a number ≥ 0"
    if value > KAI_MAX:
        return f"must be at most {KAI_MAX / unit:g}"
    return None


KAI_PREEMPTIBILITY = "scheduling.run.ai/preemptibility"
"""A KAI PodGroup's `spec.preemptibility` (`preemptible`, `non-preemptible`), kept among its
gang's annotations (the wire's Gang carries it there)."""
KAI_PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
"""A pod's preemptibility label (KAI's pod-grouper `PreemptibilityLabelKey`)."""
KAI_NON_PREEMPTIBLE_PRIORITY = 100
"""KAI's `nonPreemptiblePriorityThreshold`: without an explicit preemptibility, a job of this
priority or more is non-preemptible (`build`, `inference`), below it preemptible (`train`)."""
KAI_DEFAULT_PRIORITY = 100
"""KAI-Scheduler's `DefaultQueuePriority`: a Queue without `spec.priority`."""


KAI_USAGE_ANNOTATION = "gangplan.io/usage"
"""On a KAI Queue: its historical usage per resource (`gpu=0.4,cpu=0.1`), normalised to the
cluster's capacity over the usage window — what KAI's usage database reports."""


class KaiQuota(Frozen):
    """A KAI-Scheduler Queue's `spec.resources` (`scheduling.run.ai/v2`), per resource in
    gangplan's units (`cpu` milli, `memory` bytes, `nvidia.com/gpu` GPUs, fractions allowed);
    -1 (`KAI_UNLIMITED`) is unlimited, a resource not named is 0, as KAI reads it."""

    quota: dict[str, float] = Field(default_factory=dict, description="deserved quota")
    limit: dict[str, float] = Field(default_factory=dict, description="max allowed")
    over_quota_weight: dict[str, float] = Field(default_factory=dict)
    created: str = Field(default="", description="metadata.creationTimestamp (tie-breaks)")
    usage: dict[str, float] = Field(
        default_factory=dict,
        description="historical usage normalised to the window's capacity (KAI's usage "
        "database); replaces the usage accumulated from running pods",
    )
    preempt_min_runtime: float | None = Field(
        default=None, description="spec.preemptMinRuntime in seconds; None: unset (inherited)"
    )
    reclaim_min_runtime: float | None = Field(
        default=None, description="spec.reclaimMinRuntime in seconds; None: unset (inherited)"
    )


class Queue(Frozen):
    """A Volcano Queue (`scheduling.volcano.sh/v1beta1`), or a KAI-Scheduler Queue
    (`scheduling.run.ai/v2`) when `kai` is set (then only name, parent, priority and `kai`
    are read), or a Kueue ClusterQueue, Cohort or LocalQueue when `kueue` is set (then
    name, parent, state and `kueue`: `solver.model._kueue_queues`)."""

    name: str = Field(min_length=1)
    parent: str | None = None
    capability: dict[str, int] = Field(default_factory=dict)
    deserved: dict[str, int] = Field(default_factory=dict)
    guarantee: dict[str, int] = Field(default_factory=dict)
    state: str = "Open"
    priority: int = 0
    weight: int = Field(default=1, ge=1, le=QUEUE_WEIGHT_MAX)  # the Queue CRD's range
    annotations: dict[str, str] = Field(default_factory=dict)
    affinity: dict[str, Any] | None = None
    allocated: dict[str, int] = Field(default_factory=dict, description="status.allocated")
    kai: KaiQuota | None = Field(default=None, description="a KAI-Scheduler Queue's resources")
    kueue: KueueQueue | None = Field(
        default=None, description="a Kueue ClusterQueue, Cohort or LocalQueue"
    )


def kai_preemptible(
    gang: Gang | None, priority: int, labels: Mapping[str, str] | None = None
) -> bool:
    """KAI's `CalculatePreemptibility`: the PodGroup's explicit preemptibility, else its
    pod's label `kai.scheduler/preemptibility` (what KAI's pod-grouper copies into the
    PodGroup it makes for a pod without one), else by the job's priority (below 100:
    preemptible)."""
    explicit = gang.annotations.get(KAI_PREEMPTIBILITY) if gang is not None else None
    if explicit not in ("preemptible", "non-preemptible") and labels:
        explicit = labels.get(KAI_PREEMPTIBILITY_LABEL)
    if explicit in ("preemptible", "non-preemptible"):
        return explicit == "preemptible"
    return priority < KAI_NON_PREEMPTIBLE_PRIORITY


def epoch_seconds(text: str | None) -> float:
    """An RFC 3339 time (without a zone: UTC) as seconds since the epoch; NaN when it is
    not one."""
    if not text or len(text) > 64:
        return math.nan
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return math.nan
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def pod_queue(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The queue a pod names itself: the annotation `scheduling.volcano.sh/queue-name`, else
    KAI's label `kai.scheduler/queue`; None for none (Kueue's LocalQueues: `kueue_queue`)."""
    return (annotations.get(QUEUE_ANNOTATION) or labels.get(KAI_QUEUE_LABEL) or "").strip() or None


def kueue_queue(labels: Mapping[str, str], namespace: str) -> str | None:
    """The Kueue LocalQueue a pod names with `kueue.x-k8s.io/queue-name`, as the queue
    tree names it (`<namespace>/<name>`); None for none."""
    local = labels.get(KUEUE_QUEUE_LABEL, "").strip()
    return f"{namespace}/{local}" if local else None


def job_queue(gang: Gang, pods: Iterable[Pod] = ()) -> str | None:
    """The queue of a job: its PodGroup's `spec.queue`, else the first of its pods (in the
    order given) that names one (`pod_queue`); None for no queue."""
    if gang.queue:
        return gang.queue
    return next((q for p in pods if (q := pod_queue(p.labels, p.annotations))), None)


def cluster_queue_flavors(
    queues: Mapping[str, Queue], labels: Mapping[str, str], namespace: str
) -> tuple[str, ...] | None:
    """The flavors, in Kueue's order (resource groups, then each group's flavors), of the
    ClusterQueue whose LocalQueue the pod's label `kueue.x-k8s.io/queue-name` names;
    None when the pod names no Kueue LocalQueue of `queues`."""
    local = labels.get(KUEUE_QUEUE_LABEL, "").strip()
    lq = queues.get(f"{namespace}/{local}") if local else None
    cq = queues.get(lq.parent) if lq is not None and lq.kueue is not None and lq.parent else None
    if cq is None or cq.kueue is None:
        return None
    return tuple(dict.fromkeys(f.name for g in cq.kueue.groups for f in g.flavors))
