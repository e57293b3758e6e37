"""PodDisruptionBudgets (`policy/v1`): how many of a set of pods may be disrupted at once.

A budget's selector picks running pods of its namespace; `status.disruptionsAllowed` is
what the disruption controller says may go now. Manifests written by hand usually carry no
status: then the allowance is derived from the spec as the controller derives it, with the
pods the budget selects in the input as the expected count (`allowed_disruptions`).
"""

from __future__ import annotations

import math

from pydantic import Field, ValidationInfo, field_validator

from solver.model._frozen import Frozen
from solver.model._interpod import LabelSelector

__all__ = ["DisruptionBudget", "allowed_disruptions", "int_or_percent_problem"]


class DisruptionBudget(Frozen):
    """A PodDisruptionBudget; `selector` None (or empty) selects no pod, as Volcano's `pdb`
    plugin reads it."""

    namespace: str
    name: str = Field(min_length=1)
    selector: LabelSelector | None = None
    min_available: str | None = Field(default=None, description="an integer or a percentage")
    max_unavailable: str | None = Field(default=None, description="an integer or a percentage")
    disruptions_allowed: int | None = Field(
        default=None, ge=0, description="status.disruptionsAllowed"
    )
    disrupted_pods: tuple[str, ...] = Field(
        default=(), description="status.disruptedPods: names already being evicted"
    )

    @field_validator("min_available", "max_unavailable")
    @classmethod
    def _count(cls, text: str | None, info: ValidationInfo) -> str | None:
        """The API server's rules: an IntOrString count or percentage; one of the two."""
        if text is not None and (problem := int_or_percent_problem(text)) is not None:
            raise ValueError(problem)
        both = info.field_name == "max_unavailable" and info.data.get("min_available") is not None
        if text is not None and both:
            raise ValueError("minAvailable and maxUnavailable cannot both be set")
        return text

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def int_or_percent_problem(text: str) -> str | None:
    """Why `text` is not an IntOrString count (`3`) or percentage (`50%`), None when it is."""
    body = text[:-1] if text.endswith("%") else text
    if not body.isdigit() or len(body) > 9:
        return f"must be a count (3) or a percentage (50%), got {text!r}"
    return None


def _scaled(text: str, total: int) -> int:
    """`intstr.GetScaledValueFromIntOrPercent(.., total, roundUp=true)`."""
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text)


def allowed_disruptions(budget: DisruptionBudget, healthy: int) -> int:
    """`status.disruptionsAllowed` when given; else the disruption controller's
    `healthy − desiredHealthy` (never below 0) with `healthy` pods selected and that many
    expected: minAvailable (a percentage of the expected, rounded up), or the expected less
    maxUnavailable (likewise); neither set: every selected pod (`getExpectedPodCount`
    leaves desiredHealthy 0)."""
    if budget.disruptions_allowed is not None:
        return max(budget.disruptions_allowed, 0)
    if budget.max_unavailable is not None:
        desired = max(healthy - _scaled(budget.max_unavailable, healthy), 0)
    elif budget.min_available is not None:
        desired = _scaled(budget.min_available, healthy)
    else:
        desired = 0
    return max(healthy - desired, 0)
