"""The other direction: the Decision to protobuf (server), and back plus a whole model to a
Cluster message (the CLI as a client: `gangplan schedule --server`)."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from solver.codec._budgets import budgets_to_proto
from solver.codec._constraints import (
    inter_pod_to_proto,
    preferred_to_proto,
    spread_to_proto,
    terms_to_proto,
)
from solver.codec._hypernode import (
    hypernodes_to_proto,
    network_topology_to_proto,
    sub_group_policy_to_proto,
)
from solver.codec._kueue import (
    assignments_from_proto,
    assignments_to_proto,
    flavors_from_proto,
    flavors_to_proto,
    kueue_to_proto,
)
from solver.codec._messages import DISRUPTION_MODES, EFFECTS, MATCH_POLICIES
from solver.codec._subgroups import topology_sub_groups_to_proto
from solver.decision import (
    Certificate,
    Decision,
    GroupOutcome,
    Move,
    Placement,
    QueueUse,
    Victim,
)
from solver.model import (
    ClusterModel,
    JobAffinityError,
    KueueQueue,
    Pod,
    parse_job_affinity,
)

__all__ = ["certificate_to_proto", "cluster_to_proto", "decision_from_proto", "decision_to_proto"]


def decision_to_proto(decision: Decision) -> spb.Decision:
    msg = spb.Decision(
        placements=[
            spb.PodPlacement(
                pod=key,
                node=p.node or "",
                card=p.card or "",
                nominated_node=p.nominated or "",
                reason=p.reason,
                gpu_devices=list(p.devices),
                gpu_annotations=p.annotations,
            )
            for key, p in sorted(decision.placements.items())
        ],
        gangs=[
            spb.GangOutcome(gang=gid, enqueued=g.enqueued, placed=g.placed, reason=g.reason)
            for gid, g in sorted(decision.podgroups.items())
        ],
        victims=[
            spb.Victim(
                pod=v.pod, node=v.node, message=v.message, cause=_CAUSES[v.cause], queue=v.queue
            )
            for v in decision.victims
        ],
        engine=decision.engine,
        status=decision.status,
        tiers=dict(decision.tiers),
        objective_tiers=[
            spb.ObjectiveTier(name=name, value=value, maximize=name not in decision.minimized)
            for name, value in decision.tiers.items()
        ],
        topology_assignments=assignments_to_proto(decision.topology_assignments),
        flavor_assignments=flavors_to_proto(decision.flavor_assignments),
        queues=[
            spb.QueueUse(queue=q.queue, limit=q.limit, allocated=q.allocated, placed=q.placed)
            for q in decision.queues
        ],
        solve_seconds=decision.seconds,
        notes=list(decision.notes),
        stats={k: float(v) for k, v in decision.stats.items()},
        moves=[
            spb.DefragmentMove(pod=m.pod, unit=m.unit, from_node=m.source, to_node=m.target)
            for m in decision.moves
        ],
    )
    for gang, cert in decision.certificates.items():
        msg.certificates[gang].CopyFrom(certificate_to_proto(cert))
    if decision.objective_fits_int64:
        msg.objective = decision.objective
    if decision.bound is not None:
        msg.bound = decision.bound
    gap = decision.gap
    if gap is not None:
        msg.gap = gap
    return msg


_CAUSES = {"preemption": spb.VICTIM_CAUSE_PREEMPTION, "reclaim": spb.VICTIM_CAUSE_RECLAIM}


def certificate_to_proto(cert: Certificate) -> spb.Certificate:
    return spb.Certificate(
        kind=cert.kind,
        constraint=cert.constraint,
        sentence=cert.sentence,
        proven=cert.proven,
        unit=cert.unit,
        needed=cert.needed,
        offered=cert.offered,
        places=[spb.CertificatePlace(name=n, offers=v) for n, v in cert.places],
        rivals=list(cert.rivals),
    )


def _certificate_from_proto(msg: spb.Certificate) -> Certificate:
    return Certificate(
        kind=msg.kind,
        constraint=msg.constraint,
        sentence=msg.sentence,
        proven=msg.proven,
        unit=msg.unit,
        needed=msg.needed,
        offered=msg.offered,
        places=tuple((p.name, p.offers) for p in msg.places),
        rivals=tuple(msg.rivals),
    )


_EFFECT_CODES = {v: k for k, v in EFFECTS.items()}
_POLICY_CODES = {v: k for k, v in MATCH_POLICIES.items()}
_DISRUPTION_CODES = {v: k for k, v in DISRUPTION_MODES.items()}


def _set_timestamp(msg: Message, name: str, text: str | None) -> None:
    if text:
        parsed = _timestamp(text) if len(text) <= 64 else None
        if parsed is None:
            msg.ClearField(name)  # not RFC 3339: ordering falls back to ids
        else:
            field = getattr(msg, name)
            field.seconds, field.nanos = parsed


@lru_cache(maxsize=4096)
def _timestamp(text: str) -> tuple[int, int] | None:
    """(seconds, nanos) of an RFC 3339 time, None when it is not one (kept: pods created in
    the same second share their creationTimestamp)."""
    stamp = Timestamp()
    try:
        stamp.FromJsonString(text)
    except ValueError:
        return None
    return stamp.seconds, stamp.nanos


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
        msg.node_selector.CopyFrom(pb.NodeSelector(terms=terms_to_proto(affinity.node_selector)))
    return msg


_POD_SHAPE = operator.itemgetter(
    *(f for f in Pod.model_fields if f not in ("name", "gang", "created"))
)


def _pod_shape(p: Pod) -> tuple[object, ...]:
    """The identity of every field of a pod but its name, gang and creation time: pods read
    from one template share those objects, so their message is built once and copied."""
    return tuple(map(id, _POD_SHAPE(p.__dict__)))


def _pod_to_proto(p: Pod) -> pb.Pod:
    """A pod's message without its gang and creation time (set on each copy)."""
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
        required_node_affinity=terms_to_proto(p.required_affinity or ()),
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
        terminating=p.terminating,
        preempted=p.preempted,
        scheduler_name=p.scheduler_name,
        scheduling_gates=list(p.scheduling_gates),
        preferred_node_affinity=preferred_to_proto(p.preferred_node_affinity),
        topology_spread_constraints=spread_to_proto(p.spread),
    )
    inter_pod_to_proto(p.inter_pod, pod)
    return pod


