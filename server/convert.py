"""Protobuf messages <-> the domain model (`solver.model`), and the Decision -> protobuf.

The messages of `gangplan.v1` are front-end neutral; this module turns them into the same
`Node`, `Pod`, `Gang`, `Queue` and `NetworkTopology` the YAML reader builds, so every engine
and the verifier are shared. Bad input is collected, not raised at the first problem: a
`ConvertError` carries every field violation (up to `MAX_VIOLATIONS`), each with the field
path in the request (`cluster.nodes[3].allocatable["cpu"]`), which the servicer sends as
`google.rpc.BadRequest`.

Cluster state lives in a `ClusterState` (dicts keyed by name); `build_model` assembles a
`ClusterModel` from it for one call, with gang members computed from the pods included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from google.protobuf.message import Message

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from solver.decision import Decision, GroupOutcome, Placement, Victim
from solver.model import (
    ClusterModel,
    Gang,
    JobAffinityError,
    MatchPolicy,
    NetworkTopology,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Queue,
    Taint,
    Toleration,
    TopologyLayer,
    parse_job_affinity,
)
from solver.model._cluster import TaintEffect

__all__ = [
    "ClusterState",
    "ConvertError",
    "Violations",
    "apply_job",
    "build_model",
    "cluster_state",
    "cluster_to_proto",
    "decision_from_proto",
    "decision_to_proto",
    "gang_from_proto",
    "job_gangs",
    "node_from_proto",
    "pod_from_proto",
    "queue_from_proto",
    "topology_from_proto",
]

MAX_VIOLATIONS = 50
DEFAULT_NAMESPACE = "default"
DEFAULT_MAX_PODS = 110  # kubelet's maxPods when a node omits allocatable `pods`
PODS = "pods"

_EFFECTS: dict[pb.TaintEffect.ValueType, TaintEffect] = {
    pb.TAINT_EFFECT_NO_SCHEDULE: "NoSchedule",
    pb.TAINT_EFFECT_PREFER_NO_SCHEDULE: "PreferNoSchedule",
    pb.TAINT_EFFECT_NO_EXECUTE: "NoExecute",
}
_SELECTOR_OPS: dict[pb.SelectorOperator.ValueType, str] = {
    pb.SELECTOR_OPERATOR_IN: "In",
    pb.SELECTOR_OPERATOR_NOT_IN: "NotIn",
    pb.SELECTOR_OPERATOR_EXISTS: "Exists",
    pb.SELECTOR_OPERATOR_DOES_NOT_EXIST: "DoesNotExist",
    pb.SELECTOR_OPERATOR_GT: "Gt",
    pb.SELECTOR_OPERATOR_LT: "Lt",
}
_MATCH_POLICIES: dict[pb.MatchPolicy.ValueType, MatchPolicy] = {
    pb.MATCH_POLICY_ONCE_SATISFIED: MatchPolicy.ONCE_SATISFIED,
    pb.MATCH_POLICY_WAITING_AND_RUNNING: MatchPolicy.WAITING_AND_RUNNING,
    pb.MATCH_POLICY_ONLY_WAITING: MatchPolicy.ONLY_WAITING,
}


class ConvertError(Exception):
    """The request is invalid; `violations` are (field path, description) pairs."""

    def __init__(self, violations: list[tuple[str, str]]) -> None:
        self.violations = violations
        first = "; ".join(f"{f}: {d}" for f, d in violations[:3])
        more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
        super().__init__(f"invalid request: {first}{more}")


@dataclass
class Violations:
    """Collects field violations; `check()` raises them all at once."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, path: str, description: str) -> None:
        if len(self.items) < MAX_VIOLATIONS:
            self.items.append((path, description))

    def check(self) -> None:
        if self.items:
            raise ConvertError(self.items)


def _key(key: str) -> str:
    return f"[{key!r}]".replace("'", '"')


def _quantities(values: Mapping[str, int], path: str, out: Violations) -> dict[str, int]:
    result: dict[str, int] = {}
    for name, value in sorted(values.items()):
        if not name:
            out.add(f"{path}{_key(name)}", "resource name must not be empty")
        elif value < 0:
            out.add(f"{path}{_key(name)}", f"must not be negative: {value}")
        else:
            result[name] = int(value)
    return result


