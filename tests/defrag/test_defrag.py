"""Defragmentation plans (issue 41): free whole racks or nodes by moving running pods.

Three racks of two 8-GPU nodes; the numbers are the 1-GPU pods running on each node:

          rack r0              rack r1              rack r2
    n00 [3]   n01 [2]     n10 [6]   n11 [1]     n20 [5]   n21 [4]

Rack r0 is the emptiest (5 pods): moved best-fit onto the busiest racks' free GPUs, it is
free. With a budget of 8 pods, r1 (7) no longer fits after it, and r2 (9) never does.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.defrag import DefragGoal, DefragPlan, defragment
from solver.errors import InputError
from solver.snapshot import Snapshot
from solver.verify import verify_moves
from tests.builders import model, node, pod
from tests.features.topology.hypernode.fixtures import hypernode, vc_group

RACK = "cloud.com/topology-rack"
LOAD = {"n00": 3, "n01": 2, "n10": 6, "n11": 1, "n20": 5, "n21": 4}
ENGINES = ("greedy", "cpsat")


def rack_nodes(gpus: int = 8, **extra: str) -> list[dict[str, Any]]:
    out = []
    for name in LOAD:
        b = node(name).gpu(gpus).label(RACK, f"r{name[1]}").label("kubernetes.io/hostname", name)
        for k, v in extra.items():
            b = b.label(k, v)
        out.append(b.obj())
    return out


def ones(load: dict[str, int] = LOAD, prefix: str = "p") -> list[dict[str, Any]]:
    return [
        pod(f"{prefix}-{name}-{i}").requests(cpu="500m", gpu=1).on(name).obj()
        for name, count in load.items()
        for i in range(count)
    ]


def snapshot(*objects: dict[str, Any]) -> Snapshot:
    return Snapshot.from_model(model(*objects))


def plan(snap: Snapshot, engine: str, **goal: Any) -> DefragPlan:
    found = defragment(snap, DefragGoal(**goal), engine=engine, workers=1, seed=0, time_limit=10)
    assert_valid(snap, found)
    return found


def assert_valid(snap: Snapshot, found: DefragPlan, *more_where: str) -> None:
    """The plan passes the independent check, and the freed domains are empty at the end."""
    level = found.goal.level
    nodes = [
        n.name
        for n in snap.nodes.nodes
        if (n.name if level == "node" else n.labels.get(level)) in set(found.freed)
    ]
    moves = [(m.pod, m.source, m.target) for m in found.moves]
    where = ("kubernetes.io/hostname", RACK, level, *found.goal.topology_keys, *more_where)
    assert verify_moves(snap, moves, nodes, where, found.goal.max_pods) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_the_emptiest_rack_is_freed_within_the_budget(engine: str) -> None:
    snap = snapshot(*rack_nodes(), *ones())
    found = plan(snap, engine, level=RACK, max_pods=8)
    assert found.freed == ("r0",) and found.pods_moved == 5
    assert {m.source for m in found.moves} == {"n00", "n01"}
    assert found.domain_cost == {"r0": 5}
    assert found.blocked == {"more than 8 pod(s) to move (--max-pods)": 1}
    if engine == "cpsat":
        assert (found.status, found.bound, found.gap) == ("OPTIMAL", 1.0, 0.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_budget_too_small_for_any_rack_moves_nothing(engine: str) -> None:
    found = plan(snapshot(*rack_nodes(), *ones()), engine, level=RACK, max_pods=4)
    assert found.freed == () and found.moves == ()
    assert "3 domain(s) cannot be freed: more than 4 pod(s) to move (--max-pods)" in found.notes


@pytest.mark.parametrize("engine", ENGINES)
def test_nodes_freed_with_the_fewest_moves_for_a_count(engine: str) -> None:
    """Free 2 whole nodes: n11 (1 pod) and n01 (2 pods), 3 moves — not n00 (3)."""
    found = plan(snapshot(*rack_nodes(), *ones()), engine, count=2, max_pods=20)
    assert set(found.freed) == {"n11", "n01"} and found.pods_moved == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_moves_whole_and_stays_on_one_node(engine: str) -> None:
    """A 2-pod gang on n01 (one node): freeing rack r0 moves both pods, onto one node."""
    load = {**LOAD, "n01": 0}
    gang = [pod(f"g-{i}").requests(cpu="500m", gpu=1).group("g").on("n01").obj() for i in range(2)]
    found = plan(snapshot(*rack_nodes(), *ones(load), *gang), engine, level=RACK, max_pods=8)
    assert found.freed == ("r0",)
    targets = {m.target for m in found.moves if m.unit == "default/g"}
    assert len(targets) == 1 and found.gangs_moved == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_protected_pods_keep_their_rack_and_daemon_pods_do_not_count(engine: str) -> None:
    daemons = [
        pod(f"agent-{n}").requests(cpu="100m").label("pod-template-generation", "1").on(n).obj()
        for n in LOAD
    ]
    vip = pod("vip").requests(cpu="500m", gpu=1).priority(1000).on("n01").obj()
    objects = [*rack_nodes(), *ones(), *daemons]
    found = plan(snapshot(*objects), engine, level=RACK, max_pods=8)
    assert found.freed == ("r0",) and found.pods_moved == 5  # the DaemonSet pods stay
    found = plan(snapshot(*objects, vip), engine, level=RACK, max_pods=8, protect_priority=1000)
    assert found.freed == ("r1",)  # r0 keeps its protected pod; r1 (7 pods) goes instead
    assert "1 domain(s) cannot be freed: a pod on it may not move" in found.notes


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pod_never_lands_on_a_node_of_another_kind(engine: str) -> None:
    """r0 has A100 nodes, the others H100: r0's pods cannot leave it (a nodeSelector on the
    GPU model would break), so the plan frees r1 instead, onto r2's free GPUs."""
    objects = rack_nodes()
    for o in objects:
        o["metadata"]["labels"]["gpu"] = "A100" if o["metadata"]["name"][1] == "0" else "H100"
    found = plan(snapshot(*objects, *ones()), engine, level=RACK, max_pods=8)
    assert found.freed == ("r1",) and {m.target[:2] for m in found.moves} == {"n2"}


