"""The inter-pod terms of one call that move as its own pods land: the Problem block.

A term row counts, per domain of its topology key, the pods matching it — running ones
(`existing`, fixed at compile) plus the call's pods of its `matchers` types as they are
placed — and constrains its `owners`' pods:

    anti      owner at n only if no other matching pod is in n's domain; and no matching
              pod where an owner already is (the owner's term repels it: symmetry)
    affinity  owner at n only if every row of its group (the owner's required terms, all
              of which a pod must match to count) has a matching pod in n's domain — or,
              the first pod of a self-affine series, where none matches anywhere yet
    spread    owner at n only if count[d] + self − min(count over counted domains) ≤
              maxSkew (min 0 below minDomains); a matching pod may not push a domain
              holding owners past that bound either

What does not move (running pods' own anti-affinity, an owner's terms against running
pods only) is a plain filter of the compile step. Every row is checked by the greedy
pod by pod (`greedy.TermTracker`) and encoded exactly by CP-SAT (`cpsat.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from solver.problem import Block, BoolArray, IntArray, freeze_arrays

__all__ = [
    "REASON_AFFINITY",
    "REASON_ANTI",
    "REASON_EXISTING_ANTI",
    "REASON_SPREAD",
    "REASON_SPREAD_LABEL",
    "InterPodBlock",
    "TermRow",
    "at_nodes",
]

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL = f"{REASON_SPREAD} (missing required label)"

Kind = Literal["anti", "affinity", "spread"]


def at_nodes(per_domain: IntArray, of_node: IntArray, missing: int = 0) -> IntArray:
    """A per-domain column read at each node; `missing` where the node has no domain."""
    return np.append(per_domain, missing)[np.where(of_node >= 0, of_node, per_domain.size)]


@dataclass(frozen=True)
class TermRow:
    kind: Kind
    key: int  # index into InterPodBlock.keys
    owners: tuple[int, ...]  # pod types the term constrains
    matchers: tuple[int, ...]  # pod types the term counts
    existing: IntArray  # [D] running pods matching, per domain
    text: str  # the term, for explanations: `anti-affinity app=web by kubernetes.io/hostname`
    group: int = -1  # affinity: rows of one owner's required terms share a group (ANDed)
    seedable: bool = False  # affinity: owners match all their terms (the first-pod rule)
    max_skew: int = 0  # spread
    min_domains: int = 1  # spread
    counted: BoolArray | None = None  # spread: [N] nodes whose pods count (inclusion policies)
    self_match: tuple[int, ...] = ()  # spread: owners counted by their own constraint

    def __post_init__(self) -> None:
        freeze_arrays(self)


@dataclass(frozen=True)
class InterPodBlock(Block):
    keys: tuple[str, ...]  # topology keys of the rows
    domain: tuple[IntArray, ...]  # [K][N] domain index per node, -1 without the key
    num_domains: tuple[int, ...]  # [K]
    rows: tuple[TermRow, ...]
    involved: BoolArray  # [T] owner or matcher of some row: placed pod by pod
    reason_codes: tuple[int, int, int, int]  # Problem.reason_texts index: spread, affinity,
    #   anti, existing anti

    def owned(self, t: int) -> list[int]:
        return [i for i, row in enumerate(self.rows) if t in row.owners]

    def matched(self, t: int) -> list[int]:
        return [i for i, row in enumerate(self.rows) if t in row.matchers]

    def spread_counted_domains(self, i: int) -> BoolArray:
        """[D] domains of spread row i holding at least one counted node."""
        row = self.rows[i]
        dom = self.domain[row.key]
        out = np.zeros(self.num_domains[row.key], dtype=bool)
        counted = row.counted if row.counted is not None else np.ones(dom.size, dtype=bool)
        hit = dom[counted & (dom >= 0)]
        out[hit] = True
        return out

    def unit_involved(self, types: list[int]) -> bool:
        return bool(self.involved[types].any()) if types else False