def _namespace(ns: str) -> str:
    return ns or DEFAULT_NAMESPACE


def _timestamp(msg: Message, name: str) -> str | None:
    if not msg.HasField(name):
        return None
    text: str = getattr(msg, name).ToJsonString()
    return text


# ----------------------------------------------------------------------------- nodes


def node_from_proto(msg: pb.Node, path: str, out: Violations) -> Node | None:
    if not msg.name:
        out.add(f"{path}.name", "must not be empty")
    allocatable = _quantities(msg.allocatable, f"{path}.allocatable", out)
    allocatable.setdefault(PODS, DEFAULT_MAX_PODS)
    taints = []
    for i, t in enumerate(msg.taints):
        if not t.key:
            out.add(f"{path}.taints[{i}].key", "must not be empty")
        effect = _EFFECTS.get(t.effect)
        if effect is None:
            out.add(f"{path}.taints[{i}].effect", "a taint needs an effect")
            continue
        taints.append(Taint(key=t.key, value=t.value, effect=effect))
    if not msg.name:
        return None
    return Node(
        name=msg.name,
        labels=dict(msg.labels),
        taints=tuple(taints),
        allocatable=allocatable,
        ready=not msg.not_ready,
        unschedulable=msg.unschedulable,
    )


# ----------------------------------------------------------------------------- pods


def _requirements(
    items: Iterable[pb.NodeSelectorRequirement], path: str, out: Violations, fields: bool
) -> tuple[NodeSelectorRequirement, ...]:
    result = []
    for i, r in enumerate(items):
        where = f"{path}[{i}]"
        op = _SELECTOR_OPS.get(r.operator)
        if op is None:
            out.add(f"{where}.operator", "must be set")
            continue
        if not r.key:
            out.add(f"{where}.key", "must not be empty")
        if fields and r.key != "metadata.name":
            out.add(f"{where}.key", "only metadata.name is supported in match_fields")
        values = tuple(r.values)
        if op in ("Gt", "Lt"):
            if len(values) != 1 or not values[0].lstrip("-").isdigit():
                out.add(f"{where}.values", f"operator {op} needs exactly one integer value")
        elif op in ("In", "NotIn") and not values:
            out.add(f"{where}.values", f"operator {op} needs at least one value")
        elif op in ("Exists", "DoesNotExist") and values:
            out.add(f"{where}.values", f"operator {op} takes no values")
        result.append(NodeSelectorRequirement(key=r.key, operator=op, values=values))
    return tuple(result)


def pod_from_proto(msg: pb.Pod, path: str, out: Violations) -> Pod | None:
    """The domain Pod; a pod without a gang gets the implicit gang id `namespace/name`."""
    if not msg.name:
        out.add(f"{path}.name", "must not be empty")
    ns = _namespace(msg.namespace)
    requests = _quantities(msg.requests, f"{path}.requests", out)
    requests.setdefault(PODS, 1)
    terms = tuple(
        NodeSelectorTerm(
            match_expressions=_requirements(
                t.match_expressions,
                f"{path}.required_node_affinity[{i}].match_expressions",
                out,
                fields=False,
            ),
            match_fields=_requirements(
                t.match_fields, f"{path}.required_node_affinity[{i}].match_fields", out, True
            ),
        )
        for i, t in enumerate(msg.required_node_affinity)
    )
    tolerations = []
    for i, t in enumerate(msg.tolerations):
        exists = t.operator == pb.TOLERATION_OPERATOR_EXISTS
        if exists and t.value:
            out.add(f"{path}.tolerations[{i}].value", "must be empty when the operator is EXISTS")
        if not exists and not t.key:
            out.add(f"{path}.tolerations[{i}].key", "an EQUAL toleration needs a key")
        tolerations.append(
            Toleration(
                key=t.key,
                operator="Exists" if exists else "Equal",
                value=t.value,
                effect=_EFFECTS.get(t.effect, ""),
            )
        )
    gang = msg.gang or f"{ns}/{msg.name}"
    if msg.gang and msg.gang.count("/") != 1:
        out.add(f"{path}.gang", f"must be a gang id `namespace/name`, got {msg.gang!r}")
    if not msg.name:
        return None
    never = msg.preemption_policy == pb.PREEMPTION_POLICY_NEVER
    return Pod(
        namespace=ns,
        name=msg.name,
        labels=dict(msg.labels),
        annotations=dict(msg.annotations),
        requests=requests,
        node_name=msg.node_name or None,
        nominated_node=msg.nominated_node_name or None,
        phase=msg.phase,
        priority=msg.priority,
        preemption_policy="Never" if never else "PreemptLowerPriority",
        node_selector=dict(msg.node_selector),
        required_affinity=terms or None,
        tolerations=tuple(tolerations),
        gang=gang,
        created=_timestamp(msg, "creation_time"),
        terminating=msg.terminating,
        scheduler_name=msg.scheduler_name or "default-scheduler",
    )


