"""Volcano's per-node-group resource limits (`volcano.sh/nodegroup-resource-limits`).

The table is `TestNodeGroupResourceLimits` of `pkg/scheduler/plugins/nodegroup/
nodegroup_test.go` (master ed72c7c8; upstream #4954, PR #5461), case by case: two 16-cpu
nodes n1 (group1) and n2 (group2), a queue requiring both and preferring group1, a pending
2 cpu / 4Gi pod. Upstream asserts the predicate status per node; here `explain` gives the
same verdict per node and both engines place the pod (group1 wins on score when allowed),
verified independently. `TestNodeGroupResourceLimitAllocationEvent` (usage grows as the
cycle places pods) and the overflow the feature exists for follow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solver import SchedulerConf, explain, load_conf, load_manifests, schedule, solve, verify
from solver.config import PluginConf, TierConf
from solver.decision import Decision, GroupOutcome, Placement
from solver.features.nodegroup import (
    REASON_AFFINITY_UNSET,
    REASON_LIMIT_EXCEEDED,
    REASON_LIMIT_INVALID,
    REASON_NOT_SATISFIED,
)
from solver.features.nodegroup.limits import parse_limits
from solver.features.queues import validate_queues
from solver.model import ClusterModel
from solver.schedule import snapshot_of
from tests.builders import model, node, pod, podgroup, queue

ANNOTATION = "volcano.sh/nodegroup-resource-limits"
LABEL = "volcano.sh/nodegroup-name"
ENGINES = ("greedy", "cpsat")


def conf(
    *, hierarchy: bool = False, actions: tuple[str, ...] = ("enqueue", "allocate")
) -> SchedulerConf:
    plugins = [
        PluginConf(name="priority"),
        PluginConf(name="gang"),
        PluginConf(name="predicates"),
        PluginConf.model_validate({"name": "nodegroup", "enableHierarchy": hierarchy}),
    ]
    return SchedulerConf(actions=actions, tiers=(TierConf(plugins=plugins),))


def limited_queue(
    name: str, limits: str | None, parent: str | None = None, **spec: Any
) -> dict[str, Any]:
    q = queue(name, parent, **spec)
    if limits is not None:
        q["metadata"]["annotations"] = {ANNOTATION: limits}
    return q


def job(
    name: str,
    queue_name: str,
    pods: int = 1,
    *,
    cpu: str = "2",
    memory: str = "4Gi",
    on: str | None = None,
    phase: str | None = None,
    priority: int | None = None,
    min_member: int = 1,
    extra: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A Volcano PodGroup in `queue_name` and its pods (`util.BuildPod` in namespace limit)."""
    pg = podgroup(name, min_member, "volcano", namespace="limit")
    pg["spec"]["queue"] = queue_name
    if phase:
        pg["status"] = {"phase": phase}
    out = [pg]
    for i in range(pods):
        b = pod(f"{name}-{i}", "limit").annotate("scheduling.k8s.io/group-name", name)
        b.body["spec"]["containers"][0]["resources"]["requests"] = {
            "cpu": cpu,
            "memory": memory,
            **(extra or {}),
        }
        if on:
            b.on(on)
        if priority is not None:
            b.priority(priority)
        out.append(b.obj())
    return out


NODES = [
    node("n1").cpu("16").memory("64Gi").pods(32).label(LABEL, "group1").obj(),
    node("n2").cpu("16").memory("64Gi").pods(32).label(LABEL, "group2").obj(),
]
AFFINITY = {"affinity": {"required": ["group1", "group2"], "preferred": ["group1"]}}
INVALID = f"{REASON_LIMIT_INVALID} (queue q: {ANNOTATION}: invalid JSON (Expecting value))"

# name -> (annotation, running pods in the queue, verdict per node (None = fits), placement)
CASES: dict[str, tuple[str | None, bool, dict[str, str | None], str | None]] = {
    "no annotation keeps existing behavior": (None, False, {"n1": None, "n2": None}, "n1"),
    "under nodegroup limit permits preferred nodegroup": (
        '{"group1":{"cpu":"3","memory":"8Gi"}}', False, {"n1": None, "n2": None}, "n1",
    ),
    "omitted resource dimension is unlimited": (
        '{"group1":{"cpu":"3"}}', False, {"n1": None, "n2": None}, "n1",
    ),
    "specified resource dimension is enforced": (
        '{"group1":{"cpu":"1"}}', False, {"n1": REASON_LIMIT_EXCEEDED, "n2": None}, "n2",
    ),
    "over nodegroup limit rejects preferred nodegroup and permits fallback": (
        '{"group1":{"cpu":"3","memory":"8Gi"}}', True, {"n1": REASON_LIMIT_EXCEEDED, "n2": None}, "n2",
    ),
    "invalid annotation rejects queue tasks": (
        '{"group1":{"cpu":', False, {"n1": INVALID, "n2": INVALID}, None,
    ),
}  # fmt: skip


