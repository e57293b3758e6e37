"""Mixed topology dialects in one cluster, and CP-SAT against the greedy on random HyperNode
trees (verify as the oracle: `schedule` verifies every Decision)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.builders import BLOCK, SPINE, gather, node, pod, podgroup, spine_block_topology
from tests.features.topology.hypernode.fixtures import conf, hypernode, run, task, vc_group


def _mixed(spec_on_volcano_job: bool) -> list[dict[str, Any]]:
    """Koordinator layers (spine/block labels) and HyperNodes over the same 4 nodes; a
    Koordinator gang (MustGather BlockLayer) and a Volcano hard job (tier 1)."""
    nodes = [
        node(n).cpu("4").memory("8Gi").pods(10).label(SPINE, "s").label(BLOCK, b).obj()
        for n, b in (("a1", "b1"), ("a2", "b1"), ("b1", "b2"), ("b2", "b2"))
    ]
    koord = podgroup("k", 2, **gather(("BlockLayer", "MustGather")))
    volcano = vc_group("v", 2, "hard", 1, namespace="default")
    if spec_on_volcano_job:
        volcano["metadata"]["annotations"] = gather(("BlockLayer", "MustGather"))
    return [
        *nodes,
        spine_block_topology(),
        hypernode("h1", 1, regex="^a"),
        hypernode("h2", 1, regex="^b"),
        koord,
        volcano,
        *(pod(f"k{i}").group("k").requests(cpu="2").obj() for i in range(2)),
        *(
            pod(f"v{i}").annotate("scheduling.k8s.io/group-name", "v").requests(cpu="2").obj()
            for i in range(2)
        ),
    ]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_koordinator_and_volcano_gangs_share_a_cluster(engine: str) -> None:
    decision = run(_mixed(False), engine)
    placed = decision.placed
    assert len(placed) == 4
    assert len({placed[f"default/k{i}"][0] for i in range(2)}) == 1  # one block
    assert len({placed[f"default/v{i}"][0] for i in range(2)}) == 1  # one HyperNode


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_gang_with_both_dialects_is_refused_with_a_clear_reason(engine: str) -> None:
    decision = run(_mixed(True), engine)
    assert "the two rules conflict" in decision.podgroups["default/v"].reason
    assert not any(k.startswith("default/v") for k in decision.placed)


def _random_instance(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    racks = rng.randint(2, 4)
    per = rng.randint(1, 3)
    names = [f"r{r}-n{i}" for r in range(racks) for i in range(per)]
    objs: list[dict[str, Any]] = [
        node(n).cpu(str(rng.choice([2, 4]))).memory("8Gi").pods(10).obj() for n in names
    ]
    objs += [hypernode(f"r{r}", 1, regex=f"^r{r}-") for r in range(racks)]
    half = racks // 2
    objs += [
        hypernode("sp0", 2, children=tuple(f"r{r}" for r in range(half))),
        hypernode("sp1", 2, children=tuple(f"r{r}" for r in range(half, racks))),
    ]
    for j in range(rng.randint(1, 3)):
        size = rng.randint(1, 4)
        mode = rng.choice(["hard", "soft"])
        objs.append(vc_group(f"j{j}", size, mode, rng.choice([1, 2])))
        objs += [task(f"j{j}-{i}", f"j{j}", str(rng.choice([1, 2])), "1Gi") for i in range(size)]
    for i in range(rng.randint(0, 3)):
        objs.append(pod(f"run-{i}", "c1").requests(cpu="1").on(rng.choice(names)).obj())
    return objs


@pytest.mark.parametrize("seed", range(12))
def test_cpsat_is_never_worse_than_the_greedy(seed: int) -> None:
    objects = _random_instance(seed)
    greedy = run(objects, "greedy", conf("binpack"))
    cpsat = run(objects, "cpsat", conf("binpack"))
    assert cpsat.objective >= greedy.objective
