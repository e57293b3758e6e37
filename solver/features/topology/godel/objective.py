"""The order of a domain unit's NodeGroups as objective tiers (Godel's preferred terms and
sort rules, KAI's preferred levels and packing, the Workload API's tightest domain).

The greedy honours both by the order it tries NodeGroups in (`nodegroups.py`: one domain of
the finest preferred level first, then each coarser one, the required domains last, each
level in sort-rule order). CP-SAT scores them, so that among answers equal on the tiers above
it gives the greedy's choice:

`preferred_domains`: for a unit u whose plan has preferred rows R_0 (coarsest) .. R_{m-1}
(finest) and P_u pods (and the same, summed in, for each KAI sub-group with preferred
levels over its own pod types and pods),

    # used[u, j, d] ⇐ Σ_{t ∈ T_u, c ⊂ d} x[t, c, k] ≥ 1      d a value of R_j (nodes lacking
    #                                                      the key count as one domain)
    # preferred_domains = Σ_u Σ_j w_uj · Σ_d used[u, j, d]    (fewer is better)
    # w_uj = Π_{k > j} (C_uk + 1), C_uk = min(P_u, domains of R_k + 1), at most 2^40

A level's count is at most C_uj, so the weights make the tier lexicographic per unit,
coarsest level first: the whole unit inside one domain of the finest level is best, then
inside one domain of the next level up (fewest finest domains among those), and so on, the
order KAI's `calculateRelevantDomainLevels` walks and Godel's NodeGroups are tried in.

`domain_rank` (below it): the chosen required domain's place in the sort-rule order at the
start of the cycle (`GodelPlan.required_rank`: 0 is the domain tried first):

    # domain_rank = Σ_u Σ_d rank_u(d) · y[u, d]       (y: the one-domain rule's choice)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ortools.sat.python import cp_model

from solver.features.topology.godel.affinity import GodelPlan
from solver.problem import IntArray, Problem, TierSpec
from solver.sat import PlacementVars, Term

__all__ = [
    "build_preferred",
    "preferred_rows",
    "preferred_tier_specs",
    "preferred_tier_values",
    "rank_terms",
]

TIER = "preferred_domains"
RANK = "domain_rank"


def _units(unit_godel: Sequence[GodelPlan | None]) -> list[int]:
    return [
        u
        for u, plan in enumerate(unit_godel)
        if plan is not None and (plan.preferred or any(s.preferred for s in plan.sub_domains))
    ]


def _scored(
    problem: Problem, plan: GodelPlan, u: int
) -> list[tuple[set[int] | None, tuple[IntArray, ...], int]]:
    """(the pod types scored, None: all of the unit's; their preferred rows, coarsest
    first; their pods) for the unit and for each of its sub-groups with preferred levels."""
    out: list[tuple[set[int] | None, tuple[IntArray, ...], int]] = []
    if plan.preferred:
        out.append((None, plan.preferred, _pods(problem, u)))
    for sub in plan.sub_domains:
        if sub.preferred:
            rows = tuple(row for row, _ in reversed(sub.preferred))
            pods = sum(len(problem.type_pods[t]) for t in sub.types)
            out.append((set(sub.types), rows, pods))
    return out


def _pods(problem: Problem, u: int) -> int:
    return sum(
        len(problem.type_pods[t]) for t in range(problem.num_types) if problem.type_unit(t) == u
    )


MAX_WEIGHT = 1 << 40  # keeps every tier value a 64-bit integer (the wire's type)


def _counts(rows: Sequence[IntArray], pods: int) -> list[int]:
    """The most domains the pods can use on each preferred level: their count, at most the
    level's domains and one for the nodes lacking the key."""
    return [min(pods, int(row.max(initial=-1)) + 2) for row in rows]


def _weights(rows: Sequence[IntArray], pods: int) -> list[int]:
    """Level j's weight: the product of (count + 1) of the finer levels, so the tier is
    lexicographic coarsest level first; saturated at MAX_WEIGHT (a deep tree of many
    levels then ties its coarsest levels rather than overflow)."""
    counts = _counts(rows, pods)
    out = [1] * len(counts)
    for j in range(len(counts) - 2, -1, -1):
        out[j] = min(out[j + 1] * (counts[j + 1] + 1), MAX_WEIGHT)
    return out