# ----------------------------------------------------------------------------- gangs, queues


def gang_from_proto(msg: pb.Gang, path: str, out: Violations) -> Gang | None:
    if not msg.name:
        out.add(f"{path}.name", "must not be empty")
        return None
    ns = _namespace(msg.namespace)
    gang_id = f"{ns}/{msg.name}"
    if msg.min_member < 0:
        out.add(f"{path}.min_member", f"must not be negative: {msg.min_member}")
        return None
    for i, other in enumerate(msg.groups):
        if other.count("/") != 1:
            out.add(f"{path}.groups[{i}]", f"must be a gang id `namespace/name`, got {other!r}")
    godel = msg.HasField("affinity")  # job-level affinity is Godel's: schedule as its unit
    return Gang(
        affinity=_gang_affinity(msg.affinity, f"{path}.affinity", out) if godel else None,
        id=gang_id,
        namespace=ns,
        name=msg.name,
        dialect="scheduling.godel.kubewharf.io" if godel else "scheduling.sigs.k8s.io",
        min_member=msg.min_member,
        total_number=max(msg.min_member, msg.total_number),
        mode="NonStrict" if msg.mode == pb.GANG_MODE_NON_STRICT else "Strict",
        match_policy=_MATCH_POLICIES.get(msg.match_policy),
        groups=tuple(sorted({*msg.groups, gang_id})),
        queue=msg.queue or None,
        priority=msg.priority if msg.HasField("priority") else None,
        min_resources=_quantities(msg.min_resources, f"{path}.min_resources", out),
        annotations=dict(msg.annotations),
        created=_timestamp(msg, "creation_time"),
    )


def _gang_affinity(msg: pb.GangAffinity, path: str, out: Violations) -> dict[str, Any]:
    """Godel's `spec.affinity` shape, which `solver.model.parse_job_affinity` reads."""

    def requirement_dicts(
        items: Iterable[pb.NodeSelectorRequirement], where: str
    ) -> list[dict[str, Any]]:
        reqs = _requirements(items, where, out, fields=False)
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
    if not msg.name:
        out.add(f"{path}.name", "must not be empty")
        return None
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
    return Queue(
        name=msg.name,
        parent=msg.parent or None,
        capability=_quantities(msg.capability, f"{path}.capability", out),
        deserved=_quantities(msg.deserved, f"{path}.deserved", out),
        guarantee=_quantities(msg.guarantee, f"{path}.guarantee", out),
        state=msg.state or "Open",
        priority=msg.priority,
        weight=msg.weight or 1,
        annotations=dict(msg.annotations),
        affinity=affinity,
        allocated=_quantities(msg.allocated, f"{path}.allocated", out),
    )


def topology_from_proto(msg: pb.NetworkTopology, path: str, out: Violations) -> NetworkTopology:
    seen: set[str] = set()
    layers = []
    for i, layer in enumerate(msg.layers):
        if not layer.name:
            out.add(f"{path}.layers[{i}].name", "must not be empty")
        elif layer.name in seen:
            out.add(f"{path}.layers[{i}].name", f"layer {layer.name!r} is declared twice")
        seen.add(layer.name)
        layers.append(
            TopologyLayer(
                name=layer.name, parent=layer.parent or None, label_keys=tuple(layer.label_keys)
            )
        )
    return NetworkTopology(layers=tuple(layers))


