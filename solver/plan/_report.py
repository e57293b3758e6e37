"""The answer: the best plan as a `PlanResult`, and an independent check of it.

`report` turns the chosen columns into an exact packing per type (over-covered pods
removed), counts what still cannot run with its reason (the limits that left a job out, or
the reason found up front), measures utilisation per resource and card type, and reports
the gap against the best *valid* bound: `l1`, `devices` and `config_lp` always,
`cpsat` only when every pattern was enumerated (otherwise it bounds the generated patterns
only, and is reported but not used). `verify_plan` re-checks a result's packing from the
input alone.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from solver.plan._model import MILLI, PlanInput, PlanResult, Unplaced
from solver.plan._pack import arrays_of, pattern_fits, pods_per_shape
from solver.plan._problem import (
    Columns,
    Pattern,
    Problem,
    Solution,
    Trace,
    added_gpus,
    pattern_key,
    spent,
)

__all__ = ["report", "verify_plan"]

Packing = dict[int, list[tuple[int, dict[int, int]]]]  # type -> [(nodes, {shape: pods})]
_MAX_JOB_IDS = 20  # job ids listed per reason


def _trim(p: Problem, cols: Columns, sol: Solution, placed: np.ndarray) -> Packing:
    """The chosen patterns with over-covered pods removed: an exact packing per type."""
    groups: Packing = {}
    for c, k in sorted(sol.n.items()):
        t, key = cols.cols[c]
        groups.setdefault(t, []).append((k, dict(key)))
    covered = np.zeros(p.S, dtype=np.int64)
    for items in groups.values():
        for k, pattern in items:
            for s, a in pattern.items():
                covered[s] += k * a
    excess = covered - placed
    for s in (int(x) for x in np.flatnonzero(excess > 0)):
        e = int(excess[s])
        for items in groups.values():
            i = 0
            while e > 0 and i < len(items):
                k, pattern = items[i]
                a = pattern.get(s, 0)
                if not a or not k:
                    i += 1
                    continue
                take = min(e, a)
                smaller = {x: n for x, n in pattern.items() if x != s}
                if a - take:
                    smaller[s] = a - take
                e -= take
                if k == 1:
                    items.pop(i)
                else:
                    items[i] = (k - 1, pattern)
                items.append((1, smaller))
            if e == 0:
                break
    out: Packing = {}
    for t, items in groups.items():
        merged: Counter[Pattern] = Counter()
        for k, pattern in items:
            key = pattern_key(pattern)
            if k and key:
                merged[key] += k
        out[t] = [(k, dict(key)) for key, k in sorted(merged.items())]
    return out


def _tight_limits(p: Problem, N: np.ndarray, shapes: list[int]) -> list[str]:
    """The limits on the node types a job could use, with what the plan uses of them."""
    inp = p.inp
    usable = [t for t in range(p.T) if all(p.a.compat[s, t] for s in shapes)]
    if not usable:
        usable = [t for t in range(p.T) if any(p.a.compat[s, t] for s in shapes)]
    out = []
    for t in usable:
        tt = inp.types[t]
        if tt.max_count is not None:
            what = "existing nodes" if tt.existing else "maxCount"
            out.append(f"{tt.name} {what} {tt.max_count} ({int(N[t])} used)")
    models = {inp.types[t].gpu_model for t in usable}
    for model, lim in inp.card_quota:
        if model in models:
            out.append(f"cardQuota {model} {lim} GPUs ({added_gpus(p, N, model)} used)")
    if inp.budget is not None:
        out.append(f"budget {inp.budget:g} ({spent(p, N):g} spent)")
    return out


def _unplaced(p: Problem, sol: Solution) -> list[Unplaced]:
    """What stays pending, grouped by reason: the up-front reasons and the limits."""
    inp = p.inp
    by_reason: dict[str, list[tuple[str, int]]] = {}
    for name, pods, reason in inp.infeasible:
        by_reason.setdefault(reason, []).append((name, pods))
    for j, job in enumerate(inp.jobs):
        left = job.count - int(sol.z[j])
        if left <= 0:
            continue
        tight = _tight_limits(p, sol.N, [s for s, _ in job.shapes])
        reason = "does not fit within the limits: " + (
            "; ".join(tight) if tight else "no plan placing it was found in the time limit"
        )
        for name in job.job_names(int(sol.z[j]), left):
            by_reason.setdefault(reason, []).append((name, job.pods))
    return [
        Unplaced(
            jobs=tuple(n for n, _ in jobs[:_MAX_JOB_IDS]),
            count=len(jobs),
            pods=sum(k for _, k in jobs),
            reason=reason,
        )
        for reason, jobs in sorted(by_reason.items())
    ]


def _usage(used: float, capacity: float, unit: int = 1) -> dict[str, float]:
    return {
        "used": used / unit,
        "capacity": capacity / unit,
        "ratio": used / capacity if capacity else 0.0,
    }


def _utilisation(
    p: Problem, sol: Solution, placed: np.ndarray, packing: Packing
) -> dict[str, dict[str, float]]:
    """Per resource and per card type, of the planned cluster: every existing node plus
    the added ones."""
    inp = p.inp
    util: dict[str, dict[str, float]] = {}
    nodes = np.array(
        [(tt.max_count or 0) if tt.existing else int(sol.N[t]) for t, tt in enumerate(inp.types)],
        dtype=np.int64,
    )
    for r, res in enumerate(p.a.resources):
        used = float((placed * p.a.Q[:, r]).sum())
        util[res] = _usage(used, float((nodes * p.a.C[:, r]).sum()))
    gpu_used: Counter[str] = Counter()
    gpu_cap: Counter[str] = Counter()
    for t, items in packing.items():
        model = inp.types[t].gpu_model or "any"
        for k, pattern in items:
            gpu_used[model] += k * sum(
                n * int(p.a.gpus[s] * p.a.milli[s]) for s, n in pattern.items()
            )
    for t, tt in enumerate(inp.types):
        if tt.gpus:
            gpu_cap[tt.gpu_model or "any"] += int(nodes[t]) * sum(p.a.devices[t])
    if gpu_cap:
        util["gpu"] = _usage(sum(gpu_used.values()), sum(gpu_cap.values()), MILLI)
        for model in sorted(gpu_cap):
            util[f"gpu[{model}]"] = _usage(gpu_used[model], gpu_cap[model], MILLI)
    return util


def report(
    p: Problem,
    cols: Columns,
    sol: Solution,
    bounds: dict[str, float | None],
    complete: bool,
    trace: Trace,
    stats: dict[str, float],
    notes: list[str],
) -> PlanResult:
    """`sol` as the answer, with its gap against the best valid of `bounds` (objective
    units; `cpsat` counts only when the patterns are `complete`)."""
    inp = p.inp
    valid = [v for k, v in bounds.items() if v is not None and (k != "cpsat" or complete)]
    bound = min(max(valid) if valid else 0.0, float(sol.objective))
    placed = pods_per_shape(inp, sol.z)
    packing = _trim(p, cols, sol, placed)
    unplaced = _unplaced(p, sol)
    objective = float(sol.objective)
    gap = (objective - bound) / max(abs(objective), 1e-9) if objective > bound + 1e-9 else 0.0
    status = (
        "OPTIMAL"
        if gap == 0.0
        else ("HEURISTIC" if sol.source in ("greedy", "start") else "FEASIBLE")
    )
    if trace.points:
        stats["first_solution_seconds"] = trace.points[0][0]
        stats["best_solution_seconds"] = (
            next(s for s, v in trace.points if v <= sol.objective)
            if any(v <= sol.objective for _, v in trace.points)
            else trace.points[-1][0]
        )
    stats["cost_scale"] = p.scale
    if not complete and bounds.get("cpsat") is not None:
        notes.append(
            "bounds.cpsat is CP-SAT's bound over the generated patterns only; it is not a "
            "bound on the whole problem and is not used for the gap"
        )
    scale = float(p.scale)
    return PlanResult(
        status=status,
        add={
            tt.name: int(sol.N[t])
            for t, tt in enumerate(inp.types)
            if not tt.existing and sol.N[t] > 0
        },
        use={tt.name: int(sol.N[t]) for t, tt in enumerate(inp.types) if tt.existing and sol.N[t]},
        cost=float(sum(int(sol.N[t]) * int(p.cost[t]) for t in range(p.T))) / scale,
        objective=objective / scale,
        bound=bound / scale,
        gap=gap,
        bounds={k: (None if v is None else v / scale) for k, v in bounds.items()},
        unplaced=unplaced,
        reasons={u.reason: u.pods for u in unplaced},
        utilisation=_utilisation(p, sol, placed, packing),
        placed_pods=int(placed.sum()),
        total_pods=int(placed.sum())
        + sum(k for _, k, _ in inp.infeasible)
        + sum((job.count - int(sol.z[j])) * job.pods for j, job in enumerate(inp.jobs)),
        stats=stats,
        notes=notes,
        packing={
            inp.types[t].name: [(k, dict(pattern)) for k, pattern in items]
            for t, items in packing.items()
        },
    )


def verify_plan(inp: PlanInput, result: PlanResult) -> list[str]:
    """Independent check of a plan's packing: every node's pods fit its type, every placed
    job is covered exactly, counts within maxCount / blocks. Returns the problems found."""
    problems: list[str] = []
    a = arrays_of(inp)
    index = {t.name: i for i, t in enumerate(inp.types)}
    covered = np.zeros(len(inp.shapes), dtype=np.int64)
    nodes = {**result.add, **result.use}
    for name, items in result.packing.items():
        t = index[name]
        tt = inp.types[t]
        used = sum(k for k, _ in items)
        if used > nodes.get(name, 0):
            problems.append(f"{name}: {used} nodes packed but {nodes.get(name, 0)} planned")
        for k, pattern in items:
            if not pattern_fits(tt, inp.shapes, pattern, a, t):
                problems.append(f"{name}: pattern {pattern} does not fit one node")
            for s, n in pattern.items():
                covered[s] += k * n
    for name, count in nodes.items():
        tt = inp.types[index[name]]
        if tt.max_count is not None and count > tt.max_count:
            problems.append(f"{name}: {count} nodes exceed maxCount {tt.max_count}")
        if tt.nodes_per_block and count % tt.nodes_per_block:
            problems.append(f"{name}: {count} nodes is not whole blocks of {tt.nodes_per_block}")
    if int(covered.sum()) != result.placed_pods:
        problems.append(f"{int(covered.sum())} pods packed but {result.placed_pods} placed")
    return problems
