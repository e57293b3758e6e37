"""Kubernetes objects -> the domain model: validation, priorities, nodes, pods (their gangs:
`solver.kube.gangs`), queues and the network topology."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import BaseModel

from solver.kube.affinity import PodAffinityReader
from solver.kube.disruption import K8sDisruptionBudget, read_budget
from solver.kube.fields import ACTED, spec_note, unmodelled_notes
from solver.kube.gangs import (
    DEFAULT_NAMESPACE,
    POD_GROUP_DIALECTS,
    AnyPodGroup,
    GangLinks,
    api_group,
)
from solver.kube.hypernode import HYPERNODE_GROUP, read_hypernode
from solver.kube.kai import (
    KAI_GROUP,
    KAI_PRIORITY_CLASSES,
    KAI_TOPOLOGY_GROUP,
    K8sKaiTopology,
    apply_kai,
    is_kai,
    kai_node_selector,
    kai_pod_class,
    kai_pod_notes,
)
from solver.kube.kai_queue import K8sKaiQueue, kai_queue
from solver.kube.kueue import (
    KUEUE_GROUP,
    K8sKueueFlavor,
    K8sKueueTopology,
    kueue_topologies,
    levels_topology,
    unread_kueue_annotations,
)
from solver.kube.kueue_queues import KUEUE_QUEUE_KINDS, kueue_ident, kueue_tree
from solver.kube.loader import RawObject
from solver.kube.objects import (
    Container,
    K8sClusterNetworkTopology,
    K8sNamespace,
    K8sNode,
    K8sPod,
    K8sPodGroup,
    K8sPriorityClass,
    K8sQueue,
)
from solver.kube.pod_templates import PodTemplates, TemplateKey
from solver.kube.runtime import runtime_annotations
from solver.kube.validate import build, report, taints, tolerations, validate
from solver.kube.workload_api import WORKLOAD_API_VERSIONS, K8sWorkload, K8sWorkloadPodGroup
from solver.model import (
    QUEUE_ANNOTATION,
    ClusterModel,
    DisruptionBudget,
    Gang,
    HyperNode,
    NetworkTopology,
    Node,
    Pod,
    Queue,
    TopologyLayer,
    device_count_problem,
    layer_problems,
    parent_cycle,
)
from solver.quantity import PODS

__all__ = ["READ_KINDS", "build_model", "effective_requests", "reads"]

DEFAULT_MAX_PODS = 110  # kubelet's default maxPods, used when a node omits allocatable.pods


@dataclass
class _Inputs:
    nodes: list[tuple[RawObject, K8sNode]] = field(default_factory=list)
    pods: list[tuple[RawObject, K8sPod]] = field(default_factory=list)
    pod_keys: list[TemplateKey | None] = field(default_factory=list)  # each pod's template
    templates: PodTemplates = field(default_factory=PodTemplates)
    pod_groups: dict[str, tuple[RawObject, AnyPodGroup]] = field(default_factory=dict)
    priority_classes: dict[str, K8sPriorityClass] = field(default_factory=dict)
    queues: dict[str, tuple[RawObject, K8sQueue]] = field(default_factory=dict)
    topology: tuple[RawObject, K8sClusterNetworkTopology] | None = None
    kueue: list[tuple[RawObject, K8sKueueTopology | K8sKueueFlavor]] = field(default_factory=list)
    hypernodes: list[HyperNode] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels
    kai_topologies: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> levels
    kai_queues: dict[str, tuple[RawObject, Queue]] = field(default_factory=dict)
    kueue_queues: list[RawObject] = field(default_factory=list)  # read once flavors are known
    budgets: dict[str, DisruptionBudget] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def build_model(objects: Iterable[RawObject]) -> ClusterModel:
    """Validate every object and assemble the ClusterModel; raises ManifestError on bad input."""
    inputs = _classify(objects)
    priority_of = _priority_resolver(inputs.priority_classes, inputs.notes)
    default_class = next(
        (name for name, c in sorted(inputs.priority_classes.items()) if c.global_default), None
    )  # admission names it on a pod without a priorityClassName
    links = GangLinks(inputs.pod_groups, priority_of)
    members: dict[str, list[str]] = {}
    pods: list[Pod] = []
    namespaces: dict[str, dict[str, str]] = {
        k8s.metadata.namespace or DEFAULT_NAMESPACE: {} for _, k8s in inputs.pods
    }
    namespaces.update(inputs.namespaces)
    terms = PodAffinityReader(namespaces)
    for (raw, k8s), template in zip(inputs.pods, inputs.pod_keys, strict=True):
        gang_id = links.link(raw, k8s)
        convert = partial(_pod, raw, k8s, gang_id, priority_of, terms, default_class)
        pod = inputs.templates.pod(template, gang_id, k8s, convert)
        if overrides := links.pod_overrides(gang_id):
            pod = pod.model_copy(update=overrides)
        pods.append(pod)
        members.setdefault(gang_id, []).append(pod.key)
    inputs.notes.extend(links.finish(members))
    pods = apply_kai(inputs.pod_groups, inputs.kai_topologies, links.gangs, pods, inputs.notes)
    members = {}
    for pod in pods:
        members.setdefault(pod.gang, []).append(pod.key)
    inputs.notes.extend(unread_kueue_annotations(pods))
    inputs.notes.extend(kai_pod_notes(pods))
    inputs.notes.extend(unmodelled_notes(raw.body for raw, _ in inputs.pods))
    claiming = sum(1 for p in pods if p.node_name is None and DRA_CLAIMS in p.requests)
    if claiming:
        inputs.notes.append(
            f"{claiming} pending pod(s) claim devices through DRA (spec.resourceClaims), which "
            f"gangplan does not model yet: they wait, as needing {DRA_CLAIMS}, which no node "
            "offers"
        )
    gangs = {
        gid: g.model_copy(update={"members": tuple(sorted(members.get(gid, [])))})
        for gid, g in sorted(links.gangs.items())
    }
    nodes = [_node(raw, k8s) for raw, k8s in inputs.nodes]
    queues = {name: _queue(raw, q) for name, (raw, q) in sorted(inputs.queues.items())}
    raws = {name: raw for name, (raw, _) in inputs.queues.items()}
    if inputs.kai_queues and queues:  # one scheduler's queues share a cluster: Volcano's
        inputs.notes.append(
            f"KAI Queues {', '.join(sorted(inputs.kai_queues))} not acted on: the input also "
            "has Volcano Queues, and gangplan shares a cluster by one scheduler's queues "
            "(Volcano's, whose plugins the conf names)"
        )
    elif inputs.kai_queues:
        queues = {name: q for name, (_, q) in sorted(inputs.kai_queues.items())}
        raws = {name: raw for name, (raw, _) in inputs.kai_queues.items()}
    kueue, kueue_raws = kueue_tree(inputs.kueue_queues, inputs.kueue, inputs.notes)
    if kueue and queues:  # checked all the same: an error in a file is an error
        inputs.notes.append(
            f"Kueue ClusterQueues, Cohorts and LocalQueues {', '.join(sorted(kueue)[:8])} not "
            "acted on: the input also has Volcano or KAI Queues, and gangplan shares a cluster "
            "by one scheduler's queues"
        )
    elif kueue:
        queues, raws = kueue, kueue_raws
    if not queues:
        queues = _queues_of_a_dump_without_them(gangs.values(), pods, inputs.notes)
    cycle = parent_cycle([(name, q.parent) for name, q in queues.items()])
    if cycle is not None:
        name = sorted(queues)[cycle]
        where = (
            "spec.parentQueue" if inputs.kai_queues
            else "spec.parentName" if inputs.kueue_queues and not inputs.queues else "spec.parent"
        )  # fmt: skip
        raise raws[name].error(f"queue {name!r} is its own ancestor", field=where)
    topology = _topology(*inputs.topology) if inputs.topology else None
    if inputs.kueue:
        topology = kueue_topologies(inputs.kueue, topology)
    if inputs.hypernodes:  # Volcano's HyperNodes ride on the topology (name "": no CNT)
        hypernodes = tuple(sorted(inputs.hypernodes, key=lambda h: h.name))
        topology = (topology or NetworkTopology(name="")).model_copy(
            update={"hypernodes": hypernodes}
        )
    return ClusterModel(
        nodes=tuple(sorted(nodes, key=lambda n: n.name)),
        pods=tuple(sorted(pods, key=lambda p: p.key)),
        gangs=gangs,
        queues=queues,
        topology=topology,
        notes=tuple(inputs.notes),
        disruption_budgets=dict(sorted(inputs.budgets.items())),
    )


READ_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Node"),
        ("", "Pod"),
        ("", "Namespace"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("scheduling.volcano.sh", "Queue"),
        ("scheduling.koordinator.sh", "ClusterNetworkTopology"),
        (KUEUE_GROUP, "Topology"),
        (KUEUE_GROUP, "ResourceFlavor"),
        *((KUEUE_GROUP, kind) for kind in KUEUE_QUEUE_KINDS),
        (HYPERNODE_GROUP, "HyperNode"),
        (KAI_TOPOLOGY_GROUP, "Topology"),
        (KAI_GROUP, "Queue"),
        ("policy", "PodDisruptionBudget"),
        *((group, "PodGroup") for group in POD_GROUP_DIALECTS),
    }
)
"""(API group, kind) of the objects `build_model` reads, besides the Workload API's."""


