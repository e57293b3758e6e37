"""Job-level preemption inputs (Koordinator, reference/koordinator.md §4): who may be evicted.

Preemption acts when the conf lists the `preempt` or `reclaim` action (or `--preempt`).
A bound pod is a potential victim of a pending gang group whose priority is higher,
unless it is labelled `scheduling.koordinator.sh/disable-preemptible: "true"`,
`quota.scheduling.koordinator.sh/preemptible: "false"` or `volcano.sh/preemptable: "false"`
(label or annotation), or is already terminating. Victims are grouped into jobs — the
label `scheduling.koordinator.sh/questioned-object-key` as upstream, else the pod's gang —
and the cost of evicting a job is the rank of its priority among the distinct priorities of
all potential victims (lowest = 0). A victim gang left below its minMember is evicted
whole (it would fail anyway), so it costs once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.config import SchedulerConf
from solver.model import ClusterModel, Pod
from solver.problem import IntArray, Problem

__all__ = ["PreemptionInput", "compile_preemption", "preemption_enabled", "victim_eligible"]

JOB_LABEL = "scheduling.koordinator.sh/questioned-object-key"
_NEVER = (
    ("scheduling.koordinator.sh/disable-preemptible", "true"),
    ("quota.scheduling.koordinator.sh/preemptible", "false"),
    ("volcano.sh/preemptable", "false"),
)


def preemption_enabled(conf: SchedulerConf, flag: bool) -> bool:
    return flag or "preempt" in conf.actions or "reclaim" in conf.actions


def victim_eligible(pod: Pod) -> bool:
    """A bound pod that the labels allow to be evicted and that is not already going."""
    if not pod.bound or pod.terminating:
        return False
    for key, value in _NEVER:
        if pod.labels.get(key) == value or pod.annotations.get(key) == value:
            return False
    return True


@dataclass(frozen=True, eq=False)
class PreemptionInput:
    """Potential victims as arrays aligned with the Problem (V victims, J jobs)."""

    victim_keys: tuple[str, ...]  # [V] pod keys
    victim_node: IntArray  # [V] node index
    victim_demand: IntArray  # [V, R] requests on the Problem's resource axis
    victim_priority: IntArray  # [V]
    victim_job: IntArray  # [V] job index
    job_ids: tuple[str, ...]  # [J]
    job_rank: IntArray  # [J] cost of evicting the job (priority rank, lowest = 0)
    job_min: IntArray  # [J] minMember of the job's gang (0: not a gang)
    job_bound: IntArray  # [J] bound pods of the job (all of them, eligible or not)
    job_members: tuple[tuple[int, ...], ...]  # [J] victim indices of the job
    terminating_on: dict[
        int, int
    ]  # node -> lowest priority of a pod terminating there by preemption
    scheduler_name: dict[str, str]  # gang id -> schedulerName of its first pending pod
    trigger: dict[str, tuple[str, str]]  # gang id -> (first pending pod key, its preemptionPolicy)
    nominated: dict[str, tuple[int, ...]]  # gang id -> nodes its pending pods are nominated to


def compile_preemption(model: ClusterModel, problem: Problem) -> PreemptionInput:
    node_index = {name: i for i, name in enumerate(problem.node_names)}
    r_index = {r: i for i, r in enumerate(problem.resources)}
    victims = [p for p in model.bound_pods if victim_eligible(p) and p.node_name in node_index]
    jobs: dict[str, int] = {}
    rows = []
    for p in victims:
        job = p.labels.get(JOB_LABEL) or p.gang
        jobs.setdefault(job, len(jobs))
        demand = [0] * len(problem.resources)
        for r, v in p.requests.items():
            if r in r_index:
                demand[r_index[r]] = v
        rows.append(demand)
    distinct = sorted({p.priority for p in victims})
    rank = {prio: i for i, prio in enumerate(distinct)}
    job_ids = tuple(jobs)
    job_rank = np.zeros(len(job_ids), dtype=np.int64)
    members: list[list[int]] = [[] for _ in job_ids]
    for v, p in enumerate(victims):
        j = jobs[p.labels.get(JOB_LABEL) or p.gang]
        job_rank[j] = max(job_rank[j], rank[p.priority])
        members[j].append(v)
    job_min = np.zeros(len(job_ids), dtype=np.int64)
    job_bound = np.zeros(len(job_ids), dtype=np.int64)
    for j, job in enumerate(job_ids):
        gang = model.gangs.get(job)
        if gang is not None and not gang.implicit:
            job_min[j] = gang.min_member
            job_bound[j] = sum(1 for k in gang.members if model.pod_by_key[k].bound)
    terminating: dict[int, int] = {}
    for p in model.bound_pods:
        if p.terminating and p.preempted and p.node_name in node_index:
            n = node_index[p.node_name]
            terminating[n] = min(terminating.get(n, p.priority), p.priority)
    scheduler: dict[str, str] = {}
    trigger: dict[str, tuple[str, str]] = {}
    nominated: dict[str, set[int]] = {}
    for p in model.pending_pods:  # sorted by key: the first is the trigger pod
        scheduler.setdefault(p.gang, p.scheduler_name)
        trigger.setdefault(p.gang, (p.key, p.preemption_policy))
        if p.nominated_node in node_index:
            nominated.setdefault(p.gang, set()).add(node_index[p.nominated_node or ""])
    return PreemptionInput(
        victim_keys=tuple(p.key for p in victims),
        victim_node=np.array([node_index[p.node_name or ""] for p in victims], dtype=np.int64),
        victim_demand=np.array(rows, dtype=np.int64).reshape(len(victims), len(problem.resources)),
        victim_priority=np.array([p.priority for p in victims], dtype=np.int64),
        victim_job=np.array(
            [jobs[p.labels.get(JOB_LABEL) or p.gang] for p in victims], dtype=np.int64
        ),
        job_ids=job_ids,
        job_rank=job_rank,
        job_min=job_min,
        job_bound=job_bound,
        job_members=tuple(tuple(m) for m in members),
        terminating_on=terminating,
        scheduler_name=scheduler,
        trigger=trigger,
        nominated={g: tuple(sorted(n)) for g, n in nominated.items()},
    )
