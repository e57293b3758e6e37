"""Protobuf messages -> the domain model (`solver.model`), field by field.

The messages of `gangplan.v1` are front-end neutral; these functions turn them into the same
`Node`, `Pod`, `Gang`, `Queue` and `NetworkTopology` the YAML reader builds, so every engine
and the verifier are shared. Bad input is collected, not raised at the first problem: each
violation names its field path in the request (`cluster.nodes[3].allocatable["cpu"]`).
Whole lists of pods are read by `solver.codec._readers`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from google.protobuf.message import Message

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._constraints import (
    EFFECTS,
    SELECTOR_OPS,
    inter_pod_from_proto,
    known,
    missing_or_unknown,
    node_affinity_from_proto,
    preferred_from_proto,
    requirements_from_proto,
    spread_from_proto,
    tolerations_from_proto,
)
from solver.codec._errors import Violations, build, report
from solver.codec._hypernode import (
    hypernodes_from_proto,
    network_topology_from_proto,
    sub_group_policy_from_proto,
)
from solver.codec._kueue import check_kueue_annotations, kueue_from_proto
from solver.codec._subgroups import task_member_from_proto, topology_sub_groups_from_proto
from solver.model import (
    KAI_RESOURCES,
    KAI_UNLIMITED,
    Dialect,
    Gang,
    KaiQuota,
    KueueFlavorQuota,
    KueueQueue,
    KueueQuota,
    KueueResourceGroup,
    MatchPolicy,
    NetworkTopology,
    Node,
    Pod,
    Queue,
    Taint,
    TopologyLayer,
    device_count_problem,
    duration_problem,
    kai_amount_problem,
    labels_problem,
    layer_problems,
)
from solver.quantity import amount_problem

__all__ = [
    "DEFAULT_NAMESPACE",
    "DISRUPTION_MODES",
    "EFFECTS",
    "MATCH_POLICIES",
    "SELECTOR_OPS",
    "gang_from_proto",
    "node_from_proto",
    "pod_from_proto",
    "queue_from_proto",
    "read_quantities",
    "timestamp",
    "topology_from_proto",
]

DEFAULT_NAMESPACE = "default"
DEFAULT_MAX_PODS = 110  # kubelet's maxPods when a node omits allocatable `pods`
PODS = "pods"

MATCH_POLICIES: dict[pb.MatchPolicy.ValueType, MatchPolicy] = {
    pb.MATCH_POLICY_ONCE_SATISFIED: MatchPolicy.ONCE_SATISFIED,
    pb.MATCH_POLICY_WAITING_AND_RUNNING: MatchPolicy.WAITING_AND_RUNNING,
    pb.MATCH_POLICY_ONLY_WAITING: MatchPolicy.ONLY_WAITING,
}

DISRUPTION_MODES: dict[pb.DisruptionMode.ValueType, Literal["Single", "All"]] = {
    pb.DISRUPTION_MODE_SINGLE: "Single",
    pb.DISRUPTION_MODE_ALL: "All",
}


def _key(key: str) -> str:
    return f"[{key!r}]".replace("'", '"')


def read_quantities(values: Mapping[str, int], path: str, out: Violations) -> dict[str, int]:
    result: dict[str, int] = {}
    for name, value in sorted(values.items()):
        if not name:
            out.add(f"{path}{_key(name)}", "resource name must not be empty")
        elif (problem := amount_problem(name, value)) is not None:
            out.add(f"{path}{_key(name)}", f"{problem}, got {value}")
        else:
            result[name] = int(value)
    return result


def _namespace(ns: str) -> str:
    return ns or DEFAULT_NAMESPACE


def timestamp(msg: Message, name: str, path: str, out: Violations) -> str | None:
    if not msg.HasField(name):
        return None
    try:
        text: str = getattr(msg, name).ToJsonString()
    except ValueError as err:  # seconds outside years 1..9999, or nanos outside 0..1e9
        out.add(f"{path}.{name}" if path else name, str(err))
        return None
    return text


# ----------------------------------------------------------------------------- nodes


def node_from_proto(msg: pb.Node, path: str, out: Violations) -> Node | None:
    if not msg.name:
        out.add(f"{path}.name", "must not be empty")
    allocatable = read_quantities(msg.allocatable, f"{path}.allocatable", out)
    allocatable.setdefault(PODS, DEFAULT_MAX_PODS)
    if (bad := device_count_problem(allocatable)) is not None:
        out.add(f"{path}.allocatable{_key(bad[0])}", bad[1])
    taints = []
    for i, t in enumerate(msg.taints):
        effect = EFFECTS.get(t.effect)
        if effect is None:
            out.add(
                f"{path}.taints[{i}].effect",
                missing_or_unknown(t.effect, "a taint needs an effect"),
            )
            continue
        taint = build(Taint, f"{path}.taints[{i}]", out, key=t.key, value=t.value, effect=effect)
        if taint is not None:
            taints.append(taint)
    labels = dict(msg.labels)
    if (problem := labels_problem(labels)) is not None:
        out.add(f"{path}.labels", problem)
    if not msg.name:
        return None
    return Node(
        name=msg.name,
        labels=labels,
        taints=tuple(taints),
        allocatable=allocatable,
        ready=not msg.not_ready,
        unschedulable=msg.unschedulable,
    )


# ----------------------------------------------------------------------------- pods


def pod_from_proto(msg: pb.Pod, path: str, out: Violations) -> Pod | None:
    """The domain Pod; a pod without a gang gets the implicit gang id `namespace/name`."""
    if not msg.name:
        out.add(f"{path}.name", "must not be empty")
    ns = _namespace(msg.namespace)
    requests = read_quantities(msg.requests, f"{path}.requests", out)
    requests.setdefault(PODS, 1)
    terms = node_affinity_from_proto(msg, path, out)
    preferred = preferred_from_proto(msg, path, out)
    tolerations = tolerations_from_proto(msg, path, out)
    inter_pod = inter_pod_from_proto(msg, ns, path, out)
    spread = spread_from_proto(msg, path, out)
    gang = msg.gang or f"{ns}/{msg.name}"
    if msg.gang and msg.gang.count("/") != 1:
        out.add(f"{path}.gang", f"must be a gang id `namespace/name`, got {msg.gang!r}")
    known(pb.PreemptionPolicy, msg.preemption_policy, f"{path}.preemption_policy", out)
    check_kueue_annotations(msg, path, out)
    labels = dict(msg.labels)
    if (problem := labels_problem(labels)) is not None:
        out.add(f"{path}.labels", problem)
    if not msg.name:
        return None
    never = msg.preemption_policy == pb.PREEMPTION_POLICY_NEVER
    return build(
        Pod,
        path,
        out,
        names=_POD_NAMES,
        namespace=ns,
        name=msg.name,
        labels=labels,
        annotations=dict(msg.annotations),
        requests=requests,
        node_name=msg.node_name or None,
        nominated_node=msg.nominated_node_name or None,
        phase=msg.phase,
        priority=msg.priority,
        preemption_policy="Never" if never else "PreemptLowerPriority",
        node_selector=dict(msg.node_selector),
        required_affinity=terms or None,
        tolerations=tolerations,
        preferred_node_affinity=preferred,
        inter_pod=inter_pod,
        spread=spread,
        gang=gang,
        created=timestamp(msg, "creation_time", path, out),
        terminating=msg.terminating,
        preempted=msg.preempted,
        scheduler_name=msg.scheduler_name or "default-scheduler",
        scheduling_gates=tuple(msg.scheduling_gates),  # the rules are the model's
    )


_POD_NAMES = {  # the model's name -> the wire's, where they differ
    "spread": "topology_spread_constraints",
    "required_affinity": "required_node_affinity",
    "nominated_node": "nominated_node_name",
    "created": "creation_time",
}


# ----------------------------------------------------------------------------- gangs, queues


MAX_REFUSED = 1024  # Gang.refused: a one-line reason


def gang_from_proto(msg: pb.Gang, path: str, out: Violations) -> Gang | None:
    if not msg.name:
        out.add(f"{path}.name", "must not be empty")
        return None
    ns = _namespace(msg.namespace)
    gang_id = f"{ns}/{msg.name}"
    for i, other in enumerate(msg.groups):
        if other.count("/") != 1:
            out.add(f"{path}.groups[{i}]", f"must be a gang id `namespace/name`, got {other!r}")
    known(pb.GangMode, msg.mode, f"{path}.mode", out)
    known(pb.MatchPolicy, msg.match_policy, f"{path}.match_policy", out)
    known(pb.DisruptionMode, msg.disruption_mode, f"{path}.disruption_mode", out)
    godel = msg.HasField("affinity")  # job-level affinity is Godel's: schedule as its unit
    workload_api = bool(msg.topology_key) or msg.disruption_mode != pb.DISRUPTION_MODE_UNSPECIFIED
    if godel and workload_api:
        out.add(
            f"{path}.topology_key", "a gang is Godel's (affinity) or the Workload API's, not both"
        )
    if godel and msg.preferred_topology_keys:
        out.add(
            f"{path}.preferred_topology_keys",
            "preferred levels are KAI's; a Godel gang states its preferences in affinity",
        )
    if msg.topology_sub_groups and (godel or msg.HasField("network_topology")):
        out.add(
            f"{path}.topology_sub_groups",
            "sub-groups' levels are KAI's; a Godel gang states its domains in affinity, a "
            "Volcano one in network_topology",
        )
    _topology_lists(msg, path, out)
    dialect: Dialect = "scheduling.sigs.k8s.io"
    if godel:
        dialect = "scheduling.godel.kubewharf.io"
    elif workload_api:
        dialect = "scheduling.k8s.io"
    if len(msg.refused) > MAX_REFUSED:
        out.add(f"{path}.refused", f"must be at most {MAX_REFUSED} characters")
    return build(
        Gang,
        path,
        out,
        names=_GANG_NAMES,
        affinity=_gang_affinity(msg.affinity, f"{path}.affinity", out) if godel else None,
        topology_key=msg.topology_key or None,
        preferred_keys=tuple(msg.preferred_topology_keys[:MAX_LEVELS]),
        topology_pack=tuple(msg.topology_pack[: len(PACK_RESOURCES)]),
        refused=msg.refused[:MAX_REFUSED] or None,
        network_topology=network_topology_from_proto(
            msg.network_topology, f"{path}.network_topology", out
        )
        if msg.HasField("network_topology")
        else None,
        sub_group_policy=sub_group_policy_from_proto(
            list(msg.sub_group_policy), f"{path}.sub_group_policy", out
        ),
        topology_sub_groups=topology_sub_groups_from_proto(
            msg.topology_sub_groups, f"{path}.topology_sub_groups", out
        ),
        disruption_mode=DISRUPTION_MODES.get(msg.disruption_mode),
        id=gang_id,
        namespace=ns,
        name=msg.name,
        dialect=dialect,
        min_member=msg.min_member,
        total_number=max(msg.min_member, msg.total_number),
        mode="NonStrict" if msg.mode == pb.GANG_MODE_NON_STRICT else "Strict",
        match_policy=MATCH_POLICIES.get(msg.match_policy),
        groups=tuple(sorted({*msg.groups, gang_id})),
        queue=msg.queue or None,
        priority=msg.priority if msg.HasField("priority") else None,
        min_resources=read_quantities(msg.min_resources, f"{path}.min_resources", out),
        min_task_member=task_member_from_proto(msg, path, out),
        annotations=dict(msg.annotations),
        created=timestamp(msg, "creation_time", path, out),
    )


_GANG_NAMES = {"preferred_keys": "preferred_topology_keys", "created": "creation_time"}
MAX_LEVELS = 16  # a KAI Topology has at most 16 levels
PACK_RESOURCES = ("CPU", "Memory", "GPU")


def _topology_lists(msg: pb.Gang, path: str, out: Violations) -> None:
    """`preferred_topology_keys` and `topology_pack`, checked as the proto comments say."""
    keys = list(msg.preferred_topology_keys)
    if len(keys) > MAX_LEVELS:
        out.add(f"{path}.preferred_topology_keys", f"at most {MAX_LEVELS} levels, got {len(keys)}")
    for i, key in enumerate(keys):
        if not key or key == msg.topology_key or keys.index(key) != i:
            out.add(
                f"{path}.preferred_topology_keys[{i}]",
                f"must be a non-empty label, once, other than topology_key; got {key!r}",
            )
    pack = list(msg.topology_pack)
    for i, resource in enumerate(pack):
        if resource not in PACK_RESOURCES or pack.index(resource) != i:
            out.add(
                f"{path}.topology_pack[{i}]",
                f"must be one of {', '.join(PACK_RESOURCES)}, once; got {resource!r}",
            )


def _gang_affinity(msg: pb.GangAffinity, path: str, out: Violations) -> dict[str, Any]:
    """Godel's `spec.affinity` shape, which `solver.model.parse_job_affinity` reads."""

    def requirement_dicts(
        items: Iterable[pb.NodeSelectorRequirement], where: str
    ) -> list[dict[str, Any]]:
        reqs = requirements_from_proto(items, where, out, fields=False)
        return [{"key": r.key, "operator": r.operator, "values": list(r.values)} for r in reqs]

    body: dict[str, Any] = {
        "required": [{"topologyKey": k} for k in msg.required_topology_keys],
        "preferred": [{"topologyKey": k} for k in msg.preferred_topology_keys],
        "sortRules": [
            {"resource": r.resource, "dimension": r.dimension, "order": r.order}
            for r in msg.sort_rules
        ],
    }
    if msg.HasField("node_selector"):
        body["nodeSelector"] = {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": requirement_dicts(
                        t.match_expressions, f"{path}.node_selector.terms[{i}].match_expressions"
                    )
                }
                for i, t in enumerate(msg.node_selector.terms)
            ]
        }
    return {"podGroupAffinity": body}


