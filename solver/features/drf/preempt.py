"""Volcano `drf`'s preemption rule (`drf.go`, `preemptableFn`): take from the richer only.

With ls the preemptor job's dominant share with what it asks for added, and rs a victim
job's dominant share with the victim pod (and the pods of the same job taken before it)
removed — shares over the cluster's allocatable, `calculateShare` — a pod is a victim only
when `ls < rs` or `|ls − rs| ≤ 10⁻⁶` (`shareDelta`). Upstream asks task by task, so a gang
is judged with the tasks it has been given so far; gangplan judges the whole gang's request
(what its last task is judged with), never looser. In force when the conf lists `drf`
(`enablePreemptable` not false) and preemption runs; reclaim has its own rules (drf
registers only a preemptable function).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from solver.arrays import BoolArray, FloatArray, IntArray
from solver.config import Plugin, SchedulerConf
from solver.problem import Problem
from solver.quantity import PODS
from solver.snapshot import Snapshot

__all__ = ["SHARE_DELTA", "DrfRule", "drf_rule"]

SHARE_DELTA = 1e-6


class PreemptionInputLike(Protocol):
    """What the rule reads of `features.preemption.PreemptionInput`."""

    @property
    def victim_job(self) -> IntArray: ...

    @property
    def victim_demand(self) -> IntArray: ...


@dataclass(frozen=True)
class DrfRule:
    """The cluster's allocatable and every potential victim job's use, on one resource axis
    (the Problem's)."""

    total: FloatArray  # [R] allocatable; resources with none do not count
    job_use: FloatArray  # [J, R] what each victim job's running pods hold

    def share(self, use: FloatArray) -> FloatArray:
        """`calculateShare` of each row of `use` ([..., R])."""
        counted = self.total > 0
        if not counted.any():
            return np.zeros(use.shape[:-1])
        ratios: FloatArray = use[..., counted] / self.total[counted]
        return np.asarray(ratios.max(axis=-1))

    def allowed(self, preemptor: float, victim_job: IntArray, victim_demand: IntArray) -> BoolArray:
        """[V] victims the rule lets `preemptor` (its ls) take, each judged alone."""
        rs = self.share(self.job_use[victim_job] - victim_demand)
        return np.asarray((preemptor < rs) | (np.abs(preemptor - rs) <= SHARE_DELTA))

    def refuses(
        self,
        preemptor: float,
        victims: Iterable[int],
        victim_job: IntArray,
        victim_demand: IntArray,
        name: str,
    ) -> str | None:
        """Why a plan's victims break the rule once each job's earlier victims are taken
        too (upstream's running `Sub`), None when they do not."""
        taken: dict[int, FloatArray] = {}
        for v in sorted(victims):
            j = int(victim_job[v])
            left = taken.get(j, self.job_use[j].astype(np.float64)) - victim_demand[v]
            taken[j] = left
            rs = float(self.share(left))
            if not (preemptor < rs or abs(preemptor - rs) <= SHARE_DELTA):
                return (
                    f"drf: job {name} would keep a dominant share of {rs:.4f} after its "
                    f"pods go, below the preemptor's {preemptor:.4f}"
                )
        return None


def drf_rule(
    problem: Problem, pre: PreemptionInputLike, snapshot: Snapshot, conf: SchedulerConf
) -> tuple[DrfRule, Callable[[int], FloatArray]] | None:
    """The rule and each unit's running use on the Problem's axis; None unless the conf
    lists `drf` with `enablePreemptable` not false."""
    plugin = conf.plugin(Plugin.DRF)
    if plugin is None or plugin.options.get("enablePreemptable") is False:
        return None
    total = np.array([snapshot.nodes.total.get(r, 0) for r in problem.resources], dtype=np.float64)
    total[[i for i, r in enumerate(problem.resources) if r == PODS]] = 0  # not a resource here
    jobs = int(pre.victim_job.max()) + 1 if pre.victim_job.size else 0
    job_use = np.zeros((jobs, len(problem.resources)), dtype=np.float64)
    np.add.at(job_use, pre.victim_job, pre.victim_demand)
    names = snapshot.running.resources
    usage = snapshot.usage.gang_requests
    columns = [names.index(r) if r in names else -1 for r in problem.resources]

    def unit_use(u: int) -> FloatArray:
        out = np.zeros(len(problem.resources), dtype=np.float64)
        for g in np.flatnonzero(problem.gang_unit == u).tolist():
            row = snapshot.running.gang_id(problem.gang_ids[g])
            if 0 <= row < usage.shape[0]:
                for i, c in enumerate(columns):
                    if 0 <= c < usage.shape[1]:
                        out[i] += usage[row, c]
        return out

    return DrfRule(total, job_use), unit_use
