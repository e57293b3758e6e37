"""Queue quotas (Volcano capacity / capacity-card) in the CP-SAT model: every queue level
holds its limit.

    # Σ_{t : q ∈ queues(t)} use_td · Σ_{c,k} x[t, c, k] ≤ headroom[q, d]
for every queue q on a pending job's path and every quota dimension d with a finite
headroom (realCapability − allocated at the start of the cycle), `use_td` being
`QuotaBlock.type_quota_demand`. A dimension whose use depends on the node (a card type)
counts the pods on the node classes where the type uses it:

    # Σ_{t : q ∈ queues(t)} Σ_{c : dim(t, c) = d} count_t · Σ_k x[t, c, k] ≤ headroom[q, d]

so a pod with alternatives `A|B` uses the quota of the card type of the node it lands on.
Because the rows sum over every job in the call, several jobs placed together share each
queue's headroom exactly. `guards[q]`, when given, enforces queue q's rows only if that
literal holds (explanations).
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from solver.features.queues.block import QuotaBlock
from solver.features.queues.fairness import FAIR_SCALE
from solver.problem import IntArray, Problem
from solver.quantity import UNLIMITED
from solver.sat import PlacementVars, Term

__all__ = ["build", "class_split"]


def class_split(problem: Problem) -> list[IntArray]:
    """A node class holds one node-dependent dimension per pod type that has them."""
    block = problem.block(QuotaBlock)
    if block is None or block.type_node_dim is None:
        return []
    return [block.type_node_dim[t] for t in range(problem.num_types) if block.node_dims(t)]


def build(
    problem: Problem,
    model: cp_model.CpModel,
    v: PlacementVars,
    guards: dict[int, cp_model.IntVar] | None = None,
) -> list[Term]:
    block = problem.block(QuotaBlock)
    if block is None:
        return []
    node_dims = {d for t in range(problem.num_types) for d in block.node_dims(t)}
    for q in range(len(block.queue_names)):
        types = [t for t in range(problem.num_types) if q in block.type_queues[t]]
        for d in range(len(block.quota_dims)):
            limit = int(block.headroom[q, d])
            if limit >= UNLIMITED:
                continue
            parts = [
                int(block.type_quota_demand[t, d]) * v.type_total(t)
                for t in types
                if block.type_quota_demand[t, d] > 0
            ]
            if d in node_dims and block.type_node_dim is not None:
                counts = {t: int(block.type_node_dim_count[t]) for t in types}
                parts += [
                    counts[t] * var
                    for (t, c, _k), var in v.x.items()
                    if t in counts and block.type_node_dim[t, v.classes[c].nodes[0]] == d
                ]
            if not parts:
                continue
            ct = model.add(cp_model.LinearExpr.sum(parts) <= limit)
            if guards is not None and q in guards:
                ct.only_enforce_if(guards[q])
    return fair_share_term(problem, model, v, block)


def fair_share_term(
    problem: Problem, model: cp_model.CpModel, v: PlacementVars, block: QuotaBlock
) -> list[Term]:
    """The `fair_share` tier (`fairness.py`), exactly:

    # r_qd · target_qd ≤ S · (a_qd + Σ_{t : leaf(t) = q} use_td · placed(t)),  0 ≤ r_qd ≤ S
    # s_q = max_d r_qd,   z ≤ s_q for every queue q with a target;  maximise z
    """
    target = block.fair_target
    if not target.any():
        return []
    z = model.new_int_var(0, FAIR_SCALE, "fair_share")
    for q in np.flatnonzero((target > 0).any(axis=1)).tolist():
        types = [t for t in range(problem.num_types) if block.type_queues[t][:1] == (q,)]
        ratios = []
        for d in np.flatnonzero(target[q] > 0).tolist():
            r = model.new_int_var(0, FAIR_SCALE, f"fair[{q},{d}]")
            use = [
                int(block.type_quota_demand[t, d]) * v.type_total(t)
                for t in types
                if block.type_quota_demand[t, d] > 0
            ]
            held = FAIR_SCALE * int(block.allocated[q, d])
            model.add(int(target[q, d]) * r <= held + FAIR_SCALE * cp_model.LinearExpr.sum(use))
            ratios.append(r)
        share = model.new_int_var(0, FAIR_SCALE, f"fair[{q}]")
        model.add_max_equality(share, ratios)
        model.add(z <= share)
    return [Term("fair_share", z)]