def test_cpsat_moves_pods_to_open_a_hole_the_greedy_cannot_find() -> None:
    """Three 8-GPU nodes; a 4-GPU pod on a, six 1-GPU pods on b and on c:

        a [4 . . . .]   b [1 1 1 1 1 1 . .]   c [1 1 1 1 1 1 . .]

    No node has a 4-GPU hole, so the greedy frees nothing within 3 moves. CP-SAT moves two
    1-GPU pods from b to c, opening 4 GPUs on b for a's pod: a is free, in an order where
    every step has room (b's pods first)."""
    objects = [node(n).gpu(8).obj() for n in "abc"]
    objects.append(pod("big").requests(cpu="1", gpu=4).on("a").obj())
    for n in "bc":
        objects += [pod(f"s-{n}{i}").requests(cpu="100m", gpu=1).on(n).obj() for i in range(6)]
    snap = snapshot(*objects)
    assert plan(snap, "greedy", max_pods=3).freed == ()
    found = plan(snap, "cpsat", max_pods=3)
    assert found.freed == ("a",) and found.pods_moved == 3 and found.status == "OPTIMAL"
    assert [(m.source, m.target) for m in found.moves] == [("b", "c"), ("b", "c"), ("a", "b")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", ["hard", None])
def test_a_volcano_gang_in_a_hypernode_keeps_its_rack(engine: str, mode: str | None) -> None:
    """r0's pods, but two of its 1-GPU pods are a Volcano gang bound to HyperNode `h0`
    (n00, n01): moving them would leave it (its members are named nodes), so r0 stays and
    r1 (7 pods) is freed. Without the networkTopology the gang moves with r0."""
    gang = [
        pod(f"g-{i}", "c1").annotate("scheduling.k8s.io/group-name", "g")
        .requests(cpu="500m", gpu=1).on(f"n0{i}").obj()
        for i in range(2)
    ]  # fmt: skip
    objects = [*rack_nodes(), *ones({**LOAD, "n00": 2, "n01": 1}), *gang,
               hypernode("h0", 1, ("n00", "n01")), vc_group("g", 2, mode=mode, tier=1)]  # fmt: skip
    found = plan(snapshot(*objects), engine, level=RACK, max_pods=8)
    assert found.freed == (("r1",) if mode else ("r0",))


def test_a_goal_out_of_range_is_one_line_naming_the_field() -> None:
    with pytest.raises(InputError, match="defrag goal: max_pods: between 0 and 100,000"):
        DefragGoal(max_pods=-1)
    with pytest.raises(InputError, match="defrag goal: count: between 1 and 100,000"):
        DefragGoal(count=0)


# ----------------------------------------------------------------------------- the check


def test_the_check_catches_a_step_over_capacity_a_split_gang_and_a_busy_freed_node() -> None:
    gang = [pod(f"g-{i}").requests(gpu=1).group("g").on("n00").obj() for i in range(2)]
    snap = snapshot(*rack_nodes(), *ones(), *gang)
    over = [(f"default/p-n00-{i}", "n00", "n10") for i in range(3)]  # n10 has 2 GPUs free
    assert any("over its allocatable nvidia.com/gpu" in p for p in verify_moves(snap, over, [], ()))
    split = [("default/g-0", "n00", "n20"), ("default/g-1", "n00", "n21")]
    assert any("split" in p for p in verify_moves(snap, split, [], ()))
    half = [("default/g-0", "n00", "n20")]
    assert any("moves without" in p for p in verify_moves(snap, half, [], ()))
    assert any("a node the plan frees" in p for p in verify_moves(snap, [], ["n01"], ()))


# ----------------------------------------------------------------------------- property


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, int]:
    racks, per = draw(st.integers(2, 4)), draw(st.integers(1, 3))
    objects = []
    names = []
    for r in range(racks):
        for i in range(per):
            name = f"r{r}-n{i}"
            names.append(name)
            objects.append(node(name).gpu(8).label(RACK, f"r{r}").obj())
    free = dict.fromkeys(names, 8)
    for k in range(draw(st.integers(0, 6 * len(names)))):
        size = draw(st.sampled_from([1, 1, 1, 2, 4]))
        gang = draw(st.integers(1, 3)) if size <= 2 else 1
        at = draw(st.sampled_from(names))
        spots = [at] if draw(st.booleans()) else [draw(st.sampled_from(names)) for _ in range(gang)]
        if len(spots) < gang:
            spots *= gang
        if any(free[s] < size * spots.count(s) for s in set(spots)):
            continue
        for i, s in enumerate(spots[:gang]):
            free[s] -= size
            b = pod(f"w{k}-{i}").requests(cpu="100m", gpu=size).on(s)
            objects.append((b.group(f"g{k}") if gang > 1 else b).obj())
    return snapshot(*objects), draw(st.integers(0, 24))


