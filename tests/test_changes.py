"""What would let a gang run: each change is the smallest that works, checked by placing
the gang, and one unit less does not work (table tests, one per kind).

    n1 [4 GPU]  n2 [4 GPU]  n3 [3 GPU]     train: 16 × 1 GPU   -> +1 node like n1 is 15:
                                            short; +2 is 19: runs; minMember 11 runs
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from solver import SchedulerConf, load_manifests, schedule, snapshot_of, verify
from solver.changes import SPEC, Change, changes
from solver.defrag import DefragGoal, defragment, moves_delta
from solver.kube import load_objects
from solver.model import ClusterModel
from solver.plan import catalog_from_dict
from solver.snapshot import Workload
from tests.builders import (
    BLOCK,
    SPINE,
    gather,
    model,
    node,
    pod,
    podgroup,
    queue,
    raw,
    spine_block_topology,
    volcano_batch_job,
)
from tests.features.cards.test_cards import card_job, card_node, card_queue
from tests.features.cards.test_cards import conf as card_conf
from tests.features.topology.kueue.helpers import BLOCK as BLOCK_LABEL
from tests.features.topology.kueue.helpers import DEFAULT as KUEUE_DEFAULT
from tests.features.topology.kueue.helpers import (
    RACK as RACK_LABEL,
)
from tests.features.topology.kueue.helpers import (
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    THREE,
)
from tests.features.topology.kueue.helpers import cluster as kueue_cluster
from tests.test_properties import clusters
from tests.why.test_properties import rich_clusters

ROOT = Path(__file__).resolve().parents[1]


def _gang(name: str, size: int, min_member: int, **requests: Any) -> list[dict[str, Any]]:
    pods = [pod(f"{name}-{i}").group(name).requests(**requests).obj() for i in range(size)]
    return [podgroup(name, min_member), *pods]


def _changes(cluster: ClusterModel, gang: str) -> list[Change]:
    d = schedule(cluster, SchedulerConf.default(), workers=1)
    return changes(snapshot_of(cluster), SchedulerConf.default(), gang, d.certificates.get(gang))


def test_nodes_and_min_member_are_the_smallest_that_run() -> None:
    cluster = model(
        node("n1").gpu(4).obj(),
        node("n2").gpu(4).obj(),
        node("n3").gpu(3).obj(),
        *_gang("train", 16, 16, gpu=1),
    )
    assert _changes(cluster, "default/train") == [
        Change("nodes", "+2 node(s) like n1, empty", 2, "n1"),
        Change("min-member", "minMember 11 instead of 16", 5, "default/train"),
    ]


def test_quota_is_raised_by_exactly_what_is_missing() -> None:
    """eng (capability 2 cpu) over eng-a; a job of 3 × 1 cpu: +1 cpu on eng."""
    cluster = model(
        node("n").cpu("16").obj(),
        queue("eng", capability={"cpu": "2"}),
        queue("eng-a", "eng"),
        {**podgroup("vj", 3, "volcano"), "spec": {"minMember": 3, "queue": "eng-a"}},
        *[
            pod(f"vj-{i}").annotate("scheduling.k8s.io/group-name", "vj").requests(cpu="1").obj()
            for i in range(3)
        ],
    )
    found = _changes(cluster, "default/vj")
    assert found[0] == Change("quota", "+1 cpu capability on queue eng", 1000, "eng", "cpu")


def test_must_gather_is_offered_as_prefer_gather_and_nodes_in_the_best_domain() -> None:
    """Two spines of 4 and 3 GPUs, 6 × 1 GPU MustGather per spine: +1 node like s1's node
    in s1 (8), or PreferGather (7 in all). A lower minMember does not help: Koordinator
    gathers all pending pods of the group or none."""
    cluster = model(
        spine_block_topology(),
        node("a1").gpu(4).label(SPINE, "s1").label(BLOCK, "b1").obj(),
        node("a2").gpu(3).label(SPINE, "s2").label(BLOCK, "b2").obj(),
        podgroup("t", 6, **gather(("SpineLayer", "MustGather"))),
        *[pod(f"t-{i}").group("t").requests(gpu=1).obj() for i in range(6)],
    )
    assert _changes(cluster, "default/t") == [
        Change("nodes", "+1 node(s) like a1 in s1, empty", 1, "a1"),
        Change("topology", "PreferGather instead of MustGather", 1, "default/t"),
    ]


def test_a_gang_that_runs_needs_no_change() -> None:
    cluster = model(node("n").gpu(8).obj(), *_gang("ok", 4, 4, gpu=1))
    assert changes(snapshot_of(cluster), None, "default/ok", None) == []


def _apply(cluster: ClusterModel, change: Change, size: int) -> ClusterModel:
    """The change of `size` units, applied here on its own (not by solver.changes)."""
    if change.kind == "quota":  # the target names one queue, or several joined by ","
        queues = dict(cluster.queues)
        for name in change.target.split(","):
            q = queues[name]
            raised = {**q.capability, change.dimension: q.capability[change.dimension] + size}
            queues[name] = q.model_copy(update={"capability": raised})
        return cluster.model_copy(update={"queues": queues})
    if change.kind == "nodes":
        like = cluster.node_by_name[change.target]
        copies = []
        for i in range(size):
            labels = dict(like.labels)
            if "kubernetes.io/hostname" in labels:
                labels["kubernetes.io/hostname"] = f"copy-{i}"
            copies.append(like.model_copy(update={"name": f"copy-{i}", "labels": labels}))
        nodes = tuple(sorted((*cluster.nodes, *copies), key=lambda n: n.name))
        return cluster.model_copy(update={"nodes": nodes})
    if change.kind == "min-member":
        g = cluster.gangs[change.target]
        lowered = g.model_copy(update={"min_member": g.min_member - size})
        return cluster.model_copy(update={"gangs": {**cluster.gangs, g.id: lowered}})
    assert change.kind == "topology"
    g = cluster.gangs[change.target]
    spec = (
        g.annotations[SPEC].replace("MustGather", "PreferGather") if size else g.annotations[SPEC]
    )
    lowered = g.model_copy(update={"annotations": {**g.annotations, SPEC: spec}})
    return cluster.model_copy(update={"gangs": {**cluster.gangs, g.id: lowered}})


def _runs(cluster: ClusterModel, gang: str) -> bool:
    snapshot = snapshot_of(cluster)
    d = schedule(snapshot, SchedulerConf.default(), workload=Workload.of(snapshot, gang_ids=[gang]),
                 workers=1)  # fmt: skip
    assert verify(snapshot, SchedulerConf.default(), d) == []
    return d.podgroups[gang].placed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(clusters(), rich_clusters()))
def test_each_change_applied_runs_the_gang_and_one_unit_less_does_not(
    cluster: ClusterModel,
) -> None:
    d = schedule(cluster, SchedulerConf.default(), engine="greedy", workers=1)
    for gang, cert in d.certificates.items():
        if gang not in cluster.gangs or cluster.gangs[gang].implicit:
            continue
        for change in changes(snapshot_of(cluster), SchedulerConf.default(), gang, cert):
            if change.kind in ("moves", "preemption", "cards", "slices"):  # own tests below
                continue
            assert _runs(_apply(cluster, change, change.size), gang), change
            assert not _runs(_apply(cluster, change, change.size - 1), gang), change


def test_a_gang_refused_at_enqueue_gets_the_capability_it_lacks() -> None:
    """A Volcano job of 3 × 1 cpu (minResources 3 cpu) in queue small (capability 2 cpu):
    refused at enqueue; +1 cpu on small lets it in and run. Under an ancestor with the same
    cap, only raising both does: that is offered as one change on both queues."""
    job = volcano_batch_job("vj", "small", 3)
    alone = load_objects(
        raw(node("n").cpu("16").obj(), queue("small", capability={"cpu": "2"}), job)
    )
    assert _changes(alone, "default/vj") == [
        Change("quota", "+1 cpu capability on queue small (to enter it)", 1000, "small", "cpu")
    ]
    nested = load_objects(
        raw(
            node("n").cpu("16").obj(),
            queue("eng", capability={"cpu": "2"}),
            queue("small", "eng", capability={"cpu": "2"}),
            job,
        )
    )
    assert _changes(nested, "default/vj") == [
        Change(
            "quota",
            "+1 cpu capability on queues small, eng (to enter it)",
            1000,
            "small,eng",
            "cpu",
        )
    ]


def test_a_caller_gone_stops_the_search_and_reports_nothing_unchecked() -> None:
    cluster = model(node("n1").gpu(4).obj(), *_gang("train", 16, 16, gpu=1))
    d = schedule(cluster, SchedulerConf.default(), workers=1)
    gone = threading.Event()
    gone.set()
    cert = d.certificates["default/train"]
    assert changes(snapshot_of(cluster), None, "default/train", cert, stop=gone) == []


def test_moves_are_offered_when_proven_fewest_and_run_the_gang() -> None:
    """examples/defrag/consolidate.yaml: a two-node gang bound to one rack; 6 running pods
    moved (proven fewest by CP-SAT, so 5 do not suffice) and the gang runs."""
    cluster = load_manifests(str(ROOT / "examples" / "defrag" / "consolidate.yaml"))
    snapshot = snapshot_of(cluster)
    found = changes(snapshot, None, "research/train", None, time_limit=5.0)
    moves = [c for c in found if c.kind == "moves"]
    assert [(c.size, c.target) for c in moves] == [(6, "research/train")]
    plan = defragment(snapshot, DefragGoal(gang="research/train"), engine="cpsat", workers=1)
    assert (plan.status, plan.bound, plan.pods_moved) == ("OPTIMAL", 6.0, 6)
    rows = {int(snapshot.running.find(m.pod)): m.target for m in plan.moves}
    after = snapshot.apply(moves_delta(snapshot, rows))
    d = schedule(after, workload=Workload.of(after, gang_ids=["research/train"]), workers=1)
    assert d.gang_placed("research/train")


def test_moves_are_only_of_pods_consolidation_may_move() -> None:
    """n1 and n2 [8 GPU] each hold a 4-GPU pod; an 8-GPU pod runs once one moves. Labelled
    `gangplan.io/movable: "false"` or of priority 100 (KAI's non-preemptible), neither may
    move, as `--consolidate` would not move them: no moves change."""
    for extra in ({"label": True}, {"priority": 100}):
        pods = []
        for name, at in (("a", "n1"), ("b", "n2")):
            p = pod(name).requests(gpu=4).priority(extra.get("priority", 10)).on(at)
            pods.append((p.label("gangplan.io/movable", "false") if "label" in extra else p).obj())
        cluster = model(node("n1").gpu(8).obj(), node("n2").gpu(8).obj(), *pods,
                        pod("big").requests(gpu=8).obj())  # fmt: skip
        found = changes(snapshot_of(cluster), None, "default/big", None, time_limit=5.0)
        assert "moves" not in [c.kind for c in found], extra
    movable = model(node("n1").gpu(8).obj(), node("n2").gpu(8).obj(),
                    pod("a").requests(gpu=4).priority(10).on("n1").obj(),
                    pod("b").requests(gpu=4).priority(10).on("n2").obj(),
                    pod("big").requests(gpu=8).obj())  # fmt: skip
    found = changes(snapshot_of(movable), None, "default/big", None, time_limit=5.0)
    assert [c.size for c in found if c.kind == "moves"] == [1]


def test_evictions_are_offered_when_every_victim_is_needed() -> None:
    """n1 runs two 2-GPU pods of priority 10, n2 one: the 4-GPU pod of priority 100 runs
    once n2's pod is evicted (the planner's cheapest plan: one victim), and not without
    it; the nodes change (+1 node like n1) comes after it."""
    cluster = model(
        node("n1").gpu(4).obj(),
        node("n2").gpu(4).obj(),
        *[pod(f"low-{c}").requests(gpu=2).priority(10).on(at).obj()
          for c, at in (("a", "n1"), ("b", "n1"), ("c", "n2"))],
        pod("high").requests(gpu=4).priority(100).obj(),
    )  # fmt: skip
    found = _changes(cluster, "default/high")
    assert found[0] == Change(
        "preemption",
        "evict 1 pod(s) of default/low-c on n2 (priority ≤ 10, 2 nvidia.com/gpu; gangplan schedule "
        "--preempt)",
        1,
        "default/high",
    )
    assert [c.kind for c in found] == ["preemption", "nodes"]
    without = cluster.model_copy(
        update={"pods": tuple(p for p in cluster.pods if p.name != "low-c")}
    )
    assert _runs_alone(without, "default/high") and not _runs_alone(cluster, "default/high")


def test_no_eviction_is_offered_against_equal_priority() -> None:
    cluster = model(
        node("n1").gpu(4).obj(),
        pod("peer").requests(gpu=2).on("n1").obj(),
        pod("high").requests(gpu=4).obj(),
    )
    assert "preemption" not in [c.kind for c in _changes(cluster, "default/high")]


def _runs_alone(cluster: ClusterModel, key: str) -> bool:
    snapshot = snapshot_of(cluster)
    own = [snapshot.pending[key]]
    d = schedule(snapshot, workload=Workload.of(snapshot, pods=own), workers=1)
    return d.gang_placed(key)


def test_one_more_card_type_is_offered_with_the_card_quota_it_needs() -> None:
    """Volcano capacity-card: a100-1 and a100-2 [4 × NVIDIA-A100 each], h100-1 [4 ×
    NVIDIA-H100]; a job of 6 pods asking `NVIDIA-H100` (1 GPU each) cannot run on the 4
    H100s; accepting NVIDIA-A100 too it runs (its queue has quota for both)."""
    cluster = model(
        card_node("a100-1", "NVIDIA-A100"),
        card_node("a100-2", "NVIDIA-A100"),
        card_node("h100-1", "NVIDIA-H100"),
        card_queue("team-a", {"NVIDIA-A100": 8, "NVIDIA-H100": 8}),
        *card_job("job", "team-a", 6, "NVIDIA-H100"),
    )
    cards = card_conf(cardUnlimitedCpuMemory=True)
    d = schedule(cluster, cards, workers=1)
    found = changes(snapshot_of(cluster), cards, "default/job", d.certificates.get("default/job"))
    assert (
        Change(
            "cards",
            "card NVIDIA-A100 as an alternative (volcano.sh/card.name: NVIDIA-H100|NVIDIA-A100)",
            1,
            "default/job",
            "NVIDIA-A100",
        )
        in found
    )
    wider = cluster.model_copy(update={"pods": tuple(
        p.model_copy(update={"annotations": {**p.annotations,
                                             "volcano.sh/card.name": "NVIDIA-H100|NVIDIA-A100"}})
        for p in cluster.pods
    )})  # fmt: skip
    assert schedule(wider, cards, workers=1).gang_placed("default/job")
    assert not d.gang_placed("default/job")


def test_smaller_kueue_slices_are_offered_when_the_larger_ones_do_not_fit() -> None:
    """Kueue TAS, 4 pods of 1 cpu in one block, in slices by rack (the defaultNodes of
    tests/features/topology/kueue: b1 holds 4 cpu, 3 in rack r2; b2 holds 3): slices of 4
    fit no rack, slices of 2 give b1 and b2 one each (two needed in one block), slices of
    1 run in b1."""
    slices = {REQUIRED: BLOCK_LABEL, SLICE_LEVEL: RACK_LABEL, SLICE_SIZE: "4"}
    cluster = kueue_cluster(KUEUE_DEFAULT, THREE, 4, slices)
    d = schedule(cluster, SchedulerConf.default(), workers=1)
    found = changes(snapshot_of(cluster), None, "default/job", d.certificates.get("default/job"))
    assert Change("slices", "slices of 1 pods instead of 4", 3, "default/job") in found


@st.composite
def busy_clusters(draw: st.DrawFn) -> ClusterModel:
    """GPU nodes full of running pods of low and high priority, and one pending gang of
    high priority: preemption changes appear often."""
    objects: list[Any] = []
    nodes = draw(st.integers(1, 4))
    for i in range(nodes):
        objects.append(node(f"n{i}").cpu("32").gpu(4).obj())
        used = 0
        for r in range(draw(st.integers(0, 4))):
            want = draw(st.integers(1, 2))
            if used + want > 4:
                break
            used += want
            prio = draw(st.sampled_from([0, 10, 200]))
            objects.append(pod(f"r{i}-{r}").requests(gpu=want).priority(prio).on(f"n{i}").obj())
    size = draw(st.integers(1, 3))
    objects.append(podgroup("g", size))
    objects += [
        pod(f"g-{i}").requests(gpu=draw(st.integers(1, 4))).priority(100).group("g").obj()
        for i in range(size)
    ]
    return model(*objects)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters())
def test_a_preemption_change_runs_the_gang_and_spares_no_victim_it_could(
    cluster: ClusterModel,
) -> None:
    d = schedule(cluster, SchedulerConf.default(), engine="greedy", workers=1)
    cert = d.certificates.get("default/g")
    if cert is None:
        return
    for change in changes(snapshot_of(cluster), None, "default/g", cert):
        if change.kind != "preemption":
            continue
        snapshot = snapshot_of(cluster)
        victims = _victims_of(snapshot, change)
        priority = {p.key: p.priority for p in cluster.pods}
        assert all(priority[v] < 100 for v in victims), victims
        gone = cluster.model_copy(
            update={"pods": tuple(p for p in cluster.pods if p.key not in victims)}
        )
        assert _runs(gone, "default/g")
        for spared in victims:
            kept = cluster.model_copy(update={"pods": tuple(
                p for p in cluster.pods if p.key not in victims or p.key == spared
            )})  # fmt: skip
            assert not _runs(kept, "default/g"), spared


def _victims_of(snapshot: Any, change: Change) -> set[str]:
    """The victims a preemption change names, found again by the planner it quotes."""
    d = schedule(snapshot, SchedulerConf.default(), workers=1, preempt=True,
                 workload=Workload.of(snapshot, gang_ids=["default/g"]))  # fmt: skip
    victims = {v.pod for v in d.victims}
    assert len(victims) == change.size
    return victims


def test_the_busy_clusters_do_give_preemption_changes() -> None:
    """The property above is not vacuous: hypothesis finds busy clusters with the change."""

    def offered(cluster: ClusterModel) -> bool:
        d = schedule(cluster, SchedulerConf.default(), engine="greedy", workers=1)
        found = changes(snapshot_of(cluster), None, "default/g", d.certificates.get("default/g"))
        return any(c.kind == "preemption" for c in found)

    quick = settings(max_examples=100, deadline=None, phases=[Phase.generate])
    assert offered(find(busy_clusters(), offered, settings=quick))


def test_a_catalogue_buys_the_cheapest_nodes_that_run_the_gang() -> None:
    """The 16 × 1 GPU gang of the first test (11 GPUs free): from a catalogue of a 4-GPU
    type at 10 and an 8-GPU type at 15, one 8-GPU node (15) is cheaper than two 4-GPU
    nodes (20); each new node has its type's allocatable and labels."""
    cluster = model(
        node("n1").gpu(4).obj(),
        node("n2").gpu(4).obj(),
        node("n3").gpu(3).obj(),
        *_gang("train", 16, 16, gpu=1),
    )
    catalog = catalog_from_dict(
        {"nodeTypes": [
            {"name": "gpu4", "cost": 10, "allocatable": {"cpu": "8", "nvidia.com/gpu": 4}},
            {"name": "gpu8", "cost": 15, "allocatable": {"cpu": "8", "nvidia.com/gpu": 8},
             "labels": {"pool": "big"}},
        ]},
        "catalog",
    )  # fmt: skip
    d = schedule(cluster, SchedulerConf.default(), workers=1)
    found = changes(snapshot_of(cluster), None, "default/train", d.certificates["default/train"],
                    catalog=catalog)  # fmt: skip
    nodes = [c for c in found if c.kind == "nodes"]
    assert nodes == [Change("nodes", "+1 gpu8 node(s) (cost 15)", 1, "gpu8")]
    cheap = catalog_from_dict(
        {"nodeTypes": [{"name": "gpu4", "cost": 1, "allocatable": {"nvidia.com/gpu": 4}}]}, "c"
    )
    found = changes(snapshot_of(cluster), None, "default/train", d.certificates["default/train"],
                    catalog=cheap)  # fmt: skip
    assert [c for c in found if c.kind == "nodes"] == [
        Change("nodes", "+2 gpu4 node(s) (cost 2)", 2, "gpu4")
    ]


def test_a_gather_spec_the_reader_ignored_offers_no_topology_change() -> None:
    """`gatherStrategy: 5` (mentioning MustGather elsewhere): Koordinator, and the reader,
    ignore the annotation (a note says so); the topology change is not offered, nothing
    fails."""
    spec = json.dumps({"gatherStrategy": 5, "note": "MustGather"})
    cluster = model(
        node("n").gpu(1).obj(),
        podgroup("t", 2, **{SPEC: spec}),
        *[pod(f"t-{i}").group("t").requests(gpu=1).obj() for i in range(2)],
    )
    found = _changes(cluster, "default/t")
    assert [c.kind for c in found] == ["nodes", "min-member"]