def _node_group_terms(terms: pb.NodeGroupTerms) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if terms.required:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = list(terms.required)
    if terms.preferred:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = list(terms.preferred)
    return out


def queue_from_proto(msg: pb.Queue, path: str, out: Violations) -> Queue | None:
    affinity: dict[str, object] | None = None
    if msg.HasField("affinity"):
        # The Kubernetes shape the YAML reader keeps, so the queue policies read one format.
        affinity = {}
        if msg.affinity.HasField("node_group_affinity"):
            affinity["nodeGroupAffinity"] = _node_group_terms(msg.affinity.node_group_affinity)
        if msg.affinity.HasField("node_group_anti_affinity"):
            affinity["nodeGroupAntiAffinity"] = _node_group_terms(
                msg.affinity.node_group_anti_affinity
            )
    return build(
        Queue,
        path,
        out,
        name=msg.name,
        parent=msg.parent or None,
        capability=read_quantities(msg.capability, f"{path}.capability", out),
        deserved=read_quantities(msg.deserved, f"{path}.deserved", out),
        guarantee=read_quantities(msg.guarantee, f"{path}.guarantee", out),
        state=msg.state or "Open",
        priority=msg.priority,
        weight=msg.weight or 1,  # 0: unset on the wire
        annotations=dict(msg.annotations),
        affinity=affinity,
        allocated=read_quantities(msg.allocated, f"{path}.allocated", out),
        kai=_kai_quota(msg.kai, f"{path}.kai", out) if msg.HasField("kai") else None,
        kueue=_kueue_queue(msg.kueue, f"{path}.kueue", out, bool(msg.parent))
        if msg.HasField("kueue")
        else None,
    )


