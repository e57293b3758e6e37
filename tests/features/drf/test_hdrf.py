"""Hierarchical DRF (`drf` with `enableHierarchy`): the tree's shares worked by hand, and
the greedy's step order (Volcano's allocate loop) on elastic jobs.

    root                 one node: 8 GPUs, 64 cpus
    ├ a   weight 1
    └ b   weight 3       each queue: an elastic job of 8 one-GPU pods
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, load_manifests, schedule, verify
from solver.config import PluginConf, TierConf
from solver.features.drf import HdrfTree, hierarchy_path
from solver.features.queues import loop as quota_loop
from solver.schedule import snapshot_of
from solver.views import hdrf_tree
from tests.builders import model, node, placed_per_job, pod, podgroup, queue


def conf(hierarchy: bool = True, gang: bool = True) -> SchedulerConf:
    drf = {"name": "drf", "enableHierarchy": hierarchy}
    plugins = [PluginConf(name="gang")] if gang else []
    plugins += [PluginConf.model_validate(drf), PluginConf(name="predicates")]
    return SchedulerConf(actions=("enqueue", "allocate"), tiers=(TierConf(plugins=plugins),))


def hqueue(name: str, path: str, weights: str) -> dict[str, Any]:
    q = queue(name)
    q["metadata"].setdefault("annotations", {}).update(
        {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
    )
    return q


def job(name: str, q: str, pods: int, min_member: int = 1, running: int = 0) -> list[Any]:
    pg = podgroup(name, min_member, "volcano")
    pg["spec"]["queue"] = q
    out: list[Any] = [pg]
    for i in range(pods):
        b = pod(f"{name}-{i}").annotate("scheduling.k8s.io/group-name", name)
        b = b.requests(cpu=1, gpu=1)
        out.append((b.on("n0") if i < running else b).obj())
    return out


QUEUES = [hqueue("a", "root/a", "1/1"), hqueue("b", "root/b", "1/3")]
NODE = node("n0").cpu("64").gpu(8).obj()


def test_the_tree_rescales_unsaturated_children_to_the_smallest_share() -> None:
    # cpu 10, memory 10: sci (1, 1) of (10, 10); under eng: dev (2, 0) of (10, 0) and
    # prod (0, 1) of (0, 10). eng's mdr is prod's 0.1, so dev counts as (1, 0): eng (1, 1).
    tree = HdrfTree(np.array([10.0, 10.0]))
    sci = tree.path(("sci",), (50.0,))
    dev = tree.path(("eng", "dev"), (50.0, 50.0))
    prod = tree.path(("eng", "prod"), (50.0, 50.0))
    tree.job(sci[-1], np.array([1.0, 1.0]), np.array([10.0, 10.0]))
    tree.job(dev[-1], np.array([2.0, 0.0]), np.array([10.0, 0.0]))
    tree.job(prod[-1], np.array([0.0, 1.0]), np.array([0.0, 10.0]))
    tree.refresh()
    eng = dev[1]
    assert tree.allocated[eng].tolist() == [1.0, 1.0]
    assert tree.share[eng] == pytest.approx(0.1)
    assert tree.compare(sci, dev) == 0.0  # 0.1 / 50 on both sides at the root's children
    assert tree.compare(dev, prod) > 0  # dev 0.2 against prod 0.1 inside eng


def test_a_used_up_resource_saturates_the_jobs_holding_it() -> None:
    tree = HdrfTree(np.array([10.0, 10.0]))
    cpu = tree.path(("cpu",), (1.0,))
    mem = tree.path(("mem",), (1.0,))
    c = tree.job(cpu[-1], np.array([9.0, 0.0]), np.array([20.0, 0.0]))
    tree.job(mem[-1], np.array([0.0, 1.0]), np.array([0.0, 20.0]))
    tree.refresh()
    assert tree.compare(mem, cpu) < 0  # 0.1 against 0.9
    tree.allocate(c, np.array([1.0, 0.0]))  # cpu used up: its job is saturated
    assert tree.saturated[c] and tree.saturated[cpu[-1]]
    assert tree.compare(cpu, mem) > 0  # a saturated node goes last whatever its share


def test_hierarchy_annotations_are_read_as_upstream() -> None:
    assert hierarchy_path({"volcano.sh/hierarchy": "root/eng/dev",
                           "volcano.sh/hierarchy-weights": "100/0.5/x"}) == (
        ("eng", "dev"), (1.0, 1.0))  # fmt: skip
    assert hierarchy_path({}) == ((), ())  # no path: a leaf of the root
    assert hierarchy_path({"volcano.sh/hierarchy": "root/a"}) == (("a",), (1.0,))


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_elastic_jobs_share_the_gpus_by_the_hierarchy_weights(engine: str) -> None:
    cluster = model(NODE, *QUEUES, *job("ja", "a", 8), *job("jb", "b", 8))
    decision = schedule(cluster, conf(), engine=engine, workers=1)
    assert verify(cluster, conf(), decision) == []
    assert placed_per_job(decision) == {"ja": 2, "jb": 6}  # share / weight equal: 2/8 / 1 = 6/8 / 3
    whole = schedule(cluster, conf(hierarchy=False), engine="greedy")
    assert placed_per_job(whole) == {"ja": 8}  # without the hierarchy each job is taken whole


def test_a_gang_takes_its_minimum_in_one_step_then_one_pod_a_turn() -> None:
    # jb needs 5 at once; ja, a pod at a time, would get 2 of 8 by weight, but jb's first
    # step takes 5 and ja then gets its turns until the shares meet
    cluster = model(NODE, *QUEUES, *job("ja", "a", 8), *job("jb", "b", 8, min_member=5))
    decision = schedule(cluster, conf(), engine="greedy")
    assert verify(cluster, conf(), decision) == []
    assert placed_per_job(decision) == {"ja": 2, "jb": 6}
    assert decision.podgroups["default/jb"].placed


def test_running_pods_count_in_their_queue_share() -> None:
    # a already runs 4 GPUs (share 0.5 / 1); b (0 / 3) takes the 4 free ones
    cluster = model(NODE, *QUEUES, *job("ra", "a", 4, running=4), *job("ja", "a", 4),
                    *job("jb", "b", 4))  # fmt: skip
    decision = schedule(cluster, conf(), engine="greedy")
    assert verify(cluster, conf(), decision) == []
    assert placed_per_job(decision) == {"jb": 4}


def test_the_step_order_keeps_the_calls_deadline() -> None:
    cluster = model(NODE, *QUEUES, *job("ja", "a", 8), *job("jb", "b", 8))
    decision = schedule(cluster, conf(), engine="greedy", time_limit=0.0)
    assert verify(cluster, conf(), decision) == []
    reasons = [o.reason for o in decision.podgroups.values() if not o.placed]
    assert any(r.startswith("not tried") for r in reasons), reasons


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Any], SchedulerConf]:
    """A random annotation tree (up to 3 levels), elastic and gang jobs with running pods,
    under hDRF alone or with `proportion` or `capacity` gating the queues."""
    objects: list[Any] = [
        node(f"n{i}").cpu("16").gpu(4).obj() for i in range(draw(st.integers(1, 3)))
    ]
    queues = []
    for i in range(draw(st.integers(1, 5))):
        depth = draw(st.integers(1, 3))
        parts = [draw(st.sampled_from(["a", "b", "c"])) for _ in range(depth - 1)] + [f"q{i}"]
        weights = [str(draw(st.sampled_from([0, 1, 3, 50]))) for _ in parts]
        objects.append(hqueue(f"q{i}", "/".join(["root", *parts]), "/".join(["1", *weights])))
        queues.append(f"q{i}")
    for j in range(draw(st.integers(1, 6))):
        pods = draw(st.integers(1, 6))
        pg = podgroup(f"j{j}", draw(st.integers(0, pods)), "volcano")
        pg["spec"]["queue"] = draw(st.sampled_from(queues))
        objects.append(pg)
        running = draw(st.integers(0, pods - 1))
        for k in range(pods):
            b = pod(f"j{j}-{k}").annotate("scheduling.k8s.io/group-name", f"j{j}")
            b = b.requests(cpu=draw(st.sampled_from([0, 1, 4])), gpu=draw(st.sampled_from([0, 1])))
            objects.append((b.on("n0") if k < running else b).obj())
    quota = draw(st.sampled_from([None, "proportion", "capacity"]))
    c = conf(gang=draw(st.booleans()))
    if quota:
        tier = c.tiers[0]
        plugins = [*tier.plugins, PluginConf(name=quota)]
        c = c.model_copy(update={"tiers": (tier.model_copy(update={"plugins": plugins}),)})
    return objects, c


@given(worlds(), st.sampled_from(["greedy", "auto"]))
@settings(max_examples=60, deadline=None)
def test_random_trees_are_verified_on_both_engines(world: Any, engine: str) -> None:
    objects, c = world
    try:
        cluster = model(*objects)
    except ValueError:  # an overfull node of running pods: not a cluster
        return
    decision = schedule(cluster, c, engine=engine, workers=1, time_limit=5)
    assert verify(cluster, c, decision) == []


def test_a_call_too_large_for_the_loop_keeps_whole_jobs_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(quota_loop, "MAX_STEP_COMPARISONS", 3)
    cluster = model(NODE, *QUEUES, *job("ja", "a", 8), *job("jb", "b", 8))
    decision = schedule(cluster, conf(), engine="greedy")
    assert verify(cluster, conf(), decision) == []
    assert placed_per_job(decision) == {"ja": 8}  # whole jobs, in queue order
    assert any("too large for Volcano's allocate loop" in n for n in decision.notes)


def test_hostile_hierarchy_annotations_are_bounded_and_noted() -> None:
    deep = "root/" + "/".join(f"l{i}" for i in range(20_000))
    weird = [
        hqueue("a", deep, "1/" + "/".join(["nan", "inf", "-3", "1e309", ""] * 4000)),
        hqueue("b", "root//b/" + "x" * 10_000, "///"),
    ]
    cluster = model(NODE, *weird, *job("ja", "a", 4), *job("jb", "b", 4))
    decision = schedule(cluster, conf(), engine="greedy")
    assert verify(cluster, conf(), decision) == []
    assert sum(placed_per_job(decision).values()) == 8
    assert any(
        "queue a: volcano.sh/hierarchy: only the first 32 levels" in n for n in decision.notes
    )
    parts, weights = hierarchy_path({"volcano.sh/hierarchy": deep})
    assert len(parts) == len(weights) == 32


def test_kai_queues_keep_kais_order_whatever_the_conf_lists() -> None:
    path = Path(__file__).resolve().parents[3] / "examples" / "fairshare" / "kai.yaml"
    cluster = load_manifests(str(path))
    hdrf = schedule(cluster, conf(), engine="auto", workers=1)
    plain = schedule(cluster, conf(hierarchy=False), engine="auto", workers=1)
    assert hdrf.placed == plain.placed
    assert not any("hierarchical DRF" in n for n in hdrf.notes)
    assert hdrf_tree(snapshot_of(cluster), conf()) is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 6)), min_size=2, max_size=8
    ),
    st.lists(st.tuples(st.integers(0, 7), st.integers(-3, 3), st.integers(-3, 3)), max_size=4),
)
def test_adjust_moves_the_tree_as_allocations_one_by_one(
    jobs: list[tuple[int, int, int]], moves: list[tuple[int, int, int]]
) -> None:
    """`adjust` (several leaves at once, each node updated once) leaves every node below the
    root as the same moves made one `allocate` at a time do, and the root too with it."""

    def build() -> tuple[HdrfTree, list[int]]:
        tree = HdrfTree(np.array([10.0, 10.0]))
        leaves = []
        for q, cpu, mem in jobs:
            path = tree.path((f"d{q % 2}", f"q{q}"), (1.0 + q, 1.0))
            held = np.array([float(cpu), float(mem)])
            leaves.append(tree.job(path[-1], held, held + np.array([1.0, 0.0])))
        tree.refresh()
        return tree, leaves

    one, leaves = build()
    together, _ = build()
    changes = []
    for k, cpu, mem in moves:
        leaf = leaves[k % len(leaves)]
        amounts = np.maximum(np.array([float(cpu), float(mem)]), -together.allocated[leaf])
        changes.append((leaf, amounts))
        one.allocate(leaf, amounts)
    together.adjust(changes)
    assert one.share == pytest.approx(together.share)
    assert one.saturated == together.saturated
