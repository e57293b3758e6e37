"""Kubernetes quantities to integers, once, at the boundary.

The grammar is Kubernetes' own (`k8s.io/apimachinery/pkg/api/resource`, `ParseQuantity`),
ASCII only:

    quantity  ::= [+-] number [suffix]
    number    ::= digits | digits "." [digits] | "." digits
    suffix    ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | k | M | G | T | P | E
                | ("e" | "E") [+-] digits

Each resource has one integer unit, as the scheduler counts it:

* `cpu` in milli-CPU (`"500m"` -> 500, `"2"` -> 2000);
* everything else (memory, ephemeral-storage, hugepages-*, extended resources such as
  `nvidia.com/gpu`, `pods`) in its base unit (`"1Gi"` -> 1073741824).

Fractions round up, like `resource.Quantity.Value()/MilliValue()` in Go, so a request
is never under-counted. A quantity whose milli-value does not fit int64 is refused where
Kubernetes would silently clamp it to 2^63-1 (`9Ei` parses as the maximum there): a
request or capacity that large is a typo, and clamped sums would be wrong. Negative
quantities are refused too (a request or a capacity is never negative).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation, localcontext
from functools import lru_cache

__all__ = [
    "CPU",
    "MEMORY",
    "PODS",
    "UNLIMITED",
    "QuantityError",
    "add_limits",
    "amount_problem",
    "format_quantity",
    "max_value",
    "parse_quantity",
    "sub_limit",
    "to_int",
]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
UNLIMITED = 2**62
"""An amount without a limit, in integer arithmetic; `add_limits`/`sub_limit` keep it there."""


def add_limits(a: int, b: int) -> int:
    return UNLIMITED if a >= UNLIMITED or b >= UNLIMITED else a + b


def sub_limit(a: int, b: int) -> int:
    return UNLIMITED if a >= UNLIMITED else a - b


class QuantityError(ValueError):
    """A quantity string is not a valid, non-negative Kubernetes quantity."""


_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:[eE](?P<exponent>[+-]?[0-9]+)|(?P<suffix>[KMGTPE]i|[numkMGTPE]))?",
    re.ASCII,
)
_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    **{s: Decimal(10) ** (3 * (i + 1)) for i, s in enumerate("kMGTPE")},
    **{s + "i": Decimal(2) ** (10 * (i + 1)) for i, s in enumerate("KMGTPE")},
}
MAX_MILLI = 2**63 - 1  # int64: the largest milli-value Go's Quantity.MilliValue() holds
MAX_TEXT = 64  # characters: any quantity within MAX_MILLI is far shorter


def parse_quantity(text: str) -> Decimal:
    """The exact value of a Kubernetes quantity string; QuantityError when it is not one."""
    if len(text) > MAX_TEXT:
        raise QuantityError(f"invalid quantity {text[:MAX_TEXT]!r}...: longer than {MAX_TEXT}")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(f"invalid quantity {text!r}: not a Kubernetes quantity")
    number = Decimal(match["number"])
    exponent = match["exponent"]
    if exponent is not None:
        if abs(int(exponent)) > 2**31 - 1:
            raise QuantityError(f"invalid quantity {text!r}: exponent out of range")
        return number.scaleb(int(exponent))
    return number * _SUFFIXES[match["suffix"] or ""]


def to_int(resource: str, value: object) -> int:
    """Parse `value` (a quantity string or a number) for `resource` into its integer unit."""
    if type(value) is str and len(value) <= MAX_TEXT:
        return _text_to_int(resource, value)  # the same few strings recur in every pod
    return _to_int(resource, value)


@lru_cache(maxsize=4096)
def _text_to_int(resource: str, text: str) -> int:
    return _to_int(resource, text)  # an error is raised each time, never kept


def _to_int(resource: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise QuantityError(f"invalid quantity {value!r}: not a string or a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise QuantityError(f"invalid quantity {value!r}")
    text = str(value) if not isinstance(value, float) else repr(value)
    with localcontext() as ctx:
        ctx.prec = 60  # exact for every value within MAX_MILLI, with its fraction
        try:
            parsed = parse_quantity(text)
            milli = parsed * 1000
        except InvalidOperation as exc:  # exponent beyond Decimal's range
            raise QuantityError(f"invalid quantity {text!r}: out of range") from exc
        value = math.ceil(milli if resource == CPU else parsed)
        if milli > MAX_MILLI and parsed > 0:
            value = max(value, max_value(resource) + 1)  # beyond Go's int64 milli-units
        if (problem := amount_problem(resource, value)) is not None:
            raise QuantityError(f"quantity {text!r}: {problem}")
        return value


def amount_problem(resource: str, value: int) -> str | None:
    """The rule of every request, capacity and quota amount (in `resource`'s integer unit),
    for both readers: never negative, and within `max_value`."""
    if value < 0:
        return "must not be negative"
    if value > max_value(resource):
        return f"must be at most {max_value(resource)} (2^63-1 milli-units)"
    return None


def max_value(resource: str) -> int:
    """The largest amount of `resource` in its integer unit (milli-CPU below `UNLIMITED`,
    which means no limit; other resources within 2^63-1 milli-units, as Go's Quantity)."""
    return UNLIMITED - 1 if resource == CPU else -(-MAX_MILLI // 1000)


_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "hugepages-")


def dim_resource(dim: str) -> str:
    """The resource a quota dimension counts: `a100/memory` (a Kueue flavor-resource) is
    `memory`; a resource name (`nvidia.com/gpu`: its prefix has a dot) is itself."""
    flavor, _, rest = dim.partition("/")
    plain = rest == CPU or rest.startswith(_BYTE_RESOURCES)
    return rest if rest and ("." not in flavor or plain) else dim


def format_quantity(resource: str, value: int) -> str:
    """An integer amount back in the units people write: `2500` cpu -> `2.5`, bytes -> `Gi`
    (a Kueue flavor-resource, `<flavor>/<resource>`, as its resource)."""
    resource = dim_resource(resource)
    if resource == CPU:
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if resource.startswith(_BYTE_RESOURCES) and value:
        for suffix, size in _BINARY:
            if value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)
