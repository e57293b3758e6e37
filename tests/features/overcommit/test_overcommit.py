"""Volcano `overcommit`: a cluster-wide enqueue rule.

2 nodes × 4 GPUs = 8 GPUs; factor 1.2 -> 9.6 GPUs may be admitted beyond the running pods
a-job (4 GPUs), b-job (4 GPUs), c-job (2 GPUs): all ask minResources = their pods
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import PluginConf, TierConf
from solver.features.overcommit import _factor
from tests.builders import model, node, pod, podgroup, queue

GPU = "nvidia.com/gpu"


def conf(*plugins: str, factor: float | None = None) -> SchedulerConf:
    names = ("predicates", "gang", *plugins)
    items = [PluginConf(name=n) for n in names]
    if factor is not None:
        items.append(PluginConf(name="overcommit", arguments={"overcommit-factor": factor}))
    return SchedulerConf(actions=("enqueue", "allocate"), tiers=(TierConf(plugins=items),))


def job(name: str, gpus: int, phase: str = "", running: int = 0, q: str = "") -> list[Any]:
    pg = podgroup(name, gpus, "volcano")
    pg["spec"]["minResources"] = {GPU: str(gpus), "cpu": str(gpus)}
    if q:
        pg["spec"]["queue"] = q
    if phase:
        pg["status"] = {"phase": phase}
    out = [pg]
    for i in range(gpus):
        b = pod(f"{name}-{i}").annotate("scheduling.k8s.io/group-name", name)
        b.requests(cpu=1, gpu=1)
        if i < running:
            b.on("n0")
        out.append(b.obj())
    return out


NODES = [node(f"n{i}").cpu("32").gpu(4).obj() for i in range(2)]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_jobs_enter_while_the_overcommitted_cluster_has_room(engine: str) -> None:
    # 9.6 GPUs admissible: a (4) and b (4) enter, c (2) would make 10 > 9.6: not enqueued.
    cluster = model(*NODES, *job("a", 4), *job("b", 4), *job("c", 2))
    d = schedule(cluster, conf("overcommit"), engine=engine, workers=1)
    assert verify(cluster, conf("overcommit"), d) == []
    c = d.podgroups["default/c"]
    assert not c.enqueued and not c.placed
    assert c.reason == (
        "not enqueued: resource in cluster is overused: nvidia.com/gpu 2 requested + 8 "
        "admitted > 9 idle (allocatable × 1.2 − running requests)"
    )
    assert d.podgroups["default/a"].placed and d.podgroups["default/b"].placed
    # without the plugin c is enqueued (and waits for room like any job)
    assert schedule(cluster, conf(), engine="greedy").podgroups["default/c"].enqueued


def test_the_factor_and_what_is_admitted_already_count() -> None:
    # factor 1.5 -> 12 GPUs: all three enter. An Inqueue job already holds 4 of them.
    cluster = model(*NODES, *job("a", 4), *job("b", 4), *job("c", 2))
    d = schedule(cluster, conf(factor=1.5), engine="greedy")
    assert all(o.enqueued for o in d.podgroups.values())
    held = model(*NODES, *job("x", 4, phase="Inqueue"), *job("a", 4), *job("b", 4))
    d = schedule(held, conf(factor=1.0), engine="greedy")
    assert d.podgroups["default/x"].enqueued  # admitted before: not asked again
    assert [g for g, o in d.podgroups.items() if not o.enqueued] == ["default/b"]


def test_running_pods_use_the_room() -> None:
    # a runs 3 of its 4 GPUs (Running, minMember reached? no: 3 < 4, so it owes nothing
    # as inqueue) — its 3 running GPUs are used: 8 × 1.0 − 3 = 5 idle: b (4) enters, c not.
    cluster = model(*NODES, *job("a", 4, running=3), *job("b", 4), *job("c", 2))
    d = schedule(cluster, conf(factor=1.0), engine="greedy")
    assert d.podgroups["default/b"].enqueued and not d.podgroups["default/c"].enqueued


def test_asked_in_the_quota_walk_in_queue_order() -> None:
    # With proportion, the quota walk asks overcommit after each queue's own rule, in queue
    # order: q-b (priority 5) first, so b (6 GPUs) enters and a (4) would make 10 > 8; by
    # name alone a would have entered and b not.
    objs = [*NODES, queue("q-a"), queue("q-b", priority=5),
            *job("a", 4, q="q-a"), *job("b", 6, q="q-b")]  # fmt: skip
    d = schedule(model(*objs), conf("proportion", factor=1.0), engine="greedy")
    assert [g for g, o in d.podgroups.items() if not o.enqueued] == ["default/a"]
    alone = schedule(model(*objs), conf(factor=1.0), engine="greedy")  # no quota walk
    assert [g for g, o in alone.podgroups.items() if not o.enqueued] == ["default/b"]


def test_a_bad_factor_is_the_default() -> None:
    assert _factor(0.5) == 1.2 and _factor("x") == 1.2 and _factor(True) == 1.2
    assert _factor("1.5") == 1.5 and _factor(2) == 2.0


@pytest.mark.parametrize("plugins", [("overcommit",), ("overcommit", "proportion")])
def test_a_job_refused_for_the_jobs_admitted_ahead_is_competition(
    plugins: tuple[str, ...],
) -> None:
    """c (2 GPUs) would enter an idle cluster (2 ≤ 9.6); a and b, admitted ahead, make it
    10 > 9.6: the certificate is competition naming them, not a rule of c's own (alone, c
    enters and runs), with the walk of overcommit alone and inside proportion's."""
    cluster = model(*NODES, *job("a", 4), *job("b", 4), *job("c", 2))
    d = schedule(cluster, conf(*plugins), engine="greedy")
    cert = d.certificates["default/c"]
    assert (cert.kind, cert.constraint, cert.rivals) == (
        "competition", "enqueue", ("default/a", "default/b"))  # fmt: skip
    big = model(*NODES, *job("a", 4), *job("huge", 10))  # 10 > 9.6 even alone: its own rule
    assert schedule(big, conf(*plugins), engine="greedy").certificates["default/huge"].kind == (
        "blocked"
    )