# ----------------------------------------------------------------------------- cluster state


@dataclass
class ClusterState:
    """A cluster as dicts keyed by name; treated as immutable once stored (copy, then edit).

    `pods` maps `namespace/name` to the pod; a pod whose gang is its own key and not in
    `gangs` is a gang of one. `gangs` holds named gangs only, without members.
    """

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    gangs: dict[str, Gang] = field(default_factory=dict)
    queues: dict[str, Queue] = field(default_factory=dict)
    topology: NetworkTopology | None = None
    # Derived, shared by copies: pod key -> (that Pod object, its implicit gang of one).
    gangs_of_one: dict[str, tuple[Pod, Gang]] = field(default_factory=dict, repr=False)

    def copy(self) -> ClusterState:
        return ClusterState(
            nodes=dict(self.nodes),
            pods=dict(self.pods),
            gangs=dict(self.gangs),
            queues=dict(self.queues),
            topology=self.topology,
            gangs_of_one=self.gangs_of_one,
        )

    @cached_property
    def sorted_nodes(self) -> tuple[Node, ...]:
        """Nodes by name (cached: the state does not change once stored)."""
        return tuple(self.nodes[name] for name in sorted(self.nodes))

    def check_references(self, out: Violations, where: Mapping[str, str]) -> None:
        """Every pod's gang exists (or is the pod's own gang of one); `where` maps a pod key
        to the field path of its gang, for the pods the caller just changed."""
        for key, path in where.items():
            pod = self.pods.get(key)
            if pod is not None and pod.gang != key and pod.gang not in self.gangs:
                out.add(path, f"gang {pod.gang!r} is not in the request or the snapshot")
            if pod is not None and pod.gang == key and key in self.gangs:
                # The implicit gang id of a pod without a gang would join a named gang.
                out.add(path, f"a pod without a gang is the gang {key!r}, which is already named")


def cluster_state(msg: pb.Cluster, path: str) -> ClusterState:
    """A whole Cluster message -> ClusterState; raises ConvertError with every violation."""
    out = Violations()
    state = ClusterState()
    for i, n in enumerate(msg.nodes):
        node = node_from_proto(n, f"{path}.nodes[{i}]", out)
        if node is not None:
            if node.name in state.nodes:
                out.add(f"{path}.nodes[{i}].name", f"duplicate node {node.name!r}")
            state.nodes[node.name] = node
    for i, g in enumerate(msg.gangs):
        gang = gang_from_proto(g, f"{path}.gangs[{i}]", out)
        if gang is not None:
            if gang.id in state.gangs:
                out.add(f"{path}.gangs[{i}].name", f"duplicate gang {gang.id!r}")
            state.gangs[gang.id] = gang
    where: dict[str, str] = {}
    for i, p in enumerate(msg.pods):
        pod = pod_from_proto(p, f"{path}.pods[{i}]", out)
        if pod is not None:
            if pod.key in state.pods:
                out.add(f"{path}.pods[{i}].name", f"duplicate pod {pod.key!r}")
            state.pods[pod.key] = pod
            where[pod.key] = f"{path}.pods[{i}].gang"
    for i, q in enumerate(msg.queues):
        queue = queue_from_proto(q, f"{path}.queues[{i}]", out)
        if queue is not None:
            if queue.name in state.queues:
                out.add(f"{path}.queues[{i}].name", f"duplicate queue {queue.name!r}")
            state.queues[queue.name] = queue
    if msg.HasField("topology"):
        state.topology = topology_from_proto(msg.topology, f"{path}.topology", out)
    state.check_references(out, where)
    out.check()
    return state


