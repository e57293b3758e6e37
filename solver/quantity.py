"""Kubernetes quantities to integers, once, at the boundary.

Parsing is delegated to lightkube (`lightkube.utils.quantity.parse_quantity`); this
module only fixes the integer unit of each resource, as the scheduler does:

* `cpu` in milli-CPU (`"500m"` -> 500, `"2"` -> 2000);
* everything else (memory, ephemeral-storage, hugepages-*, extended resources such as
  `nvidia.com/gpu`, `pods`) in its base unit (`"1Gi"` -> 1073741824).

Fractions round up, like `resource.Quantity.Value()/MilliValue()` in Go, so a request
is never under-counted.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

from lightkube.utils.quantity import parse_quantity

__all__ = [
    "CPU",
    "MEMORY",
    "PODS",
    "UNLIMITED",
    "QuantityError",
    "add_limits",
    "format_quantity",
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


def to_int(resource: str, value: object) -> int:
    """Parse `value` (a quantity string or a number) for `resource` into its integer unit."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"invalid quantity {value!r}")
    try:
        parsed = parse_quantity(str(value))
    except (ValueError, TypeError, InvalidOperation) as exc:
        raise QuantityError(f"invalid quantity {value!r}") from exc
    if parsed is None or not isinstance(parsed, Decimal) or not parsed.is_finite():
        raise QuantityError(f"invalid quantity {value!r}")
    if parsed < 0:
        raise QuantityError(f"negative quantity {value!r}")
    if resource == CPU:
        parsed = parsed * 1000
    return math.ceil(parsed)


_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "hugepages-")


def format_quantity(resource: str, value: int) -> str:
    """An integer amount back in the units people write: `2500` cpu -> `2.5`, bytes -> `Gi`."""
    if resource == CPU:
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if resource.startswith(_BYTE_RESOURCES) and value:
        for suffix, size in _BINARY:
            if value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)
