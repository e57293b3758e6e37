"""Every bundled example loads, schedules, and passes verify; the README's claims hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver import load_manifests, schedule

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").rglob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_schedules(path: Path) -> None:
    decision = schedule(load_manifests(str(path)))  # verified inside
    assert decision.placements


def test_volcano_example_counts_the_running_member() -> None:
    d = schedule(load_manifests(str(Path(EXAMPLES[0]).parent / "volcano.yaml")))
    assert d.podgroups["research/resnet"].placed
    assert len(d.placed) == 3


def test_godel_example_stays_pending_whole() -> None:
    d = schedule(load_manifests(str(Path(EXAMPLES[0]).parent / "godel.yaml")))
    assert d.placed == {} and not d.podgroups["default/nginx"].placed