def apply_job(state: ClusterState, job: pb.Job, path: str) -> tuple[ClusterState, set[str]]:
    """The state with the job's gangs and pods upserted, and the ids of the job's gangs."""
    out = Violations()
    new = state.copy() if (job.gangs or job.pods) else state
    if new is not state:
        # A job adds no nodes: the copy shares the order cached on the stored snapshot.
        new.sorted_nodes = state.sorted_nodes
    gangs: set[str] = set()
    for i, g in enumerate(job.gangs):
        gang = gang_from_proto(g, f"{path}.gangs[{i}]", out)
        if gang is not None:
            new.gangs[gang.id] = gang
            gangs.add(gang.id)
    where: dict[str, str] = {}
    for i, p in enumerate(job.pods):
        pod = pod_from_proto(p, f"{path}.pods[{i}]", out)
        if pod is not None:
            new.pods[pod.key] = pod
            gangs.add(pod.gang)
            where[pod.key] = f"{path}.pods[{i}].gang"
    for i, gid in enumerate(job.gang_ids):
        if gid not in new.gangs:
            out.add(f"{path}.gang_ids[{i}]", f"gang {gid!r} is not in the request or the snapshot")
        gangs.add(gid)
    new.check_references(out, where)
    out.check()
    return new, gangs


def job_gangs(state: ClusterState, gangs: set[str]) -> set[str]:
    """The job's gangs closed over their GangGroups (gangs that are in the state)."""
    closed = set(gangs)
    todo = list(gangs)
    while todo:
        gang = state.gangs.get(todo.pop())
        for other in gang.groups if gang else ():
            if other not in closed and other in state.gangs:
                closed.add(other)
                todo.append(other)
    return closed


def _gang_of_one(state: ClusterState, pod: Pod) -> Gang:
    """The implicit gang of a pod without one. A running pod's is built once per snapshot
    lineage (copies share the cache; an entry counts only for the very same Pod object):
    on a snapshot with many running pods, building them was most of a call."""
    cached = state.gangs_of_one.get(pod.key)
    if cached is not None and cached[0] is pod:
        return cached[1]
    ns, name = pod.key.split("/", 1)
    gang = Gang(
        id=pod.key,
        namespace=ns,
        name=name,
        dialect="none",
        min_member=1,
        total_number=1,
        groups=(pod.key,),
        created=pod.created,
        members=(pod.key,),
    )
    if pod.bound:  # a job's pending pods come and go with each call: not worth keeping
        state.gangs_of_one[pod.key] = (pod, gang)
    return gang


def build_model(state: ClusterState, gangs: set[str] | None) -> ClusterModel:
    """The ClusterModel of one call.

    `gangs` None: every pod (the `gangplan schedule` question). Otherwise every bound pod
    (they hold resources) and the pending pods of `gangs` only; named gangs are included
    when they have an included pod or are in `gangs`.
    """
    pods = [
        p
        for p in (state.pods[k] for k in sorted(state.pods))
        if gangs is None or not p.pending or p.gang in gangs
    ]
    members: dict[str, list[str]] = {}
    for p in pods:
        members.setdefault(p.gang, []).append(p.key)
    model_gangs: dict[str, Gang] = {}
    for gid in sorted(set(members) | (set(state.gangs) if gangs is None else gangs)):
        gang = state.gangs.get(gid)
        if gang is None:
            if gid not in members:
                continue
            model_gangs[gid] = _gang_of_one(state, state.pods[gid])
            continue
        model_gangs[gid] = gang.model_copy(update={"members": tuple(members.get(gid, ()))})
    return ClusterModel(
        nodes=state.sorted_nodes,
        pods=tuple(pods),
        gangs=model_gangs,
        queues=dict(sorted(state.queues.items())),
        topology=state.topology,
    )


# ----------------------------------------------------------------------------- the answer


