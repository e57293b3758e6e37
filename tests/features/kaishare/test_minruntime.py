"""KAI's `minruntime` plugin, translated from upstream's own tests.

Source: NVIDIA/KAI-Scheduler `pkg/scheduler/plugins/minruntime/resolver_test.go`
(Describe "MinRuntime Resolver", on `createTestQueues`) and `minruntime_test.go` (the
filter and scenario-validator cases, then `parseMinRuntime`), each row citing its
Describe / Context. Upstream's nil-queue cases have no counterpart (a queue is a name).

    dev (preempt 5s, reclaim 10s)        prod (preempt 20s, reclaim 30s)     research (4s, 6s)
    ├── dev-team1 (-, 8s)                ├── prod-team1 (-, 25s)             └── research-project (7s, 9s)
    └── dev-team2 (3s, -)                └── prod-team2 (15s, 35s)
"""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from solver import SchedulerConf, schedule, verify
from solver.config import conf_from_text
from solver.decision import Victim
from solver.errors import ManifestError
from solver.features.kaishare.minruntime import MinRuntime, protected
from solver.kube import load_objects
from solver.model import KaiQuota, Queue
from solver.schedule import snapshot_of
from tests.builders import raw
from tests.features.kaishare.test_kai_allocate import Q
from tests.features.kaishare.test_kai_reclaim import CASES, CONF, Case, objects
from tests.kube.test_kai_priority import NODE, QUEUES, pod

TREE = {  # name: (parent, preemptMinRuntime, reclaimMinRuntime)
    "dev": (None, 5, 10), "prod": (None, 20, 30), "research": (None, 4, 6),
    "dev-team1": ("dev", None, 8), "dev-team2": ("dev", 3, None),
    "prod-team1": ("prod", None, 25), "prod-team2": ("prod", 15, 35),
    "research-project": ("research", 7, 9),
}  # fmt: skip


def queues(tree: dict[str, tuple[str | None, float | None, float | None]]) -> dict[str, Queue]:
    return {
        name: Queue(
            name=name,
            parent=parent,
            kai=KaiQuota(preempt_min_runtime=preempt, reclaim_min_runtime=reclaim),
        )
        for name, (parent, preempt, reclaim) in tree.items()
    }


def rules(method: str = "lca", tree: Any = TREE) -> MinRuntime:
    """Upstream's resolver tests: default preempt 2s, default reclaim 1s."""
    return MinRuntime(queues(tree), default_preempt=2, default_reclaim=1, method=method)


@pytest.mark.parametrize(
    ("context", "queue", "want"),
    [
        ("when queue has a set value (prod-team2)", "prod-team2", 15),
        ("when queue inherits from parent (prod-team1 from prod)", "prod-team1", 20),
        ("when queue inherits from parent (dev-team1 from dev)", "dev-team1", 5),
        ("when top-level queue has a set value (prod)", "prod", 20),
        ("when research queue has a set value", "research", 4),
        ("when no queue is found", "nonexistent", 2),
    ],
)
def test_get_preempt_min_runtime(context: str, queue: str, want: float) -> None:
    assert rules().preempt(queue) == want


@pytest.mark.parametrize(
    ("context", "method", "reclaimer", "victim", "want"),
    [
        # Describe "getReclaimMinRuntime with queue method"
        ("victim queue has a set value", "queue", "dev-team1", "prod-team2", 35),
        ("victim queue inherits from parent", "queue", "dev-team1", "dev-team2", 10),
        ("victim queue is not found", "queue", "dev-team1", "nonexistent", 1),
        # Describe "getReclaimMinRuntimeLCA"
        ("different top-level queues", "lca", "dev-team1", "prod-team2", 30),
        ("LCA is dev, victim dev-team1 has a value", "lca", "dev-team2", "dev-team1", 8),
        ("LCA is prod, victim prod-team2 has a value", "lca", "prod-team1", "prod-team2", 35),
        ("pendingJob and victim are the same queue", "lca", "prod-team2", "prod-team2", 35),
        ("research queue is victim", "lca", "dev-team1", "research-project", 6),
        # Describe "getReclaimMinRuntime with both methods"
        ("both methods, queue (dev-team1, prod-team2)", "queue", "dev-team1", "prod-team2", 35),
        ("both methods, queue (dev-team1, research-project)", "queue", "dev-team1", "research-project", 9),
    ],
)  # fmt: skip
def test_get_reclaim_min_runtime(
    context: str, method: str, reclaimer: str, victim: str, want: float
) -> None:
    assert rules(method).reclaim(reclaimer, victim) == want


