"""Label selector syntax as the scheduler parses it (apimachinery `labels.NewRequirement`).

The API server checks a node affinity requirement's key and operator but not its values;
kube-scheduler parses each term when it matches and a term that does not parse matches no
node (`nodeaffinity.LazyErrorNodeSelector`; a preferred term that does not parse makes
PreScore fail). So a requirement like `foo NotIn ["invalid value: ___@#$%^"]` is admitted,
and the pod never lands on any node through that term.

    key      a qualified name: [DNS-subdomain prefix "/"] name of ≤ 63 characters
    values   every value a valid label value (≤ 63, alphanumeric at both ends, `-_.` inside)
    Gt, Lt   exactly one value, a base-10 64-bit integer (Go `strconv.ParseInt(v, 10, 64)`)
    fields   `matchFields`: In or NotIn with exactly one value (`fields` selectors)
"""

from __future__ import annotations

from functools import lru_cache

from solver.model import NodeSelectorRequirement, label_integer, label_value, qualified_name

__all__ = ["label_integer", "valid_field_requirement", "valid_label_requirement"]


@lru_cache(maxsize=4096)
def valid_label_requirement(req: NodeSelectorRequirement) -> bool:
    """A `matchExpressions` entry that `labels.NewRequirement` accepts."""
    if not qualified_name(req.key) or not all(label_value(v) for v in req.values):
        return False
    match req.operator:
        case "In" | "NotIn":
            return bool(req.values)
        case "Exists" | "DoesNotExist":
            return not req.values
        case "Gt" | "Lt":
            return len(req.values) == 1 and label_integer(req.values[0]) is not None
    return False  # pragma: no cover - the Literal type admits nothing else


def valid_field_requirement(req: NodeSelectorRequirement) -> bool:
    """A `matchFields` entry the scheduler's field selector accepts."""
    return req.operator in ("In", "NotIn") and len(req.values) == 1
