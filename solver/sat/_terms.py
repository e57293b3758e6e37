"""Objective terms returned by the constraint modules, and how tiers are combined."""

from __future__ import annotations

from dataclasses import dataclass

from ortools.sat.python import cp_model

from solver.errors import InternalError
from solver.problem import Problem, tier_specs, tier_weights

__all__ = ["SAFE_WEIGHT", "Term", "combine", "ordered"]

SAFE_WEIGHT = 2**52
"""Past this total weight one weighted objective could overflow CP-SAT's int64 arithmetic:
the engine then optimises the tiers one after another (lexicographically) instead."""


@dataclass(frozen=True)
class Term:
    """One named tier's expression; its order and range come from `solver.objective`."""

    name: str
    expr: cp_model.LinearExprT


def ordered(problem: Problem, terms: list[Term]) -> list[tuple[str, bool, cp_model.LinearExprT]]:
    """(name, maximize, expression) of every returned tier, highest first."""
    by_name = {t.name: t for t in terms}
    return [
        (s.name, s.maximize, by_name[s.name].expr) for s in tier_specs(problem) if s.name in by_name
    ]


def combine(
    problem: Problem, terms: list[Term]
) -> tuple[cp_model.LinearExprT | None, dict[str, int]]:
    """One maximised expression in which every tier dominates all tiers below it, weighted
    exactly as `solver.objective.evaluate` scores answers. A tier no module returned counts 0.
    None (with the weights) when the weights are too large for one objective."""
    specs = tier_specs(problem)
    weights = tier_weights(specs)
    top = specs[0] if specs else None
    if top is not None and weights[top.name] * (top.upper - top.lower + 1) > SAFE_WEIGHT:
        return None, weights
    by_name = {t.name: t for t in terms}
    unknown = set(by_name) - set(weights)
    if unknown:
        raise InternalError(f"objective terms without a tier spec: {sorted(unknown)}")
    expr = cp_model.LinearExpr.sum(
        [
            (weights[s.name] if s.maximize else -weights[s.name]) * by_name[s.name].expr
            for s in specs
            if s.name in by_name
        ]
    )
    return expr, weights