def _kueue_queue(msg: pb.KueueQueue, path: str, out: Violations, parent: bool) -> KueueQueue | None:
    """A Kueue ClusterQueue, Cohort or LocalQueue, checked as the reader checks the YAML
    (`parent`: the queue names one: limits need it; a ClusterQueue lends at most its
    nominal quota)."""
    groups = []
    covered_by: dict[str, int] = {}
    for g, group in enumerate(msg.resource_groups):
        where = f"{path}.resource_groups[{g}]"
        covered = tuple(group.covered_resources)
        for r in covered:
            if r in covered_by:
                out.add(f"{where}.covered_resources", f"resource {r!r} is covered twice")
            covered_by[r] = g
        flavors = []
        for f, flavor in enumerate(group.flavors):
            fwhere = f"{where}.flavors[{f}]"
            names = tuple(q.name for q in flavor.resources)
            if names != covered:
                out.add(f"{fwhere}.resources", f"must name the covered resources {list(covered)}")
            quotas = {}
            for i, q in enumerate(flavor.resources):
                qwhere = f"{fwhere}.resources[{i}]"
                values: dict[str, Any] = {
                    "nominal": q.nominal_quota,
                    "borrowing_limit": q.borrowing_limit if q.HasField("borrowing_limit") else None,
                    "lending_limit": q.lending_limit if q.HasField("lending_limit") else None,
                }
                for field, v in values.items():
                    if v is not None and (problem := amount_problem(q.name, v)) is not None:
                        out.add(f"{qwhere}.{field}", f"{problem}, got {v}")
                        values[field] = 0
                    elif v is not None and field != "nominal" and not parent:
                        out.add(f"{qwhere}.{field}", "must be unset when the queue has no parent")
                lend = values["lending_limit"]
                if msg.kind == "ClusterQueue" and lend is not None and lend > values["nominal"]:
                    out.add(f"{qwhere}.lending_limit", "must be at most the nominal_quota")
                quotas[q.name] = build(
                    KueueQuota, qwhere, out, {"nominal": "nominal_quota"}, **values
                )
            flavors.append(
                build(KueueFlavorQuota, fwhere, out, name=flavor.name,
                      node_labels=dict(flavor.node_labels),
                      resources={k: v for k, v in quotas.items() if v is not None})
            )  # fmt: skip
        groups.append(
            build(KueueResourceGroup, where, out, covered=covered,
                  flavors=tuple(f for f in flavors if f is not None))
        )  # fmt: skip
    return build(
        KueueQueue,
        path,
        out,
        names={"groups": "resource_groups", "strategy": "queueing_strategy"},
        kind=msg.kind,
        groups=tuple(g for g in groups if g is not None),
        fair_weight=msg.fair_weight if msg.HasField("fair_weight") else 1.0,
        strategy=msg.queueing_strategy or "BestEffortFIFO",
    )