SKIPPED_WHY: dict[tuple[str, str], str] = {
    ("kai.scheduler", "SchedulingShard"): (
        "KAI's scheduler settings: give them in the scheduler conf (--config): usageDBConfig "
        "at its top, kValue as the proportion plugin's argument, minRuntime as the minruntime "
        "plugin's defaultPreemptMinRuntime / defaultReclaimMinRuntime"
    ),
}
"""Kinds skipped with a pointer to where their settings go instead."""


def reads(raw: RawObject) -> bool:
    """Whether `build_model` reads an object of this kind (others are skipped, noted)."""
    if raw.kind in ("PodGroup", "Workload") and raw.api_version in WORKLOAD_API_VERSIONS:
        return True
    return (api_group(raw.api_version), raw.kind) in READ_KINDS


def _classify(objects: Iterable[RawObject]) -> _Inputs:
    out = _Inputs()
    seen: dict[tuple[str, str], RawObject] = {}
    for raw in objects:
        kind, group = raw.kind, api_group(raw.api_version)
        if not raw.api_version:
            raise raw.error("missing required field", field="apiVersion")
        if not reads(raw):
            why = SKIPPED_WHY.get((group, kind), "not read by gangplan")
            out.notes.append(
                f"{raw.source}: document {raw.document}: skipped {raw.api_version} {kind} ({why})"
            )
            continue
        parsed: BaseModel
        if kind == "Node" and group == "":
            parsed = validate(K8sNode, raw)
            out.nodes.append((raw, parsed))
            ident = parsed.metadata.name
        elif kind == "Pod" and group == "":
            parsed, template = out.templates.parse(raw)
            out.pods.append((raw, parsed))
            out.pod_keys.append(template)
            ident = f"{parsed.metadata.namespace or DEFAULT_NAMESPACE}/{parsed.metadata.name}"
        elif kind == "PodGroup" and group in POD_GROUP_DIALECTS:
            parsed = validate(K8sPodGroup, raw)
            ident = f"{parsed.metadata.namespace or DEFAULT_NAMESPACE}/{parsed.metadata.name}"
            out.pod_groups[ident] = (raw, parsed)
            _spec_note(out.notes, raw, f"{group}/PodGroup", ident)
        elif kind == "PodGroup" and raw.api_version in WORKLOAD_API_VERSIONS:
            parsed = validate(K8sWorkloadPodGroup, raw)
            ident = f"{parsed.metadata.namespace or DEFAULT_NAMESPACE}/{parsed.metadata.name}"
            out.pod_groups[ident] = (raw, parsed)
        elif kind == "Workload" and raw.api_version in WORKLOAD_API_VERSIONS:
            parsed = validate(K8sWorkload, raw)
            ident = f"{parsed.metadata.namespace or DEFAULT_NAMESPACE}/{parsed.metadata.name}"
            out.notes.append(
                f"{raw.source}: document {raw.document}: Workload {ident!r} read; the scheduler "
                "follows its PodGroup objects, which carry copies of its templates"
            )
        elif kind == "Namespace" and group == "":
            parsed = validate(K8sNamespace, raw)
            ident = parsed.metadata.name
            out.namespaces[ident] = dict(parsed.metadata.labels)
        elif kind == "PriorityClass" and group == "scheduling.k8s.io":
            parsed = validate(K8sPriorityClass, raw)
            ident = parsed.metadata.name
            out.priority_classes[ident] = parsed
        elif kind == "Queue" and group == "scheduling.volcano.sh":
            parsed = validate(K8sQueue, raw)
            ident = parsed.metadata.name
            out.queues[ident] = (raw, parsed)
            _spec_note(out.notes, raw, f"{group}/Queue", ident)
        elif kind == "ClusterNetworkTopology" and group == "scheduling.koordinator.sh":
            parsed = validate(K8sClusterNetworkTopology, raw)
            ident = parsed.metadata.name
            if ident != "default":
                out.notes.append(
                    f"{raw.source}: document {raw.document}: skipped ClusterNetworkTopology "
                    f"{ident!r}: Koordinator only reads the one named 'default'"
                )
                continue
            out.topology = (raw, parsed)
        elif kind in ("Topology", "ResourceFlavor") and group == KUEUE_GROUP:
            kueue_object = (
                validate(K8sKueueTopology, raw)
                if kind == "Topology"
                else validate(K8sKueueFlavor, raw)
            )
            ident = kueue_object.metadata.name
            out.kueue.append((raw, kueue_object))
        elif kind in KUEUE_QUEUE_KINDS and group == KUEUE_GROUP:
            ident = kueue_ident(raw)
            out.kueue_queues.append(raw)
        elif kind == "Topology" and group == KAI_TOPOLOGY_GROUP:
            kai = validate(K8sKaiTopology, raw)
            ident = f"kai:{kai.metadata.name}"  # beside a Kueue Topology of the same name
            levels = levels_topology(raw, kai.metadata.name, kai.spec).levels
            out.kai_topologies[kai.metadata.name] = levels
        elif kind == "Queue" and group == KAI_GROUP:
            parsed_kai = validate(K8sKaiQueue, raw)
            ident = f"kai:{parsed_kai.metadata.name}"  # beside a Volcano Queue of the same name
            out.kai_queues[parsed_kai.metadata.name] = (raw, kai_queue(raw, parsed_kai, out.notes))
        elif kind == "PodDisruptionBudget" and group == "policy":
            budget = read_budget(raw, validate(K8sDisruptionBudget, raw), out.notes)
            ident = budget.key
            out.budgets[ident] = budget
        elif kind == "HyperNode" and group == HYPERNODE_GROUP:
            hypernode = read_hypernode(raw, out.notes)
            out.hypernodes.append(hypernode)
            ident = hypernode.name
        else:  # pragma: no cover - `reads` let through a kind no branch takes
            raise AssertionError(f"READ_KINDS lists {group}/{kind}, which no branch reads")
        key = (kind, ident)
        if key in seen:
            first = seen[key]
            raise raw.error(
                f"duplicate {kind} {ident!r}, first defined in {first.source}: document "
                f"{first.document}",
                field="metadata.name",
            )
        seen[key] = raw
    return out