def case_model(annotation: str | None, running: bool) -> ClusterModel:
    objs = [*NODES, limited_queue("q", annotation, **AFFINITY), *job("pending", "q")]
    if running:
        objs += job("used", "q", on="n1", phase="Running")
    return model(*objs)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_predicate_table(
    case: tuple[str | None, bool, dict[str, str | None], str | None],
) -> None:
    annotation, running, verdicts, _ = case
    nodes = explain(case_model(annotation, running), conf(), "limit/pending-0")["nodes"]
    assert {n: (v["reasons"] or [None])[0] for n, v in nodes.items()} == verdicts


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_table_placements(
    case: tuple[str | None, bool, dict[str, str | None], str | None], engine: str
) -> None:
    annotation, running, _, where = case
    cluster = case_model(annotation, running)
    d = solve(cluster, conf(), engine=engine, workers=1, time_limit=20)
    assert d.placements["limit/pending-0"].node == where
    assert verify(cluster, conf(), d) == []
    if where is None:
        assert (
            "2 node group resource limit annotation invalid (queue q:"
            in d.podgroups["limit/pending"].reason
        )
        assert any(f"queue q: annotation {ANNOTATION} is invalid" in n for n in d.notes)


@pytest.mark.parametrize("engine", ENGINES)
def test_usage_grows_as_the_cycle_places_pods(engine: str) -> None:
    # TestNodeGroupResourceLimitAllocationEvent: n1 only, limit 3 cpu, two 2-cpu jobs: the
    # first fits, the second exceeds the limit once the first is allocated.
    cluster = model(
        NODES[0],
        limited_queue(
            "q", '{"group1":{"cpu":"3","memory":"8Gi"}}', affinity={"required": ["group1"]}
        ),
        *job("pg-1", "q"),
        *job("pg-2", "q"),
    )
    d = solve(cluster, conf(), engine=engine, workers=1, time_limit=20)
    placed = sorted(k for k, p in d.placements.items() if p.node)
    assert len(placed) == 1
    other = "limit/pg-2" if placed == ["limit/pg-1-0"] else "limit/pg-1"
    assert f"1 {REASON_LIMIT_EXCEEDED}" in d.podgroups[other].reason
    assert verify(cluster, conf(), d) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_fills_the_preferred_group_to_its_limit_then_overflows(engine: str) -> None:
    # #4954: "prefer group A up to X cpu, then overflow to B". 5 pods x 2 cpu, group1 may
    # take 6 cpu of this queue (2 already running there): 2 more in group1, 3 in group2.
    cluster = model(
        *NODES,
        limited_queue("q", '{"group1":{"cpu":"6"}}', **AFFINITY),
        *job("run", "q", on="n1", phase="Running"),
        *job("train", "q", 5, min_member=5),
    )
    d = solve(cluster, conf(), engine=engine, workers=1, time_limit=20)
    nodes = sorted(p.node or "-" for k, p in d.placements.items() if k.startswith("limit/train"))
    assert nodes == ["n1", "n1", "n2", "n2", "n2"]
    assert verify(cluster, conf(), d) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gang_that_cannot_overflow_stays_pending_whole(engine: str) -> None:
    cluster = model(
        *NODES,
        limited_queue("q", '{"group1":{"cpu":"4"}}', affinity={"required": ["group1"]}),
        *job("train", "q", 3, min_member=3),
    )
    d = solve(cluster, conf(), engine=engine, workers=1, time_limit=20)
    assert all(p.node is None for p in d.placements.values())
    reason = d.podgroups["limit/train"].reason
    assert (
        f"2 of 3 required pod(s) fit; 0/2 nodes are available: 1 {REASON_NOT_SATISFIED}, 1 {REASON_LIMIT_EXCEEDED}."
        in reason
    )
    assert "fits on the cluster on its own" not in reason  # CP-SAT's relaxation has no limits
    assert verify(cluster, conf(), d) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_every_listed_resource_counts_even_one_the_pod_does_not_request(engine: str) -> None:
    # The limit for group1 lists a GPU the queue already overuses (the limit was lowered):
    # upstream checks allocated + request <= limit on every listed resource, so a cpu-only
    # pod cannot go there either; group2 is not listed, so it is unlimited.
    cluster = model(
        node("n1").cpu("16").gpu(4).label(LABEL, "group1").obj(),
        node("n2").cpu("16").label(LABEL, "group2").obj(),
        limited_queue("q", '{"group1":{"nvidia.com/gpu":"1"}}', **AFFINITY),
        *job("gpu", "q", on="n1", phase="Running", extra={"nvidia.com/gpu": "2"}),
        *job("cpu", "q"),
    )
    d = solve(cluster, conf(), engine=engine, workers=1, time_limit=20)
    assert d.placements["limit/cpu-0"].node == "n2"
    assert explain(cluster, conf(), "limit/cpu-0")["nodes"]["n1"]["reasons"] == [
        REASON_LIMIT_EXCEEDED
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_terminating_and_other_queues_pods_do_not_count(engine: str) -> None:
    terminating = job("old", "q", on="n1", phase="Running")
    terminating[1]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    cluster = model(
        *NODES,
        limited_queue("q", '{"group1":{"cpu":"2"}}', **AFFINITY),
        limited_queue("other", None, **AFFINITY),
        *terminating,
        *job("theirs", "other", on="n1", phase="Running"),
        *job("new", "q"),
    )
    d = solve(cluster, conf(), engine=engine, workers=1, time_limit=20)
    assert d.placements["limit/new-0"].node == "n1"
    assert verify(cluster, conf(), d) == []


def test_the_annotation_is_not_inherited() -> None:
    # With enableHierarchy the child takes its parent's affinity, never its limits.
    cluster = model(
        *NODES,
        limited_queue("parent", '{"group1":{"cpu":"1"}}', **AFFINITY),
        limited_queue("child", None, "parent"),
        *job("j", "child"),
    )
    d = schedule(cluster, conf(hierarchy=True), engine="greedy")
    assert d.placements["limit/j-0"].node == "n1"


@pytest.mark.parametrize("engine", ENGINES)
def test_preemption_frees_the_victims_share_of_the_limit(engine: str) -> None:
    # q may use 4 cpu of group1 and uses 2 (a low-priority pod); n1 is full. A high-priority
    # job of q (2 x 2 cpu) preempts: the victim's 2 cpu are released from q's group1 limit
    # before the plan is checked (upstream DeallocateFunc on Evict), so 2 + 4 - 2 <= 4.
    cluster = model(
        node("n1").cpu("4").memory("64Gi").label(LABEL, "group1").obj(),
        limited_queue("q", '{"group1":{"cpu":"4"}}', affinity={"required": ["group1"]}),
        limited_queue("o", None, affinity={"required": ["group1"]}),
        *job("low", "q", on="n1", phase="Running", priority=1),
        *job("other", "o", on="n1", phase="Running", priority=1),
        *job("high", "q", 2, priority=100, min_member=2),
    )
    c = conf(actions=("enqueue", "allocate", "preempt"))
    d = solve(cluster, c, engine=engine, workers=1, time_limit=20, preempt=True)
    assert sorted(v.pod for v in d.victims) == ["limit/low-0", "limit/other-0"]
    assert {p.nominated for k, p in d.placements.items() if k.startswith("limit/high")} == {"n1"}
    assert verify(cluster, c, d) == []


def test_a_group_the_running_pods_fill_is_not_a_preemption_target() -> None:
    # As upstream: the limit check fails UnschedulableAndUnresolvable, and preempt/reclaim
    # skip such nodes, so a group full of the queue's own pods is not preempted into.
    cluster = model(
        node("n1").cpu("4").memory("64Gi").label(LABEL, "group1").obj(),
        limited_queue("q", '{"group1":{"cpu":"4"}}', affinity={"required": ["group1"]}),
        *job("low", "q", 2, on="n1", phase="Running", priority=1, min_member=2),
        *job("high", "q", 2, priority=100, min_member=2),
    )
    c = conf(actions=("enqueue", "allocate", "preempt"))
    d = schedule(cluster, c, engine="greedy", preempt=True)
    assert d.victims == ()
    assert f"1 {REASON_LIMIT_EXCEEDED}" in d.podgroups["limit/high"].reason


def test_verify_reports_a_pod_over_the_limit() -> None:
    cluster = model(
        *NODES,
        limited_queue("q", '{"group1":{"cpu":"3"}}', **AFFINITY),
        *job("a", "q", 2, min_member=2),
    )
    d = Decision(
        placements={"limit/a-0": Placement(node="n1"), "limit/a-1": Placement(node="n1")},
        podgroups={"limit/a": GroupOutcome(enqueued=True, placed=True)},
        engine="t", status="HEURISTIC", objective=0, tiers={}, seconds=0,
    )  # fmt: skip
    assert verify(cluster, conf(), d) == [
        "queue q: node group group1: cpu running + placed 4000 > limit 3000"
    ]
    invalid = model(*NODES, limited_queue("q", "[1]", **AFFINITY), *job("a", "q", 2, min_member=2))
    problems = verify(invalid, conf(), d)
    assert problems[0] == f"limit/a-0: placed although queue q's {ANNOTATION} is invalid"


def test_affinity_reasons_come_first() -> None:
    # The limit is checked after the affinity, as upstream: a node the affinity rejects
    # keeps that reason even when its group is full.
    cluster = model(
        *NODES,
        limited_queue(
            "q", '{"group1":{"cpu":"1"},"group2":{"cpu":"1"}}', affinity={"required": ["group1"]}
        ),
        limited_queue("none", '{"group1":{"cpu":"1"}}'),
        *job("j", "q"),
        *job("k", "none"),
    )
    nodes = explain(cluster, conf(), "limit/j-0")["nodes"]
    assert nodes["n1"]["reasons"] == [REASON_LIMIT_EXCEEDED]
    assert nodes["n2"]["reasons"] == [REASON_NOT_SATISFIED]
    assert explain(cluster, conf(), "limit/k-0")["nodes"]["n1"]["reasons"] == [
        REASON_AFFINITY_UNSET
    ]


PARSE: dict[str, tuple[str | None, dict[str, dict[str, int]], str | None]] = {
    "absent": (None, {}, None),
    "empty": ("", {}, None),
    "null": ("null", {}, None),
    "quantities as strings and numbers": (
        '{"g": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": "3"}}',
        {"g": {"cpu": 1500, "memory": 2**30, "nvidia.com/gpu": 2}},
        None,
    ),
    "a null group and a null quantity": ('{"g": null, "h": {"cpu": null}}', {"g": {}, "h": {"cpu": 0}}, None),
    "a negative limit": ('{"g": {"cpu": "-1"}}', {"g": {"cpu": -1000}}, None),
    "not JSON": ('{"group1":{"cpu":', {}, "invalid JSON (Expecting value)"),
    "not an object": ("[1]", {}, "must be a JSON object of node group name to resource list"),
    "a group that is not an object": ('{"g": 3}', {}, "node group g: must be a JSON object of resource name to quantity"),
    "a bad quantity": ('{"g": {"cpu": "lots"}}', {}, "node group g: cpu: invalid quantity 'lots': not a Kubernetes quantity"),
    "a boolean": ('{"g": {"cpu": true}}', {}, "node group g: cpu: invalid quantity True: not a string or a number"),
    "NaN is not JSON": ('{"g": {"cpu": NaN}}', {}, "invalid JSON (NaN is not JSON)"),
}  # fmt: skip


@pytest.mark.parametrize("case", PARSE.values(), ids=PARSE.keys())
def test_parse(case: tuple[str | None, dict[str, dict[str, int]], str | None]) -> None:
    text, limits, error = case
    parsed = parse_limits(text)
    assert (parsed.limits, parsed.error) == (limits, error)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_example_overflows_past_the_limit(engine: str) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "queues"
    c = load_conf(examples / "nodegroup.conf")
    cluster = load_manifests(str(examples / "nodegroup-limits.yaml"))
    d = solve(cluster, c, engine=engine, workers=1, time_limit=20)
    groups = sorted(p.node[:3] for p in d.placements.values() if p.node)
    assert groups == ["ng1"] * 8 + ["ng2"] * 4
    assert verify(cluster, c, d) == []


def test_queues_validate_warns_about_an_invalid_annotation() -> None:
    # Volcano's admission webhook admits any annotation: a warning, not an invalid queue.
    cluster = model(*NODES, limited_queue("q", '{"group1": 3}', **AFFINITY))
    v = validate_queues(snapshot_of(cluster))["q"]
    assert v.valid
    assert v.warnings == [
        f"annotation {ANNOTATION} is invalid: node group group1: must be a JSON object of "
        "resource name to quantity; every node fails for the queue's pods"
    ]
