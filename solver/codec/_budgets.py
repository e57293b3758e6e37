"""PodDisruptionBudget messages, both ways."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gangplan.v1 import cluster_pb2 as pb
from solver.codec._constraints import label_selector_from_proto, label_selector_to_proto
from solver.codec._errors import Violations, build
from solver.model import DisruptionBudget

__all__ = ["budgets_from_proto", "budgets_to_proto"]

DEFAULT_NAMESPACE = "default"


def _budget(msg: pb.DisruptionBudget, path: str, out: Violations) -> DisruptionBudget | None:
    before = len(out.items)
    selector = (
        label_selector_from_proto(msg.selector, f"{path}.selector", out)
        if msg.HasField("selector")
        else None
    )
    if len(out.items) > before:
        return None
    return build(  # the rules are the model's (`DisruptionBudget`), as for the YAML reader
        DisruptionBudget,
        path,
        out,
        namespace=msg.namespace or DEFAULT_NAMESPACE,
        name=msg.name,
        selector=selector,
        min_available=msg.min_available or None,
        max_unavailable=msg.max_unavailable or None,
        disruptions_allowed=msg.disruptions_allowed
        if msg.HasField("disruptions_allowed")
        else None,
        disrupted_pods=tuple(sorted(set(msg.disrupted_pods))),
    )


def budgets_from_proto(
    msgs: Sequence[pb.DisruptionBudget], path: str, out: Violations
) -> dict[str, DisruptionBudget]:
    """`path[i]` each; a repeated `namespace/name` is a violation at its name."""
    found: dict[str, DisruptionBudget] = {}
    for i, msg in enumerate(msgs):
        budget = _budget(msg, f"{path}[{i}]", out)
        if budget is None:
            continue
        if budget.key in found:
            out.add(f"{path}[{i}].name", f"duplicate PodDisruptionBudget {budget.key!r}")
        found[budget.key] = budget
    return found


def budgets_to_proto(budgets: Iterable[DisruptionBudget]) -> list[pb.DisruptionBudget]:
    out = []
    for b in budgets:
        msg = pb.DisruptionBudget(
            namespace=b.namespace,
            name=b.name,
            min_available=b.min_available or "",
            max_unavailable=b.max_unavailable or "",
            disrupted_pods=list(b.disrupted_pods),
        )
        if b.selector is not None:
            msg.selector.CopyFrom(label_selector_to_proto(b.selector))
        if b.disruptions_allowed is not None:
            msg.disruptions_allowed = b.disruptions_allowed
        out.append(msg)
    return out
