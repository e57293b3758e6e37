"""The GPU-hours of work a preemption loses: CP-SAT's cost after the victims' priority rank
(whole gangs once) and before the pods evicted; reported as `gpu_hours_lost`.

    n0 (8 GPUs): a-young (4 GPUs, created 1 h before T)   b-old (4 GPUs, created 10 h before T)
    pending:     urgent (4 GPUs, priority 100)

Both victims have priority 0. Koordinator's reprieve (priority ↓, job name, pod name) keeps
a-young and evicts b-old: 40 GPU-hours lost. CP-SAT evicts a-young: 4.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from solver import schedule
from solver.kube import load_objects
from tests.builders import node, pod, raw

T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def running(name: str, hours: float) -> dict[str, Any]:
    body = pod(name).requests(gpu=4).on("n0").priority(0).obj()
    body["metadata"]["creationTimestamp"] = (T - timedelta(hours=hours)).isoformat()
    return body


def cluster(**extra: Any) -> Any:
    objs = [
        node("n0").gpu(8).obj(),
        running("a-young", 1),
        running("b-old", 10),
        pod("urgent").requests(gpu=4).priority(100).obj(),
    ]
    return load_objects(raw(*objs)).model_copy(update={"observed": T.isoformat(), **extra})


@pytest.mark.parametrize(
    ("engine", "victim", "lost"), [("greedy", "b-old", 40), ("cpsat", "a-young", 4)]
)
def test_cpsat_evicts_the_younger_pod(engine: str, victim: str, lost: int) -> None:
    d = schedule(cluster(), engine=engine, workers=1, seed=0, preempt=True)  # verified
    assert [v.pod for v in d.victims] == [f"default/{victim}"]
    assert d.tiers["gpu_hours_lost"] == lost
    assert d.tiers["preemption_cost"] == 0 and d.tiers["evicted_pods"] == 1


def test_without_creation_times_nothing_is_counted() -> None:
    objs = [
        node("n0").gpu(8).obj(),
        pod("a-young").requests(gpu=4).on("n0").obj(),
        pod("b-old").requests(gpu=4).on("n0").obj(),
        pod("urgent").requests(gpu=4).priority(100).obj(),
    ]
    d = schedule(load_objects(raw(*objs)), engine="cpsat", workers=1, preempt=True)
    assert len(d.victims) == 1 and "gpu_hours_lost" not in d.tiers
