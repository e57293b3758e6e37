"""Each sharing dialect's requests and annotations, read and written as its device plugin
expects; and random fractional pods on random multi-GPU nodes through both engines.

Sources (see `solver/model/_devices.py`):
* Koordinator: `apis/extension/device_share.go` (`AnnotationDeviceAllocated`), docs
  `fine-grained-device-scheduling` (the `device-allocated` example values used below);
* KAI: run-ai/fake-gpu-operator `internal/status-updater/common/constants/constants.go`
  (`GpuIdxAnnotation = "runai-gpu"`, `GpuFractionAnnotation = "gpu-fraction"`);
* openb: hkust-adsl/kubernetes-scheduler-simulator `pkg/utils/const.go` (`ResourceName =
  "alibabacloud.com/gpu-milli"`, `CountName`, `DeviceIndex = "alibabacloud.com/gpu-index"`);
* Volcano/HAMi vGPU: volcano `pkg/scheduler/api/devices/nvidia/vgpu` (`volcano.sh/vgpu-number`,
  `vgpu-memory`, `vgpu-cores`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, solve, verify
from solver.model import (
    ClusterModel,
    DeviceDemand,
    DeviceError,
    DeviceUse,
    allocated_devices,
    assignment_annotations,
    device_demand,
)
from tests.builders import model, pod
from tests.features.devices.test_sharing import ENGINES, gpu_node, run

GIB = 1 << 30

DEMANDS = [
    # (case, requests, annotations, expected)
    (
        "koordinator half",
        {"koordinator.sh/gpu-core": 50, "koordinator.sh/gpu-memory-ratio": 50},
        {},
        DeviceDemand("koordinator", 1, 500, 500),
    ),
    (
        "koordinator two whole",
        {"koordinator.sh/gpu-core": 200, "koordinator.sh/gpu-memory-ratio": 200},
        {},
        DeviceDemand("koordinator", 2, 1000, 1000),
    ),
    (
        "koordinator core + memory bytes",
        {"koordinator.sh/gpu-core": 25, "koordinator.sh/gpu-memory": 8 * GIB},
        {},
        DeviceDemand("koordinator", 1, 250, 0, 8192),
    ),
    (
        "koordinator shorthand",
        {"koordinator.sh/gpu": 30},
        {},
        DeviceDemand("koordinator", 1, 300, 300),
    ),
    (
        "hami",
        {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 3000, "volcano.sh/vgpu-cores": 25},
        {},
        DeviceDemand("hami", 2, 250, 0, 3000),
    ),
    (
        "hami memory unset: the whole memory",
        {"volcano.sh/vgpu-number": 1},
        {},
        DeviceDemand("hami", 1, 0, 1000),
    ),
    ("kai fraction", {}, {"gpu-fraction": "0.5"}, DeviceDemand("kai", 1, 500, 500)),
    (
        "kai fraction two devices",
        {},
        {"gpu-fraction": "0.25", "gpu-fraction-num-devices": "2"},
        DeviceDemand("kai", 2, 250, 250),
    ),
    ("kai memory", {}, {"gpu-memory": "2000"}, DeviceDemand("kai", 1, 0, 0, 2000)),
    (
        "openb",
        {},
        {"alibabacloud.com/gpu-milli": "300", "alibabacloud.com/gpu-count": "1"},
        DeviceDemand("openb", 1, 300, 300),
    ),
    ("whole", {"nvidia.com/gpu": 2}, {}, DeviceDemand("whole", 2, 1000, 1000)),
    ("cpu only", {"cpu": 1000}, {}, None),
]


@pytest.mark.parametrize(
    ("case", "requests", "annotations", "expected"), DEMANDS, ids=[d[0] for d in DEMANDS]
)
def test_demand_per_dialect(
    case: str, requests: dict[str, int], annotations: dict[str, str], expected: Any
) -> None:
    assert device_demand(requests, annotations) == expected


@pytest.mark.parametrize(
    ("requests", "annotations", "message"),
    [
        ({"koordinator.sh/gpu-core": 150}, {}, "multiple of 100"),
        ({"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-cores": 120}, {}, "above 100"),
        ({}, {"gpu-fraction": "1.5"}, "(0, 1]"),
        ({}, {"gpu-fraction": "half"}, "not a number"),
        ({}, {"alibabacloud.com/gpu-milli": "1500"}, "above 1000"),
    ],
)
def test_invalid_requests_are_named(
    requests: dict[str, int], annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(DeviceError, match=message.replace("(", r"\(").replace("]", r"\]")):
        device_demand(requests, annotations)


def test_koordinator_device_allocated_read_as_upstream_writes_it() -> None:
    """The docs' example: `{"gpu":[{"minor":1,"resources":{"koordinator.sh/gpu-core":"50",
    "koordinator.sh/gpu-memory":"11520Mi","koordinator.sh/gpu-memory-ratio":"50"}}]}`."""
    text = json.dumps(
        {
            "gpu": [
                {
                    "minor": 1,
                    "resources": {
                        "koordinator.sh/gpu-core": "50",
                        "koordinator.sh/gpu-memory": "11520Mi",
                        "koordinator.sh/gpu-memory-ratio": "50",
                    },
                }
            ]
        }
    )
    assert allocated_devices({"scheduling.koordinator.sh/device-allocated": text}) == (
        DeviceUse(1, 500, 500, 0),
    )
    written = assignment_annotations(DeviceDemand("koordinator", 1, 500, 500), (1,), 23040)
    assert json.loads(written["scheduling.koordinator.sh/device-allocated"]) == json.loads(text)


def test_kai_and_openb_indices_round_trip() -> None:
    kai = DeviceDemand("kai", 1, 500, 500)
    assert assignment_annotations(kai, (3,), 0) == {"runai-gpu": "3"}
    assert allocated_devices({"gpu-fraction": "0.5", "runai-gpu": "3"}) == (DeviceUse(3, 500, 500),)
    openb = DeviceDemand("openb", 2, 1000, 1000)
    assert assignment_annotations(openb, (0, 2), 0) == {"alibabacloud.com/gpu-index": "0-2"}
    assert allocated_devices(
        {
            "alibabacloud.com/gpu-milli": "1000",
            "alibabacloud.com/gpu-count": "2",
            "alibabacloud.com/gpu-index": "0-2",
        }
    ) == (DeviceUse(0, 1000, 1000), DeviceUse(2, 1000, 1000))
    assert allocated_devices({"scheduling.koordinator.sh/device-allocated": "{not json"}) is None


@pytest.mark.parametrize("engine", ENGINES)
def test_kai_fractions_share_a_gpu_and_running_index_is_respected(engine: str) -> None:
    """GPU1 runs a 0.7 KAI pod (`runai-gpu: "1"`): two 0.5 pods share GPU0."""
    running = pod("r").requests(cpu="1").annotate("gpu-fraction", "0.7").annotate("runai-gpu", "1")
    running = running.on("gpu-2")
    pending = [
        pod(f"k{i}").requests(cpu="1").annotate("gpu-fraction", "0.5").obj() for i in range(3)
    ]
    cluster = model(gpu_node("gpu-2"), running.obj(), *pending)
    decision = run(cluster, engine)
    assert len(decision.placed) == 2
    for key in decision.placed:
        assert decision.placements[key].annotations == {"runai-gpu": "0"}


@pytest.mark.parametrize("engine", ENGINES)
def test_hami_vgpu_pods_on_distinct_devices(engine: str) -> None:
    """vgpu-number 2 takes two distinct GPUs; the annotation (device UUIDs) is not written."""
    n = gpu_node(
        "gpu-2",
        **{
            "volcano.sh/vgpu-number": 20,
            "volcano.sh/vgpu-memory": 49152,
            "volcano.sh/vgpu-cores": 200,
        },
    )
    p = pod("h").requests(cpu="1").obj()
    p["spec"]["containers"][0]["resources"]["requests"].update(
        {
            "volcano.sh/vgpu-number": "2",
            "volcano.sh/vgpu-memory": "20000",
            "volcano.sh/vgpu-cores": "60",
        }
    )
    q = pod("h2").requests(cpu="1").obj()
    q["spec"]["containers"][0]["resources"]["requests"].update(
        {
            "volcano.sh/vgpu-number": "1",
            "volcano.sh/vgpu-memory": "8000",
            "volcano.sh/vgpu-cores": "50",
        }
    )
    decision = run(model(n, p, q), engine)
    assert decision.placements["default/h"].devices == (0, 1)
    assert decision.placements["default/h"].annotations == {}
    assert decision.placements["default/h2"].node is None  # 60 + 50 > 100 on both GPUs


@st.composite
def clusters(draw: st.DrawFn) -> ClusterModel:
    objects: list[dict[str, Any]] = []
    names = [f"n{i}" for i in range(draw(st.integers(1, 4)))]
    for name in names:
        objects.append(gpu_node(name, gpus=draw(st.integers(1, 4))))
    for i in range(draw(st.integers(0, 3))):
        r = pod(f"run-{i}").requests(cpu="1").on(draw(st.sampled_from(names)))
        milli = draw(st.sampled_from([200, 500, 700]))
        r.annotate("alibabacloud.com/gpu-milli", str(milli)).annotate(
            "alibabacloud.com/gpu-index", "0"
        )
        objects.append(r.obj())
    for i in range(draw(st.integers(1, 10))):
        p = pod(f"p{i}").requests(cpu="1")
        kind = draw(st.sampled_from(["openb", "kai", "whole"]))
        if kind == "openb":
            p.annotate(
                "alibabacloud.com/gpu-milli", str(draw(st.sampled_from([100, 250, 400, 600, 800])))
            )
        elif kind == "kai":
            p.annotate("gpu-fraction", draw(st.sampled_from(["0.3", "0.5", "0.75"])))
        else:
            p.requests(cpu="1", gpu=draw(st.integers(1, 2)))
        objects.append(p.obj())
    return model(*objects)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_both_engines_pass_verify_and_cpsat_is_never_worse(cluster: ClusterModel) -> None:
    conf = SchedulerConf.default()
    greedy = solve(cluster, conf, engine="greedy")
    assert verify(cluster, conf, greedy) == []
    exact = solve(cluster, conf, engine="cpsat", workers=1, seed=0, time_limit=5)
    assert verify(cluster, conf, exact) == []
    assert exact.objective >= greedy.objective


def test_cpsat_beats_best_fit_and_names_its_devices() -> None:
    """Two GPUs; pods a0, a1 of 0.4 and b0, b1 of 0.6, placed in key order. Best fit stacks
    a0 and a1 on GPU0 (0.2 left), b0 on GPU1 (0.4 left): b1 fits nowhere. CP-SAT pairs a 0.4
    with a 0.6 on each GPU and places all four — on devices verify accepts."""
    n = gpu_node("gpu-2")
    pods = [
        pod(name).requests(cpu="1").annotate("alibabacloud.com/gpu-milli", milli).obj()
        for name, milli in (("a0", "400"), ("a1", "400"), ("b0", "600"), ("b1", "600"))
    ]
    greedy = run(model(n, *pods), "greedy")
    assert len(greedy.placed) == 3
    exact = run(model(n, *pods), "cpsat")
    assert len(exact.placed) == 4
    pairs = sorted(
        tuple(sorted(k for k in exact.placed if exact.placements[k].devices == (d,)))
        for d in (0, 1)
    )
    assert [len(p) for p in pairs] == [2, 2]
    assert all({k[8] for k in p} == {"a", "b"} for p in pairs)
