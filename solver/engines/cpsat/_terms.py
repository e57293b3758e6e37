"""Objective terms returned by the constraint modules, and how tiers are combined."""

from __future__ import annotations

from dataclasses import dataclass

from ortools.sat.python import cp_model

__all__ = ["TIER_ORDER", "Term", "combine"]

TIER_ORDER = ("placed_groups", "placed_pods", "affinity", "opened_nodes")
"""Highest tier first (DESIGN §3); later features insert theirs (preemption, topology, ...)."""


@dataclass(frozen=True)
class Term:
    """One named tier: `expr` ranges over [lower, upper]; `maximize=False`: fewer is better."""

    name: str
    expr: cp_model.LinearExprT
    upper: int
    maximize: bool = True
    lower: int = 0


def combine(terms: list[Term]) -> tuple[cp_model.LinearExprT, dict[str, int]]:
    """One maximised expression in which every tier dominates all tiers below it.

    weight(tier i) = Π_{j below i} (upper_j + 1), so a unit of tier i outweighs any
    combination of the tiers below. Returns the expression and the weight of each tier.
    """
    by_name = {t.name: t for t in terms}
    ordered = [by_name[name] for name in TIER_ORDER if name in by_name]
    weights: dict[str, int] = {}
    weight = 1
    for term in reversed(ordered):
        weights[term.name] = weight
        weight *= term.upper - term.lower + 1
    expr = sum(
        ((weights[t.name] if t.maximize else -weights[t.name]) * t.expr for t in ordered),
        start=cp_model.LinearExpr.constant(0),
    )
    return expr, weights
