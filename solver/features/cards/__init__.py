"""GPU card types: Volcano's `capacity-card` plugin.

    mode.py   the card quotas as a `QuotaMode` of the shared queue machinery

Compile: the queue quotas in card mode (tree, order, admission, QuotaBlock with a card
dimension per card type that depends on the node a pod lands on), then per pod type:

* a pod whose card demand cannot be resolved fits no node
  (`GetTaskRequestResourceFailed: <why>`);
* card pods only go to nodes offering one of their card types
  (`node offers none of card types A|B`);
* score `100 × 0.5^i × nodeOrderWeight` for the i-th alternative a node offers (multi-card
  pods only), in the `affinity` tier.

Unlike upstream, the card type charged to the quota is the one of the node the pod lands
on, so a per-type quota can never be overshot (upstream checks any alternative and may
then bind to another type).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from solver.config import Plugin
from solver.features._base import CompileContext, Feature
from solver.features._steps import DecideSteps
from solver.features.cards.mode import CARD, CardMode, card_plans, card_weight, first_offered
from solver.features.queues import QuotaBlock, compile_quotas
from solver.model import CardDemand, CardError
from solver.problem import Block, Problem

__all__ = ["FEATURE", "CardBlock", "CardMode", "card_weight"]


@dataclass(frozen=True, eq=False)
class CardBlock(Block):
    """Which card type a placed pod uses (through the quota block's node dimensions)."""

    quota: QuotaBlock

    def card_of(self, t: int, n: int) -> str | None:
        rows = self.quota.type_node_dim
        if rows is None or not self.quota.node_dims(t):
            return None
        return self.quota.quota_dims[int(rows[t, n])].removeprefix(CARD)


def _preference(pick: npt.NDArray[np.int64], weight: float) -> npt.NDArray[np.float64]:
    """Node score of a card-alternatives pod: 100 × weight for its first choice, halved per
    step down the list, 0 where no alternative is offered."""
    return np.where(pick >= 0, 100 * 0.5 ** np.maximum(pick, 0) * weight, 0.0)


def _compile(ctx: CompileContext) -> None:
    compile_quotas(ctx, CardMode(ctx.conf))
    quota = next(b for b in reversed(ctx.blocks) if isinstance(b, QuotaBlock))
    weight = card_weight(ctx.conf.arguments(Plugin.CAPACITY_CARD).get("nodeOrderWeight", 1.0))
    nothing = np.zeros(len(ctx.nodes), dtype=bool)
    for t, plan in enumerate(card_plans(ctx)):
        if isinstance(plan, CardError):
            ctx.restrict([t], nothing, f"GetTaskRequestResourceFailed: {plan}")
            continue
        if not isinstance(plan, CardDemand):
            continue
        alternatives = plan.alternatives
        pick = ctx.memo(("cards", "pick", alternatives), partial(first_offered, ctx, alternatives))
        allowed = ctx.memo(("cards", "allowed", alternatives), partial(np.greater_equal, pick, 0))
        ctx.restrict([t], allowed, f"node offers none of card types {plan.key}")
        if len(alternatives) > 1:
            scores = ctx.memo(("cards", "score", alternatives), partial(_preference, pick, weight))
            ctx.score([t], scores, Plugin.CAPACITY_CARD)
    ctx.add_block(CardBlock(quota))


def card_placement(
    problem: Problem, t: int, n: int, _assigned: tuple[int, ...] = ()
) -> dict[str, Any]:
    """The Placement field of a pod of type t on node n: the card type it uses (none
    without card demand)."""
    block = problem.block(CardBlock)
    card = block.card_of(t, n) if block is not None else None
    return {"card": card} if card is not None else {}


FEATURE = Feature(
    name="cards",
    plugins=(Plugin.CAPACITY_CARD,),
    compile=_compile,
    type_key=lambda pod: pod.annotations.get("volcano.sh/card.name"),
    decide=DecideSteps(placement=card_placement),
)
