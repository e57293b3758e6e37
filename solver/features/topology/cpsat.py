"""The network topology's CP-SAT module (Koordinator gather, Godel required domains; Godel
and KAI preferred domains in `godel/objective.py`, Kueue TAS in `kueue/place.py`).

For a gang group (unit) u whose types are T_u, with node classes split so that every class
lies in one domain of every layer and one value of every `unit_domain`:

    # y[u, d] = 1 if unit u uses domain d of its one-domain rule;  Σ_d y[u, d] ≤ 1
    #   (and the same per KAI sub-group inside it: `workload_api/subgroups.py`)
    # Σ_{c: dom(c) = d} Σ_k x[t, c, k] ≤ |t| · y[u, d]   for t ∈ T_u   (x = 0 where dom(c) = −1)
    # gather: placed_g = pending_g · unit_on[u] for every gang g of u (all pending pods or none)
    # podCountMultiple m of layer l: Σ_{t ∈ T_u, c ⊂ d} x[t, c, k] = m · z[u, l, d]
    # used[u, l, d] ⇐ Σ_{t ∈ T_u, c ⊂ d} x[t, c, k] ≥ 1   (domains used, per layer)

Objective terms: `domains:<Layer>` = Σ_u Σ_d used[u, l, d] for every layer between the
root and the nodes, fewer is better, top layer first (`solver.objective` orders them).
Per-node `podCountMultiple` is not modelled (the engine falls back to the greedy).
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from solver.features.topology.block import TopologyBlock
from solver.features.topology.godel.block import GodelBlock
from solver.features.topology.godel.objective import (
    RANK,
    build_preferred,
    preferred_rows,
    rank_terms,
)
from solver.features.topology.koordinator.block import (
    GatherBlock,
    domain_slots,
    slack_units,
    topology_units,
)
from solver.features.topology.kueue.block import KueueBlock
from solver.features.topology.kueue.place import build_kueue, class_rows
from solver.features.topology.workload_api.subgroups import (
    build_sub_domains,
    build_sub_minimums,
    sub_domain_rows,
)
from solver.problem import IntArray, Problem
from solver.sat import PlacementVars, Term

__all__ = ["build", "class_split", "layout_ranks", "unsupported"]


def unsupported(problem: Problem) -> str | None:
    """Why this Problem's topology rules are beyond the model (None: they are modelled)."""
    block = problem.block(GatherBlock)
    if block is None:
        return None
    if block.unit_pod_multiple.size and (block.unit_pod_multiple[:, -1] > 1).any():
        return "per-node podCountMultiple"
    return None


def class_split(problem: Problem) -> list[IntArray]:
    """Rows node classes must not mix: domains of the inner layers and unit domains."""
    block = problem.block(TopologyBlock)
    if block is None:
        return []
    gather, godel, kueue = _dialects(problem)
    rows: list[IntArray] = []
    if len(gather.layers) > 2:
        rows.extend(gather.node_domain[1:-1])
    rows.extend(d for d in block.unit_domain if d is not None)
    rows.extend(class_rows(kueue.unit_kueue))
    rows.extend(preferred_rows(godel.unit_godel))
    rows.extend(sub_domain_rows([p.sub_domains for p in godel.unit_godel if p is not None]))
    return rows


def _dialects(problem: Problem) -> tuple[GatherBlock, GodelBlock, KueueBlock]:
    """Each dialect's block, empty when the Problem has none."""
    return (
        problem.block(GatherBlock) or GatherBlock(),
        problem.block(GodelBlock) or GodelBlock(),
        problem.block(KueueBlock) or KueueBlock(),
    )