def _spec_note(notes: list[str], raw: RawObject, kind: str, ident: str) -> None:
    """A note naming the object's `spec` fields gangplan does not act on (`fields.ACTED`)."""
    if kind in ACTED:
        where = f"{raw.source}: document {raw.document}: {raw.kind} {ident}"
        if note := spec_note(kind, where, raw.body.get("spec")):
            notes.append(note)


# ----------------------------------------------------------------------------- priorities


def _priority_resolver(classes: dict[str, K8sPriorityClass], notes: list[str]) -> Any:
    default = next((c for c in classes.values() if c.global_default), None)
    assumed: set[str] = set()

    def resolve(
        raw: RawObject, own: int | None, class_name: str | None, field_path: str
    ) -> tuple[int, str | None]:
        """(priority, preemptionPolicy of the class) as admission would fill them in; KAI's
        own classes, when the input lacks them, as KAI's install creates them."""
        pc = classes.get(class_name) if class_name else default
        kai = class_name in KAI_PRIORITY_CLASSES and is_kai(raw)
        if class_name and pc is None and own is None and kai:
            if class_name not in assumed:
                assumed.add(class_name)
                notes.append(
                    f"PriorityClass {class_name!r} is not in the input: KAI's predefined one "
                    f"({KAI_PRIORITY_CLASSES[class_name]}) is assumed, as KAI's install creates it"
                )
            return KAI_PRIORITY_CLASSES[class_name], None
        if class_name and pc is None and own is None:
            raise raw.error(f"PriorityClass {class_name!r} is not in the input", field=field_path)
        policy = pc.preemption_policy if pc else None
        if own is not None:
            return own, policy
        return (pc.value if pc else 0), policy

    return resolve