def preferred_rows(unit_godel: Sequence[GodelPlan | None]) -> list[IntArray]:
    """Rows node classes must not mix, so that each class lies in one preferred domain
    (the sub-groups' preferred rows are in `subgroups.sub_domain_rows`)."""
    return [row for plan in unit_godel if plan is not None for row in plan.preferred]


def preferred_tier_specs(
    problem: Problem, unit_godel: Sequence[GodelPlan | None]
) -> list[TierSpec]:
    upper = 0
    for u in _units(unit_godel):
        plan = unit_godel[u]
        assert plan is not None
        for _, rows, pods in _scored(problem, plan, u):
            upper += sum(
                w * c for w, c in zip(_weights(rows, pods), _counts(rows, pods), strict=True)
            )
    specs = [TierSpec(TIER, 0, upper, maximize=False)] if upper else []
    ranked = [p.required_rank for p in unit_godel if p is not None and p.required_rank is not None]
    top = sum(int(r.max(initial=0)) for r in ranked)
    if top:
        specs.append(TierSpec(RANK, 0, top, maximize=False))
    return specs


def preferred_tier_values(
    problem: Problem, unit_godel: Sequence[GodelPlan | None], pod_node: list[IntArray]
) -> dict[str, int]:
    units = _units(unit_godel)
    ranked = [u for u, p in enumerate(unit_godel) if p is not None and p.required_rank is not None]
    placed: dict[int, list[IntArray]] = {u: [] for u in {*units, *ranked}}
    by_type: dict[int, IntArray] = {}
    for t, nodes in enumerate(pod_node):
        u = problem.type_unit(t)
        if u in placed:
            placed[u].append(nodes[nodes >= 0])
            by_type[t] = nodes[nodes >= 0]
    value = 0
    for u in units:
        plan = unit_godel[u]
        assert plan is not None
        for types, rows, pods in _scored(problem, plan, u):
            parts = placed[u] if types is None else [by_type[t] for t in types if t in by_type]
            nodes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            for w, row in zip(_weights(rows, pods), rows, strict=True):
                value += w * len(np.unique(row[nodes]))
    out = {TIER: value} if units else {}
    if ranked:
        rank = 0
        for u in ranked:
            plan = unit_godel[u]
            assert plan is not None and plan.required is not None
            assert plan.required_rank is not None
            nodes = np.concatenate(placed[u]) if placed[u] else np.zeros(0, dtype=np.int64)
            domains = plan.required[nodes]
            if domains.size and domains[0] >= 0:
                rank += int(plan.required_rank[domains[0]])
        out[RANK] = rank
    return out


def rank_terms(plan: GodelPlan | None, y: dict[int, cp_model.IntVar]) -> list[cp_model.LinearExprT]:
    """`domain_rank`'s part for one unit, over its one-domain choice `y` (domain -> bool)."""
    if plan is None or plan.required_rank is None:
        return []
    return [int(plan.required_rank[d]) * var for d, var in y.items() if plan.required_rank[d]]


def build_preferred(
    problem: Problem,
    unit_godel: Sequence[GodelPlan | None],
    model: cp_model.CpModel,
    v: PlacementVars,
    keys_of: dict[int, list[tuple[int, int, int]]],
) -> list[Term]:
    terms: list[cp_model.LinearExprT] = []
    for u in _units(unit_godel):
        plan = unit_godel[u]
        assert plan is not None
        if u not in keys_of:
            continue
        for s, (types, rows, pods) in enumerate(_scored(problem, plan, u)):
            keys = [k for k in keys_of[u] if types is None or k[0] in types]
            for j, (w, row) in enumerate(zip(_weights(rows, pods), rows, strict=True)):
                by_domain: dict[int, list[cp_model.IntVar]] = {}
                for key in keys:
                    d = int(row[v.classes[key[1]].nodes[0]])
                    by_domain.setdefault(d, []).append(v.x[key])
                for d, xs in sorted(by_domain.items()):
                    used = model.new_bool_var(f"preferred[{u},{s},{j},{d}]")
                    model.add(cp_model.LinearExpr.sum(xs) <= pods * used)
                    terms.append(w * used)
    return [Term(TIER, cp_model.LinearExpr.sum(terms))] if terms else []
