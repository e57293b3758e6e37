"""Minimums inside a gang: a share of its pods that must be placed (or running) for the gang
to count as placed, beyond its minMember.

Volcano's `minTaskMember` (per task role, `Problem.gang_minimums`) and KAI-Scheduler's leaf
sub-groups' `minMember` (per sub-group, the topology feature's plan) are the same rule on
different pods: the gang is placed only with `need` more of the pods of `types`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Minimum", "minimum_shortfall"]


@dataclass(frozen=True)
class Minimum:
    """`need` more pods of `types` (its minimum less its running pods), named `what`
    (`task master`, `sub-group workers`) in reasons."""

    what: str
    types: tuple[int, ...]
    need: int


def minimum_shortfall(mins: Sequence[Minimum], chosen: Mapping[int, Sequence[int]]) -> str:
    """The first minimum `chosen` (nodes per type) does not reach, in words ("" none)."""
    for m in mins:
        got = sum(len(chosen.get(t, ())) for t in m.types)
        if got < m.need:
            return f"{m.what}: {got} of {m.need} required pod(s) fit"
    return ""