def _kai_quota(msg: pb.KaiQueueResources, path: str, out: Violations) -> KaiQuota:
    def amounts(values: Mapping[str, float], name: str, least: float) -> dict[str, float]:
        kept = {}
        for r, v in sorted(values.items()):
            where = f"{path}.{name}[{r}]"
            if r not in KAI_RESOURCES:
                out.add(where, f"a KAI queue's resources are {', '.join(KAI_RESOURCES)}")
            elif (problem := kai_amount_problem(v, unlimited=least < 0)) is not None:
                out.add(where, f"{problem}, got {v}")
            else:
                kept[r] = v
        return kept

    return KaiQuota(
        quota=amounts(msg.quota, "quota", KAI_UNLIMITED),
        limit=amounts(msg.limit, "limit", KAI_UNLIMITED),
        over_quota_weight=amounts(msg.over_quota_weight, "over_quota_weight", 0.0),
        created=timestamp(msg, "creation_time", path, out) or "",
        usage=amounts(msg.usage, "usage", 0.0),
        preempt_min_runtime=_duration(msg, "preempt_min_runtime", path, out),
        reclaim_min_runtime=_duration(msg, "reclaim_min_runtime", path, out),
    )


def _duration(msg: Message, name: str, path: str, out: Violations) -> float | None:
    if not msg.HasField(name):
        return None
    value = getattr(msg, name)
    seconds = float(value.seconds + value.nanos / 1e9)
    problem = duration_problem(seconds)
    if problem is None and value.seconds and value.nanos < 0:  # proto: nanos share the sign
        problem = "must be a duration whose seconds and nanos share a sign"
    if problem is not None:
        out.add(f"{path}.{name}", f"{problem}, got {seconds:g}s")
        return None
    return seconds


def topology_from_proto(msg: pb.NetworkTopology, path: str, out: Violations) -> NetworkTopology:
    built = [
        build(
            TopologyLayer,
            f"{path}.layers[{i}]",
            out,
            name=layer.name,
            parent=layer.parent or None,
            label_keys=tuple(layer.label_keys),
        )
        for i, layer in enumerate(msg.layers)
    ]
    layers = [layer for layer in built if layer is not None]
    if len(layers) == len(built):
        report(layer_problems(layers), f"{path}.layers", out)
    hypernodes = hypernodes_from_proto(list(msg.hypernodes), f"{path}.hypernodes", out)
    # no layers, only HyperNodes: no ClusterNetworkTopology (the model's name "")
    name = "" if hypernodes and not layers else "default"
    return NetworkTopology(
        name=name,
        layers=tuple(layers),
        hypernodes=hypernodes,
        **kueue_from_proto(msg, path, out),
    )