def cluster_to_proto(model: ClusterModel) -> pb.Cluster:
    """A ClusterModel as a Cluster message.

    Not carried: a gang's YAML dialect (every protobuf gang reads as a
    scheduling.sigs.k8s.io PodGroup, its match policy explicit), except that Godel's
    `spec.affinity` travels as the typed GangAffinity (normalised: empty topology keys
    dropped) and a Workload API PodGroup as its topology key and disruption mode.
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
    templates: dict[tuple[object, ...], pb.Pod] = {}
    for p in model.pods:
        gang_id = "" if model.gangs[p.gang].implicit else p.gang
        shape = _pod_shape(p)
        template = templates.get(shape)
        if template is None:
            template = templates[shape] = _pod_to_proto(p)
        pod = msg.pods.add()
        pod.CopyFrom(template)
        pod.name, pod.gang = p.name, gang_id
        pod.ClearField("creation_time")
        _set_timestamp(pod, "creation_time", p.created)
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
            min_task_member=g.min_task_member,
            annotations=g.annotations,
        )
        if g.priority is not None:
            gang.priority = g.priority
        affinity = _job_affinity(g.affinity)
        if affinity is not None:
            gang.affinity.CopyFrom(affinity)
        gang.topology_key = g.topology_key or ""
        gang.preferred_topology_keys.extend(g.preferred_keys)
        gang.topology_pack.extend(g.topology_pack)
        gang.refused = g.refused or ""
        if g.network_topology is not None:
            gang.network_topology.CopyFrom(network_topology_to_proto(g.network_topology))
        gang.sub_group_policy.extend(sub_group_policy_to_proto(g.sub_group_policy))
        gang.topology_sub_groups.extend(topology_sub_groups_to_proto(g.topology_sub_groups))
        if g.disruption_mode is not None:
            gang.disruption_mode = _DISRUPTION_CODES[g.disruption_mode]
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
        if q.kai is not None:
            kai = pb.KaiQueueResources(
                quota=q.kai.quota,
                limit=q.kai.limit,
                over_quota_weight=q.kai.over_quota_weight,
                usage=q.kai.usage,
            )
            _set_timestamp(kai, "creation_time", q.kai.created)
            for name in ("preempt_min_runtime", "reclaim_min_runtime"):
                if (seconds := getattr(q.kai, name)) is not None:
                    getattr(kai, name).FromNanoseconds(round(seconds * 1e9))
            queue.kai.CopyFrom(kai)
        if q.kueue is not None:
            queue.kueue.CopyFrom(_kueue_queue(q.kueue))
        msg.queues.append(queue)
    if model.topology is not None:
        msg.topology.CopyFrom(
            pb.NetworkTopology(
                layers=[
                    pb.TopologyLayer(
                        name=layer.name, parent=layer.parent or "", label_keys=layer.label_keys
                    )
                    for layer in model.topology.layers
                ],
                hypernodes=hypernodes_to_proto(model.topology.hypernodes),
            )
        )
        kueue_to_proto(model.topology, msg.topology)
    _set_timestamp(msg, "observed_time", model.observed)
    msg.disruption_budgets.extend(budgets_to_proto(model.disruption_budgets.values()))
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
                devices=tuple(p.gpu_devices),
                annotations=dict(p.gpu_annotations),
            )
            for p in msg.placements
        },
        podgroups={
            g.gang: GroupOutcome(enqueued=g.enqueued, placed=g.placed, reason=g.reason)
            for g in msg.gangs
        },
        engine=msg.engine,
        status=msg.status,
        # Left out by the server when wider than 64 bits: then `tiers` decide comparisons.
        objective=msg.objective if msg.HasField("objective") else 0,
        tiers={t.name: t.value for t in msg.objective_tiers} or dict(msg.tiers),
        minimized=tuple(t.name for t in msg.objective_tiers if not t.maximize),
        topology_assignments=assignments_from_proto(list(msg.topology_assignments)),
        flavor_assignments=flavors_from_proto(list(msg.flavor_assignments)),
        queues=tuple(
            QueueUse(
                queue=q.queue,
                limit=dict(q.limit),
                allocated=dict(q.allocated),
                placed=dict(q.placed),
            )
            for q in msg.queues
        ),
        seconds=msg.solve_seconds,
        victims=tuple(
            Victim(
                pod=v.pod,
                node=v.node,
                message=v.message,
                cause="reclaim" if v.cause == spb.VICTIM_CAUSE_RECLAIM else "preemption",
                queue=v.queue,
            )
            for v in msg.victims
        ),
        bound=msg.bound if msg.HasField("bound") else None,
        notes=tuple(msg.notes),
        stats=dict(msg.stats),
        certificates={
            gang: _certificate_from_proto(c) for gang, c in sorted(msg.certificates.items())
        },
        moves=tuple(Move(m.pod, m.unit, m.from_node, m.to_node) for m in msg.moves),
    )


def _kueue_queue(k: KueueQueue) -> pb.KueueQueue:
    msg = pb.KueueQueue(kind=k.kind, queueing_strategy=k.strategy)
    if k.fair_weight != 1.0:
        msg.fair_weight = k.fair_weight
    for group in k.groups:
        g = msg.resource_groups.add(covered_resources=group.covered)
        for flavor in group.flavors:
            f = g.flavors.add(name=flavor.name, node_labels=flavor.node_labels)
            for r in group.covered:
                quota = flavor.resources.get(r)
                if quota is None:
                    continue
                q = f.resources.add(name=r, nominal_quota=quota.nominal)
                if quota.borrowing_limit is not None:
                    q.borrowing_limit = quota.borrowing_limit
                if quota.lending_limit is not None:
                    q.lending_limit = quota.lending_limit
    return msg
