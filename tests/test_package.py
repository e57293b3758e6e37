"""The public API is what `__all__` says, and quantities convert both ways."""

from __future__ import annotations

import pytest

import gangplan
import solver
from solver.quantity import QuantityError, format_quantity, to_int


def test_exported_members() -> None:
    # isort order, as ruff's RUF022 keeps it: CONSTANTS, then Classes, then functions
    assert solver.__all__ == sorted(solver.__all__, key=lambda n: (not n.isupper(), n))
    assert all(getattr(solver, name, None) is not None for name in solver.__all__)


@pytest.mark.parametrize(
    ("resource", "text", "value"),
    [
        ("cpu", "500m", 500),
        ("cpu", "2", 2000),
        ("cpu", "0.1", 100),
        ("cpu", 1, 1000),
        ("memory", "1Gi", 2**30),
        ("memory", "100M", 10**8),
        ("memory", "0.5", 1),
        ("nvidia.com/gpu", "8", 8),
        ("cpu", "1e3", 10**6),
    ],
)
def test_to_int(resource: str, text: object, value: int) -> None:
    assert to_int(resource, text) == value


@pytest.mark.parametrize("text", ["-1", "abc", "", "1.5.2", None, True])
def test_to_int_rejects(text: object) -> None:
    with pytest.raises(QuantityError):
        to_int("cpu", text)


def test_format_quantity() -> None:
    assert [
        format_quantity("cpu", 20000),
        format_quantity("cpu", 2500),
        format_quantity("memory", 3 * 2**30),
        format_quantity("memory", 1000),
        format_quantity("nvidia.com/gpu", 3),
    ] == ["20", "2500m", "3Gi", "1000", "3"]


def test_the_gangplan_package_is_the_library_and_the_client() -> None:
    assert all(getattr(gangplan, name, None) is not None for name in gangplan.__all__)
    assert gangplan.load is solver.load_manifests and gangplan.schedule is solver.schedule
    decision = gangplan.schedule(gangplan.load("examples/ganggroup-gpu.yaml"), engine="greedy")
    assert isinstance(decision, gangplan.Decision) and len(decision.placed) == 9
