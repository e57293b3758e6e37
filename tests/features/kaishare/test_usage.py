"""Time-based fair share: usage counted by hand-worked cases, and its effect on the answer.

The formula is `solver/features/kaishare/usage.py`'s; KAI-Scheduler's own time-aware tests
(`pkg/env-tests/time_aware_fairness_test.go`) are simulations over many cycles that write
CSV files and assert nothing on allocations, so the cases here are worked by hand from
KAI's documentation (`docs/time-based-fairshare/README.md`: "a queue which consumed 24 GPU
hours ... will get a normalized usage score of 0.24") and `calcShareWeights`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from solver import schedule
from solver.config import conf_from_text
from solver.errors import ConfigError, ManifestError
from solver.features.kaishare import Share
from solver.features.kaishare.division import set_resource_share
from solver.features.kaishare.mode import KaiMode
from solver.features.kaishare.usage import decayed_span, queue_usage
from solver.features.queues import build_queue_tree
from solver.kube import load_objects
from solver.schedule import snapshot_of
from solver.snapshot import Delta
from tests.builders import raw
from tests.features.kaishare.test_kai_allocate import Case, Q, objects

T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HOUR = 3600.0


def conf(half_life: str | None = None, window: str = "10h", k: float | None = None) -> Any:
    params = f"windowSize: {window}" + (f", halfLifePeriod: {half_life}" if half_life else "")
    plugins = "[{name: gang}, {name: predicates}"
    plugins += f", {{name: proportion, arguments: {{kValue: {k}}}}}]" if k is not None else "]"
    text = f"usageDBConfig:\n  usageParams: {{{params}}}\ntiers: [{{plugins: {plugins}}}]\n"
    return conf_from_text(text, "conf.yaml")


def running_gpu_pod(name: str, queue: str, gpus: int, started: datetime) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"kai.scheduler/queue": queue},
                     "creationTimestamp": started.isoformat()},
        "spec": {"nodeName": "node0", "containers": [{"name": "c", "resources": {
            "requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": "Running"},
    }  # fmt: skip


def two_queues(**usage: str) -> list[dict[str, Any]]:
    case = Case("two queues", 16, [Q("queue-a", 0, weight=1), Q("queue-b", 0, weight=1)], [], set())
    out = objects(case)
    for obj in out:
        name = obj["metadata"]["name"]
        if obj["kind"] == "Queue" and name in usage:
            obj["metadata"]["annotations"] = {"gangplan.io/usage": usage[name]}
    return out


def usage_of(objs: list[dict[str, Any]], params_conf: Any, at: datetime = T) -> dict[str, Any]:
    model = load_objects(raw(*objs)).model_copy(update={"observed": at.isoformat()})
    snapshot = snapshot_of(model)
    mode = KaiMode(params_conf)
    tree = build_queue_tree(snapshot, mode, ())
    assert tree is not None
    return queue_usage(snapshot, tree, params_conf.usage)


def test_decayed_span_by_hand() -> None:
    assert decayed_span(3 * HOUR, None) == 3 * HOUR
    assert decayed_span(-5.0, None) == 0.0  # a pod created after T counts nothing
    # ∫ over the last 3 h of 2^(-(T-t)/1h) dt = (1h / ln 2)(1 - 1/8)
    assert decayed_span(3 * HOUR, HOUR) == pytest.approx(HOUR / math.log(2) * 7 / 8)


def test_24_gpu_hours_of_160_is_0_15_without_decay() -> None:
    """KAI's docs: 16 GPUs over a 10 h window can give 160 GPU-hours; 8 GPUs for 3 h used
    24 of them (the docs' own example is 24 of 100 on 10 GPUs: 0.24)."""
    objs = [*two_queues(), running_gpu_pod("a-0", "queue-a", 8, T - timedelta(hours=3))]
    usage = usage_of(objs, conf())
    assert usage["queue-a"]["nvidia.com/gpu"] == pytest.approx(24 / 160)
    assert usage["default"]["nvidia.com/gpu"] == pytest.approx(24 / 160)  # the parent's subtree
    assert usage["queue-b"]["nvidia.com/gpu"] == 0.0


def test_half_life_weighs_recent_usage_more() -> None:
    """h = 1 h: 8·(1 − 2^−3)/ln 2 of 16·(1 − 2^−10)/ln 2 = 0.4379."""
    objs = [*two_queues(), running_gpu_pod("a-0", "queue-a", 8, T - timedelta(hours=3))]
    usage = usage_of(objs, conf(half_life="1h"))
    assert usage["queue-a"]["nvidia.com/gpu"] == pytest.approx(8 * (7 / 8) / (16 * (1 - 2**-10)))


def test_window_cuts_older_usage() -> None:
    """A pod running for 30 h counts only the window's 10 h: 8·10 / 160 = 0.5."""
    objs = [*two_queues(), running_gpu_pod("a-0", "queue-a", 8, T - timedelta(hours=30))]
    assert usage_of(objs, conf())["queue-a"]["nvidia.com/gpu"] == pytest.approx(0.5)


def test_given_usage_replaces_the_accumulated_one() -> None:
    objs = [
        *two_queues(**{"queue-a": "gpu=0.9, cpu=0.1"}),
        running_gpu_pod("a-0", "queue-a", 8, T - timedelta(hours=3)),
    ]
    usage = usage_of(objs, conf())
    assert usage["queue-a"] == {"cpu": 0.1, "memory": 0.0, "nvidia.com/gpu": 0.9}


def test_split_by_usage_by_hand() -> None:
    """`calcShareWeights` with k = 1: n = 0.5 each; s_a = max(0, 0.5 + (0.5 − 0.5)) = 0.5,
    s_b = 0.5 + (0.5 − 0) = 1. Of 16 GPUs a is offered 5.33 (takes 5, keeps 0.33), b 10.67
    (takes 10, keeps 0.67); the last GPU goes to the larger fraction: b."""
    shares = [
        Share("a", weight=1, request=16, usage=0.5, priority=0),
        Share("b", weight=1, request=16, usage=0.0, priority=0),
    ]
    assert set_resource_share(16, 1.0, shares) == 0
    assert [s.fair for s in shares] == [5, 11]
    plain = [
        Share("a", weight=1, request=16, priority=0),
        Share("b", weight=1, request=16, priority=0),
    ]
    set_resource_share(16, 1.0, plain)
    assert [s.fair for s in plain] == [8, 8]


def gangs(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A 12-GPU job in each queue; 16 GPUs fit one."""
    case = Case("jobs", 16, [], [("job-a", "queue-a", 12, 50), ("job-b", "queue-b", 12, 50)], set())
    jobs = [o for o in objects(case) if o["kind"] in ("PodGroup", "Pod")]
    return [*objs, *jobs]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_usage_turns_the_order(engine: str) -> None:
    """Without usage the queues tie and queue-a (created first) runs its job. With queue-a's
    usage 0.9 its fair share is 4 GPUs, queue-b's 12 (s_a = 0.1, s_b = 1): queue-b's job
    keeps it within its share (dominant share 1 against 3) and runs."""
    objs = gangs(two_queues(**{"queue-a": "gpu=0.9"}))
    model = load_objects(raw(*objs))
    plain = conf_from_text("tiers: [{plugins: [{name: gang}, {name: predicates}]}]", "c")
    before = schedule(model, plain, engine=engine, workers=1, seed=0, time_limit=10)
    assert {k.split("/")[1] for k, p in before.placements.items() if p.node} == {"job-a-0"}
    after = schedule(model, conf(), engine=engine, workers=1, seed=0, time_limit=10)
    assert {k.split("/")[1] for k, p in after.placements.items() if p.node} == {"job-b-0"}


def test_observed_time_follows_deltas() -> None:
    model = load_objects(raw(*two_queues()))
    snapshot = snapshot_of(model.model_copy(update={"observed": T.isoformat()}))
    assert snapshot.observed == T.timestamp()
    later = snapshot.apply(Delta(observed=T.timestamp() + 60))
    assert later.observed == T.timestamp() + 60


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("usageDBConfig: {usageParams: {halfLifePeriod: soon}}", "usageDBConfig.usageParams.halfLifePeriod"),
        ("usageDBConfig: {usageParams: {windowSize: -1h}}", "usageDBConfig.usageParams.windowSize"),
        ("usageDBConfig: [1]", "usageDBConfig"),
    ],
)  # fmt: skip
def test_bad_usage_conf_names_its_field(text: str, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        conf_from_text(text, "conf.yaml")
    assert err.value.field == field


def test_usage_conf_notes_what_it_does_not_query() -> None:
    got = conf_from_text(
        "usageDBConfig: {clientType: prometheus, usageParams: {windowType: tumbling}}", "c"
    )
    assert (
        got.usage is not None and got.usage.window == 7 * 24 * HOUR and got.usage.half_life is None
    )
    assert any("windowType" in n for n in got.notes)
    assert any("clientType" in n and "no usage database" in n for n in got.notes)


def test_bad_usage_annotation_names_its_field() -> None:
    with pytest.raises(ManifestError, match=r"gangplan.io/usage.*gpu: must be a number"):
        load_objects(raw(*two_queues(**{"queue-a": "gpu=lots"})))


def test_kais_scheduling_shard_is_skipped_with_where_its_settings_go() -> None:
    """KAI's own example (`examples/time-based-fairshare/scheduling-shard-minimal.yaml`)
    configures time-based fair share on a SchedulingShard; gangplan takes it in the conf."""
    shard = {"apiVersion": "kai.scheduler/v1", "kind": "SchedulingShard",
             "metadata": {"name": "default"},
             "spec": {"usageDBConfig": {"clientType": "prometheus"}}}  # fmt: skip
    notes = load_objects(raw(*two_queues(), shard)).notes
    assert any(
        "SchedulingShard (KAI's scheduler settings" in n and "usageDBConfig" in n for n in notes
    )
