"""Network topology (Koordinator gather, Godel required domains) in the CP-SAT model.

For a gang group (unit) u whose types are T_u, with node classes split so that every class
lies in one domain of every layer and one value of every `unit_domain`:

    # y[u, d] = 1 if unit u uses domain d of its one-domain rule;  Σ_d y[u, d] ≤ 1
    # x[t, c, k] ≤ |t| · y[u, dom(c)]   for t ∈ T_u   (x = 0 where dom(c) = −1)
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

from solver.engines.cpsat._terms import Term
from solver.engines.cpsat._vars import PlacementVars
from solver.objective import topology_units
from solver.problem import IntArray, Problem

__all__ = ["build", "class_split", "unsupported"]


def unsupported(problem: Problem) -> str | None:
    """Why this Problem's topology rules are beyond the model (None: they are modelled)."""
    if problem.unit_pod_multiple.size and (problem.unit_pod_multiple[:, -1] > 1).any():
        return "per-node podCountMultiple"
    return None


def class_split(problem: Problem) -> IntArray | None:
    """[K, N] columns node classes must not mix: domains of the inner layers, unit domains,
    and (capacity-card) the card type each card pod type would use on the node."""
    rows: list[IntArray] = []
    if len(problem.topo_layers) > 2:
        rows.extend(problem.node_domain[1:-1])
    rows.extend(d for d in problem.unit_domain if d is not None)
    # capacity-card: a class holds one card type per card pod type
    rows.extend(problem.type_node_card[t] for t, dims in enumerate(problem.type_card_dims) if dims)
    return np.vstack(rows) if rows else None


def _unit_types(problem: Problem) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for t in range(problem.num_types):
        out.setdefault(int(problem.gang_unit[problem.type_gang[t]]), []).append(t)
    return out


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    unit_types = _unit_types(problem)
    counts = [len(p) for p in problem.type_pods]
    keys_of: dict[int, list[tuple[int, int, int]]] = {}
    for key in v.x:
        keys_of.setdefault(int(problem.gang_unit[problem.type_gang[key[0]]]), []).append(key)

    # one-domain rule (MustGather / Godel required)
    for u, domain in enumerate(problem.unit_domain):
        if domain is None or u not in keys_of:
            continue
        values = sorted({int(domain[v.classes[c].nodes[0]]) for _, c, _ in keys_of[u]} - {-1})
        y = {d: model.new_bool_var(f"domain[{u},{d}]") for d in values}
        model.add(cp_model.LinearExpr.sum(list(y.values())) <= 1)
        for key in keys_of[u]:
            d = int(domain[v.classes[key[1]].nodes[0]])
            if d < 0:
                model.add(v.x[key] == 0)
            else:
                model.add(v.x[key] <= counts[key[0]] * y[d])

    gather = set(topology_units(problem))
    for u in gather:
        on = v.unit_on[u]
        for g in np.flatnonzero(problem.gang_unit == u).tolist():
            pending = int(problem.gang_pending[g])
            if pending and problem.gang_blocked[g] is None:
                model.add(v.gang_total(g) == pending * on)

    terms: list[Term] = []
    layers = len(problem.topo_layers)
    used_by_layer: dict[int, list[cp_model.IntVar]] = {}
    for u in sorted(
        gather
        | {
            u
            for u in range(len(problem.unit_ids))
            if problem.unit_pod_multiple.size and (problem.unit_pod_multiple[u, :-1] > 1).any()
        }
    ):
        if u not in keys_of:
            continue
        for layer in range(layers - 1):
            multiple = (
                int(problem.unit_pod_multiple[u, layer]) if problem.unit_pod_multiple.size else 1
            )
            scored = u in gather and layer > 0
            if multiple <= 1 and not scored:
                continue
            by_domain: dict[int, list[cp_model.IntVar]] = {}
            for key in keys_of[u]:
                d = int(problem.node_domain[layer, v.classes[key[1]].nodes[0]])
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
    for layer in range(1, layers - 1):
        if layer in used_by_layer:
            terms.append(
                Term(
                    f"domains:{problem.topo_layers[layer]}",
                    cp_model.LinearExpr.sum(used_by_layer[layer]),
                )
            )
    return terms
