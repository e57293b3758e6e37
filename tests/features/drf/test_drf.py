"""Volcano `drf`: jobs in dominant-share order inside a queue.

n0  5 GPUs: a-0..a-3 running (job a), 1 free
pending: a-4 (job a, created first) and b-0 (job b, nothing running) want the free GPU
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf, conf_from_text
from solver.features.drf import dominant_shares
from solver.schedule import snapshot_of
from tests.builders import model, node, pod, podgroup, queue


def conf(*names: str, gang: bool = True) -> SchedulerConf:
    base = ("predicates", "gang", "proportion") if gang else ("predicates", "proportion")
    plugins = [PluginConf(name=n) for n in (*base, *names)]
    return SchedulerConf(actions=("enqueue", "allocate"), tiers=(TierConf(plugins=plugins),))


def job(name: str, created: str, running: int, pending: int) -> list[dict[str, Any]]:
    pg = podgroup(name, 1, "volcano")
    pg["spec"]["queue"] = "q"
    pg["metadata"]["creationTimestamp"] = created
    out = [pg]
    for i in range(running + pending):
        b = pod(f"{name}-{i}").annotate("scheduling.k8s.io/group-name", name).requests(cpu=1, gpu=1)
        if i < running:
            b.on("n0")
        out.append(b.obj())
    return out


OBJECTS = [
    node("n0").cpu("16").gpu(5).obj(),
    queue("q"),
    *job("a", "2026-01-01T00:00:00Z", 4, 1),
    *job("b", "2026-01-02T00:00:00Z", 0, 1),
]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_the_job_with_the_lower_dominant_share_goes_first(engine: str) -> None:
    cluster = model(*OBJECTS)
    with_drf = schedule(cluster, conf("drf"), engine=engine, workers=1)
    assert verify(cluster, conf("drf"), with_drf) == []
    assert with_drf.placed == {"default/b-0": "n0"}
    # without drf and gang, creation order: a first; with gang alone b goes first too, as
    # a is ready (its running pods meet its minMember: gang's JobOrderFn puts it last)
    without = schedule(cluster, conf(gang=False), engine="greedy")
    assert without.placed == {"default/a-4": "n0"}
    assert schedule(cluster, conf(), engine="greedy").placed == {"default/b-0": "n0"}


def test_dominant_share_is_the_largest_resource_fraction() -> None:
    snapshot = snapshot_of(model(*OBJECTS))
    # a runs 4 of 5 GPUs and 4 of 16 cpus: its dominant share is 0.8
    assert dominant_shares(snapshot, [["default/a"], ["default/b"], []]) == [0.8, 0.0, 0.0]


def test_hierarchy_is_acted_on_and_only_its_reclaim_rule_noted() -> None:
    text = """actions: "enqueue, allocate, preempt{}"
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
"""
    notes = conf_from_text(text.format(""), "c.conf").notes
    assert not any("enableHierarchy" in n for n in notes)  # the order is acted on
    assert not any("preemption rule" in n for n in notes)  # `preempt.py` acts on it
    notes = conf_from_text(text.format(", reclaim"), "c.conf").notes
    assert any("enableHierarchy" in n and "reclaim rule" in n for n in notes)
