"""When a gang will start: the running pods' expected ends replayed in time order.

n1 [8 GPU: `old` 8, ends 20:10]   n2 [8 GPU: `older` 4, ends 19:00]
t: 3 × 4 GPU   ->  19:00 frees 4 on n2 (2 pods fit), 20:10 frees n1: starts 20:10
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.config import conf_from_text
from solver.model import ClusterModel
from solver.schedule import snapshot_of
from solver.start import Estimate, estimate, parse_duration, running_ends
from tests.builders import model, node, pod, podgroup, queue, volcano_job

NOW = datetime(2026, 11, 28, 18, 0, tzinfo=UTC)
END = "gangplan.io/expected-end"


def _estimate(
    cluster: ClusterModel, now: datetime, runtime: timedelta | None = None
) -> Estimate | None:
    snapshot = snapshot_of(cluster)
    ends, unknown = running_ends(snapshot, runtime)
    return estimate(snapshot, None, "default/t", now, ends, unknown)


def _gang(size: int, gpu: int) -> list[dict[str, Any]]:
    return [
        podgroup("t", size),
        *[pod(f"t-{i}").group("t").requests(gpu=gpu).obj() for i in range(size)],
    ]


def _running(name: str, node_name: str, gpu: int, **annotations: str) -> dict[str, Any]:
    b = pod(name).requests(gpu=gpu).on(node_name)
    for k, v in annotations.items():
        b.annotate(k, v)
    return b.obj()


def test_the_start_is_the_first_end_after_which_it_fits() -> None:
    objs = [
        node("n1").gpu(8).obj(),
        node("n2").gpu(8).obj(),
        _running("old", "n1", 8, **{END: "2026-11-28T20:10:00Z"}),
        _running("older", "n2", 4, **{END: "2026-11-28T19:00:00Z"}),
        *_gang(3, 4),
    ]
    e = _estimate(model(*objs), NOW)
    assert e == Estimate(
        NOW,
        datetime(2026, 11, 28, 20, 10, tzinfo=UTC),
        ("n1", "n2"),
        ("default/old", "default/older"),
    )
    assert e.text().startswith("starts in ~2 h 10 min (2026-11-28T20:10:00+00:00) on n1, n2")


def test_the_gangs_of_its_queue_placed_before_it_are_named() -> None:
    """Queue q (Volcano): `first` (priority 100, 1 × 4 GPU, on n3) is taken before `t`
    (3 × 4 GPU), `other` of queue r is not counted; at 20:10 t starts with 1 gang ahead of
    it in queue q."""
    objs = [
        node("n1").gpu(8).obj(), node("n2").gpu(8).obj(), node("n3").gpu(4).obj(),
        queue("q"), queue("r"),
        _running("old", "n1", 8, **{END: "2026-11-28T20:10:00Z"}),
        _running("older", "n2", 4, **{END: "2026-11-28T19:00:00Z"}),
        *volcano_job("first", "q", 1, gpu=4, priority=100),
        *volcano_job("t", "q", 3, gpu=4),
        *volcano_job("other", "r", 1, gpu=4, priority=100),
    ]  # fmt: skip
    e = _estimate(model(*objs), NOW)
    assert e is not None and e.at == datetime(2026, 11, 28, 20, 10, tzinfo=UTC)
    assert (e.queue, e.ahead) == ("q", ("default/first",))
    assert e.text().endswith("; 1 gang(s) ahead of it in queue q")
    assert e.to_dict()["ahead"] == ["default/first"]


def test_a_runtime_counts_from_creation_and_a_default_covers_the_rest() -> None:
    running = pod("r").requests(gpu=8).on("n1").obj()
    running["metadata"]["creationTimestamp"] = "2026-11-28T17:30:00Z"
    objs = [node("n1").gpu(8).obj(), running, *_gang(1, 8)]
    assert _estimate(model(*objs), NOW).at is None  # runs on
    e = _estimate(model(*objs), NOW, timedelta(hours=1))
    assert e.at == datetime(2026, 11, 28, 18, 30, tzinfo=UTC) and e.after == ("default/r",)
    running["metadata"]["annotations"] = {"gangplan.io/expected-runtime": "2h"}
    e = _estimate(model(node("n1").gpu(8).obj(), running, *_gang(1, 8)), NOW)
    assert e.at == datetime(2026, 11, 28, 19, 30, tzinfo=UTC)


def test_now_and_never() -> None:
    fits = [node("n1").gpu(8).obj(), *_gang(2, 4)]
    assert _estimate(model(*fits), NOW).at == NOW
    never = [node("n1").gpu(8).obj(), *_gang(3, 4)]
    e = _estimate(model(*never), NOW)
    assert e.at is None and e.text().startswith("no start found")


def _at(found: Estimate | None) -> datetime | None:
    assert found is not None
    return found.at


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("90m", 90), ("2h30m", 150), ("1d", 1440), ("3600s", 60), ("", None), ("2x", None)],
)
def test_durations(text: str, minutes: int | None) -> None:
    parsed = parse_duration(text)
    assert (parsed.total_seconds() / 60 if parsed else None) == minutes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 8), st.integers(1, 300)), max_size=8),
    st.integers(1, 6),
    st.integers(1, 8),
)
def test_the_estimate_equals_a_step_by_step_replay(
    running: list[tuple[int, int, int]], size: int, gpu: int
) -> None:
    """Bisection over the ends gives the first end of a linear replay."""
    objs: list[dict[str, Any]] = [node(f"n{i}").gpu(8).obj() for i in range(4)]
    used = [0, 0, 0, 0]
    ends = []
    for k, (n, g, minutes) in enumerate(running):
        if used[n] + g > 8:
            continue
        used[n] += g
        end = NOW + timedelta(minutes=minutes)
        ends.append(end)
        objs.append(_running(f"r{k}", f"n{n}", g, **{END: end.isoformat()}))
    objs += _gang(size, gpu)
    cluster = model(*objs)
    got = _at(_estimate(cluster, NOW))
    linear = None
    for at in [NOW, *sorted(set(ends))]:
        kept = [o for o in objs if not (o["kind"] == "Pod" and END in o["metadata"]["annotations"]
                and datetime.fromisoformat(o["metadata"]["annotations"][END]) <= at)]  # fmt: skip
        if _at(_estimate(model(*kept), at)) == at:
            linear = at
            break
    assert got == linear


@pytest.mark.parametrize(
    "annotations",
    [
        {"gangplan.io/expected-runtime": "99999999999d"},
        {"gangplan.io/expected-runtime": "9999999d"},
        {"gangplan.io/expected-end": "not a time"},
        {"gangplan.io/expected-end": "x" * 10_000},
    ],
)
def test_an_unreadable_end_is_an_unknown_end_not_a_crash(annotations: dict[str, str]) -> None:
    running = pod("r").requests(gpu=8).on("n1").obj()
    running["metadata"]["creationTimestamp"] = "9999-12-31T00:00:00Z"
    running["metadata"]["annotations"] = annotations
    e = _estimate(model(node("n1").gpu(8).obj(), running, *_gang(1, 8)), NOW)
    assert e is not None and e.at is None and e.unknown == 1
    assert "1 running pod(s) have no readable expected end" in e.text()


def test_a_caller_gone_stops_the_estimate() -> None:
    cluster = model(node("n1").gpu(8).obj(), *_gang(3, 4))
    snapshot = snapshot_of(cluster)
    gone = threading.Event()
    gone.set()
    assert estimate(snapshot, None, "default/t", NOW, {}, 0, stop=gone) is None


def test_active_deadline_seconds_is_a_running_pods_end() -> None:
    """The kubelet ends a pod `activeDeadlineSeconds` after `status.startTime`: without
    gangplan's annotations, that is its end (from its creation when it has no start time);
    an annotation the pod states wins."""
    with_start = _running("a", "n1", 8)
    with_start["spec"]["activeDeadlineSeconds"] = 7200  # 17:00 + 2 h: 19:00
    with_start["status"]["startTime"] = "2026-11-28T17:00:00Z"
    created = _running("b", "n2", 8)
    created["spec"]["activeDeadlineSeconds"] = 10800  # created 16:30 + 3 h: 19:30
    created["metadata"]["creationTimestamp"] = "2026-11-28T16:30:00Z"
    stated = _running("c", "n3", 8, **{END: "2026-11-28T18:30:00Z"})
    stated["spec"]["activeDeadlineSeconds"] = 60  # the annotation wins
    nodes = [node(f"n{i}").gpu(8).obj() for i in (1, 2, 3)]
    ends, unknown = running_ends(snapshot_of(model(*nodes, with_start, created, stated)))
    assert unknown == 0
    assert {k: e.at.strftime("%H:%M") for k, e in ends.items()} == {
        "default/a": "19:00",
        "default/b": "19:30",
        "default/c": "18:30",
    }


def _classed(name: str, klass: str, **annotations: str) -> dict[str, Any]:
    b = pod(name).requests(gpu=8).on("n1")
    b.body["spec"]["priorityClassName"] = klass
    for k, v in annotations.items():
        b.annotate(k, v)
    body = b.obj()
    body["metadata"]["creationTimestamp"] = "2026-11-28T17:00:00Z"
    return body


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


@pytest.mark.parametrize(
    ("klass", "call_default", "annotations", "start"),
    [
        ("train", None, {}, "2026-11-28T21:00:00+00:00"),  # its class: 4h from 17:00
        ("serve", None, {}, None),  # its class runs on (0), whatever the defaults
        ("serve", timedelta(hours=1), {}, None),
        ("batch", None, {}, "2026-11-28T19:00:00+00:00"),  # unlisted: the conf's default 2h
        ("batch", timedelta(hours=1), {}, "2026-11-28T18:00:00+00:00"),  # the call's, 1h
        ("train", None, {"gangplan.io/expected-runtime": "90m"}, "2026-11-28T18:30:00+00:00"),
    ],
)
def test_the_conf_gives_each_priority_class_its_runtime(
    klass: str, call_default: timedelta | None, annotations: dict[str, str], start: str | None
) -> None:
    conf = conf_from_text(
        "expectedRuntime:\n  default: 2h\n  priorityClasses:\n    train: 4h\n    serve: 0s\n",
        "conf",
    )
    objs = [
        node("n1").gpu(8).obj(),
        _priority_class(klass, 100),
        _classed("r", klass, **annotations),
        *_gang(1, 8),
    ]
    snapshot = snapshot_of(model(*objs))
    ends, unknown = running_ends(snapshot, call_default, conf.runtimes)
    e = estimate(snapshot, conf, "default/t", NOW, ends, unknown)
    assert e is not None
    assert (e.at.isoformat() if e.at else None) == start


def test_the_reader_keeps_a_running_pods_priority_class_for_the_estimate() -> None:
    running = _classed("r", "train")
    pending = pod("p").requests(gpu=1).obj()
    pending["spec"]["priorityClassName"] = "train"
    stated = _classed("s", "train", **{"gangplan.io/priority-class": "serve"})
    cluster = model(node("n1").gpu(8).obj(), _priority_class("train", 5), running, pending, stated)
    classes = {p.name: p.annotations.get("gangplan.io/priority-class") for p in cluster.pods}
    assert classes == {"r": "train", "p": None, "s": "serve"}


def test_a_pod_without_a_class_gets_the_global_default_as_admission_names_it() -> None:
    """Kubernetes' Priority admission plugin (plugin/pkg/admission/priority/admission.go)
    sets a pod's priorityClassName to the globalDefault class when it names none: read
    from files, such a running pod gets that class's runtime from the conf."""
    default = {**_priority_class("batch", 3), "globalDefault": True}
    plain = pod("plain").requests(gpu=8).on("n1").obj()
    plain["metadata"]["creationTimestamp"] = "2026-11-28T17:00:00Z"
    cluster = model(node("n1").gpu(8).obj(), _priority_class("train", 5), default, plain,
                    _classed("named", "train"), *_gang(1, 8))  # fmt: skip
    classes = {p.name: p.annotations.get("gangplan.io/priority-class") for p in cluster.pods}
    assert classes == {"plain": "batch", "named": "train", "t-0": None}
    assert {p.name: p.priority for p in cluster.pods}["plain"] == 3
    conf = conf_from_text("expectedRuntime: {priorityClasses: {batch: 2h}}\n", "conf")
    snapshot = snapshot_of(cluster)
    ends, _ = running_ends(snapshot, None, conf.runtimes)
    assert ends["default/plain"].at == datetime(2026, 11, 28, 19, 0, tzinfo=UTC)
