"""The deserved shares, worked by hand, and what the engines do with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from solver import SchedulerConf, schedule, solve, verify
from solver.codec import decision_from_proto, decision_to_proto
from solver.config import PluginConf, TierConf
from solver.features.proportion import Claim, share, water_fill
from solver.features.proportion.waterfill import floor_limit
from solver.quantity import UNLIMITED
from tests.builders import model, node, pod, queue, volcano_job

GPU = "nvidia.com/gpu"
QUEUE = "scheduling.volcano.sh/queue-name"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def claim(weight: int, request: dict[str, int], cap: dict[str, int] | None = None,
          guarantee: dict[str, int] | None = None) -> Claim:  # fmt: skip
    return Claim(weight, cap or {}, request, guarantee or {})


def test_weights_split_what_everyone_wants() -> None:
    # 8 GPUs, both want all of them, weights 1:3 -> 2 and 6.
    got = water_fill({GPU: 8}, {"a": claim(1, {GPU: 8}), "b": claim(3, {GPU: 8})})
    assert got["a"][GPU] == 2 and got["b"][GPU] == 6


def test_a_queue_asking_less_gives_the_rest_back() -> None:
    # 12 GPUs, weights 1:1:1; a asks 1, b 20, c 20. Round 1: 4 each, a capped at 1
    # (met); 3 return; round 2: b and c split them -> 5.5 each.
    got = water_fill(
        {GPU: 12}, {"a": claim(1, {GPU: 1}), "b": claim(1, {GPU: 20}), "c": claim(1, {GPU: 20})}
    )
    assert [got[q][GPU] for q in "abc"] == [1, 5.5, 5.5]


def test_capability_caps_and_the_rest_flows_on() -> None:
    # b's capability 2 stops it; a takes what b cannot (request 10, cluster 10).
    got = water_fill({GPU: 10}, {"a": claim(1, {GPU: 10}), "b": claim(1, {GPU: 10}, {GPU: 2})})
    assert got["a"][GPU] == 8 and got["b"][GPU] == 2


def test_guarantee_is_a_floor() -> None:
    # b asks nothing but is guaranteed 3: it deserves 3 (max with guarantee), a the rest.
    got = water_fill({GPU: 8}, {"a": claim(1, {GPU: 8}), "b": claim(1, {}, guarantee={GPU: 3})})
    assert got["b"][GPU] == 3 and got["a"][GPU] == 5


def test_each_dimension_fills_on_its_own() -> None:
    # cpu: a asks 2, b 10 of 8 -> 2 / 6; memory: both ask 10 of 8 -> 4 / 4.
    got = water_fill(
        {"cpu": 8, "memory": 8},
        {"a": claim(1, {"cpu": 2, "memory": 10}), "b": claim(1, {"cpu": 10, "memory": 10})},
    )
    assert (got["a"]["cpu"], got["b"]["cpu"]) == (2, 6)
    assert (got["a"]["memory"], got["b"]["memory"]) == (4, 4)


def test_thirds_and_float_noise() -> None:
    got = water_fill({"cpu": 4000}, {q: claim(1, {"cpu": 9000}) for q in "abc"})
    assert {round(got[q]["cpu"], 6) for q in "abc"} == {round(4000 / 3, 6)}
    assert share({"cpu": 1000}, got["a"]) == pytest.approx(0.75) and share({}, {}) == 0
    # 6 GPUs over weights 1:2 in float: 2 and 4 within noise, and the gate takes them whole
    got = water_fill({GPU: 6}, {"a": claim(1, {GPU: 6}), "b": claim(2, {GPU: 6})})
    assert floor_limit(got["a"][GPU]) == 2 and floor_limit(got["b"][GPU]) == 4
    assert floor_limit(5.9999999999) == 6 and floor_limit(5.99) == 5


def test_unlimited_capability_is_no_cap() -> None:
    got = water_fill({GPU: 4}, {"a": claim(1, {GPU: 4}, {GPU: UNLIMITED})})
    assert got["a"][GPU] == 4


# ---------------------------------------------------------------- the engines

NODES = [node(f"n{i}").cpu("64").gpu(8).obj() for i in range(2)]  # 16 GPUs


def conf(actions: str = "enqueue, allocate") -> SchedulerConf:
    plugins = [PluginConf(name=n) for n in ("predicates", "gang", "proportion")]
    return SchedulerConf(actions=tuple(a.strip() for a in actions.split(",")),
                         tiers=(TierConf(plugins=plugins),))  # fmt: skip


def jobs(prefix: str, queue_name: str, count: int, size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        job = volcano_job(f"{prefix}{i}", queue_name, size)
        del job[0]["spec"]["minResources"]  # enqueue permits; the allocate gate decides
        out += job
    return out


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_queues_get_their_weighted_share(engine: str) -> None:
    # 16 GPUs; a (weight 1) and b (weight 3) each bring 8 jobs of 2 GPUs: a deserves 4,
    # b 12 -> 2 of a's jobs and 6 of b's, whatever the job order.
    objs = [*NODES, queue("a", weight=1), queue("b", weight=3), *jobs("a", "a", 8, 2),
            *jobs("b", "b", 8, 2)]  # fmt: skip
    cluster = model(*objs)
    d = solve(cluster, conf(), engine=engine, workers=1)
    assert verify(cluster, conf(), d) == []
    placed = {q: sum(1 for k, p in d.placements.items() if p.node and k.startswith(f"default/{q}"))
              for q in "ab"}  # fmt: skip
    assert placed == {"a": 4, "b": 12}
    waiting = d.podgroups["default/a7"]
    assert not waiting.placed and "queue a: deserved share (proportion) used up" in waiting.reason


def test_running_pods_count_against_the_share() -> None:
    # a already runs 4 GPUs: with weights 1:1 over 16 it deserves 8, so 2 more 2-GPU jobs.
    running = volcano_job("r", "a", 4, bound_on="n0")
    objs = [*NODES, queue("a"), queue("b"), *running, *jobs("a", "a", 6, 2), *jobs("b", "b", 6, 2)]
    d = schedule(model(*objs), conf(), engine="greedy")
    placed = {q: sum(1 for k, p in d.placements.items() if p.node and k.startswith(f"default/{q}"))
              for q in "ab"}  # fmt: skip
    assert placed == {"a": 4, "b": 8}


def test_a_queue_alone_takes_the_cluster() -> None:
    # Nobody else asks: a deserves all it asks for, up to the cluster.
    d = schedule(model(*NODES, queue("a"), *jobs("a", "a", 8, 2)), conf(), engine="greedy")
    assert sum(1 for p in d.placements.values() if p.node) == 16


def test_verify_catches_a_queue_past_its_share() -> None:
    # Placed without proportion, a takes 8 of the 16 GPUs where it deserves 4: the verifier,
    # deriving deserved on its own, names the queue and the numbers.
    objs = [*NODES, queue("a", weight=1), queue("b", weight=3), *jobs("a", "a", 4, 2),
            *jobs("b", "b", 8, 2)]  # fmt: skip
    cluster = model(*objs)
    plain = SchedulerConf(tiers=(TierConf(plugins=[PluginConf(name="gang")]),))
    d = schedule(cluster, plain, engine="greedy")
    assert sum(1 for k, p in d.placements.items() if p.node and k.startswith("default/a")) == 8
    problems = verify(cluster, conf(), d)
    assert problems == ["queue a: nvidia.com/gpu allocated 0 + placed 8 > deserved 4"]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_single_pods_by_annotation_count_in_their_queue(engine: str) -> None:
    # Pods without a PodGroup, in queues by `scheduling.volcano.sh/queue-name` (gangs of
    # one): their requests are the queues' requests, so both deserve what they ask for.
    pods = [
        pod(f"{q}-{i}").annotate("scheduling.volcano.sh/queue-name", q).requests(cpu=1, gpu=1).obj()
        for q in "ab"
        for i in range(4)
    ]
    cluster = model(*NODES, queue("a", weight=1), queue("b", weight=3), *pods)
    d = solve(cluster, conf(), engine=engine, workers=1)
    assert verify(cluster, conf(), d) == []
    assert len(d.placed) == 8


def test_gpu_shares_count_in_milli_gpus() -> None:
    # examples/gpu-sharing/shares.yaml with its pods alternately in queues a and b: the
    # share pods' GPU fractions are their queues' requests in milli-GPUs (as the quota rows
    # count them), so proportion places as many as the devices take, as without it.
    docs = list(yaml.safe_load_all((EXAMPLES / "gpu-sharing" / "shares.yaml").read_text()))
    pods = [d for d in docs if d and d.get("kind") == "Pod"]
    for i, p in enumerate(pods):
        p["metadata"].setdefault("annotations", {})[QUEUE] = "ab"[i % 2]
    objs = [queue("a", weight=1), queue("b", weight=3), *(d for d in docs if d)]
    cluster = model(*objs)
    for engine in ("greedy", "cpsat"):
        d = solve(cluster, conf(), engine=engine, workers=1)
        assert verify(cluster, conf(), d) == []
        assert len(d.placed) == len(schedule(cluster, None, engine="greedy").placed) == 5


def test_the_answer_reports_each_queues_share_and_it_travels() -> None:
    # The weighted split above, as the Decision reports it (CLI json/table, gRPC, clients):
    # each queue's limit (its deserved share), what it held and what was placed.
    objs = [*NODES, queue("a", weight=1), queue("b", weight=3), *jobs("a", "a", 8, 2),
            *jobs("b", "b", 8, 2)]  # fmt: skip
    d = schedule(model(*objs), conf(), engine="greedy")
    uses = {q.queue: q for q in d.queues}
    assert uses["a"].limit[GPU] == 4 and uses["a"].placed[GPU] == 4
    assert uses["b"].limit[GPU] == 12 and uses["b"].placed[GPU] == 12
    assert uses["a"].share() == 0 and uses["a"].share(after=True) == 1.0
    assert d.to_dict()["queues"][0]["shareAfter"] == 1.0
    back = decision_from_proto(decision_to_proto(d))
    assert back.queues == d.queues
