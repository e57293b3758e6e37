"""Hierarchical DRF's reclaim rule (`drf.go` `reclaimFn` with `enableHierarchy`) beside
proportion's, as Volcano intersects the victims of one tier. Volcano has no test of this
rule; the cases are worked by hand from `reclaimFn`:

    root                         one node n0: 4 cpu, full with job A (4 x 1 cpu) of queue a,
    ├ a   hierarchy weight w_a   minMember 1; queue b: job B pending (1 cpu each, all of
    └ b   hierarchy weight w_b   them its minMember); spec.weight 1 each, so proportion
                                 gives b what B asks and a the rest: a is overused

Each task of B is judged with B one task more and the victim's job one pod less; cpu is
then used up, so both leaves are saturated and the queues compare by share / weight:

* B of 1 pod: 1/4 against A's 3/4: A's pod is a victim (both rules agree);
* B of 2 pods, w_b = 1: the first task takes one pod (1/4 < 3/4); for the second,
  B's 2/4 ties A's 2/4 (a victim needs `ret < 0`), so B cannot run and nothing is evicted,
  where proportion alone evicts two;
* B of 2 pods, w_b = 2: 2/4 / 2 < 2/4: two victims, as proportion alone;
* B of 1 pod, A's queue with hierarchy weight 4 (w_a): 1/4 against 3/4 / 4: none.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf, conf_from_text
from tests.builders import model, node, pod, podgroup, queue


def conf(hierarchy: bool, quota: str = "proportion") -> SchedulerConf:
    plugins = [
        PluginConf(name="gang"),
        PluginConf.model_validate({"name": "drf", "enableHierarchy": hierarchy}),
        PluginConf(name="predicates"),
        PluginConf(name=quota),
    ]
    return SchedulerConf(
        actions=("enqueue", "allocate", "reclaim"), tiers=(TierConf(plugins=plugins),)
    )


def hqueue(name: str, weights: str, deserved: str | None = None) -> dict[str, Any]:
    q = queue(name, weight=1) if deserved is None else queue(name, deserved={"cpu": deserved})
    q["metadata"].setdefault("annotations", {}).update(
        {"volcano.sh/hierarchy": f"root/{name}", "volcano.sh/hierarchy-weights": weights}
    )
    return q


def job(name: str, q: str, pods: int, *, on: str = "") -> list[Any]:
    """A job of `pods` 1-cpu pods (running on `on`: minMember 1, so the gang plugin lets
    them go one by one; pending: minMember all of them)."""
    pg = podgroup(name, 1 if on else pods, "volcano")
    pg["spec"]["queue"] = q
    out: list[Any] = [pg]
    for i in range(pods):
        b = pod(f"{name}-{i}").annotate("scheduling.k8s.io/group-name", name).requests(cpu=1)
        out.append((b.on(on) if on else b).obj())
    return out


def world(b_pods: int, w_a: int = 1, w_b: int = 1) -> list[Any]:
    return [
        node("n0").cpu("4").obj(),
        hqueue("a", f"1/{w_a}"),
        hqueue("b", f"1/{w_b}"),
        *job("ja", "a", 4, on="n0"),
        *job("jb", "b", b_pods),
    ]


@pytest.mark.parametrize(
    ("b_pods", "w_a", "w_b", "with_hdrf", "alone"),
    [
        (1, 1, 1, 1, 1),
        (2, 1, 1, 0, 2),
        (2, 1, 2, 2, 2),
        (1, 4, 1, 0, 1),
    ],
    ids=["one task", "second task ties", "b weighs twice", "a weighs four times"],
)
def test_hdrf_judges_every_victim_proportion_offers(
    b_pods: int, w_a: int, w_b: int, with_hdrf: int, alone: int
) -> None:
    cluster = model(*world(b_pods, w_a, w_b))
    for hierarchy, victims in ((True, with_hdrf), (False, alone)):
        c = conf(hierarchy)
        decision = schedule(cluster, c, engine="greedy")
        assert verify(cluster, c, decision) == []
        assert len(decision.victims) == victims, (hierarchy, decision.victims)
        nominated = [k for k, p in decision.placements.items() if p.nominated]
        assert len(nominated) == (b_pods if victims else 0)
        refused = "hierarchical DRF (drf enableHierarchy) refused" in (
            decision.podgroups["default/jb"].reason
        )
        assert refused == (hierarchy and alone > 0 and not victims)  # the reason says why


def test_without_a_quota_plugin_the_note_says_reclaim_is_not_planned() -> None:
    text = (
        'actions: "allocate, reclaim"\ntiers:\n- plugins:\n  - name: gang\n'
        "  - name: drf\n    enableHierarchy: true\n"
    )
    c = conf_from_text(text, "volcano.conf")
    decision = schedule(model(*world(1)), c, engine="greedy")
    assert decision.victims == ()
    assert any("reclaim is not planned" in n for n in decision.notes), decision.notes


@pytest.mark.parametrize(("w_b", "victims"), [(1, 0), (2, 2)])
def test_hdrf_judges_capacitys_victims_too(w_b: int, victims: int) -> None:
    """The same with `capacity` (a and b deserve 2 cpu each): a holds 4, so capacity offers
    two of its pods; hDRF takes them only when b weighs twice."""
    cluster = model(
        node("n0").cpu("4").obj(),
        hqueue("a", "1/1", deserved="2"),
        hqueue("b", f"1/{w_b}", deserved="2"),
        *job("ja", "a", 4, on="n0"),
        *job("jb", "b", 2),
    )
    for hierarchy, expected in ((True, victims), (False, 2)):
        c = conf(hierarchy, "capacity")
        decision = schedule(cluster, c, engine="greedy")
        assert verify(cluster, c, decision) == []
        assert len(decision.victims) == expected, (hierarchy, decision.victims)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=3, max_size=3),  # running pods per queue (at most 8)
    st.lists(st.integers(1, 3), min_size=3, max_size=3),
    st.integers(1, 3),
    st.sampled_from(["proportion", "capacity"]),
)
def test_every_hdrf_reclaim_is_verified(
    running: list[int], weights: list[int], pending: int, quota: str
) -> None:
    """Three queues under one root (random hierarchy weights), two nodes of 4 cpu filled
    by their running jobs, queue q2's job asking `pending` pods: every answer passes
    `verify`, and no pod of q2's own queue is a victim."""
    objects: list[Any] = [node("n0").cpu("4").obj(), node("n1").cpu("4").obj()]
    for i, w in enumerate(weights):
        objects.append(hqueue(f"q{i}", f"1/{w}", deserved="2" if quota == "capacity" else None))
    slots = ["n0"] * 4 + ["n1"] * 4
    for i, count in enumerate(running):
        for k in range(count):
            if slots:
                objects += job(f"r{i}-{k}", f"q{i}", 1, on=slots.pop())
    objects += job("p", "q2", pending)
    cluster = model(*objects)
    c = conf(True, quota)
    decision = schedule(cluster, c, engine="greedy")
    assert verify(cluster, c, decision) == []
    assert not any(v.pod.startswith("default/r2-") for v in decision.victims)