def _unit_types(problem: Problem) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for t in range(problem.num_types):
        out.setdefault(problem.type_unit(t), []).append(t)
    return out


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    block = problem.block(TopologyBlock)
    if block is None:
        return []
    gather_block, godel, kueue = _dialects(problem)
    unit_types = _unit_types(problem)
    counts = [len(p) for p in problem.type_pods]
    keys_of: dict[int, list[tuple[int, int, int]]] = {}
    for key in v.x:
        keys_of.setdefault(problem.type_unit(key[0]), []).append(key)

    # one-domain rule (MustGather / Godel required)
    slack_terms: list[cp_model.LinearExprT] = []
    ranks: list[cp_model.LinearExprT] = []
    slack_of = set(slack_units(gather_block))
    for u, domain in enumerate(block.unit_domain):
        if domain is None or u not in keys_of:
            continue
        values = sorted({int(domain[v.classes[c].nodes[0]]) for _, c, _ in keys_of[u]} - {-1})
        y = {d: model.new_bool_var(f"domain[{u},{d}]") for d in values}
        model.add(cp_model.LinearExpr.sum(list(y.values())) <= 1)
        ranks += rank_terms(godel.godel(u), y)
        if u in slack_of:
            # gather_slack = Σ_d slots(d) · y[u, d]: the chosen domain's free slots
            slots = domain_slots(problem, gather_block, u)
            slack_terms += [slots.get(d, 0) * y[d] for d in values if slots.get(d, 0)]
        per_type: dict[tuple[int, int], list[cp_model.IntVar]] = {}
        for key in keys_of[u]:
            d = int(domain[v.classes[key[1]].nodes[0]])
            if d < 0:
                model.add(v.x[key] == 0)
            else:
                per_type.setdefault((key[0], d), []).append(v.x[key])
        for (t, d), xs in per_type.items():
            model.add(cp_model.LinearExpr.sum(xs) <= counts[t] * y[d])

    gather = set(topology_units(gather_block))
    for u in gather:
        on = v.unit_on[u]
        for g in np.flatnonzero(problem.gang_unit == u).tolist():
            pending = int(problem.gang_pending[g])
            if pending and problem.gang_blocked[g] is None:
                model.add(v.gang_total(g) == pending * on)

    for u, plan in enumerate(godel.unit_godel):
        if plan is not None and plan.sub_domains:
            build_sub_domains(problem, model, v, u, plan.sub_domains)
        if plan is not None and plan.sub_minimums:
            (g,) = np.flatnonzero(problem.gang_unit == u).tolist()
            build_sub_minimums(problem, model, v, g, plan.sub_minimums)
    terms: list[Term] = build_kueue(problem, kueue.unit_kueue, model, v)
    terms += build_preferred(problem, godel.unit_godel, model, v, keys_of)
    if ranks:
        terms.append(Term(RANK, cp_model.LinearExpr.sum(ranks)))
    multiples = gather_block.unit_pod_multiple
    layers = len(gather_block.layers)
    used_by_layer: dict[int, list[cp_model.LinearExprT]] = {}
    for u in sorted(
        gather
        | {
            u
            for u in range(len(problem.unit_ids))
            if multiples.size and (multiples[u, :-1] > 1).any()
        }
    ):
        if u not in keys_of:
            continue
        for layer in range(layers - 1):
            multiple = int(multiples[u, layer]) if multiples.size else 1
            scored = u in gather and layer > 0
            if multiple <= 1 and not scored:
                continue
            by_domain: dict[int, list[cp_model.IntVar]] = {}
            for key in keys_of[u]:
                d = int(gather_block.node_domain[layer, v.classes[key[1]].nodes[0]])
                if d >= 0:
                    by_domain.setdefault(d, []).append(v.x[key])
            pending = sum(counts[t] for t in unit_types.get(u, []))
            for d, xs in sorted(by_domain.items()):
                total = cp_model.LinearExpr.sum(xs)
                if multiple > 1:
                    z = model.new_int_var(0, pending // multiple, f"multiple[{u},{layer},{d}]")
                    model.add(total == multiple * z)
                if scored:
                    used = model.new_bool_var(f"used[{u},{layer},{d}]")
                    model.add(total <= pending * used)
                    used_by_layer.setdefault(layer, []).append(used)
    if gather and layers:
        used_by_layer[layers - 1] = _nodes_used(problem, model, v, gather, unit_types)
    if slack_terms:
        terms.append(Term("gather_slack", cp_model.LinearExpr.sum(slack_terms)))
    for layer in range(1, layers):
        if layer in used_by_layer:
            terms.append(
                Term(
                    f"domains:{gather_block.layers[layer]}",
                    cp_model.LinearExpr.sum(used_by_layer[layer]),
                )
            )
    return terms


def _nodes_used(
    problem: Problem,
    model: cp_model.CpModel,
    v: PlacementVars,
    gather: set[int],
    unit_types: dict[int, list[int]],
) -> list[cp_model.LinearExprT]:
    """Nodes each gathered unit uses (the node layer's `domains` tier), exactly per class mode:

    slots class (one type t):  # m · s ≥ x[t, c],  m ≤ K          -> m nodes
    patterns class:            # Σ_p n[c, p] over patterns holding a pod of the unit
    virtual nodes:             # b_k ⇐ Σ_{t ∈ unit} x[t, c, k] ≥ 1
    """
    out: list[cp_model.LinearExprT] = []
    counts = [len(p) for p in problem.type_pods]
    for u in sorted(gather):
        mine = set(unit_types.get(u, []))
        for c, klass in enumerate(v.classes):
            types = [t for t in klass.types if t in mine]
            if not types:
                continue
            if klass.mode == "slots":
                m = model.new_int_var(0, len(klass.nodes), f"nodes[{u},{c}]")
                model.add(m * klass.slots >= v.x[types[0], c, 0])
                out.append(m)
            elif klass.mode == "patterns":
                cols = [klass.types.index(t) for t in types]
                out += [
                    v.n[c, p]
                    for p in range(len(klass.patterns))
                    if any(klass.patterns[p, i] > 0 for i in cols)
                ]
            else:
                for k in range(klass.virtual):
                    b = model.new_bool_var(f"node_used[{u},{c},{k}]")
                    model.add(
                        cp_model.LinearExpr.sum([v.x[t, c, k] for t in types])
                        <= sum(counts[t] for t in types) * b
                    )
                    out.append(b)
    return out


def layout_ranks(problem: Problem, pod_node: list[IntArray]) -> list[IntArray]:
    """Consecutive ranks share the smallest domain: in gathered units, each type's pods (kept
    in `network-topology-index` order) take their nodes sorted by domain path, then name."""
    block = problem.block(GatherBlock)
    units = set(topology_units(block)) if block is not None else set()
    if block is None or not units:
        return pod_node
    inner = (
        block.node_domain[1:-1]
        if len(block.layers) > 2
        else np.zeros((0, problem.num_nodes), dtype=np.int64)
    )
    out = []
    for t, row in enumerate(pod_node):
        if problem.type_unit(t) not in units:
            out.append(row)
            continue
        placed = row[row >= 0]
        order = sorted(placed.tolist(), key=lambda n: (*inner[:, n].tolist(), n))
        new = row.copy()
        new[: len(order)] = order
        out.append(new)
    return out
