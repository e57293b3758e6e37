"""GPU shares in queue quotas, up the hierarchy: a fraction counts as its share (in milli-GPUs
under `nvidia.com/gpu-milli`), never 0 and never a whole device.

root
└── team      capability nvidia.com/gpu: 1   (1000 milli-GPUs)
    └── a     capability cpu: 64             (GPUs inherited from team)
gpu-4 [4 GPUs], plenty of room: only the quota limits.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from solver import solve, verify
from solver.config import SchedulerConf
from solver.decision import Placement
from solver.model import ClusterModel, gpu_milli, in_gpu_milli
from tests.builders import model, pod, queue
from tests.features.devices.test_sharing import ENGINES, gpu_node, koord_pod

QUEUE = "scheduling.volcano.sh/queue-name"


def kai(name: str, fraction: str) -> dict:
    return pod(name).requests(cpu="1").annotate("gpu-fraction", fraction).annotate(QUEUE, "a").obj()


def tree(*pods: dict) -> ClusterModel:
    return model(
        gpu_node("gpu-4", gpus=4),
        queue("team", capability={"nvidia.com/gpu": 1, "cpu": 64}),
        queue("a", "team", capability={"cpu": 64}),
        *pods,
    )


def test_share_in_milli_never_zero_never_whole() -> None:
    assert gpu_milli({}, {"gpu-fraction": "0.3"}) == (300, True)
    assert gpu_milli({"koordinator.sh/gpu-core": 50}, {}) == (500, True)
    assert gpu_milli({"nvidia.com/gpu": 2}, {}) == (2000, False)
    assert gpu_milli({}, {"gpu-memory": "8192"}) == (100, True)  # of an 80 GiB GPU
    assert gpu_milli({}, {"gpu-memory": "1"}) == (1, True)
    assert in_gpu_milli({"nvidia.com/gpu": 2, "cpu": 4000}, 2**62) == {
        "cpu": 4000,
        "nvidia.com/gpu-milli": 2000,
    }


def _run(cluster: ClusterModel, engine: str):
    conf = SchedulerConf.default()
    decision = solve(cluster, conf, engine=engine, workers=1, time_limit=5)
    assert verify(cluster, conf, decision) == []
    return decision


@pytest.mark.parametrize("engine", ENGINES)
def test_fractions_fill_an_ancestors_gpu_quota_by_their_share(engine: str) -> None:
    """4 × 0.3 GPU in queue a: team's 1 GPU holds three (900 milli), not four."""
    decision = _run(tree(*(kai(f"k{i}", "0.3") for i in range(4))), engine)
    assert len(decision.placed) == 3
    pending = next(p for p in decision.placements.values() if p.node is None)
    assert "nvidia.com/gpu-milli" in pending.reason


@pytest.mark.parametrize("engine", ENGINES)
def test_running_share_counts_against_the_quota(engine: str) -> None:
    """A running 50 % Koordinator pod in queue a holds 500 milli of team's 1000: one 0.3 pod
    fits (800), a second would not (1100)."""
    running = koord_pod("r", 50)
    running["metadata"].setdefault("annotations", {})[QUEUE] = "a"
    running["spec"]["nodeName"] = "gpu-4"
    running["status"] = {"phase": "Running"}
    running["metadata"]["annotations"]["scheduling.koordinator.sh/device-allocated"] = json.dumps(
        {
            "gpu": [
                {
                    "minor": 0,
                    "resources": {
                        "koordinator.sh/gpu-core": "50",
                        "koordinator.sh/gpu-memory-ratio": "50",
                    },
                }
            ]
        }
    )
    decision = _run(tree(running, kai("k0", "0.3"), kai("k1", "0.3")), engine)
    assert len(decision.placed) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_whole_gpu_pod_counts_a_thousand(engine: str) -> None:
    """A whole GPU (1000) beside a 0.3 share would be 1300 > 1000: only one of them."""
    whole = pod("w").requests(cpu="1", gpu=1).annotate(QUEUE, "a").obj()
    decision = _run(tree(whole, kai("k0", "0.3")), engine)
    assert len(decision.placed) == 1


def test_verify_rejects_shares_over_an_ancestors_quota() -> None:
    cluster = tree(*(kai(f"k{i}", "0.3") for i in range(4)))
    decision = solve(cluster, SchedulerConf.default(), engine="greedy")
    forged = {
        f"default/k{i}": Placement(node="gpu-4", devices=(i,), annotations={"runai-gpu": str(i)})
        for i in range(4)
    }
    problems = verify(
        cluster, SchedulerConf.default(), dataclasses.replace(decision, placements=forged)
    )
    assert any(
        "queue team: nvidia.com/gpu-milli allocated 0 + placed 1200 > realCapability 1000" in p
        for p in problems
    ), problems
