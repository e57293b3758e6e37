"""Inter-pod rows as exact CP-SAT constraints (math above each block).

Domains: a row's key either gives every node its own domain (hostname-like: "per node")
or groups nodes (zone, rack). Classes never straddle a domain of a grouping key
(`class_split`), nor mix nodes with different running counts of a per-node row; pod types
in per-node rows get one variable per node (virtual nodes, `virtual_types`), so a domain
is a class's set of virtual nodes or one virtual node. With D a domain, e its running
count, M = Σ x of the row's matchers in D, O = Σ x of its owners in D:

    anti      O_out ≥ 1 ⇒ e + M = 0   (owners the term does not select)
              O_in ≥ 1  ⇒ e + M ≤ 1   (owners it selects: only themselves, alone)
    affinity  O ≥ 1 ⇒ e + N ≥ 1 ∨ seed_D, N = Σ x of matchers that are not owners;
              Σ_D seed_D ≤ 1, and 0 unless the row is seedable (first pod of a series)
    spread    O ≥ 1 ⇒ e + M − m ≤ maxSkew, m = min over counted domains of e + M
              (0 when fewer than minDomains domains count)

Pods of the call counting toward each other are in M as they would be once bound, so the
gang's own pods satisfy or break the terms together.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ortools.sat.python import cp_model

from solver.features._steps import Guard
from solver.features.interpod.block import InterPodBlock, TermRow, at_nodes
from solver.problem import BoolArray, IntArray, Problem
from solver.sat import PlacementVars, Term

__all__ = ["build", "class_split", "encode", "virtual_types"]

_BIG = 1 << 20


def _per_node(block: InterPodBlock, key: int) -> bool:
    dom = block.domain[key]
    has = dom[dom >= 0]
    return has.size == 0 or int(np.bincount(has).max()) <= 1


def class_split(problem: Problem) -> list[IntArray]:
    """Per grouping key its domain per node; per per-node row its running count per node
    (and, for spread, whether the node counts)."""
    block = problem.block(InterPodBlock)
    if block is None:
        return []
    out: list[IntArray] = []
    for k in sorted({row.key for row in block.rows}):
        if not _per_node(block, k):
            out.append(np.broadcast_to(block.domain[k], (problem.num_types, problem.num_nodes)))
    for row in block.rows:
        dom = block.domain[row.key]
        values = at_nodes(row.existing, dom, -1)
        if row.counted is not None:
            values = np.where(row.counted, values, -2)
        if _per_node(block, row.key) or row.counted is not None:
            out.append(np.broadcast_to(values, (problem.num_types, problem.num_nodes)))
    return out


def virtual_types(problem: Problem) -> BoolArray | None:
    """[T] types that need a variable per node: owners and matchers of per-node rows."""
    block = problem.block(InterPodBlock)
    if block is None:
        return None
    out = np.zeros(problem.num_types, dtype=bool)
    for row in block.rows:
        if _per_node(block, row.key):
            out[list(row.owners)] = True
            out[list(row.matchers)] = True
    return out


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    block = problem.block(InterPodBlock)
    if block is not None:
        encode(block, model, v, {t: t for t in range(problem.num_types)})
    return []


class _Domains:
    """The domains of one row in the model: (running count, variables by type) each, and
    the running counts of counted domains the model leaves out (no pod can go there)."""

    def __init__(self, block: InterPodBlock, row: TermRow, v: PlacementVars, local: dict[int, int]):
        dom = block.domain[row.key]
        wanted = {local[t] for t in (*row.owners, *row.matchers) if t in local}
        self.parts: list[tuple[int, dict[int, list[cp_model.IntVar]]]] = []
        self.modelled: set[int] = set()
        per_node = _per_node(block, row.key)
        grouped: dict[int, dict[int, list[cp_model.IntVar]]] = {}
        for c, klass in enumerate(v.classes):
            first = klass.nodes[0]
            d = int(dom[first])
            if d < 0 or (row.counted is not None and not row.counted[first]):
                continue
            types = [t for t in klass.types if t in wanted]
            if not types:
                continue
            if per_node:
                e = int(row.existing[d])
                used = klass.copies
                for k in range(used):
                    self.parts.append((e, {t: [v.x[t, c, k]] for t in types}))
                self.modelled.update(int(dom[n]) for n in klass.nodes[:used])
            else:
                by_type = grouped.setdefault(d, {})
                for t in types:
                    by_type.setdefault(t, []).extend(v.x[t, c, k] for k in range(klass.copies))
        for d, by_type in grouped.items():
            self.parts.append((int(row.existing[d]), by_type))
            self.modelled.add(d)


def _sum(by_type: dict[int, list[cp_model.IntVar]], types: Sequence[int]) -> cp_model.LinearExpr:
    return cp_model.LinearExpr.sum([x for t in types for x in by_type.get(t, [])])


def encode(
    block: InterPodBlock,
    model: cp_model.CpModel,
    v: PlacementVars,
    local: dict[int, int],
    guard: cp_model.IntVar | None = None,
) -> None:
    """Every row of `block` on `v`; `local` maps the block's types to the model's (types
    left out of the model are not placed); `guard` enforces them only when true."""
    lits = [guard] if guard is not None else []
    for i, row in enumerate(block.rows):
        owners = [local[t] for t in row.owners if t in local]
        if not owners:
            continue
        matchers = [local[t] for t in row.matchers if t in local]
        domains = _Domains(block, row, v, local)
        if row.kind == "anti":
            _anti(model, domains, owners, matchers, lits)
        elif row.kind == "affinity":
            _affinity(model, row, domains, owners, matchers, lits)
        else:
            _spread(model, block, i, domains, owners, matchers, lits)


def _anti(
    model: cp_model.CpModel,
    domains: _Domains,
    owners: list[int],
    matchers: list[int],
    lits: list[cp_model.IntVar],
) -> None:
    selected = [t for t in owners if t in matchers]
    others = [t for t in owners if t not in matchers]
    for e, by_type in domains.parts:
        m = _sum(by_type, matchers)
        # O_in ≥ 1 ⇒ e + M ≤ 1
        if selected:
            o_in = model.new_bool_var("")
            model.add(_sum(by_type, selected) == 0).only_enforce_if([~o_in, *lits])
            model.add(m + e <= 1).only_enforce_if([o_in, *lits])
        # O_out ≥ 1 ⇒ e + M = 0
        if others:
            o_out = model.new_bool_var("")
            model.add(_sum(by_type, others) == 0).only_enforce_if([~o_out, *lits])
            model.add(m + e == 0).only_enforce_if([o_out, *lits])


def _affinity(
    model: cp_model.CpModel,
    row: TermRow,
    domains: _Domains,
    owners: list[int],
    matchers: list[int],
    lits: list[cp_model.IntVar],
) -> None:
    support_types = [t for t in matchers if t not in owners]
    seeds = []
    for e, by_type in domains.parts:
        present = model.new_bool_var("")
        model.add(_sum(by_type, owners) == 0).only_enforce_if([~present, *lits])
        support = _sum(by_type, support_types) + e
        if row.seedable:
            # O ≥ 1 ⇒ e + N ≥ 1 ∨ seed_D
            seed = model.new_bool_var("")
            seeds.append(seed)
            model.add(support >= 1).only_enforce_if([present, ~seed, *lits])
        else:
            model.add(support >= 1).only_enforce_if([present, *lits])
    if seeds:  # Σ_D seed_D ≤ 1
        model.add(cp_model.LinearExpr.sum(seeds) <= 1)


def _spread(
    model: cp_model.CpModel,
    block: InterPodBlock,
    i: int,
    domains: _Domains,
    owners: list[int],
    matchers: list[int],
    lits: list[cp_model.IntVar],
) -> None:
    row = block.rows[i]
    counted = block.spread_counted_domains(i)
    counts = [(_sum(by_type, matchers) + e, by_type) for e, by_type in domains.parts]
    low: cp_model.IntVar | int = 0
    if int(counted.sum()) >= row.min_domains:
        # domains the model leaves out keep their running count
        fixed = [
            int(row.existing[d])
            for d in np.flatnonzero(counted).tolist()
            if d not in domains.modelled
        ]
        floor = min(fixed) if fixed else None
        low = model.new_int_var(0, int(row.existing.max(initial=0)) + _BIG, f"spread_min[{i}]")
        pieces: list[cp_model.LinearExprT] = [expr for expr, _ in counts]
        if floor is not None:
            pieces.append(floor)
        model.add_min_equality(low, pieces)
    for expr, by_type in counts:
        present = model.new_bool_var("")
        model.add(_sum(by_type, owners) == 0).only_enforce_if([~present, *lits])
        # O ≥ 1 ⇒ e + M − m ≤ maxSkew
        model.add(expr - low <= row.max_skew).only_enforce_if([present, *lits])


def guard(
    problem: Problem, model: cp_model.CpModel, v: PlacementVars, types: list[int]
) -> Guard | None:
    """The rows among `types` (the explanation's local types), behind one literal."""
    terms = problem.block(InterPodBlock)
    if terms is None or not terms.unit_involved(types):
        return None
    between = model.new_bool_var("interpod")
    encode(terms, model, v, {t: i for i, t in enumerate(types)}, guard=between)
    texts = sorted({row.text for row in terms.rows if set(row.owners) & set(types)})
    return Guard(
        between,
        "the pods' own affinity, anti-affinity and spread terms cannot all hold ("
        + "; ".join(texts)
        + ")",
    )