def decision_to_proto(decision: Decision) -> spb.Decision:
    msg = spb.Decision(
        placements=[
            spb.PodPlacement(
                pod=key,
                node=p.node or "",
                card=p.card or "",
                nominated_node=p.nominated or "",
                reason=p.reason,
            )
            for key, p in sorted(decision.placements.items())
        ],
        gangs=[
            spb.GangOutcome(gang=gid, enqueued=g.enqueued, placed=g.placed, reason=g.reason)
            for gid, g in sorted(decision.podgroups.items())
        ],
        victims=[spb.Victim(pod=v.pod, node=v.node, message=v.message) for v in decision.victims],
        engine=decision.engine,
        status=decision.status,
        objective=decision.objective,
        tiers=dict(decision.tiers),
        solve_seconds=decision.seconds,
        notes=list(decision.notes),
        stats={k: float(v) for k, v in decision.stats.items()},
    )
    if decision.bound is not None:
        msg.bound = decision.bound
    gap = decision.gap
    if gap is not None:
        msg.gap = gap
    return msg


# ----------------------------------------------------------------------------- model -> protobuf
# The other direction, for clients that read YAML locally and ask a server (`gangplan
# schedule --server`).

_EFFECT_CODES = {v: k for k, v in _EFFECTS.items()}
_SELECTOR_CODES = {v: k for k, v in _SELECTOR_OPS.items()}
_POLICY_CODES = {v: k for k, v in _MATCH_POLICIES.items()}


def _set_timestamp(msg: Message, name: str, text: str | None) -> None:
    if text:
        try:
            getattr(msg, name).FromJsonString(text)
        except ValueError:
            msg.ClearField(name)  # not RFC 3339: ordering falls back to ids


def _terms_to_proto(terms: tuple[NodeSelectorTerm, ...]) -> list[pb.NodeSelectorTerm]:
    def reqs(items: tuple[NodeSelectorRequirement, ...]) -> list[pb.NodeSelectorRequirement]:
        return [
            pb.NodeSelectorRequirement(
                key=r.key, operator=_SELECTOR_CODES[r.operator], values=list(r.values)
            )
            for r in items
        ]

    return [
        pb.NodeSelectorTerm(
            match_expressions=reqs(t.match_expressions), match_fields=reqs(t.match_fields)
        )
        for t in terms
    ]


def _queue_affinity(affinity: Mapping[str, object]) -> pb.QueueAffinity:
    def terms(value: object) -> pb.NodeGroupTerms:
        body = value if isinstance(value, dict) else {}
        required = body.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        preferred = body.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        return pb.NodeGroupTerms(
            required=[str(x) for x in required], preferred=[str(x) for x in preferred]
        )

    msg = pb.QueueAffinity()
    if "nodeGroupAffinity" in affinity:
        msg.node_group_affinity.CopyFrom(terms(affinity["nodeGroupAffinity"]))
    if "nodeGroupAntiAffinity" in affinity:
        msg.node_group_anti_affinity.CopyFrom(terms(affinity["nodeGroupAntiAffinity"]))
    return msg


def _job_affinity(raw: dict[str, Any] | None) -> pb.GangAffinity | None:
    try:
        affinity = parse_job_affinity(raw)
    except JobAffinityError:
        return None  # the reader validated it; nothing sensible to send otherwise
    if affinity is None:
        return None
    msg = pb.GangAffinity(
        required_topology_keys=affinity.required,
        preferred_topology_keys=affinity.preferred,
        sort_rules=[
            pb.SortRule(resource=r.resource, dimension=r.dimension, order=r.order)
            for r in affinity.sort_rules
        ],
    )
    if affinity.node_selector is not None:
        msg.node_selector.CopyFrom(pb.NodeSelector(terms=_terms_to_proto(affinity.node_selector)))
    return msg


