"""The device-share certificate (issue 40: "needs a GPU with 0.6 free on 3 devices; 2
exist"): a gang of sharing pods that too few devices can hold is proven unplaceable, in
words, by either engine; and a proof agrees with CP-SAT on the gang alone.

    gpu-a [GPU0 GPU1]   gpu-b [GPU0 GPU1]     (Koordinator gpu-core / gpu-memory-ratio)
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import schedule
from solver.config import SchedulerConf
from solver.model import ClusterModel
from tests.builders import model, podgroup
from tests.features.devices.test_sharing import gpu_node, koord_pod

ENGINES = ("greedy", "cpsat", "auto")


def gang(size: int, percent: int, need: int | None = None) -> list[dict[str, object]]:
    pods = [koord_pod(f"g-{i}", percent) for i in range(size)]
    for p in pods:
        p["metadata"]["labels"] = {"pod-group.scheduling.sigs.k8s.io": "g"}
    return [podgroup("g", need or size), *pods]


@pytest.mark.parametrize("engine", ENGINES)
def test_three_sixty_percent_pods_on_one_two_gpu_node_are_proven_out(engine: str) -> None:
    """1.2 GPUs of room, but only two devices with 0.6 free: node room cannot see it."""
    d = schedule(model(gpu_node("gpu-a"), *gang(3, 60)), engine=engine, workers=1, seed=0)
    assert not d.placed
    cert = d.certificates["default/g"]
    assert (cert.kind, cert.proven, cert.needed, cert.offered) == ("devices", True, 3, 2)
    assert cert.sentence == (
        "gang default/g needs 3 pods of 0.6 GPU (600 milli) each on one device; the devices "
        "with that share free take 2: gpu-a 2"
    )


def test_with_room_on_another_node_no_device_proof_is_claimed() -> None:
    d = schedule(model(gpu_node("gpu-a"), gpu_node("gpu-b"), *gang(3, 60)), engine="greedy")
    assert len(d.placed) == 3 and "default/g" not in d.certificates


@st.composite
def clusters(draw: st.DrawFn) -> ClusterModel:
    """Tight cases: as many sharing pods as about the cluster's devices, all required."""
    gpus = [draw(st.integers(1, 2)) for _ in range(draw(st.integers(1, 3)))]
    nodes = [gpu_node(f"gpu-{i}", g) for i, g in enumerate(gpus)]
    busy = [
        koord_pod(f"busy-{i}", draw(st.sampled_from([30, 50, 70])))
        for i in range(draw(st.integers(0, 1)))
    ]
    for p in busy:
        p["spec"]["nodeName"] = "gpu-0"
        p["status"] = {"phase": "Running"}
    size = max(1, sum(gpus) + draw(st.sampled_from([0, 1, 1, 1])))
    return model(*nodes, *busy, *gang(size, draw(st.sampled_from([40, 60, 70]))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_device_proof_agrees_with_cpsat(cluster: ClusterModel) -> None:
    greedy = schedule(cluster, engine="greedy", workers=1, seed=0)
    cert = greedy.certificates.get("default/g")
    if cert is None or cert.kind != "devices":
        return
    exact = schedule(
        cluster, SchedulerConf.default(), engine="cpsat", workers=1, seed=0, time_limit=5
    )
    assert not exact.podgroups["default/g"].placed, cert.sentence