def test_edge_cases() -> None:
    """Describe "Edge cases": an orphaned victim queue uses its own value; a top-level
    victim queue without one falls back to the default."""
    orphan = {**TREE, "orphan": ("nonexistent", None, 7)}
    assert rules(tree=orphan).reclaim("dev-team1", "orphan") == 7
    alone = {"no-reclaim": (None, None, None), "leaf": ("no-reclaim", None, None)}
    assert rules(tree=alone).reclaim("dev-team1", "leaf") == 1


@pytest.mark.parametrize(
    ("it", "queue", "ago", "want"),
    [
        # Describe "preemptFilterFn" (prod-team2 preempts after 15s)
        ("should return false for non-elastic job", "prod-team2", 10, True),
        ("should return true if victim started long ago", "prod-team2", 30, False),
        ("should return true if victim has no start time", "prod-team2", None, False),
    ],
)
def test_preempt_filter(it: str, queue: str, ago: float | None, want: bool) -> None:
    now = 1_000_000.0
    started = None if ago is None else now - ago
    assert protected(started, rules().preempt(queue), now) is want


@pytest.mark.parametrize(
    ("it", "method", "ago", "want"),
    [
        # Describe "reclaimFilterFn" (dev-team1 reclaims from prod-team2: 30s lca, 35s queue)
        ("should return false for non-elastic job", "lca", 20, True),
        ("should return true if victim started long ago", "lca", 40, False),
        ("should use LCA method when configured", "lca", 20, True),
        ("should use queue method when configured", "queue", 20, True),
    ],
)
def test_reclaim_filter(it: str, method: str, ago: float, want: bool) -> None:
    now = 1_000_000.0
    assert protected(now - ago, rules(method).reclaim("dev-team1", "prod-team2"), now) is want


@pytest.mark.parametrize(
    "text",
    ["5s", "10s", "10m5s", "1m", "1.5s", "2m30s", "1h", "1h30m", "2h45m15s", "2d4h30m", "5w4d12h"],
)
def test_parse_min_runtime_sanity(text: str) -> None:
    """Describe "parseMinRuntime", It "Sanity - parse passes"."""
    conf = SchedulerConf.default().model_copy(update={"tiers": ()})
    conf = conf_from_text(
        f"tiers: [{{plugins: [{{name: minruntime, arguments: {{defaultReclaimMinRuntime: {text}}}}}]}}]",
        "c",
    )
    assert MinRuntime.of({}, conf).default_reclaim > 0


@pytest.mark.parametrize("text", ["5", "1h2", "2h45m15", "abc", "1h-30m", "dfdsfdfdf"])
def test_parse_min_runtime_invalid_is_zero(text: str) -> None:
    """It "Invalid durations should return zero"."""
    conf = conf_from_text(
        f"tiers: [{{plugins: [{{name: minruntime, arguments: {{defaultReclaimMinRuntime: '{text}'}}}}]}}]",
        "c",
    )
    assert MinRuntime.of({}, conf).default_reclaim == 0


# ---------------------------------------------------------------- whole cycles

