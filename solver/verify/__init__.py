"""Independent re-check of a Decision against the inputs, one module per rule.

Written from the Kubernetes, Koordinator and Volcano rules directly, without the features,
the engines or the Problem, so a bug in compiling or in a policy cannot hide. Returns every
violation found (empty list: the Decision is valid); `check()` raises InternalError
instead. Pods nominated after preemption count as placed on their nominated node, and
victims as gone.

Rules, and the plugins that put them in force:

| rule | module | when |
| --- | --- | --- |
| placements name pending pods and existing nodes; PodGroup outcomes agree | `_context`, `_basics.outcomes` | always |
| a job reported as not enqueued places nothing | `_basics.admitted` | always |
| victims run on their node, are not protected, have lower priority (preemption) and the DisruptionTarget message | `_basics.victims` | always |
| capacity of every node receiving pods, running pods (less victims) and room held for nominated pods included | `_basics.capacity` | always |
| no GPU device oversubscribed (compute share, memory); placed share pods name their devices | `_devices` | always |
| cordon, readiness, taints, nodeSelector, required node affinity | `_predicates` | `predicates` |
| pod affinity, anti-affinity (both ways) and topology spread, the call's pods included | `_interpod` | `predicates` |
| gangs reach their minMember share, with their GangGroup | `_gangs.gangs` | `gang` |
| a Volcano gang placed has each task role's `minTaskMember` running or placed | `_gangs.task_minimums` | `gang` |
| a PodGroup with a hard constraint gangplan does not enforce places nothing | `_gangs.refused` | always |
| Koordinator gather: one MustGather domain (its bound members' one, if any), podCountMultiple | `_topology.gather` | `network-topology` |
| Godel job affinity: nodeSelector, one required domain | `_topology.job_affinity` | `job-affinity` |
| Workload API PodGroup topology: one domain of its key | `_topology.workload_topology` | always |
| Kueue TAS pod sets: whole, in a flavor's pool, one required domain, whole slices | `_kueue.kueue_tas` | always |
| Volcano networkTopology hard: placed and running pods inside one HyperNode of tier <= limit | `_hypernode` | always |
| queue quotas at every level | `_queues.quotas` | `capacity`, `capacity-card` |
| each queue within its weighted deserved share; reclaim victims from queues above theirs | `_proportion` | `proportion` |
| KAI Queues: limits at every level, non-preemptible jobs within quota, leaf queues only, no victim younger than its minimum runtime | `_kai` | always (KAI Queues) |
| Kueue ClusterQueues: each pod on a node of its flavors, one flavor per pod set, subtree quotas and borrowing limits at every cohort level | `_kueue_quotas` | always (Kueue ClusterQueues) |
| victims within the PodDisruptionBudgets | `_budgets` | `pdb` |
| queue node-group affinity | `_queues.nodegroups` | `nodegroup` |
| queue node-group resource limits (`volcano.sh/nodegroup-resource-limits`), running + placed | `_nodegroup_limits` | `nodegroup` |
| card type named, allowed and offered | `_queues.cards` | `capacity-card` |

A defragmentation plan (`solver.defrag`) is checked by `verify_moves` (`_moves`): room at
every step, the freed nodes empty, gangs whole and as compact as they were, each pod on a
node with its old node's labels and taints.

A constraint this verifier does not know is not silently passed: the input readers refuse
or note what gangplan does not enforce.
"""

from __future__ import annotations

from collections.abc import Callable

from solver.config import Plugin, SchedulerConf
from solver.decision import Decision
from solver.errors import InternalError
from solver.model import DEVICE_ANNOTATIONS, ClusterModel
from solver.snapshot import Delta, PodSchema, Snapshot, Workload
from solver.verify import (
    _basics,
    _budgets,
    _devices,
    _gangs,
    _hypernode,
    _interpod,
    _kai,
    _kueue,
    _kueue_quotas,
    _nodegroup_limits,
    _predicates,
    _proportion,
    _queues,
    _topology,
)
from solver.verify._context import VerifyContext
from solver.verify._moves import verify_moves

