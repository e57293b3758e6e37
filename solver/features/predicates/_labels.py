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

import re
from functools import lru_cache

from solver.model import NodeSelectorRequirement

__all__ = ["label_integer", "valid_field_requirement", "valid_label_requirement"]

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)


def label_integer(value: str) -> int | None:
    """`value` as Go's `strconv.ParseInt(value, 10, 64)` reads it; None when it cannot."""
    if not _INTEGER.fullmatch(value):
        return None
    number = int(value)
    return number if _INT64[0] <= number <= _INT64[1] else None


def _qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return False
    name = parts[-1]
    return 0 < len(name) <= 63 and _NAME.fullmatch(name) is not None


def _label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and _NAME.fullmatch(value) is not None)


@lru_cache(maxsize=4096)
def valid_label_requirement(req: NodeSelectorRequirement) -> bool:
    """A `matchExpressions` entry that `labels.NewRequirement` accepts."""
    if not _qualified_name(req.key) or not all(_label_value(v) for v in req.values):
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
