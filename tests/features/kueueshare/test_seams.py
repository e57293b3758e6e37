"""Kueue's ClusterQueues where they meet the other features: Topology Aware Scheduling pod
sets, `gangplan why`'s changes, and a snapshot kept by deltas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from solver import SchedulerConf, schedule
from solver.changes import changes
from solver.features.kueueshare import MAX_COHORT_DEPTH, kueue_nodes, running_usage
from solver.features.kueueshare.usage import _usage
from solver.kube import load_objects
from solver.schedule import snapshot_of
from solver.snapshot import Delta
from solver.verify import verify
from solver.views import validate_queues
from tests.builders import raw
from tests.features.kueueshare.test_schedule_upstream import (
    BASE,
    KUEUE,
    cq,
    lq,
    running,
    workload,
)

ROOT = Path(__file__).resolve().parents[3] / "examples"
N = None


def tas_objects(cpu_quota: str, *flavors: str) -> list[dict[str, Any]]:
    """examples/topology/kueue-tas.yaml (3 + 7 one-cpu pods in pod sets with topology
    requests) with its pods in LocalQueue `default/main` of ClusterQueue `cq`."""
    docs = [d for d in yaml.safe_load_all((ROOT / "topology" / "kueue-tas.yaml").read_text()) if d]
    for d in docs:
        if d["kind"] == "Pod":
            d["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "main"
        if d["kind"] == "Workload":
            d["spec"]["queueName"] = "main"
    group = {f: [("cpu", cpu_quota, N, N)] for f in flavors or ("tas-flavor",)}
    return [*docs, cq("cq", N, group), lq("main", "ml", "cq")]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_tas_pod_sets_inside_a_cluster_queue(engine: str) -> None:
    """Within quota: the example's TopologyAssignments as without Kueue's quotas, and each
    pod set admitted in the TAS flavor; with quota for 3 CPUs only, the 7-pod Workload
    waits for quota (Kueue: insufficient quota), the 3 pods keep their block."""
    plain = schedule(snapshot_of(load_objects(raw(*tas_objects("100")))), engine=engine, workers=1)
    bare = [d for d in yaml.safe_load_all((ROOT / "topology" / "kueue-tas.yaml").read_text()) if d]
    alone = schedule(snapshot_of(load_objects(raw(*bare))), engine=engine, workers=1)
    assert plain.topology_assignments == alone.topology_assignments
    assert {dict(a.flavors)["cpu"] for a in plain.flavor_assignments} == {"tas-flavor"}
    tight = schedule(snapshot_of(load_objects(raw(*tas_objects("3")))), engine=engine, workers=1)
    waiting = {k: g.reason for k, g in tight.podgroups.items() if not g.placed}
    assert list(waiting) == ["ml/train"]
    assert "insufficient quota for cpu in flavor tas-flavor" in waiting["ml/train"]
    assert len(tight.placed) == 3


def test_tas_flavor_follows_the_cluster_queue_order() -> None:
    """Two TAS flavors over the same Topology: Kueue tries the ClusterQueue's flavors in its
    order, not by name; `zz-tas` (listed first, the example's nodes) is the pod sets' pool."""
    docs = tas_objects("100")
    for d in docs:
        if d["kind"] == "ResourceFlavor":
            d["metadata"]["name"] = "zz-tas"
    other = {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "aa-tas"},
             "spec": {"nodeLabels": {"pool": "none"}, "topologyName": "default"}}  # fmt: skip
    docs = [d for d in docs if d["kind"] not in ("ClusterQueue",)]
    docs += [
        other,
        cq("cq", N, {"zz-tas": [("cpu", "100", N, N)], "aa-tas": [("cpu", "100", N, N)]}),
    ]
    d = schedule(snapshot_of(load_objects(raw(*docs))), engine="greedy")
    assert len(d.placed) == 10
    assert {dict(a.flavors)["cpu"] for a in d.flavor_assignments} == {"zz-tas"}


def test_usage_follows_a_snapshot_kept_by_deltas() -> None:
    """The kueue example's snapshot; a delta binds prod's first Job (8 GPUs): prod's usage
    (memoised per generation) moves with it, and the next call admits one more Job each
    (prod still wins the lent quota: research's second Job would borrow it too)."""
    path = ROOT / "fairshare" / "kueue.yaml"
    snapshot = snapshot_of(
        load_objects(raw(*[d for d in yaml.safe_load_all(path.read_text()) if d]))
    )
    fair = SchedulerConf.default().model_copy(update={"fair_sharing": True})
    before = schedule(snapshot, fair, engine="greedy")
    assert sorted(before.placed)[:4] == [f"prod/train-{j}-{i}" for j in (0, 1) for i in (0, 1)]
    prod = [k for k in sorted(snapshot.pending) if k.startswith("prod/train-0-")]
    after = snapshot.apply(Delta(bindings=tuple((k, "a100-2") for k in prod)))
    assert kueue_nodes(after).nodes["prod"].usage["a100/nvidia.com/gpu"] == 8
    assert kueue_nodes(snapshot).nodes["prod"].usage == {}
    d = schedule(after, fair, engine="greedy")
    gpus = {q: 4 * sum(1 for k in d.placed if k.startswith(q + "/")) for q in ("prod", "research")}
    assert gpus == {"prod": 8, "research": 8}
    # kept by deltas, equal to a build from every row: bound pods added, one removed
    later = after.apply(Delta(remove_pods=(prod[0],)))
    for snap in (after, later):
        assert running_usage(snap) == _usage(snap, snap.running.rows())
    assert running_usage(later)["prod/main"] == {
        "a100/cpu": 8000, "a100/memory": 64 * 2**30, "a100/nvidia.com/gpu": 4
    }  # fmt: skip
    for snap in (after, later):  # verify's own count, kept by deltas the same way
        assert verify(snap, fair, schedule(snap, fair, engine="greedy")) == []


def test_why_offers_the_smallest_nominal_quota_raise() -> None:
    """Upstream's "workload exceeds lending limit when borrow in cohort": lend-b's 3-CPU
    workload is 1 CPU short. `why`'s quota change: +1 cpu nominalQuota on lend-b (checked
    by placing the gang with it), no other (the node has room)."""
    objects = [running("a", "lend", "lend-b-queue", cpu="2"),
               workload("b", "lend", "lend-b-queue", 1, 1, cpu="3")]  # fmt: skip
    snapshot = snapshot_of(load_objects(raw(*BASE, *objects)))
    conf = SchedulerConf.default()
    decision = schedule(snapshot, conf, engine="greedy")
    found = changes(snapshot, conf, "lend/b", decision.certificates["lend/b"])
    assert [c.text for c in found] == [
        "+1 cpu nominalQuota on ClusterQueue lend-b (flavor default)"
    ]


def test_a_cohort_chain_deeper_than_the_bound_refuses_with_the_reason() -> None:
    """Hostile input: 3,000 nested cohorts. Every walk of the tree is bounded: the
    workload is refused saying why (64 levels are acted on), and nothing crashes; 65
    levels: the cohort bound's own reason."""
    for depth, placed in ((MAX_COHORT_DEPTH, 1), (MAX_COHORT_DEPTH + 1, 0), (3000, 0)):
        snapshot = snapshot_of(load_objects(raw(*_chain(depth))))
        d = schedule(snapshot, engine="greedy")
        assert len(d.placed) == placed
        verdicts = validate_queues(snapshot)
        assert verdicts["q"].valid == bool(placed)
        if placed:
            continue
        assert verdicts["q"].reason.startswith("more than 64 levels of cohorts")
        # past 256 levels the queue tree's own bound (any dialect's) answers first
        bound = "64 levels of cohorts" if depth < 256 else "256 levels of parents"
        assert f"more than {bound}" in d.podgroups["t/w"].reason


def _chain(depth: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
         "status": {"allocatable": {"cpu": "8", "pods": "10"}}},
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    ]  # fmt: skip
    for i in range(depth):
        spec = {"parentName": f"c{i - 1}"} if i else {}
        objects.append(
            {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": f"c{i}"}, "spec": spec}
        )
    return [
        *objects,
        cq("q", f"c{depth - 1}", {"default": [("cpu", "4", N, N)]}),
        lq("main", "t", "q"),
        workload("w", "t", "main", 1, 1, cpu="1"),
    ]


def test_a_quota_flavor_s_taints_are_noted_not_dropped() -> None:
    """Upstream's `resource-flavor-taints.yaml` (a `spot` flavor with `nodeTaints`) named by
    a ClusterQueue: its taints are not acted on for quota, and the model says so."""
    objects = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "spot"},
         "spec": {"nodeLabels": {"instance-type": "spot"},
                  "nodeTaints": [{"effect": "NoSchedule", "key": "spot", "value": "true"}]}},
        cq("cq", N, {"spot": [("cpu", "8", N, N)]}),
    ]  # fmt: skip
    notes = load_objects(raw(*objects)).notes
    assert any(n.startswith("ResourceFlavor spot: nodeTaints and tolerations") for n in notes)