def cluster_to_proto(model: ClusterModel) -> pb.Cluster:
    """A ClusterModel as a Cluster message.

    Not carried: a gang's YAML dialect (every protobuf gang reads as a
    scheduling.sigs.k8s.io PodGroup, its match policy explicit); Godel's `spec.affinity`
    travels as the typed GangAffinity (normalised: empty topology keys dropped).
    """
    msg = pb.Cluster(
        nodes=[
            pb.Node(
                name=n.name,
                labels=n.labels,
                taints=[
                    pb.Taint(key=t.key, value=t.value, effect=_EFFECT_CODES[t.effect])
                    for t in n.taints
                ],
                allocatable=n.allocatable,
                not_ready=not n.ready,
                unschedulable=n.unschedulable,
            )
            for n in model.nodes
        ]
    )
    for p in model.pods:
        pod = pb.Pod(
            namespace=p.namespace,
            name=p.name,
            labels=p.labels,
            annotations=p.annotations,
            requests=p.requests,
            node_name=p.node_name or "",
            nominated_node_name=p.nominated_node or "",
            phase=p.phase,
            priority=p.priority,
            preemption_policy=(
                pb.PREEMPTION_POLICY_NEVER
                if p.preemption_policy == "Never"
                else pb.PREEMPTION_POLICY_PREEMPT_LOWER_PRIORITY
            ),
            node_selector=p.node_selector,
            required_node_affinity=_terms_to_proto(p.required_affinity or ()),
            tolerations=[
                pb.Toleration(
                    key=t.key,
                    operator=(
                        pb.TOLERATION_OPERATOR_EXISTS
                        if t.operator == "Exists"
                        else pb.TOLERATION_OPERATOR_EQUAL
                    ),
                    value=t.value,
                    effect=_EFFECT_CODES.get(t.effect, pb.TAINT_EFFECT_UNSPECIFIED)
                    if t.effect
                    else pb.TAINT_EFFECT_UNSPECIFIED,
                )
                for t in p.tolerations
            ],
            gang="" if model.gangs[p.gang].implicit else p.gang,
            terminating=p.terminating,
            scheduler_name=p.scheduler_name,
        )
        _set_timestamp(pod, "creation_time", p.created)
        msg.pods.append(pod)
    for g in model.gangs.values():
        if g.implicit:
            continue
        gang = pb.Gang(
            namespace=g.namespace,
            name=g.name,
            min_member=g.min_member,
            total_number=g.total_number,
            mode=pb.GANG_MODE_NON_STRICT if g.mode == "NonStrict" else pb.GANG_MODE_STRICT,
            match_policy=(
                _POLICY_CODES[g.match_policy]
                if g.match_policy is not None
                else pb.MATCH_POLICY_UNSPECIFIED
            ),
            groups=[x for x in g.groups if x != g.id],
            queue=g.queue or "",
            min_resources=g.min_resources,
            annotations=g.annotations,
        )
        if g.priority is not None:
            gang.priority = g.priority
        affinity = _job_affinity(g.affinity)
        if affinity is not None:
            gang.affinity.CopyFrom(affinity)
        _set_timestamp(gang, "creation_time", g.created)
        msg.gangs.append(gang)
    for q in model.queues.values():
        queue = pb.Queue(
            name=q.name,
            parent=q.parent or "",
            capability=q.capability,
            deserved=q.deserved,
            guarantee=q.guarantee,
            state=q.state,
            priority=q.priority,
            weight=q.weight,
            annotations=q.annotations,
            allocated=q.allocated,
        )
        if q.affinity:
            queue.affinity.CopyFrom(_queue_affinity(q.affinity))
        msg.queues.append(queue)
    if model.topology is not None:
        msg.topology.CopyFrom(
            pb.NetworkTopology(
                layers=[
                    pb.TopologyLayer(
                        name=layer.name, parent=layer.parent or "", label_keys=layer.label_keys
                    )
                    for layer in model.topology.layers
                ]
            )
        )
    return msg


def decision_from_proto(msg: spb.Decision) -> Decision:
    """A Decision message back into the library's Decision (for the CLI's renderers)."""
    return Decision(
        placements={
            p.pod: Placement(
                node=p.node or None,
                card=p.card or None,
                nominated=p.nominated_node or None,
                reason=p.reason,
            )
            for p in msg.placements
        },
        podgroups={
            g.gang: GroupOutcome(enqueued=g.enqueued, placed=g.placed, reason=g.reason)
            for g in msg.gangs
        },
        engine=msg.engine,
        status=msg.status,
        objective=msg.objective,
        tiers=dict(msg.tiers),
        seconds=msg.solve_seconds,
        victims=tuple(Victim(pod=v.pod, node=v.node, message=v.message) for v in msg.victims),
        bound=msg.bound if msg.HasField("bound") else None,
        notes=tuple(msg.notes),
        stats=dict(msg.stats),
    )
