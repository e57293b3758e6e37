"""KAI's queue order, translated from upstream's own table.

Source: NVIDIA/KAI-Scheduler `pkg/scheduler/plugins/proportion/queue_order/
queue_order_test.go` (`TestGetQueueOrderResult`), one row per test Name. Each queue is
given on GPUs only (CPU and memory zero, as upstream's `ResourceShare{}`); a job asks the
GPUs upstream's GPU-memory tasks amount to (devices × memory / minNodeGPUMemory).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from solver.features.kaishare import KaiOrder
from solver.features.queues import ROOT, QueueInfo, QueueTree
from solver.model import KaiQuota, Queue

GPU = "nvidia.com/gpu"
L, R = -1, 1  # lQueuePrioritized, rQueuePrioritized


@dataclass
class Side:
    deserved: float
    fair: float
    allocated: float
    priority: int = 0
    job: float = 0.0  # GPUs the job asks


class Numbers:
    """The parts of `KaiMode` the order reads, given directly."""

    def __init__(self, sides: Mapping[str, Side]) -> None:
        self.sides = sides
        self.fair = {n: {"cpu": 0.0, "memory": 0.0, GPU: s.fair} for n, s in sides.items()}

    def from_dims(self, amounts: Mapping[str, int]) -> dict[str, float]:
        return {r: float(amounts.get(r, 0)) for r in ("cpu", "memory", GPU)}

    def kai_numbers(self, tree: QueueTree, name: str, field: str) -> dict[str, float]:
        side = self.sides[name]
        gpu = {"quota": side.deserved, "limit": -1.0, "over_quota_weight": 1.0}[field]
        other = -1.0 if field == "limit" else 0.0
        return {"cpu": other, "memory": other, GPU: gpu}


def order(left: Side, right: Side, total: float = 0.0) -> int:
    sides = {"lQueue": left, "rQueue": right}
    queues = {ROOT: QueueInfo(name=ROOT, parent=None, children=["lQueue", "rQueue"],
                              capability={GPU: int(total)})}  # fmt: skip
    for name, side in sides.items():
        spec = Queue(name=name, priority=side.priority, kai=KaiQuota())
        queues[name] = QueueInfo(
            name=name, parent=ROOT, ancestors=[ROOT], priority=side.priority, spec=spec,
            allocated={GPU: int(side.allocated)},
        )  # fmt: skip
    tree = QueueTree(queues=queues, hierarchical=True)
    return KaiOrder(Numbers(sides), tree).compare(  # type: ignore[arg-type]
        "lQueue", "rQueue", {GPU: left.job}, {GPU: right.job}
    )


ROWS = [
    ("test prioritization based on fair share starvation",
     Side(2, 99, 20), Side(2, 2, 0), 0.0, R),
    ("test prioritization based on quota starvation, even if priority is different",
     Side(2, 99, 20, priority=1), Side(2, 2, 0), 0.0, R),
    ("prioritize queue priority if queues are satisfied",
     Side(2, 99, 20, priority=1), Side(2, 2, 3), 0.0, L),
    ("prioritize queue priority if queues are satisfied, quota < rQueue < fairshare",
     Side(2, 99, 20, priority=1), Side(2, 80, 3), 0.0, L),
    ("GPU memory affects queue order - lower memory request prioritized",
     Side(50, 50, 40, job=2 * 5000 / 10000), Side(50, 50, 40, job=2 * 10000 / 10000), 100.0, L),
    ("GPU memory affects queue order - higher memory request deprioritized",
     Side(50, 50, 40, job=4 * 8000 / 10000), Side(50, 50, 40, job=4 * 2000 / 10000), 100.0, R),
]  # fmt: skip


@pytest.mark.parametrize(("name", "left", "right", "total", "want"), ROWS, ids=[r[0] for r in ROWS])
def test_upstream_queue_order(name: str, left: Side, right: Side, total: float, want: int) -> None:
    assert order(left, right, total) == want
    assert order(right, left, total) == -want  # the same pair the other way round