# ----------------------------------------------------------------------------- nodes and pods


def _node(raw: RawObject, k8s: K8sNode) -> Node:
    allocatable = dict(k8s.status.allocatable or k8s.status.capacity)
    allocatable.setdefault(PODS, DEFAULT_MAX_PODS)
    if (bad := device_count_problem(allocatable)) is not None:
        field = "status.allocatable" if k8s.status.allocatable else "status.capacity"
        raise raw.error(bad[1], field=f"{field}.{bad[0]}")
    ready_conditions = [c for c in k8s.status.conditions if c.type == "Ready"]
    return Node(
        name=k8s.metadata.name,
        labels=dict(k8s.metadata.labels),
        taints=taints(raw, k8s.spec.taints, "spec.taints"),
        allocatable=allocatable,
        ready=all(c.status == "True" for c in ready_conditions),
        unschedulable=k8s.spec.unschedulable,
    )


def _add(into: dict[str, int], more: dict[str, int]) -> None:
    for r, v in more.items():
        into[r] = into.get(r, 0) + v


def _container_request(c: Container) -> dict[str, int]:
    # A resource with limits but no requests defaults its request to the limit.
    out = dict(c.resources.limits)
    out.update(c.resources.requests)
    return out


POD_LEVEL_RESOURCES = frozenset({"cpu", "memory"}) | {f"hugepages-{s}" for s in ("2Mi", "1Gi")}
"""What pod-level `spec.resources` may set (component-helpers `supportedPodLevelResources`)."""
DRA_CLAIMS = "resource.k8s.io/claims"
"""What a pending pod with DRA resource claims is counted as needing: no node offers it, so
the pod waits ("Insufficient resource.k8s.io/claims", with a note) rather than being placed
without the devices it claims. DRA is the next input to model."""


