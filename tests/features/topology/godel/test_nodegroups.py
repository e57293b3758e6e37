"""Godel's job-level affinity in the greedy: NodeGroups in scheduling order, NodeCircles,
the required domain pinned by running members (`reference/godel_kueue.md` §1), run end to
end (manifests -> Decision, verified)."""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.compile import compile_problem
from solver.decision import Decision
from solver.errors import ManifestError
from solver.features.topology import GodelBlock
from solver.features.topology.godel.nodegroups import godel_groups
from tests.builders import godel_podgroup, model, node, pod

Objects = list[dict[str, Any]]


def run(*objects: dict[str, Any]) -> Decision:
    return schedule(model(*objects), engine="greedy")  # verified inside


def placed(d: Decision) -> dict[str, str]:
    return {k.split("/", 1)[1]: v for k, v in d.placed.items()}


def per_node(d: Decision) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in d.placed.values():
        out[n] = out.get(n, 0) + 1
    return dict(sorted(out.items()))


QUICKSTART = {
    "worker": ("10.76.0.0", "10.76.64.0"),
    "worker2": ("10.25.0.0", "10.25.162.0"),
    "worker3": ("10.76.0.0", "10.76.65.0"),
    "worker4": ("10.76.0.0", "10.76.64.0"),
    "worker5": ("10.53.0.0", "10.53.16.0"),
}
QUICKSTART_AFFINITY = {
    "required": [{"topologyKey": "mainnet"}],
    "preferred": [{"topologyKey": "micronet"}],
}


def quickstart(replicas: int, used: dict[str, str]) -> Objects:
    nodes = [
        node(n).cpu("8").label("mainnet", main).label("micronet", micro).obj()
        for n, (main, micro) in QUICKSTART.items()
    ]
    busy = [pod(f"sys-{n}").requests(cpu=c).on(n).obj() for n, c in used.items()]
    pods = [
        pod(f"nginx-{i:02d}")
        .annotate("godel.bytedance.com/pod-group-name", "nginx")
        .requests(cpu="1")
        .obj()
        for i in range(replicas)
    ]
    return [*nodes, *busy, godel_podgroup("nginx", replicas, QUICKSTART_AFFINITY), *pods]


def test_godel_quickstart_10_pods_fit_in_one_micronet() -> None:
    # 10.76.65.0 (8 cpu) is cut off (10 cpu > 8); 10.76.64.0 holds all ten
    d = run(*quickstart(10, {}))
    assert set(d.placed.values()) == {"worker", "worker4"} and len(d.placed) == 10


def test_godel_quickstart_15_pods_spill_inside_the_mainnet() -> None:
    # worker and worker4 have 9 free: no micronet holds 15, mainnet 10.76.0.0 does; its
    # circles are [10.76.65.0 (smaller capacity first), 10.76.64.0]: worker3 first (6 free)
    d = run(*quickstart(15, {"worker": "3", "worker4": "4", "worker3": "2"}))
    assert per_node(d) == {"worker": 5, "worker3": 6, "worker4": 4}


def godel_nodes() -> Objects:
    # TestGrouping-like tree: required bigPod, preferred [miniPod, tor]
    #
    #   bigPodA ─┬─ miniPodA1 ─┬─ tor1: a1 (4 cpu)      bigPodB ── miniPodB1 ── tor4: b1 (8 cpu)
    #            │             └─ tor2: a2 (2 cpu)
    #            └─ miniPodA2 ──── tor3: a3 (16 cpu)
    layout = [
        ("a1", "bigPodA", "miniPodA1", "tor1", "4"),
        ("a2", "bigPodA", "miniPodA1", "tor2", "2"),
        ("a3", "bigPodA", "miniPodA2", "tor3", "16"),
        ("b1", "bigPodB", "miniPodB1", "tor4", "8"),
    ]
    return [
        node(n).cpu(c).label("bigPod", big).label("miniPod", mini).label("tor", tor).obj()
        for n, big, mini, tor, c in layout
    ]


def godel_job(size: int, affinity: dict[str, Any]) -> Objects:
    pods = [
        pod(f"p-{i}").annotate("godel.bytedance.com/pod-group-name", "pg").requests(cpu="1").obj()
        for i in range(size)
    ]
    return [godel_podgroup("pg", size, affinity), *pods]


AFFINITY = {
    "required": [{"topologyKey": "bigPod"}],
    "preferred": [{"topologyKey": "miniPod"}, {"topologyKey": "tor"}],
}


