"""The snapshot's derived usage, kept by deltas, equals a rebuild from scratch.

    nodes:   n0..n3, two of them (n0, n1) with A100 cards (label nvidia.com/gpu.product)
    gangs:   ns/g0..ns/g2, each maybe in a queue q0 | q1 (spec.queue)
    running: pods on any node, in a gang or a gang of one, some with a queue annotation
             and some with a card demand (volcano.sh/card.name)

A delta sequence removes, upserts and binds pods, moves gangs between queues and replaces
nodes; every generation's totals must equal `Snapshot.rebuild()`'s, read by name (a rebuild
interns names in its own order). Deltas are applied to the newest generation and, now and
then, to an older one: a generation that is not the tip of its buffers must fork, never
write into rows a newer generation owns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import SCHEMA
from solver.model import CARD_NAME, QUEUE_ANNOTATION, Gang, Node, Pod, Queue
from solver.snapshot import Delta, DeltaError, RunningPod, Snapshot, _by_node

NODES = [f"n{i}" for i in range(4)]
GANGS = [f"ns/g{i}" for i in range(3)]
QUEUES = ["q0", "q1"]
GPU = "nvidia.com/gpu"


def _node(name: str, cpu: int = 64_000) -> Node:
    labels = {}
    if name in ("n0", "n1"):
        labels = {
            "nvidia.com/gpu.product": "A100",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.memory": "81920",
        }
    return Node(name=name, labels=labels, allocatable={"cpu": cpu, GPU: 8, "pods": 110})


def _gang(gid: str, queue: str | None) -> Gang:
    ns, name = gid.split("/")
    return Gang(
        id=gid,
        namespace=ns,
        name=name,
        dialect="scheduling.volcano.sh",
        min_member=1,
        total_number=1,
        queue=queue,
    )


pod_names = st.sampled_from([f"ns/p{i}" for i in range(12)])


@st.composite
def running_pods(draw: Any) -> RunningPod:
    annotations = {}
    if draw(st.booleans()):
        annotations[QUEUE_ANNOTATION] = draw(st.sampled_from(QUEUES))
    if draw(st.booleans()):
        annotations[CARD_NAME] = "A100"
    return RunningPod(
        key=draw(pod_names),
        node=draw(st.sampled_from(NODES)),
        requests={"cpu": draw(st.integers(0, 4000)), GPU: draw(st.integers(0, 2))},
        priority=draw(st.integers(-5, 5)),
        gang=draw(st.sampled_from([None, *GANGS])),
        annotations=annotations,
        terminating=draw(st.booleans()),
    )


@st.composite
def pending_pods(draw: Any) -> Pod:
    key = draw(pod_names)
    ns, name = key.split("/")
    gang = draw(st.sampled_from([key, *GANGS]))
    return Pod(namespace=ns, name=name, gang=gang, requests={"cpu": 1000, GPU: 1})


@st.composite
def deltas(draw: Any) -> Delta:
    kind = draw(st.sampled_from(["pods", "pods", "pods", "bind", "gangs", "nodes"]))
    if kind == "pods":
        ups = draw(st.lists(st.one_of(running_pods(), pending_pods()), max_size=4))
        unique = list({p.key: p for p in ups}.values())
        removes = draw(st.lists(pod_names, max_size=2, unique=True))
        return Delta(
            remove_pods=tuple(k for k in removes if k not in {p.key for p in unique}),
            upsert_pods=tuple(unique),
        )
    if kind == "bind":
        return Delta(bindings=((draw(pod_names), draw(st.sampled_from(NODES))),))
    if kind == "gangs":
        gid = draw(st.sampled_from(GANGS))
        return Delta(upsert_gangs=(_gang(gid, draw(st.sampled_from([None, *QUEUES]))),))
    name = draw(st.sampled_from(NODES))
    return Delta(upsert_nodes=(_node(name, draw(st.sampled_from([32_000, 64_000]))),))


def _start() -> Snapshot:
    return Snapshot.build(
        [_node(n) for n in NODES],
        gangs={g: _gang(g, None) for g in GANGS},
        queues={q: Queue(name=q) for q in QUEUES},
        schema=SCHEMA,
    )


def _by_name(snapshot: Snapshot) -> dict[str, dict[Any, int]]:
    """Every derived total, keyed by names instead of interned ids; zeros dropped."""
    run, usage = snapshot.running, snapshot.usage
    # Interners are shared along a lineage and only grow: a generation's totals cover the
    # names that existed when it was made (its arrays' widths), later names are zero.
    res = run.resources[: usage.used.shape[1]]
    out: dict[str, dict[Any, int]] = {}

    def put(kind: str, key: Any, value: Any) -> None:
        if int(value):
            out.setdefault(kind, {})[key] = int(value)

    for n, name in enumerate(snapshot.nodes.names):
        for r, value in enumerate(usage.used[n]):
            put("used", (name, res[r]), value)
    for g, value in enumerate(usage.gang_count):
        gang = run.gang_name(g)
        put("gang_count", gang, value)
        for r in range(usage.gang_requests.shape[1]):
            put("gang_requests", (gang, res[r]), usage.gang_requests[g, r])
            put("gang_plain", (gang, res[r]), usage.gang_plain[g, r])
        for c in range(usage.gang_cards.shape[1]):
            put("gang_cards", (gang, run.card_names.value(c)), usage.gang_cards[g, c])
    for q in range(usage.queue_requests.shape[0]):
        queue = run.queue_names.value(q)
        for r in range(usage.queue_requests.shape[1]):
            put("queue_requests", (queue, res[r]), usage.queue_requests[q, r])
            put("queue_plain", (queue, res[r]), usage.queue_plain[q, r])
        for c in range(usage.queue_cards.shape[1]):
            put("queue_cards", (queue, run.card_names.value(c)), usage.queue_cards[q, c])
    return out


def _pods(snapshot: Snapshot) -> dict[str, Any]:
    rows = snapshot.running.rows().tolist()
    return {
        "running": sorted(
            (p.key, p.node, sorted(p.requests.items()), p.gang, p.terminating)
            for p in (snapshot.running.pod(r) for r in rows)
        ),
        "pending": sorted(snapshot.pending),
    }


def _assert_rows_on(snapshot: Snapshot) -> None:
    """`rows_on` (the index kept by deltas) names what a scan of every row names."""
    running = snapshot.running
    for n in range(len(snapshot.nodes)):
        scan = np.flatnonzero(running.alive & (running.node == n))
        assert snapshot.rows_on(np.array([n])).tolist() == scan.tolist()
    every = np.arange(len(snapshot.nodes))
    assert (
        snapshot.rows_on(every).tolist()
        == np.flatnonzero(running.alive & (running.node >= 0)).tolist()
    )


def test_rows_on_is_kept_by_deltas_and_rebuilt_when_they_outgrow_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_by_node, "REBUILD_AT", 3)
    snap = _start()
    for i in range(12):
        pod = RunningPod(f"ns/p{i}", NODES[i % len(NODES)], {"cpu": 1000})
        gone = (f"ns/p{i - 2}",) if i >= 2 and i % 3 == 0 else ()
        snap.rows_on(np.array([0]))  # the index exists, so the next generation extends it
        snap = snap.apply(Delta(upsert_pods=(pod,), remove_pods=gone))
        _assert_rows_on(snap)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(deltas(), st.integers(0, 5)), min_size=1, max_size=25))
def test_derived_usage_equals_a_rebuild_after_any_delta_sequence(
    steps: list[tuple[Delta, int]],
) -> None:
    history = [_start()]
    for delta, back in steps:
        # Mostly the newest generation; sometimes an older one (a second writer's view).
        base = history[-1] if back else history[max(0, len(history) - 3)]
        try:
            nxt = base.apply(delta)
        except DeltaError:
            continue
        history.append(nxt)
        rebuilt = nxt.rebuild()
        assert _by_name(nxt) == _by_name(rebuilt)
        assert _pods(nxt) == _pods(rebuilt)
        _assert_rows_on(nxt)
    for snap in history:  # no later generation wrote into an earlier one's rows
        assert _by_name(snap) == _by_name(snap.rebuild())


def test_a_delta_that_does_not_apply_changes_nothing_and_names_every_field() -> None:
    snap = _start().apply(Delta(upsert_pods=(RunningPod("ns/a", "n0", {"cpu": 1000}),)))
    before = _by_name(snap)
    with pytest.raises(DeltaError) as err:
        snap.apply(
            Delta(
                remove_pods=("ns/missing",),
                bindings=(("ns/a", "n1"), ("ns/b", "nowhere")),
            )
        )
    assert [f for f, _ in err.value.violations] == [
        "remove_pods[0]",
        "bindings[0].pod",
        "bindings[1].node",
    ]
    assert _by_name(snap) == before


def test_binding_moves_a_pending_pod_into_the_columns() -> None:
    pending = Pod(namespace="ns", name="p", gang="ns/p", requests={"cpu": 2000, GPU: 1})
    snap = _start().apply(Delta(upsert_pods=(pending,)))
    assert "ns/p" in snap.pending and snap.running.find("ns/p") < 0
    bound = snap.apply(Delta(bindings=(("ns/p", "n2"),)))
    assert "ns/p" not in bound.pending
    row = bound.running.find("ns/p")
    assert bound.running.node_name(row) == "n2"
    n2 = bound.nodes.index["n2"]
    assert dict(zip(bound.running.resources, bound.usage.used[n2].tolist(), strict=True)) == {
        "cpu": 2000,
        GPU: 1,
    }


def test_calls_on_one_generation_share_node_facts_and_an_update_keeps_them() -> None:
    snap = _start()
    tree_a = snap.nodes.memo(("test", "k"), lambda: object())
    assert snap.nodes.memo(("test", "k"), lambda: object()) is tree_a
    # A pod-only delta keeps the node table (and everything memoised on it) ...
    nxt = snap.apply(Delta(upsert_pods=(RunningPod("ns/a", "n0", {"cpu": 1}),)))
    assert nxt.nodes is snap.nodes
    # ... a node change builds a new one.
    changed = nxt.apply(Delta(upsert_nodes=(_node("n3", 1000),)))
    assert changed.nodes is not snap.nodes
    assert changed.nodes.memo(("test", "k"), lambda: "fresh") == "fresh"


def test_moving_a_gang_between_queues_moves_its_running_usage() -> None:
    snap = _start().apply(
        Delta(
            upsert_pods=(
                RunningPod("ns/a", "n0", {"cpu": 3000}, gang="ns/g0"),
                RunningPod("ns/b", "n1", {"cpu": 1000}, gang="ns/g0"),
            ),
            upsert_gangs=(_gang("ns/g0", "q0"),),
        )
    )
    moved = snap.apply(Delta(upsert_gangs=(_gang("ns/g0", "q1"),)))

    def cpu(s: Snapshot, queue: str) -> int:
        q = s.running.queue_id(queue)
        r = s.running.resources.index("cpu")
        known = 0 <= q < s.usage.queue_requests.shape[0]  # named after this generation: 0
        return int(s.usage.queue_requests[q, r]) if known else 0

    assert (cpu(snap, "q0"), cpu(snap, "q1")) == (4000, 0)
    assert (cpu(moved, "q0"), cpu(moved, "q1")) == (0, 4000)
    assert np.array_equal(moved.usage.used, snap.usage.used)
