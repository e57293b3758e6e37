"""Sub-groups on random small clusters: both engines' answers pass `verify` on their own (no
fallback), CP-SAT never places fewer gangs or pods than the greedy, and a proven
certificate agrees with CP-SAT placing nothing.

    zone z1 ─┬─ rack r1: 1-3 nodes      zone z2 ─┬─ rack r3: 1-3 nodes
             └─ rack r2: 1-3 nodes               └─ rack r4: 1-3 nodes
    (1-4 GPUs a node, some taken by running pods)
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, schedule
from solver.model import ClusterModel, TopologySubGroup
from tests.builders import model, node, pod, podgroup

LABEL = "kai.scheduler/subgroup-name"
ZONE, RACK = "topology/zone", "topology/rack"
RACKS = {"r1": "z1", "r2": "z1", "r3": "z2", "r4": "z2"}


@st.composite
def clusters(draw: st.DrawFn) -> ClusterModel:
    objects: list[dict[str, Any]] = []
    for rack, zone in RACKS.items():
        for i in range(draw(st.integers(1, 3))):
            name = f"{rack}-{i}"
            gpus = draw(st.integers(1, 4))
            objects.append(node(name).gpu(gpus).label(ZONE, zone).label(RACK, rack).obj())
            busy = draw(st.integers(0, gpus))
            if busy:
                objects.append(pod(f"busy-{name}").requests(gpu=busy).on(name).obj())
    leaves = [f"l{i}" for i in range(draw(st.integers(1, 3)))]
    counts = {leaf: draw(st.integers(1, 3)) for leaf in leaves}
    pods = [
        pod(f"{leaf}-{i}").group("job").label(LABEL, leaf).requests(gpu=draw(st.integers(1, 2)))
        for leaf in leaves
        for i in range(counts[leaf])
    ]
    objects += [p.obj() for p in pods]
    total = sum(counts.values())
    elastic = draw(st.booleans())
    objects.append(podgroup("job", draw(st.integers(1, total)) if elastic else total))
    cluster = model(*objects)
    subs: list[TopologySubGroup] = []
    if len(leaves) > 1 and draw(st.booleans()):  # a parent over the first two leaves
        level = draw(st.sampled_from([(ZONE,), (ZONE, RACK)]))
        subs.append(
            TopologySubGroup(name="parent", label=LABEL, values=tuple(leaves[:2]), levels=level)
        )
    for leaf in leaves:
        levels = (ZONE, RACK) if draw(st.booleans()) else ()
        minimum = draw(st.integers(0, counts[leaf])) if elastic else 0
        if levels or minimum:
            subs.append(
                TopologySubGroup(
                    name=leaf, label=LABEL, values=(leaf,), levels=levels, min_member=minimum
                )
            )
    gang = cluster.gangs["default/job"].model_copy(
        update={
            "topology_sub_groups": tuple(subs),
            "topology_key": draw(st.sampled_from([None, ZONE])),
        }
    )
    return cluster.model_copy(update={"gangs": {**cluster.gangs, gang.id: gang}})


def _check(cluster: ClusterModel) -> None:
    answers = {}
    for engine in ("greedy", "cpsat"):
        d = schedule(
            cluster, SchedulerConf.default(), engine=engine, workers=1, seed=0, time_limit=5
        )
        assert not d.stats.get("verify_fallback"), (engine, d.notes)
        answers[engine] = d
    greedy, cpsat = answers["greedy"], answers["cpsat"]
    score = [
        (d.tiers.get("placed_groups", 0), d.tiers.get("placed_pods", 0)) for d in (greedy, cpsat)
    ]
    assert score[1] >= score[0], score
    cert = greedy.certificates.get("default/job")
    if cert is not None and cert.proven and cert.kind == "domain":
        assert not cpsat.podgroups["default/job"].placed, cert.sentence


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_sub_groups_on_random_clusters(cluster: ClusterModel) -> None:
    _check(cluster)


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_sub_groups_on_random_clusters_long(cluster: ClusterModel) -> None:
    _check(cluster)
