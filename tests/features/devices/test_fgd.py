"""FGD in the greedy (`deviceshare.SchedulePolicy: fgd`), against best fit; and FGD's measure
as the openb benchmark uses it (`benchmarks/openb/replay.py` imports `fgd.py`).

Target workload: pods of 0.5 GPU. A 0.2 pod next to a device with 0.6 free: best fit puts
it there (0.4 left: too little for a 0.5 pod — 400 milli of fragment); FGD puts it on a
fully free device (0.8 left still takes a 0.5 pod: no fragment).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solver import solve, verify
from solver.config import PluginConf, SchedulerConf, TierConf
from solver.features.devices.fgd import popular_shapes, target_workload
from solver.model import ClusterModel
from tests.builders import model, pod
from tests.builders import node as node_builder
from tests.features.devices.test_sharing import gpu_node

TARGET = [{"cpu": 1000, "gpuMilli": 500, "gpus": 1, "count": 10}]


def conf(policy: str | None) -> SchedulerConf:
    args: dict[str, Any] = {"deviceshare.fgd.targetWorkload": TARGET}
    if policy:
        args["deviceshare.SchedulePolicy"] = policy
    plugins = [
        PluginConf(name="predicates"),
        PluginConf(name="gang"),
        PluginConf(name="binpack"),
        PluginConf.model_validate({"name": "deviceshare", "arguments": args}),
    ]
    return SchedulerConf(tiers=(TierConf(plugins=plugins),))


def openb(name: str, milli: int, on: str | None = None, index: int = 0) -> dict[str, Any]:
    b = pod(name).requests(cpu="1").annotate("alibabacloud.com/gpu-milli", str(milli))
    if on:
        b.annotate("alibabacloud.com/gpu-index", str(index)).on(on)
    return b.obj()


def _run(cluster: ClusterModel, policy: str | None) -> Any:
    c = conf(policy)
    decision = solve(cluster, c, engine="greedy")
    assert verify(cluster, c, decision) == []
    return decision


@pytest.mark.parametrize(("policy", "device"), [(None, 0), ("binpack", 0), ("fgd", 1)])
def test_fgd_keeps_room_for_the_target_shape_on_a_node(policy: str | None, device: int) -> None:
    cluster = model(gpu_node("g"), openb("r", 400, on="g", index=0), openb("p", 200))
    assert _run(cluster, policy).placements["default/p"].devices == (device,)


@pytest.mark.parametrize(("policy", "node"), [("binpack", "a"), ("fgd", "b")])
def test_fgd_chooses_the_node_that_fragments_least(policy: str, node: str) -> None:
    cluster = model(
        gpu_node("a", gpus=1), gpu_node("b", gpus=1), openb("r", 400, on="a"), openb("p", 200)
    )
    assert _run(cluster, policy).placements["default/p"].node == node


def test_fragmentation_measure_by_hand() -> None:
    """Shapes 0.5 GPU (×3) and CPU-only (×1); a node with devices at 600 and 300 milli free:
    F = 3 × 300 (the 300 device cannot take 0.5) + 1 × 900 (CPU-only: all free GPU)."""
    shapes, counts = popular_shapes({(1000, 500, 1, ""): 3, (1000, 0, 0, ""): 1}, 100.0)
    target = target_workload(shapes, counts, ["gpu"])
    frag = target.fragmentation(
        np.array([8000]), np.array([[600, 300, -1]]), np.array([0], dtype=np.int64)
    )
    assert frag.tolist() == [3 * 300 + 900]
    assert target.norm == 4


@pytest.mark.parametrize(("policy", "node"), [("binpack", "a"), ("fgd", "b")])
def test_fgd_keeps_cpu_beside_free_gpus(policy: str, node: str) -> None:
    """A CPU-only pod of 1.5 cpu on 2-cpu nodes: on a it would leave 0.5 cpu beside a free
    GPU no 1-cpu target pod can use (1000 milli of fragment); b's GPU is taken anyway.
    binpack prefers a (a running CPU pod makes it fuller); FGD prefers b."""
    a = node_obj("a")
    b = node_obj("b")
    cpu_pod = pod("c-run").requests(cpu="100m").on("a").obj()
    gpu_pod = openb("g-run", 1000, on="b")
    gpu_pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m"
    pending = pod("p").requests(cpu="1500m").obj()
    decision = _run(model(a, b, cpu_pod, gpu_pod, pending), policy)
    assert decision.placements["default/p"].node == node


def node_obj(name: str) -> dict[str, Any]:
    return node_builder(name).cpu("2").memory("16Gi").gpu(1).obj()


def _fragmentation_of_one_node(
    shapes: list[tuple[int, int, int, str]],
    counts: list[int],
    models: list[str],
    cpu: int,
    dev: list[int],
    model: int,
) -> int:
    """F × norm of one node, straight from the definition: per shape, the free milli it
    cannot use (all of it where the shape does not fit the node)."""
    free = [d for d in dev if d > 0]
    total = sum(free)
    out = 0
    for (shape_cpu, milli, gpus, spec), count in zip(shapes, counts, strict=True):
        usable_model = model >= 0 and (not spec or models[model] in spec.split("|"))
        fits = (
            gpus > 0
            and usable_model
            and cpu >= shape_cpu
            and sum(d >= milli for d in dev if d >= 0) >= gpus
        )
        out += count * (sum(d for d in free if d < milli) if fits else total)
    return out


def test_fragmentation_per_model_matches_the_definition() -> None:
    """The vectorised measure (per GPU model, equal shapes merged) against the definition,
    node by node, on random node states: shapes restricted to models, several GPUs, cpu."""
    rng = np.random.default_rng(7)
    models = ["", "A", "B", "C"]
    specs = ["", "A", "B|C", "C", "A|B|C"]
    shapes = [
        (int(rng.integers(0, 9)) * 1000, int(rng.integers(1, 11)) * 100, int(gpus), spec)
        for gpus, spec in zip(rng.integers(0, 4, 40), rng.choice(specs, 40), strict=True)
    ]
    shapes = [(c, m if k else 0, k, s if k else "") for c, m, k, s in shapes]
    counts = [int(c) for c in rng.integers(1, 50, len(shapes))]
    target = target_workload(shapes, counts, models)
    nodes = 300
    cpu = rng.integers(0, 9, nodes) * 1000
    dev = np.where(rng.random((nodes, 8)) < 0.7, rng.integers(0, 11, (nodes, 8)) * 100, -1)
    model = rng.integers(-1, len(models), nodes)
    got = target.fragmentation(cpu, dev, model)
    want = [
        _fragmentation_of_one_node(
            shapes, counts, models, int(cpu[n]), dev[n].tolist(), int(model[n])
        )
        for n in range(nodes)
    ]
    assert got.tolist() == want