def test_godel_group_order_default_sort_is_smallest_capacity_first() -> None:

    p = compile_problem(model(*godel_nodes(), *godel_job(3, AFFINITY)), SchedulerConf.default())
    block = p.block(GodelBlock)
    assert block is not None
    plan = block.unit_godel[0]
    assert plan is not None
    groups = godel_groups(p, block, plan, p.free.copy())
    names = [g.name for g in groups]
    # deepest layer first; inside a layer by parent order (bigPodB: 8 cpu before bigPodA: 22),
    # then CPU capacity ascending; tor2 (2 cpu < the unit's 3) is cut off
    assert names == [
        "tor:tor4;", "tor:tor1;", "tor:tor3;",
        "miniPod:miniPodB1;", "miniPod:miniPodA1;", "miniPod:miniPodA2;",
        "bigPod:bigPodB;", "bigPod:bigPodA;",
    ]  # fmt: skip
    circles = {g.name: [[p.node_names[n] for n in c] for c in g.circles] for g in groups}
    assert circles["miniPod:miniPodA1;"] == [["a2"], ["a1"]]  # cut-off tor2 stays a circle
    assert circles["bigPod:bigPodA;"] == [["a2"], ["a1"], ["a3"]]


def test_godel_sort_rules_descending_and_invalid_rules() -> None:

    rules = {**AFFINITY, "sortRules": [{"resource": "CPU", "order": "Descending"}]}
    p = compile_problem(model(*godel_nodes(), *godel_job(2, rules)), SchedulerConf.default())
    block = p.block(GodelBlock)
    assert block is not None
    plan = block.unit_godel[0]
    assert plan is not None
    names = [g.name for g in godel_groups(p, block, plan, p.free.copy())]
    assert names[:4] == ["tor:tor3;", "tor:tor1;", "tor:tor2;", "tor:tor4;"]
    # an invalid rule: no sorting (name order) and no cut-off (tor2 is a group again)
    bad = {**AFFINITY, "sortRules": [{"resource": "MEM", "order": "Descending"}]}
    p = compile_problem(model(*godel_nodes(), *godel_job(2, bad)), SchedulerConf.default())
    block = p.block(GodelBlock)
    assert block is not None
    plan = block.unit_godel[0]
    assert plan is not None
    names = [g.name for g in godel_groups(p, block, plan, p.free.copy())]
    assert names[:4] == ["tor:tor1;", "tor:tor2;", "tor:tor3;", "tor:tor4;"]


def test_godel_whole_unit_in_one_group_or_the_next() -> None:
    # 3 pods: the first group, tor4 (b1, 8 cpu), holds them
    assert set(run(*godel_nodes(), *godel_job(3, AFFINITY)).placed.values()) == {"b1"}
    # 9 pods: tor4 (8) and tor1 (4) are too small, tor3 (16) holds them
    assert set(run(*godel_nodes(), *godel_job(9, AFFINITY)).placed.values()) == {"a3"}
    # 20 pods: no tor, no miniPod; bigPodA (22 cpu) spills a2 -> a1 -> a3
    d = run(*godel_nodes(), *godel_job(20, AFFINITY))
    assert per_node(d) == {"a1": 4, "a2": 2, "a3": 14}


def test_godel_running_member_pins_the_required_domain() -> None:
    objects = godel_job(3, AFFINITY)
    running = (
        pod("p-run")
        .annotate("godel.bytedance.com/pod-group-name", "pg")
        .requests(cpu="1")
        .on("b1")
        .obj()
    )
    d = run(*godel_nodes(), *objects, running)
    assert set(d.placed.values()) == {"b1"}


def test_godel_node_selector_filters_nodes_and_required_drops_unlabelled_nodes() -> None:
    selector = {
        **AFFINITY,
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "tor", "operator": "In", "values": ["tor3"]}]}
            ]
        },
    }
    extra = node("x").cpu("64").obj()  # no bigPod label: never used
    d = run(*godel_nodes(), extra, *godel_job(2, selector))
    assert set(d.placed.values()) == {"a3"}
    # 23 pods: every domain is cut off (bigPodA has 22 cpu); node x (64 cpu) has no bigPod
    d = run(*godel_nodes(), extra, *godel_job(23, AFFINITY))
    assert d.placed == {}
    reason = d.podgroups["default/pg"].reason  # the certificate, then Godel's message
    assert reason.startswith(
        "gang default/pg needs 23 cpu inside one bigPod domain (Godel podGroupAffinity required); "
        "the largest offers 22 (bigPod:bigPodA), the next 8 (bigPod:bigPodB); "
        "gang default/pg: no valid node groups are available"
    ), reason
    p = compile_problem(
        model(*godel_nodes(), extra, *godel_job(1, AFFINITY)), SchedulerConf.default()
    )
    x = p.node_names.index("x")
    assert p.reason_texts[p.ineligible_reason[0, x]] == (
        "node(s) lack the PodGroup's required topology key(s) bigPod"
    )


def test_godel_malformed_affinity_is_a_manifest_error() -> None:
    with pytest.raises(
        ManifestError, match=r"spec\.affinity\.podGroupAffinity\.required: expected a list"
    ):
        model(*godel_nodes(), *godel_job(1, {"required": {"topologyKey": "bigPod"}}))


# ----------------------------------------------------------------------------- properties
