"""Kubernetes quantities: upstream's grammar on upstream's own cases, then gangplan's bounds.

The valid and invalid inputs are apimachinery's `TestQuantityParse`
(`pkg/api/resource/quantity_test.go`); values are written here as exact decimals. Where
gangplan differs — values past int64 milli-units and negative values are refused instead
of clamped or kept — the bounds table says so.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from solver.quantity import QuantityError, parse_quantity, to_int

KI = 1024

# TestQuantityParse: input -> value (upstream's decQuantity(mantissa, exponent)).
UPSTREAM_VALID = {
    "0": "0",
    "0n": "0",
    "0u": "0",
    "0m": "0",
    "0Ki": "0",
    "0k": "0",
    "0Mi": "0",
    "0M": "0",
    "0Gi": "0",
    "0G": "0",
    "0Ti": "0",
    "0T": "0",
    "1": "1",
    "1Ki": str(KI),
    "8Ki": str(8 * KI),
    "7Mi": str(7 * KI**2),
    "6Gi": str(6 * KI**3),
    "5Ti": str(5 * KI**4),
    "4Pi": str(4 * KI**5),
    "3Ei": str(3 * KI**6),
    "10Ti": str(10 * KI**4),
    "100Ti": str(100 * KI**4),
    "5n": "5e-9",
    "4u": "4e-6",
    "3m": "3e-3",
    "9": "9",
    "8k": "8e3",
    "50k": "5e4",
    "7M": "7e6",
    "6G": "6e9",
    "5T": "5e12",
    "40T": "4e13",
    "300T": "3e14",
    "2P": "2e15",
    "1E": "1e18",
    "1E-3": "1e-3",
    "1e3": "1e3",
    "1E6": "1e6",
    "1e9": "1e9",
    "1E12": "1e12",
    "1e15": "1e15",
    "1E18": "1e18",
    "1e14": "1e14",
    "1e13": "1e13",
    "100.035k": "100035",
    "0.001": "1e-3",
    "0.0005k": "0.5",
    "0.005": "5e-3",
    "0.05": "5e-2",
    "0.5": "0.5",
    "0.00050k": "0.5",
    "0.00500": "5e-3",
    "0.05000": "5e-2",
    "0.50000": "0.5",
    "0.5e0": "0.5",
    "0.5e-1": "5e-2",
    "0.5e-2": "5e-3",
    "10.035M": "10035e3",
    "1.2e3": "12e2",
    "1.3E+6": "13e5",
    "1.40e9": "14e8",
    "1.53E12": "153e10",
    "1.6e15": "16e14",
    "1.7E18": "17e17",
    "9.01": "9.01",
    "8.1k": "81e2",
    "7.123456M": "7123456",
    "6.987654321G": "6987654321",
    "5.444T": "5444e9",
    "40.1T": "401e11",
    "300.2T": "3002e11",
    "2.5P": "25e14",
    "1.01E": "101e16",
    "12E": "12e18",
    "100.035Ki": "102435.84",
    "0.5Mi": str(KI**2 // 2),
    "0.05Gi": "53687091.2",
    "0.025Ti": "27487790694.4",
    ".001": "1e-3",
    ".0001k": "0.1",
    "1.": "1",
    "1.G": "1e9",
}

UPSTREAM_INVALID = [
    "",
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",  # trailing (and leading) whitespace is forbidden
]


@pytest.mark.parametrize("text", UPSTREAM_VALID)
def test_upstream_valid_quantities_parse_to_their_exact_value(text: str) -> None:
    assert parse_quantity(text) == Decimal(UPSTREAM_VALID[text])
    assert parse_quantity("+" + text) == Decimal(UPSTREAM_VALID[text])
    assert parse_quantity("-" + text) == -Decimal(UPSTREAM_VALID[text])


@pytest.mark.parametrize("text", UPSTREAM_INVALID)
def test_upstream_invalid_quantities_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    "text",
    [
        "１",  # full-width digit
        "١٢",  # Arabic-Indic digits
        "1Zi",  # suffixes Kubernetes does not know
        "1Y",
        "1kb",
        "1e2.3",
        "nan",
        "inf",
        "1e",
        "e3",
        "x" * 1_000_000,  # refused by length before any matching
    ],
)
def test_non_ascii_digits_and_unknown_suffixes_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        to_int("memory", text)


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("cpu", "500m", 500),
        ("cpu", "0.1m", 1),  # rounds up, like MilliValue()
        ("cpu", 2, 2000),
        ("cpu", 0.5, 500),
        ("memory", "1Gi", KI**3),
        ("memory", "0.5", 1),
        ("memory", "9223372036854775807m", 9223372036854776),  # the largest milli-value
        ("cpu", "4611686018427387903m", 4611686018427387903),  # just below UNLIMITED
    ],
)
def test_integer_units(resource: str, value: object, expected: int) -> None:
    assert to_int(resource, value) == expected


# gangplan's bounds: refused here, clamped (9Ei -> 2^63-1) or kept (negative) upstream.
@pytest.mark.parametrize(
    ("resource", "value"),
    [
        ("cpu", "99999999999999999999"),
        ("memory", "9Ei"),
        ("memory", "9223372036854775807Ki"),
        ("memory", "9223372036854775808m"),
        ("cpu", "4611686018427387904m"),  # UNLIMITED: would read as "no limit"
        ("memory", "1e999999999999"),
        ("memory", 1e300),
        ("memory", float("nan")),
        ("memory", "-1"),
        ("memory", None),
        ("memory", True),
        ("memory", [1]),
    ],
)
def test_values_beyond_int64_milli_units_negative_or_not_quantities_are_refused(
    resource: str, value: object
) -> None:
    with pytest.raises(QuantityError):
        to_int(resource, value)


def test_a_kept_string_parse_is_per_resource_and_an_error_is_raised_every_time() -> None:
    # strings are parsed once and kept (every pod repeats "1" and "4Gi"): the unit still
    # follows the resource, and a refused string is refused again, not remembered as a value
    for _ in range(2):
        assert to_int("cpu", "1") == 1000
        assert to_int("memory", "1") == 1
        assert to_int("memory", "4Gi") == 4 << 30
        with pytest.raises(QuantityError):
            to_int("cpu", "-1")