@settings(max_examples=25, deadline=None)
@given(clusters())
def test_every_plan_is_valid_step_by_step_and_cpsat_frees_at_least_as_many(
    case: tuple[Snapshot, int],
) -> None:
    snap, budget = case
    greedy = plan(snap, "greedy", level=RACK, max_pods=budget)
    exact = plan(snap, "cpsat", level=RACK, max_pods=budget)
    assert len(exact.freed) >= len(greedy.freed)
    if len(exact.freed) == len(greedy.freed):
        assert exact.pods_moved <= greedy.pods_moved
    assert exact.bound is None or exact.bound >= len(exact.freed)
    for found in (greedy, exact):  # never a plan that failed its check, falling back
        assert not [n for n in found.notes if "failed its check" in n], found.notes
    assert np.isfinite(exact.solve_seconds)


@pytest.mark.parametrize("limit", [0.1])
def test_the_plan_arrives_within_its_time_limit(limit: float) -> None:
    """Deadlines are promises: CP-SAT, the relaxation and the check all fit in the limit
    (plus the 50 ms margin of tests/test_deadlines.py) on 160 racks of 4 jagged nodes,
    where building CP-SAT's model alone takes about a tenth of a second."""
    rng = np.random.default_rng(0)
    objects = [node(f"n{i:03d}").gpu(8).label(RACK, f"r{i // 4:03d}").obj() for i in range(640)]
    for i in range(640):
        objects += [pod(f"p{i}-{k}").requests(cpu="100m", gpu=1).on(f"n{i:03d}").obj()
                    for k in range(int(rng.integers(0, 8)))]  # fmt: skip
    snap = snapshot(*objects)
    started = time.perf_counter()
    defragment(snap, DefragGoal(level=RACK, max_pods=150), engine="cpsat", time_limit=limit,
               workers=1, seed=0)  # fmt: skip
    assert time.perf_counter() - started <= limit + 0.05


def test_a_plan_with_moves_says_spreads_are_not_kept() -> None:
    """Nothing dropped in silence: the snapshot keeps no running pod's spread constraints,
    so every plan that moves pods says so; one that moves nothing does not."""
    snap = snapshot(*rack_nodes(), *ones())
    moved = plan(snap, "greedy", level=RACK, max_pods=8)
    assert moved.moves and any("topologySpreadConstraints" in n for n in moved.notes)
    still = plan(snap, "greedy", level=RACK, max_pods=1)
    assert not still.moves and not any("topologySpreadConstraints" in n for n in still.notes)


def pdb(allowed: int | None, **labels: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "g-pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
    }  # fmt: skip
    if allowed is not None:
        body["status"] = {"disruptionsAllowed": allowed}
    return body


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("allowed", "freed"), [(2, "r0"), (1, "r1")])
def test_a_disruption_budget_keeps_a_gang_it_cannot_let_go_whole(
    engine: str, allowed: int, freed: str
) -> None:
    """The 2-pod gang on n01 moves its pods together (evicted at once): a budget over them
    allowing 2 lets r0 go; allowing 1, the gang stays and r1 (7 pods) goes instead."""
    load = {**LOAD, "n01": 0}
    gang = [
        pod(f"g-{i}").requests(cpu="500m", gpu=1).group("g").label("app", "g").on("n01").obj()
        for i in range(2)
    ]
    found = plan(
        snapshot(*rack_nodes(), *ones(load), *gang, pdb(allowed, app="g")),
        engine, level=RACK, max_pods=8,
    )  # fmt: skip
    assert found.freed == (freed,)
    if allowed == 1:
        assert any("PodDisruptionBudget" in n for n in found.notes)


def test_the_check_counts_a_gangs_evictions_against_a_budget() -> None:
    load = {**LOAD, "n01": 0}
    gang = [
        pod(f"g-{i}").requests(cpu="500m", gpu=1).group("g").label("app", "g").on("n01").obj()
        for i in range(2)
    ]
    snap = snapshot(*rack_nodes(), *ones(load), *gang, pdb(1, app="g"))
    moves = [("default/g-0", "n01", "n10"), ("default/g-1", "n01", "n10")]
    problems = verify_moves(snap, moves, [], [RACK, "kubernetes.io/hostname"])
    assert problems == [
        "default/g evicts 2 pod(s) of PodDisruptionBudget default/g-pdb at once (1 allowed)"
    ]
