"""Who may be evicted (Koordinator, reference/koordinator.md §4), read from the snapshot.

A running pod is a potential victim of a pending gang group whose priority is higher,
unless it is labelled `scheduling.koordinator.sh/disable-preemptible: "true"`,
`quota.scheduling.koordinator.sh/preemptible: "false"` or `volcano.sh/preemptable: "false"`
(label or annotation), or is already terminating. Victims are grouped into jobs — the
label `scheduling.koordinator.sh/questioned-object-key` as upstream, else the pod's gang
(a pod of its own for a gang of one) — and the cost of evicting a job is the rank of its
priority among the distinct priorities of all potential victims (lowest = 0). A victim
gang left below its minMember is evicted whole (it would fail anyway), so it costs once.
A Kubernetes Workload API PodGroup says so itself (`disruptionMode`, KEP-5710): `Single`
pods are jobs of their own, and losing any pod of an `All` group evicts the group.

Everything is columns: the victims of a call are the snapshot rows that pass, selected
with numpy; nothing here walks the running pods in Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solver.config import SchedulerConf
from solver.features.pdb import Budget
from solver.model import GPU_RESOURCE
from solver.problem import IntArray, Problem
from solver.snapshot import NONE, PREEMPTED, TERMINATING, Fact, Snapshot, Workload

__all__ = [
    "JOB_FACT",
    "PROTECTED_FACT",
    "SYSTEM_CRITICAL",
    "PreemptionInput",
    "compile_preemption",
    "preemption_enabled",
]

JOB_LABEL = "scheduling.koordinator.sh/questioned-object-key"
PROTECTING = (
    ("scheduling.koordinator.sh/disable-preemptible", "true"),
    ("quota.scheduling.koordinator.sh/preemptible", "false"),
    ("volcano.sh/preemptable", "false"),
)


def _protected(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    for key, value in PROTECTING:
        if labels.get(key) == value or annotations.get(key) == value:
            return "yes"
    return None


PROTECTED_FACT = Fact("preemption.protected", _protected, tuple(k for k, _ in PROTECTING))
JOB_FACT = Fact("preemption.job", lambda labels, _annotations: labels.get(JOB_LABEL) or None)


def preemption_enabled(conf: SchedulerConf, flag: bool) -> bool:
    return flag or "preempt" in conf.actions or "reclaim" in conf.actions


SYSTEM_CRITICAL = 2_000_000_000
"""The priority of `system-cluster-critical` (`system-node-critical` is 2,000,001,000);
Kubernetes allows user PriorityClasses up to 1,000,000,000 only, so a priority at or above
this is exactly a pod of one of the two system classes."""
SYSTEM_NAMESPACE = "kube-system"


def evictable(snapshot: Snapshot, critical: bool = False) -> IntArray:
    """Live rows that may be evicted at all: not protected, not terminating (memoised per
    generation). `critical` (Volcano's `conformance` plugin): neither a pod of a system
    PriorityClass nor one in `kube-system`."""

    def compute() -> IntArray:
        running = snapshot.running
        ok = (
            running.alive
            & (running.fact(PROTECTED_FACT.name) == NONE)
            & ((running.flags & TERMINATING) == 0)
            & (running.node >= 0)
        )
        if critical:
            ok &= running.priority < SYSTEM_CRITICAL
            system = running.namespace_names.get(SYSTEM_NAMESPACE)
            if system >= 0:
                ok &= running.namespace != system
        rows = np.flatnonzero(ok)
        rows.flags.writeable = False
        return rows

    return snapshot.memo(("preemption", "evictable", critical), compute)


@dataclass(frozen=True, eq=False)
class PreemptionInput:
    """Potential victims as arrays aligned with the Problem (V victims, J jobs)."""

    rows: IntArray  # [V] snapshot rows
    victim_node: IntArray  # [V] node index
    victim_demand: IntArray  # [V, R] requests on the Problem's resource axis
    victim_priority: IntArray  # [V]
    victim_job: IntArray  # [V] job index
    job_rank: IntArray  # [J] cost of evicting the job (priority rank, lowest = 0)
    job_min: IntArray  # [J] minMember of the job's gang (0: not a gang)
    job_running: IntArray  # [J] running pods of the job's gang (all of them, eligible or not)
    job_members: _Members  # [J] victim indices of the job
    jobs: _Jobs  # the grouping, for `job_name`
    terminating_on: dict[int, int]  # node -> lowest priority of a pod terminating there by
    #   preemption
    scheduler_name: dict[str, str]  # gang id -> schedulerName of its first pending pod
    trigger: dict[str, tuple[str, str]]  # gang id -> (first pending pod key, preemptionPolicy)
    nominated: dict[str, tuple[int, ...]]  # gang id -> nodes its pending pods are nominated to
    snapshot: Snapshot
    budgets: tuple[Budget, ...] = ()  # PodDisruptionBudgets over the victims (`pdb`)
    victim_lost: IntArray | None = None  # [V] GPU-hours of work an eviction loses (`lost_work`)

    def key(self, v: int) -> str:
        return self.snapshot.running.key(int(self.rows[v]))

    def job_name(self, j: int) -> str:
        """Job j's id (the reprieve order's tie-break)."""
        return self.jobs.name(self.snapshot, j)


@dataclass(frozen=True, eq=False)
class _Members:
    """Victim indices of each job, as one sorted array and its bounds (one slice per job,
    made on demand: a cluster of gangs of one has as many jobs as running pods)."""

    order: IntArray
    bounds: IntArray

    def __getitem__(self, j: int) -> IntArray:
        return self.order[self.bounds[j] : self.bounds[j + 1]]

    def __len__(self) -> int:
        return len(self.bounds) - 1


@dataclass(frozen=True, eq=False)
class _Jobs:
    """The evictable pods grouped into jobs: snapshot-only, built once per generation."""

    rows: IntArray
    node_of: IntArray
    priority: IntArray
    victim_job: IntArray
    job_rank: IntArray
    job_min: IntArray
    job_running: IntArray
    members: _Members
    job_keys: IntArray  # [J] a label value id, n_values + a gang id, or past both: one pod
    firsts: IntArray  # [J] the job's first victim
    n_values: int
    n_gangs: int
    terminating: dict[int, int]

    def name(self, snapshot: Snapshot, j: int) -> str:
        """Job j's id: its job label value, its gang id, or its one pod's key (only the
        victims' jobs are ever named, so this is not precomputed for every running pod)."""
        k = int(self.job_keys[j])
        if k < self.n_values:
            return snapshot.running.value(k)
        if k < self.n_values + self.n_gangs:
            return snapshot.running.gang_name(k - self.n_values)
        return snapshot.running.key(int(self.rows[self.firsts[j]]))


def _jobs(snapshot: Snapshot, critical: bool, held: IntArray) -> _Jobs:
    running = snapshot.running
    rows = evictable(snapshot, critical)
    if held.size:
        rows = np.setdiff1d(rows, held)
    node_of = running.node[rows].astype(np.int64)
    priority = running.priority[rows].astype(np.int64)
    # job identity: the job label, else the named gang, else the pod itself
    label = running.fact(JOB_FACT.name)[rows].astype(np.int64)
    gang = running.gang[rows].astype(np.int64)
    # Workload API disruptionMode Single: each pod of the group may go alone (KEP-5710)
    single = [
        running.gang_id(g) for g, spec in snapshot.gangs.items() if spec.disruption_mode == "Single"
    ]
    if single:
        gang = np.where(np.isin(gang, single), -1, gang)
    n_values = max(int(label.max(initial=-1)) + 1, 0)
    n_gangs = max(int(gang.max(initial=-1)) + 1, 0)
    raw = np.where(
        label >= 0,
        label,
        np.where(gang >= 0, n_values + gang, n_values + n_gangs + np.arange(len(rows))),
    )
    job_keys, victim_job = np.unique(raw, return_inverse=True)
    victim_job = victim_job.astype(np.int64)
    distinct = np.unique(priority)
    rank = np.searchsorted(distinct, priority).astype(np.int64)
    job_rank = np.zeros(len(job_keys), dtype=np.int64)
    np.maximum.at(job_rank, victim_job, rank)
    order = np.argsort(victim_job, kind="stable")
    bounds = np.searchsorted(victim_job[order], np.arange(len(job_keys) + 1))
    members = _Members(order, bounds)
    job_min = np.zeros(len(job_keys), dtype=np.int64)
    job_running = np.zeros(len(job_keys), dtype=np.int64)
    firsts = order[bounds[:-1]]
    named = np.flatnonzero((job_keys >= n_values) & (job_keys < n_values + n_gangs))
    for j in named.tolist():  # named gangs only: their minMember and running members
        gid = running.gang_name(int(job_keys[j] - n_values))
        spec = snapshot.gangs.get(gid)
        if spec is not None and label[firsts[j]] < 0:
            job_running[j] = snapshot.gang_running(gid)
            # disruptionMode All: losing any pod loses the group, so all go or none
            whole = spec.disruption_mode == "All"
            job_min[j] = job_running[j] if whole else spec.min_member
    # pods terminating because of an earlier preemption, lowest priority per node
    terminating: dict[int, int] = {}
    flagged = np.flatnonzero(
        running.alive & ((running.flags & (TERMINATING | PREEMPTED)) == (TERMINATING | PREEMPTED))
    )
    for row in flagged.tolist():
        n = int(running.node[row])
        if n >= 0:
            p = int(running.priority[row])
            terminating[n] = min(terminating.get(n, p), p)
    for array in (node_of, priority, victim_job, job_rank, job_min, job_running, order, bounds):
        array.flags.writeable = False
    return _Jobs(
        rows, node_of, priority, victim_job, job_rank, job_min, job_running, members,
        job_keys, firsts, n_values, n_gangs, terminating,
    )  # fmt: skip


def lost_work(snapshot: Snapshot, rows: IntArray) -> IntArray:
    """[V] GPU-hours of work each running row's eviction loses: its GPUs × the hours since
    its creation up to the snapshot's time, rounded up (0 without a creation time)."""
    running = snapshot.running
    names = running.resources
    if GPU_RESOURCE not in names:
        return np.zeros(len(rows), dtype=np.int64)
    gpus = running.requests((GPU_RESOURCE,))[rows][:, 0].astype(np.float64)
    age = snapshot.observed - running.started[rows]
    hours = np.where(np.isfinite(age) & (age > 0), age / 3600.0, 0.0)
    return np.ceil(gpus * hours - 1e-9).astype(np.int64)


def compile_preemption(
    snapshot: Snapshot,
    workload: Workload,
    problem: Problem,
    *,
    critical: bool = False,
    held: IntArray | None = None,
) -> PreemptionInput:
    """The call's potential victims (`critical`: the conformance plugin protects system
    pods, `evictable`; `held`: evictable rows a policy keeps this cycle, e.g. KAI's
    `minruntime`)."""
    kept = np.zeros(0, dtype=np.int64) if held is None else held
    jobs = snapshot.memo(
        ("preemption", "jobs", critical, kept.tobytes()), lambda: _jobs(snapshot, critical, kept)
    )
    demand = snapshot.running.requests(problem.resources)[jobs.rows]
    scheduler: dict[str, str] = {}
    trigger: dict[str, tuple[str, str]] = {}
    nominated: dict[str, set[int]] = {}
    index = snapshot.nodes.index
    for pod in workload.pods:  # sorted by key: the first is the trigger pod
        scheduler.setdefault(pod.gang, pod.scheduler_name)
        trigger.setdefault(pod.gang, (pod.key, pod.preemption_policy))
        if pod.nominated_node in index:
            nominated.setdefault(pod.gang, set()).add(index[pod.nominated_node or ""])
    return PreemptionInput(
        rows=jobs.rows,
        victim_node=jobs.node_of,
        victim_demand=demand,
        victim_priority=jobs.priority,
        victim_job=jobs.victim_job,
        job_rank=jobs.job_rank,
        job_min=jobs.job_min,
        job_running=jobs.job_running,
        job_members=jobs.members,
        jobs=jobs,
        terminating_on=jobs.terminating,
        scheduler_name=scheduler,
        trigger=trigger,
        nominated={g: tuple(sorted(n)) for g, n in nominated.items()},
        snapshot=snapshot,
        victim_lost=lost_work(snapshot, jobs.rows),
    )
