"""kube-scheduler's InterPodAffinity and PodTopologySpread score cases, translated: the
node kube-scheduler scores highest is where each engine puts the pod (scores weighted by
Volcano's nodeorder, podaffinity.weight / podtopologyspread.weight 2)."""

from __future__ import annotations

from typing import Any

import pytest

from solver.config import SchedulerConf
from solver.schedule import schedule
from tests.builders import PodBuilder, model, node, pod


def run(objects: list[dict[str, Any]], incoming: PodBuilder, engine: str) -> str | None:
    d = schedule(model(*objects, incoming.obj()), SchedulerConf.default(), engine=engine, workers=1)
    return d.placements["default/incoming"].node


def regions() -> list[dict[str, Any]]:
    return [
        node("node1").label("region", "China").obj(),
        node("node2").label("region", "India").obj(),
        node("node3").label("az", "az1").obj(),
    ]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_preferred_affinity_pulls_toward_matching_pods(engine: str) -> None:
    # TestPreferredAffinity: "Affinity: pod that matches topology key & pods in nodes will
    # get high score comparing to others which doesn't match" (existing pod moved to node2,
    # so name order alone would not find it)
    existing = pod("e").label("security", "S1").requests(cpu="100m").on("node2").obj()
    filler = pod("filler").requests(cpu="4").on("node1").obj()  # binpack would pick node1
    incoming = pod("incoming").pod_affinity("region", weight=5, security="S1")
    assert run([*regions(), existing, filler], incoming, engine) == "node2"


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_preferred_anti_affinity_pushes_away(engine: str) -> None:
    # TestPreferredAffinity: "Anti Affinity: pod that matches topology key & pods in nodes
    # will get low score comparing to others which doesn't match"
    existing = pod("e").label("security", "S1").on("node1").obj()
    incoming = pod("incoming").pod_affinity("region", anti=True, weight=5, security="S1")
    assert run([*regions()[:2], existing], incoming, engine) == "node2"


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_existing_pods_required_affinity_scores_the_incoming_pod(engine: str) -> None:
    # TestPreferredAffinity: "Affinity symmetry: considered only the preferredDuringScheduling
    # in pod affinity symmetry" / hardPodAffinityWeight: a running pod's required affinity
    # selecting the incoming pod scores its domain
    existing = pod("e").requests(cpu="100m").on("node2").pod_affinity("region", security="S1").obj()
    filler = pod("filler").requests(cpu="4").on("node1").obj()  # binpack would pick node1
    incoming = pod("incoming").label("security", "S1")
    assert run([*regions(), existing, filler], incoming, engine) == "node2"


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_schedule_anyway_spread_prefers_the_emptiest_node(engine: str) -> None:
    # TestPodTopologySpreadScore: "one constraint on node, all 4 nodes are candidates"
    # (matching pods 2/1/0/3 on node-a/b/x/y: node-x scores 100)
    nodes = [
        node(n).label("kubernetes.io/hostname", n).obj()
        for n in ("node-a", "node-b", "node-x", "node-y")
    ]
    counts = {"node-a": 2, "node-b": 1, "node-y": 3}
    existing = [
        pod(f"p-{n}-{i}").label("foo", "").on(n).obj() for n, k in counts.items() for i in range(k)
    ]
    incoming = (
        pod("incoming")
        .label("foo", "")
        .spread("kubernetes.io/hostname", 1, when="ScheduleAnyway", foo="")
    )
    assert run([*nodes, *existing], incoming, engine) == "node-x"