def effective_requests(k8s: K8sPod) -> dict[str, int]:
    """A pod's requests as kube-scheduler computes them (component-helpers/resource
    `PodRequests`, KEP-753): app containers plus restartable (sidecar) init containers, which
    keep running; each regular init container needs its own request plus the sidecars
    started before it; the pod needs the largest of those; pod-level `spec.resources`
    (KEP-2837) replace that for the resources it sets (cpu, memory, hugepages; a limit
    alone is its request); then `spec.overhead`."""
    total: dict[str, int] = {}
    for c in k8s.spec.containers:
        _add(total, _container_request(c))
    sidecars: dict[str, int] = {}  # the restartable init containers started so far
    init_peak: dict[str, int] = {}
    for c in k8s.spec.init_containers:
        req = _container_request(c)
        if c.restart_policy == "Always":
            _add(total, req)
            _add(sidecars, req)
            during = sidecars
        else:
            during = dict(req)
            _add(during, sidecars)
        for r, v in during.items():
            init_peak[r] = max(init_peak.get(r, 0), v)
    for r, v in init_peak.items():
        total[r] = max(total.get(r, 0), v)
    if k8s.spec.resources is not None:  # pod-level resources win where set (KEP-2837)
        pod_level = dict(k8s.spec.resources.limits) | dict(k8s.spec.resources.requests)
        total |= {r: v for r, v in pod_level.items() if r in POD_LEVEL_RESOURCES}
    for r, v in k8s.spec.overhead.items():
        total[r] = total.get(r, 0) + v
    total[PODS] = 1
    if k8s.spec.resource_claims and not k8s.spec.node_name:
        total[DRA_CLAIMS] = len(k8s.spec.resource_claims)  # refused, with a note (build_model)
    return {r: v for r, v in sorted(total.items()) if v > 0}


