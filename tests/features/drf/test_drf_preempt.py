"""Volcano `drf`'s preemption rule (`drf.go` `preemptableFn`), worked by hand: upstream has
no preempt-action test with drf enabled.

    n0 (3 cpu): rich-0, rich-1 (job rich: PodGroup minMember 1, 1 cpu each, priority 1)
                poor-0          (job poor: 1 cpu, priority 0)
    pending:    urgent (1 cpu, priority 100)

The urgent job's share with its pod is ls = 1/3. Taking poor-0 leaves poor at 0 < 1/3: not
allowed. Taking one of rich's pods leaves rich at 1/3 = ls: allowed (within 10⁻⁶). Without
drf the lower-priority poor-0 is the cheaper victim.
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import schedule
from solver.config import conf_from_text
from solver.kube import load_objects
from tests.builders import node, pod, podgroup, raw

PLUGINS = "[{name: gang}, {name: predicates}"


def conf(drf: str | None) -> Any:
    extra = f", {{name: drf{', ' + drf if drf else ''}}}" if drf is not None else ""
    return conf_from_text(
        f"actions: 'enqueue, allocate, preempt'\ntiers: [{{plugins: {PLUGINS}{extra}]}}]", "c"
    )


def cluster(urgent_cpu: int = 1) -> list[dict[str, Any]]:
    return [
        node("n0").cpu(3).obj(),
        podgroup("rich", 1, "volcano"),
        pod("rich-0").requests(cpu=1).group("rich").on("n0").priority(1).obj(),
        pod("rich-1").requests(cpu=1).group("rich").on("n0").priority(1).obj(),
        pod("poor-0").requests(cpu=1).on("n0").priority(0).obj(),
        pod("urgent").requests(cpu=urgent_cpu).priority(100).obj(),
    ]


def victims(objs: list[dict[str, Any]], c: Any, engine: str) -> list[str]:
    d = schedule(load_objects(raw(*objs)), c, engine=engine, workers=1)  # verified
    return sorted(v.pod.split("/")[1] for v in d.victims)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_only_a_job_left_at_least_as_rich_as_the_preemptor_gives_up_a_pod(engine: str) -> None:
    assert victims(cluster(), conf(None), engine) == ["poor-0"]
    assert victims(cluster(), conf(""), engine) == ["rich-1"]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_enable_preemptable_false_turns_the_rule_off(engine: str) -> None:
    assert victims(cluster(), conf("enablePreemptable: false"), engine) == ["poor-0"]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_richer_preemptor_takes_nothing(engine: str) -> None:
    """urgent asks 2 cpu: ls = 2/3; rich keeps 1/3 after one pod, 0 after two: below ls."""
    d = schedule(load_objects(raw(*cluster(urgent_cpu=2))), conf(""), engine=engine, workers=1)
    assert not d.victims
    assert "preemption" in d.placements["default/urgent"].reason