T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def young(objs: list[dict[str, Any]], ago: timedelta, **spec: str) -> Any:
    """Every running pod created `ago` before T; `spec` set on queue0 (reclaim) or test."""
    for o in objs:
        if o["kind"] == "Pod" and o["spec"].get("nodeName"):
            o["metadata"]["creationTimestamp"] = (T - ago).isoformat()
        if o["kind"] == "Queue" and o["metadata"]["name"] in ("queue0", "test"):
            o["spec"].update(spec)
    model = load_objects(raw(*objs))
    return snapshot_of(model.model_copy(update={"observed": T.isoformat()}))


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize(("ago", "kept"), [(20, True), (40, False)])
def test_a_young_job_is_not_reclaimed(engine: str, ago: int, kept: bool) -> None:
    """The first upstream reclaim case with queue0's `reclaimMinRuntime: 30s`: its job,
    running for 20 s, is kept (the pending job waits); after 40 s it is reclaimed."""
    snapshot = young(objects(CASES[0]), timedelta(seconds=ago), reclaimMinRuntime="30s")
    d = schedule(snapshot, CONF, engine=engine, workers=1)  # verified
    assert bool(d.victims) is not kept
    got = d.placements["default/pending_job0-0"]
    assert bool(got.node or got.nominated) is not kept


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize(("least", "victims"), [(1, ["default/running-job-1"]), (2, [])])
def test_a_young_elastic_job_loses_only_pods_beyond_its_min_member(
    engine: str, least: int, victims: list[str]
) -> None:
    """`reclaimScenarioValidatorFn`: a young job of 2 pods with minAvailable 1 gives up
    one (the job keeps its minimum); with minAvailable 2 none."""
    case = Case("elastic", 1, [Q("queue0", 1, weight=1), Q("queue1", 1, weight=1)],
                [("running-job", "queue0", 1, "node0")], ("pending-job", "queue1", 1), set(), True)  # fmt: skip
    objs = objects(case)
    first = next(o for o in objs if o.get("metadata", {}).get("name") == "running-job-0")
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "running-job-1"
    objs.append(second)
    group = next(o for o in objs if o.get("metadata", {}).get("name") == "running-job")
    group["spec"]["minMember"] = least
    snapshot = young(objs, timedelta(seconds=5), reclaimMinRuntime="1m")
    d = schedule(snapshot, CONF, engine=engine, workers=1)
    assert [v.pod for v in d.victims] == victims


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize(("ago", "kept"), [(30, True), (120, False)])
def test_a_young_job_is_not_preempted(engine: str, ago: int, kept: bool) -> None:
    """KAI's priority example (a build pod preempting a train pod in a queue of one GPU)
    with the queue's `preemptMinRuntime: 1m`: the train pod, 30 s old, is kept."""
    objs = copy.deepcopy(
        [NODE, *QUEUES, pod("train-pod", "train", running=True), pod("build-pod", "build")]
    )
    snapshot = young(objs, timedelta(seconds=ago), preemptMinRuntime="1m")
    d = schedule(snapshot, SchedulerConf.default(), engine=engine, workers=1, preempt=True)
    assert [v.pod for v in d.victims] == ([] if kept else ["default/train-pod"])


def test_the_plugin_default_applies_to_queues_without_a_value() -> None:
    conf = conf_from_text(
        "actions: 'enqueue, allocate, reclaim'\n"
        "tiers: [{plugins: [{name: gang}, {name: predicates}, "
        "{name: minruntime, arguments: {defaultReclaimMinRuntime: 1h}}]}]",
        "c",
    )
    assert not conf.notes
    snapshot = young(objects(CASES[0]), timedelta(minutes=30))
    assert not schedule(snapshot, conf, engine="greedy").victims
    assert schedule(snapshot, CONF, engine="greedy").victims


def test_a_bad_min_runtime_names_its_field() -> None:
    objs = objects(CASES[0])
    queue0 = next(o for o in objs if o["kind"] == "Queue" and o["metadata"]["name"] == "queue0")
    queue0["spec"]["reclaimMinRuntime"] = "soon"
    with pytest.raises(ManifestError, match=r"spec.reclaimMinRuntime.*30s or 10m"):
        load_objects(raw(*objs))


@pytest.mark.parametrize(
    ("method", "value", "flagged"),
    [("lca", "30s", True), ("queue", "30s", True), ("lca", "10s", False)],
)
def test_the_verifier_catches_a_young_victim(method: str, value: str, flagged: bool) -> None:
    """The independent check re-derives the minimum from the Queues: reclaiming queue0's
    20-s-old job is refused under a 30 s minimum (either method), allowed under 10 s."""
    conf = conf_from_text(
        "actions: 'enqueue, allocate, reclaim'\n"
        f"tiers: [{{plugins: [{{name: gang}}, {{name: minruntime, arguments: {{reclaimResolveMethod: {method}}}}}]}}]",
        "c",
    )
    snapshot = young(objects(CASES[0]), timedelta(seconds=20), reclaimMinRuntime=value)
    d = schedule(snapshot, conf, engine="greedy")
    bad = dataclasses.replace(d, victims=(
        Victim(pod="default/running_job0-0", node="node0", message="m", cause="reclaim", queue="queue1"),
    ))  # fmt: skip
    problems = [p for p in verify(snapshot, conf, bad) if "minimum runtime" in p]
    assert bool(problems) is flagged
