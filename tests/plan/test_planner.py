"""The planner: bounds on hand-computed cases, leftovers with reasons, optimality against
brute force on small cases, limits, and the independent packing check."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from solver.errors import InputError
from solver.plan import (
    MILLI,
    Catalog,
    NodeType,
    PlanOptions,
    Shape,
    Workload,
    catalog_from_dict,
    make_input,
    plan,
    valued,
    verify_plan,
    workload_from_trace,
)
from solver.plan._config_lp import ConfigLP
from solver.plan._incumbents import round_down_fill, round_iterated
from solver.plan._pack import GreedyPacker, arrays_of
from solver.plan._patterns import greedy_price
from solver.plan._problem import Columns, Problem, Trace
from solver.plan._report import report

FAST = PlanOptions(time_limit=5.0, workers=1, seed=0)


def node(
    name: str, cost: float, cpu: int, gpus: int = 0, model: str | None = None, **kw: object
) -> NodeType:
    return NodeType(
        name=name,
        cost=cost,
        allocatable=(("cpu", cpu), ("pods", 110)),
        gpus=gpus,
        gpu_model=model,
        **kw,  # type: ignore[arg-type]
    )


def pod(cpu: int, gpus: int = 0, milli: int = MILLI, models: set[str] | None = None) -> Shape:
    return Shape(
        requests=(("cpu", cpu), ("pods", 1)),
        gpus=gpus,
        gpu_milli=milli if gpus else MILLI,
        models=frozenset(models) if models else None,
    )


def singles(*shapes: Shape) -> Workload:
    w = Workload()
    for i, s in enumerate(shapes):
        w.add_job(f"p{i}", [s])
    return w


def run(w: Workload, *types: NodeType, **kw: object) -> tuple[object, object]:
    inp = make_input(w, Catalog(types=types, **kw))  # type: ignore[arg-type]
    result = plan(inp, FAST)
    assert verify_plan(inp, result) == []
    return inp, result


# ----------------------------------------------------------------------------- bounds


def test_l1_is_the_sum_of_sizes_and_tight_when_pods_pair_up() -> None:
    # 5 pods of 3 CPUs on 10-CPU nodes: L1 = ceil(15 / 10) = 2, and 2 nodes suffice.
    _, r = run(singles(*[pod(3)] * 5), node("n10", 1, 10))
    assert r.bounds["l1"] == 2  # type: ignore[attr-defined]
    assert (r.cost, r.status, r.add) == (2, "OPTIMAL", {"n10": 2})  # type: ignore[attr-defined]


def test_configuration_bound_beats_l1_when_no_two_pods_share_a_node() -> None:
    # 3 pods of 6 CPUs on 10-CPU nodes: L1 = ceil(18 / 10) = 2, but every pod needs its
    # own node; the configuration LP (patterns hold one pod) proves 3.
    _, r = run(singles(*[pod(6)] * 3), node("n10", 1, 10))
    assert r.bounds["l1"] == 2  # type: ignore[attr-defined]
    assert r.bound == 3 and r.cost == 3 and r.status == "OPTIMAL"  # type: ignore[attr-defined]


def test_l1_with_two_node_types_buys_the_cheaper_capacity() -> None:
    # cost per CPU: big 0.3, small 0.333: L1 LP covers 10 CPUs with one big node = 3.
    _, r = run(singles(pod(5), pod(5)), node("big", 3, 10), node("small", 2, 6))
    assert r.bounds["l1"] == 3  # type: ignore[attr-defined]
    assert r.add == {"big": 1} and r.status == "OPTIMAL"  # type: ignore[attr-defined]


def test_fractional_gpus_share_devices_exactly() -> None:
    # three 0.6-GPU pods cannot share a device: 3 devices -> two 2-GPU nodes. L1 (milli
    # summed) says 1; the device arc-flow bound sees the 3 devices and proves 2.
    _, r = run(singles(*[pod(1, 1, 600)] * 3), node("g2", 1, 64, gpus=2, model="T4"))
    assert r.bounds["l1"] == 1  # type: ignore[attr-defined]
    assert r.bounds["devices"] == 2  # type: ignore[attr-defined]
    assert r.cost == 2 and r.status == "OPTIMAL"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("millis", "whole", "devices_bound"),
    [
        # 0.8 + 0.2 fill a device exactly: 4 devices = one 4-GPU node (= L1)
        ([800, 800, 200, 200, 1000, 1000], 0, 1),
        # 3.3 GPUs of milli (L1: 1 node), but 0.7 and 0.4 never share a device: 3 + 2
        # devices -> 2 nodes
        ([700] * 3 + [400] * 3, 0, 2),
        # a whole-GPU gang of 3 on a 4-GPU node leaves one device for two 0.5 pods
        ([500, 500], 3, 1),
        # ... but not for two 0.6 pods: 5 devices -> 2 nodes
        ([600, 600], 3, 2),
    ],
)
def test_device_bound_packs_shared_pods_onto_devices(
    millis: list[int], whole: int, devices_bound: int
) -> None:
    w = singles(*[pod(1, 1, m) for m in millis])
    if whole:
        w.add_job("default/gang", [pod(1, whole)])
    _, r = run(w, node("g4", 1, 64, gpus=4, model="A100"))
    assert r.bounds["devices"] == devices_bound  # type: ignore[attr-defined]
    assert r.bounds["devices"] >= r.bounds["l1"]  # type: ignore[attr-defined, operator]
    assert r.cost >= devices_bound  # type: ignore[attr-defined, operator]


def test_no_device_bound_without_shared_pods() -> None:
    _, r = run(singles(pod(1, 2), pod(1, 1)), node("g4", 1, 64, gpus=4, model="A100"))
    assert r.bounds["devices"] is None and r.bounds["l1"] == 1  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- leftovers


def test_a_pod_bigger_than_every_type_is_left_out_with_counted_reasons() -> None:
    w = singles(pod(2), pod(64), pod(1, gpus=1, models={"H100"}))
    _, r = run(w, node("small", 1, 8), node("gpu", 4, 16, gpus=8, model="A100"))
    assert r.add == {"small": 1}  # type: ignore[attr-defined]
    reasons = r.reasons  # type: ignore[attr-defined]
    assert reasons == {
        "no node type can hold pod (cpu=64 pods=1): 0/2 node types are available: "
        "2 Insufficient cpu.": 1,
        "no node type can hold pod (cpu=1 pods=1 gpu=1 models=H100): 0/2 node types are "
        "available: 1 GPU model not allowed, 1 Insufficient nvidia.com/gpu.": 1,
    }
    assert r.placed_pods == 1 and r.total_pods == 3  # type: ignore[attr-defined]


def test_a_gang_with_one_impossible_member_is_left_out_whole() -> None:
    w = Workload()
    w.add_job("default/train", [pod(4), pod(4), pod(99)])
    w.add_job("default/ok", [pod(4)])
    _, r = run(w, node("n8", 1, 8))
    assert r.placed_pods == 1 and r.add == {"n8": 1}  # type: ignore[attr-defined]
    (u,) = [u for u in r.unplaced if u.jobs == ("default/train",)]  # type: ignore[attr-defined]
    assert u.pods == 3 and u.reason.startswith("gang member: no node type can hold pod")


def test_max_count_and_card_alternatives() -> None:
    # 3 single-GPU pods may use A100 or H100; at most 1 A100 node (2 GPUs) may be added.
    w = singles(*[pod(1, 1, models={"A100", "H100"})] * 3)
    _, r = run(
        w,
        node("a100", 2, 32, gpus=2, model="A100", max_count=1),
        node("h100", 5, 32, gpus=2, model="H100"),
    )
    assert r.add == {"a100": 1, "h100": 1} and r.cost == 7  # type: ignore[attr-defined]


def test_limits_leave_work_out_and_say_which() -> None:
    w = Workload()
    w.add_job("default/big", [pod(8)] * 3)  # a gang of 3 pods, one node each
    _, r = run(w, node("n8", 1, 8, max_count=2))
    assert r.placed_pods == 0  # type: ignore[attr-defined]
    (u,) = r.unplaced  # type: ignore[attr-defined]
    assert u.reason == "does not fit within the limits: n8 maxCount 2 (0 used)"


def test_budget_and_blocks() -> None:
    w = singles(*[pod(8)] * 3)
    _, r = run(w, node("n8", 1, 8, nodes_per_block=2))
    assert r.add == {"n8": 4} and r.cost == 4  # type: ignore[attr-defined]
    _, r = run(w, node("n8", 1, 8), budget=2)
    assert r.placed_pods == 2 and "budget 2 (2 spent)" in r.unplaced[0].reason  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- brute force


def _brute(pods: list[tuple[int, int]], types: list[tuple[int, int, int]], most: int) -> int:
    """Cheapest multiset of nodes (cost, cpu, gpus) that holds every (cpu, gpus) pod."""
    best = 10**9
    for counts in itertools.product(range(most + 1), repeat=len(types)):
        cost = sum(c * t[0] for c, t in zip(counts, types, strict=True))
        if cost >= best:
            continue
        caps = [[t[1], t[2]] for c, t in zip(counts, types, strict=True) for _ in range(c)]

        def place(i: int, caps: list[list[int]] = caps) -> bool:
            if i == len(pods):
                return True
            seen = set()
            for cap in caps:
                if tuple(cap) in seen:
                    continue
                seen.add(tuple(cap))
                if cap[0] >= pods[i][0] and cap[1] >= pods[i][1]:
                    cap[0] -= pods[i][0]
                    cap[1] -= pods[i][1]
                    ok = place(i + 1)
                    cap[0] += pods[i][0]
                    cap[1] += pods[i][1]
                    if ok:
                        return True
            return False

        if place(0):
            best = cost
    return best


@pytest.mark.parametrize("seed", range(6))
def test_optimal_on_small_random_cases(seed: int) -> None:
    rng = random.Random(seed)
    types = [(rng.randint(2, 9), rng.choice([8, 12, 16]), rng.choice([0, 2, 4])) for _ in range(2)]
    types.append((20, 16, 4))  # something always fits
    pods = [(rng.randint(1, 8), rng.choice([0, 0, 1, 2])) for _ in range(rng.randint(3, 6))]
    w = singles(*[pod(c, g) for c, g in pods])
    cat = [
        node(f"t{i}", c, cpu, gpus=g, model="X" if g else None)
        for i, (c, cpu, g) in enumerate(types)
    ]
    _, r = run(w, *cat)
    assert r.cost == _brute(pods, types, most=len(pods))  # type: ignore[attr-defined]
    assert r.bound <= r.objective  # type: ignore[attr-defined]


def _brute_value(pods: list[tuple[int, int]], nodes: list[tuple[int, int]], devices: int) -> int:
    """Most GPU milli placeable: pods (cpu, milli) on nodes (cpu, count) of `devices` 1-GPU
    devices each; a pod may stay out."""
    best = 0
    caps = [[cpu, *([MILLI] * devices)] for cpu, count in nodes for _ in range(count)]

    def go(i: int, value: int) -> None:
        nonlocal best
        rest = sum(m for _, m in pods[i:])
        if value + rest <= best:
            return
        if i == len(pods):
            best = value
            return
        cpu, milli = pods[i]
        seen = set()
        for cap in caps:
            for d in range(1, devices + 1):
                state = (cap[0], cap[d])
                if state in seen or cap[0] < cpu or cap[d] < milli:
                    continue
                seen.add(state)
                cap[0] -= cpu
                cap[d] -= milli
                go(i + 1, value + milli)
                cap[0] += cpu
                cap[d] += milli
        go(i + 1, value)

    go(0, 0)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_packing_a_fixed_cluster_maximises_the_gpu_placed(seed: int) -> None:
    # The openb study's offline question: more fractional-GPU pods than the existing nodes
    # hold (each job weighted by its GPU milli); the plan must place the most milli.
    rng = random.Random(100 + seed)
    nodes = [(rng.choice([6, 10]), rng.randint(1, 2)) for _ in range(2)]
    pods = [
        (rng.randint(1, 5), rng.choice([1000, 810, 650, 470, 320, 230, 160]))
        for _ in range(rng.randint(8, 10))
    ]
    w = Workload()
    for i, (cpu, milli) in enumerate(pods):
        w.add_job(f"default/p{i}", [pod(cpu, 1, milli)], weight=milli)
    existing = [
        node(f"n{i}", 0, cpu, gpus=2, model="X", existing=True, max_count=count)
        for i, (cpu, count) in enumerate(nodes)
    ]
    inp = make_input(w, None, existing)
    r = plan(inp, FAST)
    assert verify_plan(inp, r) == []
    placed_milli = sum(m for _, m in pods) - r.objective  # type: ignore[operator]
    assert placed_milli == _brute_value(pods, nodes, devices=2)
    assert r.bound <= r.objective


# ----------------------------------------------------------------------------- input


def test_catalogue_errors_name_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=r"cat.yaml: nodeTypes\[0\].allocatable.memory: invalid quantity '12XB'"
    ):
        catalog_from_dict(
            {"nodeTypes": [{"name": "a", "cost": 1, "allocatable": {"memory": "12XB"}}]}, "cat.yaml"
        )
    with pytest.raises(InputError, match=r"cat.yaml: nodeTypes\[1\].cost: required"):
        catalog_from_dict(
            {
                "nodeTypes": [
                    {"name": "a", "cost": 1, "allocatable": {"cpu": 1}},
                    {"name": "b", "allocatable": {"cpu": 1}},
                ]
            },
            "cat.yaml",
        )
    with pytest.raises(InputError, match=r"nodeTypes\[0\].colour: unknown field"):
        catalog_from_dict({"nodeTypes": [{"name": "a", "cost": 1, "colour": "red"}]}, "cat.yaml")


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"cost": 2e9}, r"nodeTypes\[0\].cost: must be at most 1e\+09"),
        ({"cost": 1, "maxCount": 10**7}, r"nodeTypes\[0\].maxCount: must be at most"),
        ({"cost": 1, "nodesPerBlock": 10**7}, r"nodeTypes\[0\].nodesPerBlock: must be at most"),
    ],
)
def test_catalogue_numbers_past_the_limits_name_the_field(
    entry: dict[str, object], field: str
) -> None:
    with pytest.raises(InputError, match=field):
        catalog_from_dict(
            {"nodeTypes": [{"name": "a", "allocatable": {"cpu": 1}, **entry}]}, "cat.yaml"
        )
    with pytest.raises(InputError, match=r"budget: must be at most"):
        catalog_from_dict({"nodeTypes": [], "budget": 1e13}, "cat.yaml")


def test_costs_times_the_workload_past_64_bits_are_an_input_error() -> None:
    # 1e9 per node x a million 8-GPU jobs valued by their GPU milli: past int64
    catalog = Catalog(types=(node("a", 1e9, 8000, gpus=8),))
    inp = valued(make_input(singles(pod(1, gpus=8)), catalog), "gpu")
    inp = replace(inp, jobs=tuple(replace(job, count=10**6) for job in inp.jobs))
    with pytest.raises(InputError, match="exceed the planner's 64-bit objective"):
        plan(inp, FAST)


def test_large_costs_keep_fewer_decimals_not_overflow() -> None:
    catalog = Catalog(types=(node("a", 999_999_999.123456, 8000), node("b", 0.5, 4000)))
    inp = make_input(singles(pod(6000), pod(2000)), catalog)
    assert Problem(inp).cost.max() <= 10**9


def test_trace_with_a_column_mapping(tmp_path: Path) -> None:
    csv = tmp_path / "pods.csv"
    csv.write_text(
        "id,cores_m,mem,g,share,types\nj1,2000,1024,1,500,T4|A10\nj2,2000,1024,1,500,T4|A10\n"
    )
    mapping = {
        "name": "id",
        "cpu": "cores_m",
        "memory": "mem",
        "gpu": "g",
        "gpu_milli": "share",
        "gpu_spec": "types",
    }
    w = workload_from_trace(csv, mapping)
    assert len(w.shapes) == 1 and w.pods == 2
    assert w.shapes[0].models == frozenset({"T4", "A10"}) and w.shapes[0].gpu_milli == 500
    t4 = NodeType("t4", 1, (("cpu", 8000), ("memory", 4096)), gpus=1, gpu_model="T4")
    _, r = run(w, t4)
    assert r.add == {"t4": 1}  # type: ignore[attr-defined]  # two halves share one device
    with pytest.raises(InputError, match=r"pods.csv: trace mapping cpu=cpu_milli: no such column"):
        workload_from_trace(csv)


@pytest.mark.parametrize(
    ("limits", "placed"),
    [
        ({"max_count": 3}, 2),  # 1 node already used + 2 more = maxCount
        ({"budget": 2.0}, 1),  # 1 node already bought + 1 more = the budget
        ({"quota": 16}, 1),  # 8 GPUs already added + 8 more = the card quota
        ({}, 3),
    ],
)
def test_greedy_packer_counts_nodes_already_used_against_limits(
    limits: dict[str, float], placed: int
) -> None:
    # the LP round-down repair hands the greedy the nodes the rounded LP already uses
    n8 = node("n8", 1, 8, gpus=8, model="A100", max_count=limits.get("max_count"))
    catalog = Catalog(
        types=(n8,),
        budget=limits.get("budget"),
        card_quota=(("A100", int(limits["quota"])),) if "quota" in limits else (),
    )
    inp = make_input(singles(*[pod(8)] * 3), catalog)
    got, nodes = GreedyPacker(inp, arrays_of(inp), opened=np.array([1])).run()
    assert sum(got) == placed and len(nodes) == placed


# ----------------------------------------------------------------------------- LP rounding


def test_lp_roundings_are_valid_plans_and_the_extra_ones_beat_plain_rounding_down() -> None:
    # An oversubscribed fixed cluster (three classes of 10 nodes, 500 single-GPU pods of 30
    # shapes, each worth its GPU milli): the configuration LP is fractional on a few
    # columns per class. Rounding down leaves those nodes to the greedy; giving each
    # fractional column a node, or re-solving the LP for what is left, keeps more of it.
    rng = random.Random(0)
    kinds = [
        (rng.randint(1, 8), rng.choice([1000, 810, 650, 470, 320, 230, 160, 110]))
        for _ in range(30)
    ]
    w = Workload()
    for i in range(500):
        cpu, milli = rng.choice(kinds)
        w.add_job(f"default/p{i}", [pod(cpu, 1, milli)])
    classes = [(16, 4), (24, 8), (12, 2)]
    existing = [
        node(f"n{k}", 0, cpu, gpus=g, model="X", existing=True, max_count=10)
        for k, (cpu, g) in enumerate(classes)
    ]
    inp = valued(make_input(w, None, existing), "gpu")
    p, cols = Problem(inp), Columns()
    for t in range(p.T):
        for s in range(p.S):
            if k := p.max_copies(s, t):
                cols.add(t, {s: k})
    master = ConfigLP(p, cols.cols)
    for _ in range(50):  # column generation with the greedy pricing
        master.solve()
        pi, sigma, _ = master.duals()
        added = 0
        for t in range(p.T):
            pattern, value = greedy_price(p, t, pi)
            if value > sigma[t] + 1e-6 and cols.add(t, pattern) is not None:
                master.add(*cols.cols[-1])
                added += 1
        if not added:
            break
    lp = master.solve()
    point = master.point()
    down = round_down_fill(p, cols, point, fractional_nodes=False)
    fill = round_down_fill(p, cols, point, fractional_nodes=True)
    iterated = round_iterated(p, cols, deadline=float("inf"))
    for sol in (down, fill, iterated):
        assert sol is not None and sol.objective >= lp - 1e-6
        result = report(p, cols, sol, {}, False, Trace(0.0), {}, [])
        assert verify_plan(inp, result) == []
        assert inp.pods - result.placed_pods == sum(  # every left-out job is counted
            (job.count - int(sol.z[j])) * job.pods for j, job in enumerate(inp.jobs)
        )
    assert down is not None and fill is not None and iterated is not None
    assert fill.objective < down.objective and iterated.objective < down.objective
