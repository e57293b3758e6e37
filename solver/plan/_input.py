"""The planning question: the workload, the catalogue and the current cluster as one
`PlanInput`, with the jobs no node type can hold reported up front; and what placing a
job is worth when not all of the work can run (`valued`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from solver.errors import InputError
from solver.plan._model import NodeType, PlanInput
from solver.plan._pack import fit_failure
from solver.plan.catalog import Catalog
from solver.plan.workload import Workload

__all__ = ["VALUES", "make_input", "valued"]

VALUES = ("pods", "gpu")  # what placing a job is worth (`valued`)


def make_input(
    workload: Workload,
    catalog: Catalog | None,
    existing: Sequence[NodeType] = (),
) -> PlanInput:
    """The planning question: jobs whose every pod fits some type, plus up-front reasons.

    A job with a pod that fits no node type on its own (too big, GPU model not offered,
    selector) is reported with kube-scheduler-style counted reasons and left out of the
    model (all-or-nothing: its other pods are left out too).
    """
    types = [*existing, *(catalog.types if catalog else ())]
    shapes = workload.shapes
    failures: dict[int, str | None] = {}
    for i, shape in enumerate(shapes):
        why = [fit_failure(shape, t) for t in types]
        if any(w is None for w in why):
            failures[i] = None
            continue
        counted = Counter(w for w in why if w)
        detail = ", ".join(f"{n} {reason}" for reason, n in sorted(counted.items()))
        failures[i] = (
            f"no node type can hold pod ({shape.describe()}): "
            f"0/{len(types)} node types are available: {detail}."
            if types
            else "no node types: the catalogue and the cluster are empty"
        )
    jobs = []
    infeasible = list(workload.infeasible)
    for job in workload.jobs:
        bad = [failures[s] for s, _ in job.shapes if failures[s]]
        if bad:
            prefix = "gang member: " if job.pods > 1 else ""
            reason = prefix + str(bad[0])
            infeasible.extend((name, job.pods, reason) for name in job.job_names(0, job.count))
            continue
        jobs.append(job)
    resources = sorted({r for s in shapes for r, _ in s.requests})
    return PlanInput(
        shapes=tuple(shapes),
        jobs=tuple(jobs),
        types=tuple(types),
        card_quota=catalog.card_quota if catalog else (),
        budget=catalog.budget if catalog else None,
        infeasible=tuple(infeasible),
        resources=tuple(resources),
        notes=tuple(workload.notes),
    )


def valued(inp: PlanInput, value: str) -> PlanInput:
    """The input with each job worth its `value`: `pods` (the default: a job is worth its
    pods, so the plan places the most pods) or `gpu` (its GPU milli, at least 1: on a
    fixed or capped cluster the plan places the most GPU work, then CPU-only jobs)."""
    if value not in VALUES:
        raise InputError(f"value: {value!r} is not one of {', '.join(VALUES)}")
    if value == "pods":
        return inp
    jobs = tuple(
        replace(
            job,
            weight=max(1, sum(m * inp.shapes[s].gpu_total_milli for s, m in job.shapes)),
        )
        for job in inp.jobs
    )
    return replace(inp, jobs=jobs)
