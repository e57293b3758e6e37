"""Volcano's `conformance` plugin: pods of a system PriorityClass and pods in `kube-system`
are never victims (`conformance.go`, its PreemptableFn and ReclaimableFn).

node-1 [2 GPU]: a system-critical pod (1 GPU, priority 2,000,000,000) and a kube-system pod
(1 GPU, priority 0) — or a plain batch pod; a gang of 2 (or 1) one-GPU pods of priority
2,000,001,000 arrives (only system-node-critical outranks system-cluster-critical).
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf
from tests.builders import model, node, pod, podgroup

CRITICAL = 2_000_000_000


def conf(*plugins: str) -> SchedulerConf:
    names = ("predicates", "gang", *plugins)
    return SchedulerConf(
        actions=("enqueue", "allocate", "preempt"),
        tiers=(TierConf(plugins=[PluginConf(name=n) for n in names]),),
    )


def cluster(namespace: str, priority: int, size: int = 2) -> list[dict[str, Any]]:
    pods = [
        pod("sys", "default").requests(cpu="1", gpu=1).priority(CRITICAL).on("node-1").obj(),
        pod("agent", namespace).requests(cpu="1", gpu=1).priority(priority).on("node-1").obj(),
    ]
    gang = [
        pod(f"hi-{i}").group("hi").requests(cpu="1", gpu=1).priority(CRITICAL + 1000).obj()
        for i in range(size)
    ]
    return [node("node-1").cpu("32").gpu(2).obj(), *pods, podgroup("hi", size), *gang]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_system_pods_are_no_victims_with_conformance(engine: str) -> None:
    question = model(*cluster("kube-system", 0))
    without = schedule(question, conf(), engine=engine, workers=1)
    assert sorted(v.pod for v in without.victims) == ["default/sys", "kube-system/agent"]
    kept = schedule(question, conf("conformance"), engine=engine, workers=1)
    assert verify(question, conf("conformance"), kept) == []
    assert kept.victims == ()
    # a plain pod in another namespace is still a victim; the critical one is not
    plain = model(*cluster("batch", 0, size=1))
    d = schedule(plain, conf("conformance"), engine=engine, workers=1)
    assert [v.pod for v in d.victims] == ["batch/agent"]


def test_verify_names_a_system_victim_under_conformance() -> None:
    question = model(*cluster("kube-system", 0))
    d = schedule(question, conf(), engine="greedy")  # evicts both without conformance
    problems = verify(question, conf("conformance"), d)
    assert "victim default/sys: a system pod (conformance protects it)" in problems
    assert "victim kube-system/agent: a system pod (conformance protects it)" in problems