def _pod(
    raw: RawObject,
    k8s: K8sPod,
    gang_id: str,
    priority_of: Any,
    terms: PodAffinityReader,
    default_class: str | None,
) -> Pod:
    """A pod as admission leaves it: without a priorityClassName it gets the globalDefault
    class's value and name (Kubernetes' Priority admission plugin sets both)."""
    class_name, where = kai_pod_class(raw, k8s.spec.priority_class_name)
    priority, class_policy = priority_of(raw, k8s.spec.priority, class_name, where)
    class_name = class_name or default_class
    required, preferred = terms.node_affinity(raw, k8s)
    return build(
        raw,
        Pod,
        "",
        names={"scheduling_gates": "spec.schedulingGates"},
        namespace=k8s.metadata.namespace or DEFAULT_NAMESPACE,
        name=k8s.metadata.name,
        labels=dict(k8s.metadata.labels),
        annotations=runtime_annotations(k8s, class_name),
        requests=effective_requests(k8s),
        node_name=k8s.spec.node_name or None,
        nominated_node=k8s.status.nominated_node_name or None,
        phase=k8s.status.phase,
        priority=priority,
        preemption_policy=k8s.spec.preemption_policy or class_policy or "PreemptLowerPriority",
        node_selector=kai_node_selector(k8s.metadata.labels, dict(k8s.spec.node_selector)),
        required_affinity=required,
        tolerations=tolerations(raw, k8s.spec.tolerations, "spec.tolerations"),
        preferred_node_affinity=preferred,
        inter_pod=terms.inter_pod(raw, k8s),
        spread=terms.spread(raw, k8s),
        gang=gang_id,
        created=k8s.metadata.creation_timestamp,
        terminating=k8s.metadata.deletion_timestamp is not None,
        preempted=any(
            c.type == "DisruptionTarget"
            and c.status == "True"
            and c.reason == "PreemptionByScheduler"
            for c in k8s.status.conditions
        ),
        scheduler_name=k8s.spec.scheduler_name,
        scheduling_gates=tuple(g.name for g in k8s.spec.scheduling_gates),
    )


# ----------------------------------------------------------------------------- queues, topology


def _queues_of_a_dump_without_them(
    gangs: Iterable[Gang], pods: Iterable[Pod], notes: list[str]
) -> dict[str, Queue]:
    """An input without any Queue object whose jobs name queues (a dump that left them out):
    each named queue open and unlimited, with a note. With some Queue objects given, a job
    naming another one is refused, as Volcano refuses it."""
    named = {g.queue for g in gangs if g.queue} | {
        q for p in pods if (q := p.annotations.get(QUEUE_ANNOTATION))
    }
    named -= {"default", "root"}  # Volcano's own
    if named:
        notes.append(
            f"no Queue objects in the input: {', '.join(sorted(named))} treated as open "
            "queues without capability"
        )
    return {name: Queue(name=name) for name in sorted(named)}


def _queue(raw: RawObject, k8s: K8sQueue) -> Queue:
    return build(
        raw,
        Queue,
        "",
        names={"name": "metadata.name", "weight": "spec.weight"},
        name=k8s.metadata.name,
        parent=k8s.spec.parent or None,
        capability=dict(k8s.spec.capability),
        deserved=dict(k8s.spec.deserved),
        guarantee=dict(k8s.spec.guarantee.resource),
        state=k8s.status.state or "Open",
        priority=k8s.spec.priority or 0,
        weight=1 if k8s.spec.weight is None else k8s.spec.weight,
        annotations=dict(k8s.metadata.annotations),
        affinity=k8s.spec.affinity,
        allocated=dict(k8s.status.allocated),
    )


def _topology(raw: RawObject, k8s: K8sClusterNetworkTopology) -> NetworkTopology:
    where = "spec.networkTopologySpec"
    layers = tuple(
        build(
            raw,
            TopologyLayer,
            f"{where}[{i}]",
            names=_LAYER_FIELDS,
            name=e.topology_layer,
            parent=e.parent_topology_layer or None,
            label_keys=tuple(e.label_key),
        )
        for i, e in enumerate(k8s.spec.network_topology_spec)
    )
    report(raw, layer_problems(layers), where, _LAYER_FIELDS)
    return NetworkTopology(name=k8s.metadata.name, layers=layers)


_LAYER_FIELDS = {  # the model's name -> the manifest's
    "name": "topologyLayer",
    "parent": "parentTopologyLayer",
    "label_keys": "labelKey",
}
