"""proportion where it meets the other policies: a gathered gang, priority preemption.

s0 ── b0: n0 n1      s1 ── b1: n2 n3        4 GPUs a node, 16 in all
queues a (weight 1) and b (weight 1): 8 GPUs deserved each once both ask for more
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf
from tests.builders import (
    BLOCK,
    SPINE,
    gather,
    model,
    node,
    pod,
    podgroup,
    queue,
    spine_block_topology,
)

GPU = "nvidia.com/gpu"
ENGINES = ["greedy", "cpsat"]


def conf(*extra: str, actions: tuple[str, ...] = ("enqueue", "allocate")) -> SchedulerConf:
    names = ("predicates", "gang", "network-topology", "proportion", *extra)
    return SchedulerConf(
        actions=actions, tiers=(TierConf(plugins=[PluginConf(name=n) for n in names]),)
    )


NODES = [
    node(f"n{i}").cpu("32").gpu(4).label(SPINE, f"s{i // 2}").label(BLOCK, f"b{i // 2}").obj()
    for i in range(4)
]


def gang(name: str, q: str, size: int, priority: int = 0, spine: bool = False,
         on: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    pg = podgroup(name, size, "volcano", **(gather(("SpineLayer", "MustGather")) if spine else {}))
    pg["spec"]["queue"] = q
    pods = []
    for i in range(size):
        b = pod(f"{name}-{i}").annotate("scheduling.k8s.io/group-name", name)
        b.requests(cpu=1, gpu=1).priority(priority)
        if on:
            b.on(on if i < 4 else f"n{int(on[1:]) + 1}")
        pods.append(b.obj())
    return [pg, *pods]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gathered_gang_within_its_share(engine: str) -> None:
    # a asks 8 in one spine (MustGather) and 4 more; b asks 8: a deserves 8, so the
    # gathered 8 go (one spine) and a's 4 more wait; b's 8 go in the other spine.
    objs = [*NODES, spine_block_topology(), queue("a"), queue("b"),
            *gang("big", "a", 8, spine=True), *gang("more", "a", 4), *gang("bj", "b", 8)]  # fmt: skip
    cluster = model(*objs)
    d = schedule(cluster, conf(), engine=engine, workers=1)
    assert verify(cluster, conf(), d) == []
    assert d.podgroups["default/big"].placed and d.podgroups["default/bj"].placed
    assert not d.podgroups["default/more"].placed
    spines = {d.placed[f"default/big-{i}"] for i in range(8)}
    assert spines in ({"n0", "n1"}, {"n2", "n3"})


@pytest.mark.parametrize("engine", ENGINES)
def test_priority_preemption_stays_within_the_share(engine: str) -> None:
    # a and b run 8 GPUs each (their shares, the cluster full); a's high-priority gang of 4
    # may only make room inside a's own share: evicting b's pods would free nodes but not
    # a's quota, so the victims are a's own lower-priority pods (the whole gang run-a, as
    # job-level preemption evicts a gang it would leave below minMember).
    objs = [*NODES, queue("a"), queue("b"), *gang("run-a", "a", 8, on="n0"),
            *gang("run-b", "b", 8, on="n2"), *gang("hi", "a", 4, priority=1000)]  # fmt: skip
    cluster = model(*objs)
    c = conf(actions=("enqueue", "allocate", "preempt"))
    d = schedule(cluster, c, engine=engine, workers=1)
    assert verify(cluster, c, d) == []
    assert d.victims and all(v.pod.startswith("default/run-a-") for v in d.victims)
    assert all(d.placements[f"default/hi-{i}"].nominated in ("n0", "n1") for i in range(4))
