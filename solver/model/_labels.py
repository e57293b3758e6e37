"""Kubernetes label syntax (apimachinery `validation.IsQualifiedName`, `IsValidLabelValue`,
and Go's `strconv.ParseInt(v, 10, 64)` for `Gt` / `Lt` values), written once: the readers
refuse what the API server refuses, and the predicates parse selectors with the same rules.

    key      a qualified name: [DNS-subdomain prefix "/"] name of ≤ 63 characters
    value    empty, or ≤ 63 characters, alphanumeric at both ends, `-_.` inside
    integer  an optional sign and ASCII digits, within int64
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from pydantic import ValidationInfo

__all__ = [
    "label_integer",
    "label_key_problem",
    "label_value",
    "label_value_problem",
    "labels_problem",
    "qualified_name",
    "requirement_values_problem",
]

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


def qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return False
    name = parts[-1]
    return 0 < len(name) <= 63 and _NAME.fullmatch(name) is not None


def label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and _NAME.fullmatch(value) is not None)


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a label key (None: it is)."""
    if qualified_name(key):
        return None
    return (
        f"label key {key!r} must be a qualified name: an optional DNS subdomain prefix and "
        "'/', then at most 63 alphanumeric characters, '-', '_' or '.', alphanumeric at both ends"
    )


def label_value_problem(key: str, value: str) -> str | None:
    """Why `value` is not a label value (None: it is)."""
    if label_value(value):
        return None
    return (
        f"label {key!r}: value {value[:80]!r} must be at most 63 alphanumeric characters, "
        "'-', '_' or '.', alphanumeric at both ends"
    )


def labels_problem(labels: Mapping[str, str]) -> str | None:
    """Why a label map is not one the API server admits (its first bad key or value)."""
    for key, value in labels.items():
        if (problem := _pair_problem(key, value)) is not None:
            return problem
    return None


@lru_cache(maxsize=1 << 16)
def _pair_problem(key: str, value: str) -> str | None:
    # nodes share most pairs (zone, product, count): each is checked once
    return label_key_problem(key) or label_value_problem(key, value)


def values_suit_operator(values: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
    """A selector requirement's `values` validator (node and label selectors alike): the
    rule is `requirement_values_problem`, read with the requirement's operator."""
    operator = info.data.get("operator")
    if operator is not None and (problem := requirement_values_problem(operator, values)):
        raise ValueError(problem)
    return values


def requirement_values_problem(op: str, values: Sequence[str]) -> str | None:
    """Why a selector requirement's values do not suit its operator: Gt/Lt take exactly
    one integer (ASCII digits, within int64), In/NotIn at least one value,
    Exists/DoesNotExist none."""
    if op in ("Gt", "Lt"):
        if len(values) != 1 or label_integer(values[0]) is None:
            return f"operator {op} needs exactly one integer value (ASCII digits, within int64)"
    elif op in ("In", "NotIn") and not values:
        return f"operator {op} needs at least one value"
    elif op in ("Exists", "DoesNotExist") and values:
        return f"operator {op} takes no values"
    return None
