"""Inter-pod terms inside gangs: the gang's own pods count toward each other's terms.

zone a: a0 a1 a2      zone b: b0 b1 b2      zone c: c0 c1 c2     (8 cpu each)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from solver.config import SchedulerConf
from solver.decision import Decision
from solver.schedule import schedule, solve
from solver.verify import verify
from tests.builders import PodBuilder, model, node, pod, podgroup

ENGINES = ["greedy", "cpsat"]
HOST = "kubernetes.io/hostname"


def zones(per_zone: int = 3, cpu: str = "8") -> list[dict[str, Any]]:
    return [
        node(f"{z}{i}").cpu(cpu).label("zone", z).label(HOST, f"{z}{i}").obj()
        for z in "abc"
        for i in range(per_zone)
    ]


def gang(
    name: str, size: int, shape: PodBuilder, min_member: int | None = None
) -> list[dict[str, Any]]:
    objects = [podgroup(name, size if min_member is None else min_member)]
    for i in range(size):
        member = PodBuilder(f"{name}-{i}")
        member.body = shape.obj()
        member.body["metadata"]["name"] = f"{name}-{i}"
        objects.append(member.group(name).obj())
    return objects


def run(objects: list[dict[str, Any]], engine: str) -> tuple[Decision, Any]:
    cluster = model(*objects)
    d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1, time_limit=10)
    return d, cluster


def nodes_of(d: Decision, prefix: str) -> list[str | None]:
    return [p.node for k, p in sorted(d.placements.items()) if k.startswith(f"default/{prefix}")]


@pytest.mark.parametrize("engine", ENGINES)
def test_one_worker_per_node_lands_on_distinct_nodes(engine: str) -> None:
    shape = pod("w").label("app", "train").anti_affinity(HOST, app="train")
    d, _ = run([*zones(), *gang("train", 8, shape)], engine)
    placed = nodes_of(d, "train")
    assert None not in placed and len(set(placed)) == 8


@pytest.mark.parametrize("engine", ENGINES)
def test_one_worker_per_node_on_too_few_nodes_stays_pending(engine: str) -> None:
    shape = pod("w").label("app", "train").anti_affinity(HOST, app="train")
    d, _ = run([*zones(2), *gang("train", 8, shape)], engine)
    assert nodes_of(d, "train") == [None] * 8
    reason = d.podgroups["default/train"].reason
    assert "anti-affinity" in reason, reason


@pytest.mark.parametrize("engine", ENGINES)
def test_zone_spread_with_max_skew_one(engine: str) -> None:
    shape = pod("w").label("app", "web").spread("zone", 1, app="web")
    d, _ = run([*zones(), *gang("web", 7, shape)], engine)
    per_zone = Counter(str(n)[0] for n in nodes_of(d, "web"))
    assert sorted(per_zone.values()) == [2, 2, 3]


@pytest.mark.parametrize("engine", ENGINES)
def test_gang_joins_an_existing_pod_by_required_zone_affinity(engine: str) -> None:
    loader = pod("loader").label("role", "data").on("b1")
    shape = pod("w").pod_affinity("zone", role="data")
    d, _ = run([*zones(), loader.obj(), *gang("train", 5, shape)], engine)
    assert {str(n)[0] for n in nodes_of(d, "train")} == {"b"}


@pytest.mark.parametrize("engine", ENGINES)
def test_self_affine_gang_lands_in_one_zone(engine: str) -> None:
    shape = pod("w").label("app", "ring").pod_affinity("zone", app="ring")
    d, _ = run([*zones(), *gang("ring", 5, shape)], engine)
    placed = nodes_of(d, "ring")
    assert None not in placed and len({str(n)[0] for n in placed}) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_gang_blocked_by_an_existing_pods_anti_affinity(engine: str) -> None:
    # The running pod keeps pods labelled app=train out of its zone; zones b and c are
    # full, so the gang has nowhere to go.
    guard = pod("guard").on("a0").anti_affinity("zone", app="train")
    fillers = [
        pod(f"fill-{n}").requests(cpu="8").on(n).obj() for n in ("b0", "b1", "b2", "c0", "c1", "c2")
    ]
    shape = pod("w").label("app", "train")
    d, _ = run([*zones(), guard.obj(), *fillers, *gang("train", 2, shape)], engine)
    assert nodes_of(d, "train") == [None, None]
    assert "existing pods anti-affinity" in d.podgroups["default/train"].reason


# ----------------------------------------------------------------------------- KEP-4671


def kep_4671_cluster() -> list[dict[str, Any]]:
    """Two half-used GPU nodes named first, two small CPU nodes: binpack sends the small pods
    (placed first, in pod-key order) to the fuller GPU nodes, and then one-per-node leaves
    the GPU pods nowhere — the "Algorithm Limitations" of the gang scheduling KEP
    (kubernetes/enhancements#4671): pod by pod, a placement that exists is missed."""
    gpu = [node(f"n{i}").cpu("8").gpu(1).label(HOST, f"n{i}").obj() for i in range(2)]
    busy = [pod(f"busy-{i}").requests(cpu="4").on(f"n{i}").obj() for i in range(2)]
    small = [node(f"n{i}").cpu("4").label(HOST, f"n{i}").obj() for i in range(2, 4)]
    members = [
        *(pod(f"a-small-{i}").requests(cpu="2").label("app", "job") for i in range(2)),
        *(pod(f"b-big-{i}").requests(cpu="2", gpu=1).label("app", "job") for i in range(2)),
    ]
    pods = [m.group("job").anti_affinity(HOST, app="job").obj() for m in members]
    return [*gpu, *small, podgroup("job", 4), *busy, *pods]


def test_kep_4671_the_greedy_misses_a_heterogeneous_gang() -> None:
    d = solve(model(*kep_4671_cluster()), SchedulerConf.default(), engine="greedy")
    assert not d.podgroups["default/job"].placed


@pytest.mark.parametrize("engine", ["cpsat", "auto"])
def test_kep_4671_cpsat_places_what_the_greedy_misses(engine: str) -> None:
    cluster = model(*kep_4671_cluster())
    d = solve(cluster, SchedulerConf.default(), engine=engine, workers=1, time_limit=10)
    assert d.podgroups["default/job"].placed
    assert verify(cluster, SchedulerConf.default(), d) == []
    assert {d.placements[f"default/b-big-{i}"].node for i in range(2)} == {"n0", "n1"}


def test_kep_4671_no_placement_is_proven_infeasible_with_the_term_named() -> None:
    objects = kep_4671_cluster()
    objects.append(
        pod("c-extra")
        .requests(cpu="1")
        .label("app", "job")
        .group("job")
        .anti_affinity(HOST, app="job")
        .obj()
    )
    objects[4] = podgroup("job", 5)
    cluster = model(*objects)
    d = solve(cluster, SchedulerConf.default(), engine="cpsat", workers=1, time_limit=10)
    assert d.status == "INFEASIBLE"
    reason = d.podgroups["default/job"].reason
    assert "anti-affinity app=job by kubernetes.io/hostname" in reason, reason


@pytest.mark.parametrize("engine", ENGINES)
def test_mixed_shapes_with_anti_affinity_and_spread(engine: str) -> None:
    members = [
        *(
            pod(f"ps-{i}").requests(cpu="4").label("app", "mix").label("role", "ps")
            for i in range(3)
        ),
        *(pod(f"w-{i}").requests(cpu="2").label("app", "mix").label("role", "w") for i in range(6)),
    ]
    pods = [
        m.group("mix").spread("zone", 1, app="mix").anti_affinity(HOST, role="ps").obj()
        for m in members
    ]
    d, _ = run([*zones(), podgroup("mix", 9), *pods], engine)
    assert d.podgroups["default/mix"].placed
    ps_nodes = [d.placements[f"default/ps-{i}"].node for i in range(3)]
    assert len(set(ps_nodes)) == 3
    per_zone = Counter(str(p.node)[0] for p in d.placements.values())
    assert sorted(per_zone.values()) == [3, 3, 3]


@pytest.mark.parametrize("engine", ENGINES)
def test_self_affine_gang_that_no_zone_holds_waits_whole(engine: str) -> None:
    """A gang whose pods require affinity to their own labels per zone (the first pod of the
    series exempt, kube-scheduler's interpodaffinity `TestRequiredAffinitySingleNode`
    "satisfies the PodAffinity with labelSelector because of the pod itself"): each zone
    holds 3 of its 4 pods, so it waits. CP-SAT's node classes straddled the zones (the
    interpod rows did not split them), put pods in two zones and failed verification."""
    shape = pod("x").requests(cpu="5").label("app", "x").pod_affinity("zone", app="x")
    cluster = model(*zones(cpu="8"), *gang("g", 4, shape))
    conf = SchedulerConf.default()
    d = solve(cluster, conf, engine=engine, workers=1, time_limit=10)  # no fallback
    assert not verify(cluster, conf, d)
    assert nodes_of(d, "g") == [None] * 4
    assert "fits on the cluster" not in d.podgroups["default/g"].reason