__all__ = ["ANNOTATIONS", "check", "verify", "verify_moves"]

Rule = Callable[[VerifyContext], list[str]]

ANNOTATIONS = frozenset(key for key, _ in _basics.PROTECTING) | frozenset(DEVICE_ANNOTATIONS)
"""Annotations of running pods the rules read: a snapshot must keep them (`PodSchema.keep`)."""

RULES: tuple[tuple[tuple[str, ...], Rule], ...] = (
    ((), _basics.admitted),
    ((), _basics.victims),
    ((), _basics.capacity),
    ((), _devices.devices),
    ((Plugin.PREDICATES,), _predicates.predicates),
    ((Plugin.PREDICATES,), _interpod.interpod),
    ((Plugin.GANG,), _gangs.gangs),
    ((Plugin.GANG,), _gangs.task_minimums),
    ((), _gangs.refused),
    ((Plugin.NETWORK_TOPOLOGY,), _topology.gather),
    ((Plugin.JOB_AFFINITY,), _topology.job_affinity),
    ((), _topology.workload_topology),
    ((), _topology.sub_group_topology),
    ((), _kueue.kueue_tas),
    ((), _hypernode.hypernode),
    ((Plugin.CAPACITY, Plugin.CAPACITY_CARD), _queues.quotas),
    ((Plugin.PROPORTION,), _proportion.proportion),
    ((), _kai.kai_limits),
    ((), _kueue_quotas.kueue_quotas),
    ((Plugin.PDB,), _budgets.disruption_budgets),
    ((Plugin.NODEGROUP,), _queues.nodegroups),
    ((Plugin.NODEGROUP,), _nodegroup_limits.nodegroup_limits),
    ((Plugin.CAPACITY_CARD,), _queues.cards),
    ((), _basics.outcomes),
)
"""(plugins that put the rule in force — any of them; none: always) and the rule."""


def verify(
    question: ClusterModel | Snapshot,
    conf: SchedulerConf,
    decision: Decision,
    workload: Workload | None = None,
) -> list[str]:
    """Every violation of `decision` for the cluster (a model, or a snapshot and the
    workload of the call; without one, every pending pod of the snapshot)."""
    snapshot = (
        question
        if isinstance(question, Snapshot)
        else Snapshot.from_model(question, PodSchema(keep=ANNOTATIONS))
    )
    workload = workload or Workload.everything(snapshot)
    problems: list[str] = []
    if decision.moves:  # consolidation: the moves first, then the rest on the moved cluster
        snapshot, problems = _moved(snapshot, decision)
    ctx = VerifyContext.of(snapshot, workload, conf, decision)
    problems += ctx.problems
    for plugins, rule in RULES:
        if not plugins or any(conf.enabled(p) for p in plugins):
            problems.extend(rule(ctx))
    return problems


def _moved(snapshot: Snapshot, decision: Decision) -> tuple[Snapshot, list[str]]:
    """The snapshot with the decision's moves made, and every violation of the moves (room
    at each step, gangs moved whole, each pod on a node like its own, budgets)."""
    moves = [(m.pod, m.source, m.target) for m in decision.moves]
    problems = verify_moves(snapshot, moves, (), snapshot.where_labels())
    if problems:
        return snapshot, [f"moves: {p}" for p in problems]
    running = snapshot.running
    moved = tuple(
        running.pod(int(running.find(m.pod)))._replace(node=m.target) for m in decision.moves
    )
    return snapshot.apply(Delta(upsert_pods=moved)), []


def check(
    question: ClusterModel | Snapshot,
    conf: SchedulerConf,
    decision: Decision,
    workload: Workload | None = None,
) -> None:
    """Raise InternalError listing the violations, if any."""
    problems = verify(question, conf, decision, workload)
    if problems:
        listed = "\n  ".join(problems[:20])
        raise InternalError(f"decision failed verification ({len(problems)}):\n  {listed}")
