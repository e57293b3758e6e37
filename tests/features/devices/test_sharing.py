"""GPU sharing: devices, not the node's sum, hold fractional pods (issue 22).

gpu-2 [GPU0 GPU1] (Koordinator koordlet allocatable: gpu-core 200, gpu-memory-ratio 200)
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from solver import solve, verify
from solver.config import SchedulerConf
from solver.decision import Placement
from solver.model import ClusterModel
from tests.builders import model, node, pod

ENGINES = ("greedy", "cpsat")


def gpu_node(name: str, gpus: int = 2, memory_mib: int = 24576, **extra: Any) -> dict[str, Any]:
    b = (
        node(name)
        .cpu("64")
        .memory("256Gi")
        .gpu(gpus)
        .label("nvidia.com/gpu.memory", str(memory_mib))
    )
    b.alloc("koordinator.sh/gpu-core", str(100 * gpus))
    b.alloc("koordinator.sh/gpu-memory-ratio", str(100 * gpus))
    for k, v in extra.items():
        b.alloc(k, str(v))
    return b.obj()


def koord_pod(name: str, percent: int, **kw: Any) -> dict[str, Any]:
    """A Koordinator DeviceShare pod (koordinator docs `fine-grained-device-scheduling`)."""
    b = pod(name).requests(cpu="1")
    obj = b.obj()
    res = obj["spec"]["containers"][0]["resources"]["requests"]
    res["koordinator.sh/gpu-core"] = str(percent)
    res["koordinator.sh/gpu-memory-ratio"] = str(percent)
    for k, v in kw.items():
        res[k] = str(v)
    return obj


def run(cluster: ClusterModel, engine: str) -> Any:
    decision = solve(cluster, SchedulerConf.default(), engine=engine, time_limit=5, workers=1)
    assert verify(cluster, SchedulerConf.default(), decision) == []
    return decision


@pytest.mark.parametrize("engine", ENGINES)
def test_three_sixty_percent_pods_on_two_gpus_place_two(engine: str) -> None:
    """The aggregate (3 × 60 ≤ 200) hides that no GPU holds the third share."""
    cluster = model(gpu_node("gpu-2"), *(koord_pod(f"p{i}", 60) for i in range(3)))
    decision = run(cluster, engine)
    placed = decision.placed
    assert len(placed) == 2
    devices = sorted(decision.placements[k].devices for k in placed)
    assert devices == [(0,), (1,)]
    pending = next(p for p in decision.placements.values() if p.node is None)
    assert "1 node(s) had no GPU device with enough free share" in pending.reason


def test_oversubscribed_decision_is_rejected_by_verify() -> None:
    cluster = model(gpu_node("gpu-2"), *(koord_pod(f"p{i}", 60) for i in range(3)))
    decision = solve(cluster, SchedulerConf.default(), engine="greedy")
    forged = dict(decision.placements)
    for i in range(3):
        forged[f"default/p{i}"] = Placement(node="gpu-2", devices=(i % 2,))
    bad = dataclasses.replace(decision, placements=forged)
    problems = verify(cluster, SchedulerConf.default(), bad)
    assert any("GPU device 0 oversubscribed" in p for p in problems), problems
    unnamed = dict(forged)
    unnamed["default/p2"] = Placement(node="gpu-2")
    problems = verify(
        cluster, SchedulerConf.default(), dataclasses.replace(decision, placements=unnamed)
    )
    assert any("names none on gpu-2" in p for p in problems), problems


@pytest.mark.parametrize("engine", ENGINES)
def test_koordinator_annotation_written_as_device_allocated(engine: str) -> None:
    cluster = model(gpu_node("gpu-2"), koord_pod("p0", 50))
    decision = run(cluster, engine)
    written = json.loads(
        decision.placements["default/p0"].annotations["scheduling.koordinator.sh/device-allocated"]
    )
    gpu = written["gpu"]
    assert len(gpu) == 1 and gpu[0]["minor"] in (0, 1)
    assert gpu[0]["resources"] == {
        "koordinator.sh/gpu-core": "50",
        "koordinator.sh/gpu-memory": "12288Mi",
        "koordinator.sh/gpu-memory-ratio": "50",
    }
    patch = decision.to_dict()["patches"][0]
    assert patch["pod"] == "default/p0" and "metadata" in patch


@pytest.mark.parametrize("engine", ENGINES)
def test_running_shares_recorded_in_device_allocated_are_respected(engine: str) -> None:
    """GPU0 holds 70 % (running, annotated minor 0): a 50 % pod must go to GPU1."""
    running = koord_pod("r0", 70)
    running["spec"]["nodeName"] = "gpu-2"
    running["status"] = {"phase": "Running"}
    running["metadata"].setdefault("annotations", {})[
        "scheduling.koordinator.sh/device-allocated"
    ] = json.dumps(
        {
            "gpu": [
                {
                    "minor": 0,
                    "resources": {
                        "koordinator.sh/gpu-core": "70",
                        "koordinator.sh/gpu-memory-ratio": "70",
                    },
                }
            ]
        }
    )
    cluster = model(gpu_node("gpu-2"), running, koord_pod("p0", 50), koord_pod("p1", 30))
    decision = run(cluster, engine)
    assert decision.placements["default/p0"].devices == (1,)
    assert decision.placements["default/p1"].node == "gpu-2"


@pytest.mark.parametrize("engine", ENGINES)
def test_fractional_whole_and_mig_on_one_node(engine: str) -> None:
    """4 GPUs + 2 MIG slices: a 2-GPU pod takes two fully free devices; three 40 % pods
    share the other two; a MIG pod uses a slice (a resource of its own)."""
    n = gpu_node("gpu-4", gpus=4, **{"nvidia.com/mig-1g.10gb": 2})
    whole = pod("whole").requests(cpu="1", gpu=2).obj()
    mig = pod("mig").requests(cpu="1").obj()
    mig["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/mig-1g.10gb"] = "1"
    shares = [koord_pod(f"s{i}", 40) for i in range(3)]
    cluster = model(n, whole, mig, *shares)
    decision = run(cluster, engine)
    assert len(decision.placed) == 5
    whole_devices = set(decision.placements["default/whole"].devices)
    share_devices = {d for i in range(3) for d in decision.placements[f"default/s{i}"].devices}
    assert len(whole_devices) == 2 and not whole_devices & share_devices
    assert len(share_devices) == 2


def test_invalid_koordinator_percent_fits_no_node() -> None:
    cluster = model(gpu_node("gpu-2"), koord_pod("bad", 150))
    decision = run(cluster, "greedy")
    assert decision.placements["default/bad"].node is None
    assert "invalid GPU share request" in decision.placements["default/bad"].reason


@pytest.mark.parametrize("engine", ENGINES)
def test_whole_gpus_asked_by_annotation_alone_are_placed_on_devices(engine: str) -> None:
    """openb whole-GPU pods (`gpu-milli: 1000`) request no resource: with no fraction in
    play they still take devices — three of them on two GPUs place two (the bug the
    online replay found: their use was invisible, so every node looked empty)."""
    pods = [
        pod(f"w{i}")
        .requests(cpu="1")
        .annotate("alibabacloud.com/gpu-milli", "1000")
        .annotate("alibabacloud.com/gpu-count", "1")
        .obj()
        for i in range(3)
    ]
    decision = run(model(gpu_node("gpu-2"), *pods), engine)
    assert sorted(decision.placements[k].devices for k in decision.placed) == [(0,), (1,)]
