"""Every kind of certificate and of change, in every dialect gangplan reads (table tests).

The same cluster and the same job, written in each dialect, get the same certificate (kind,
numbers, places) and the same changes, smallest first; `changes` reports a change only
once the gang, with it, is placed and verified. What differs by dialect is only the words:
the one-domain rule and the topology change say what the dialect's own field says.

    gang dialects      coscheduling PodGroup, Koordinator annotations, Volcano PodGroup,
                       Workload API PodGroup, KAI PodGroup, Godel PodGroup
    topology dialects  Koordinator gather, Volcano HyperNode, Kueue TAS, Workload API,
                       KAI Topology, Godel job affinity
    queue dialects     Volcano Queue (capability, and an ancestor's), KAI Queue (limit)
    device dialects    Koordinator gpu-core, HAMi vGPU, KAI gpu-fraction, openb gpu-milli

Kinds of one dialect only have their own tables: `cards` (Volcano capacity-card,
tests/test_changes.py), `slices` (Kueue, tests/test_changes.py); `blocked` and
`competition` at enqueue (Volcano's walk) are at the end here, with overcommit's in
tests/features/overcommit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solver import SchedulerConf, schedule, snapshot_of
from solver.changes import changes
from solver.decision import Certificate
from solver.kube import load_objects
from tests.builders import (
    PodBuilder,
    gather,
    godel_podgroup,
    network_topology,
    node,
    pod,
    podgroup,
    queue,
    raw,
    volcano_batch_job,
    workload_podgroup,
)
from tests.features.devices.test_sharing import gpu_node

GANG = "default/train"
Objects = list[dict[str, Any]]
Link = Callable[[PodBuilder], PodBuilder]


def _kai_group(min_member: int, **spec: Any) -> dict[str, Any]:
    meta = {"name": "train", "namespace": "default"}
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": meta,
            "spec": {"minMember": min_member, **spec}}  # fmt: skip


# dialect -> (its PodGroup object or None, how a pod joins gang `train`), for minMember m
GANG_DIALECTS: dict[str, Callable[[int], tuple[dict[str, Any] | None, Link]]] = {
    "coscheduling": lambda m: (podgroup("train", m), lambda p: p.group("train")),
    "koordinator": lambda m: (None, lambda p: p.annotate(
        "gang.scheduling.koordinator.sh/name", "train").annotate(
        "gang.scheduling.koordinator.sh/min-available", str(m))),
    "volcano": lambda m: (
        podgroup("train", m, "volcano"),
        lambda p: p.annotate("scheduling.k8s.io/group-name", "train"),
    ),
    "workload-api": lambda m: (workload_podgroup("train", m),
                               lambda p: p.scheduling_group("train")),
    "kai": lambda m: (_kai_group(m), lambda p: p.annotate("pod-group-name", "train")),
    "godel": lambda m: (
        podgroup("train", m, "godel"),
        lambda p: p.annotate("godel.bytedance.com/pod-group-name", "train"),
    ),
}  # fmt: skip


def job(dialect: str, min_member: int, pods: list[PodBuilder], name: str = "train") -> Objects:
    """Gang `name` of `pods` in the dialect (its PodGroup, when the dialect has one)."""
    group, link = GANG_DIALECTS[dialect](min_member)
    objects = [*([group] if group is not None else []), *(link(p).obj() for p in pods)]
    return objects if name == "train" else _renamed(objects, name)


def _renamed(obj: Any, name: str) -> Any:
    """`obj` with every value "train" (the gang's name, in whichever field) as `name`."""
    if isinstance(obj, dict):
        return {k: _renamed(v, name) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_renamed(v, name) for v in obj]
    return name if obj == "train" else obj


def _pods(n: int, **requests: Any) -> list[PodBuilder]:
    return [pod(f"train-{i}").requests(**requests) for i in range(n)]


def _hosts(*names: str) -> Objects:
    return [node(n).cpu("8").label("kubernetes.io/hostname", n).obj() for n in names]


# kind -> (cluster in a dialect, expected certificate (kind, needed, offered, places),
#          expected changes (kind, size, text))
GangCase = tuple[
    Callable[[str], Objects],
    tuple[str, int, int, tuple[tuple[str, int], ...]],
    list[tuple[str, int, str]],
]
GANG_CASES: dict[str, GangCase] = {
    #   n1 [4 GPU]  n2 [8 GPU]        train: 16 × 1 GPU, all required
    "capacity": (
        lambda d: [node("n1").gpu(4).obj(), node("n2").gpu(8).obj(),
                   *job(d, 16, _pods(16, cpu=1, gpu=1))],
        ("capacity", 16, 12, (("n2", 8), ("n1", 4))),
        [("nodes", 1, "+1 node(s) like n2, empty"),
         ("min-member", 4, "minMember 12 instead of 16")],
    ),
    #   n1 [3 cpu]  n2 [3 cpu]        train: 3 × 2 cpu: 6 cpu fit in sum, one pod per node
    "pods": (
        lambda d: [node("n1").cpu("3").obj(), node("n2").cpu("3").obj(),
                   *job(d, 3, _pods(3, cpu="2"))],
        ("pods", 3, 2, (("n1", 1), ("n2", 1))),
        [("nodes", 1, "+1 node(s) like n1, empty"),
         ("min-member", 1, "minMember 2 instead of 3")],
    ),
    #   n1 zone=a  n2 taint dedicated=infer      train: selector zone=b: nothing helps
    "predicates": (
        lambda d: [node("n1").gpu(8).label("zone", "a").obj(),
                   node("n2").gpu(8).taint("dedicated", "infer").obj(),
                   *job(d, 2, [p.selector(zone="b") for p in _pods(2, gpu=1)])],
        ("predicates", 0, 0, ()),
        [],
    ),
    #   n1 [8 cpu]  n2 [8 cpu]        train: 3 pods, one per hostname
    "anti-affinity": (
        lambda d: [*_hosts("n1", "n2"), *job(d, 3, [
            p.label("app", "t").anti_affinity("kubernetes.io/hostname", app="t")
            for p in _pods(3, cpu="1")])],
        ("anti-affinity", 3, 2, (("n1", 3), ("n2", 3))),
        [("nodes", 1, "+1 node(s) like n1, empty"),
         ("min-member", 1, "minMember 2 instead of 3")],
    ),
    #   zone a: na [8 cpu]   zone b: nb [1 cpu]    train: 4 pods spread by zone, maxSkew 1
    "rules": (
        lambda d: [node("na").cpu("8").label("zone", "a").obj(),
                   node("nb").cpu("1").label("zone", "b").obj(),
                   *job(d, 4, [p.label("app", "t").spread("zone", 1, app="t")
                               for p in _pods(4, cpu="1")])],
        ("rules", 0, 0, ()),
        # where a node stands matters: one more like nb (zone b) evens the spread
        [("nodes", 1, "+1 node(s) like nb, empty"), ("min-member", 1, "minMember 3 instead of 4")],
    ),
    #   n [4 cpu]     first (priority 10) and train: 3 cpu each: train fits alone
    "competition": (
        lambda d: [node("n").cpu("4").obj(),
                   *job(d, 1, [pod("first-0").requests(cpu=3).priority(10)], name="first"),
                   *job(d, 1, _pods(1, cpu=3))],
        ("competition", 0, 0, ()),
        [],  # alone it runs: nothing to change, the certificate names the rival
    ),
    #   n [8 GPU]: low (priority 1) holds 6     train (priority 100): 2 × 2 GPU
    "preemption": (
        lambda d: [node("n").gpu(8).obj(), pod("low").requests(gpu=6).priority(1).on("n").obj(),
                   *job(d, 2, [p.priority(100) for p in _pods(2, gpu=2)])],
        ("capacity", 4, 2, (("n", 2),)),
        [("preemption", 1, "evict 1 pod(s) of default/low on n (priority ≤ 1, 6 nvidia.com/gpu; "
                           "gangplan schedule --preempt)"),
         ("nodes", 1, "+1 node(s) like n, empty"),
         ("min-member", 1, "minMember 1 instead of 2")],
    ),
    #   n1 [8 GPU]: a holds 4   n2 [8 GPU]: b holds 4      train: 1 × 8 GPU
    "moves": (
        lambda d: [node("n1").gpu(8).obj(), node("n2").gpu(8).obj(),
                   pod("a").requests(gpu=4).on("n1").obj(),
                   pod("b").requests(gpu=4).on("n2").obj(),
                   *job(d, 1, _pods(1, gpu=8))],
        ("pods", 1, 0, ()),
        [("moves", 1, "move 1 running pod(s) off 1 node(s) (gangplan defrag --gang)"),
         ("nodes", 1, "+1 node(s) like n1, empty")],
    ),
}  # fmt: skip


def _answer(objects: Objects, gang: str = GANG) -> tuple[Certificate, list[tuple[str, int, str]]]:
    cluster = load_objects(raw(*objects))  # workloads (a Volcano Job) expanded, as read
    conf = SchedulerConf.default()
    certificates = {e: schedule(cluster, conf, engine=e, workers=1).certificates.get(gang)
                    for e in ("greedy", "cpsat")}  # fmt: skip
    assert certificates["greedy"] == certificates["cpsat"]  # one text, whichever engine
    cert = certificates["greedy"]
    assert cert is not None and cert.proven
    found = changes(snapshot_of(cluster), conf, gang, cert)
    return cert, [(c.kind, c.size, c.text) for c in found]


@pytest.mark.parametrize("dialect", GANG_DIALECTS)
@pytest.mark.parametrize("kind", GANG_CASES)
def test_each_kind_in_each_gang_dialect(kind: str, dialect: str) -> None:
    build, (cert_kind, needed, offered, places), expected = GANG_CASES[kind]
    cert, found = _answer(build(dialect))
    assert (cert.kind, cert.needed, cert.offered, cert.places) == (
        cert_kind, needed, offered, places)  # fmt: skip
    assert found == expected


# ----------------------------------------------------------------------------- topology
#
#   r1: r1-a [8 GPU]  r1-b [8 GPU]     r2: r2-a [8 GPU]  r2-b [4 GPU]
#
#   train: 3 × 8 GPU, all in one rack: r1 offers 16, r2 12. A node more in r1 runs it; so
#   does the rack as a preference; a lower minMember too, except where the dialect places
#   the pod set whole (Koordinator gathers all pending pods, Kueue admits the workload).
RACK = "example.com/rack"


def _racks() -> Objects:
    racks = (("r1-a", "r1", 8), ("r1-b", "r1", 8), ("r2-a", "r2", 8), ("r2-b", "r2", 4))
    return [node(n).cpu("64").gpu(g).label(RACK, r).label("kubernetes.io/hostname", n)
            .label("pool", "tas").obj() for n, r, g in racks]  # fmt: skip


def _rack_pods(link: Link) -> list[dict[str, Any]]:
    return [link(p).obj() for p in _pods(3, cpu=1, gpu=8)]


def _hypernode(name: str, rack: str) -> dict[str, Any]:
    members = [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {RACK: rack}}}}]
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {"tier": 1, "tierName": "rack", "members": members}}  # fmt: skip


def _kueue_topology() -> Objects:
    levels = [{"nodeLabel": RACK}, {"nodeLabel": "kubernetes.io/hostname"}]
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "t"},
         "spec": {"levels": levels}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
         "metadata": {"name": "tas"}, "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "t"}},
    ]  # fmt: skip


def _volcano_hard() -> dict[str, Any]:
    pg = podgroup("train", 3, "volcano")
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    return pg


def _kai_topology() -> dict[str, Any]:
    return {"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": RACK}]}}  # fmt: skip


TOPOLOGY_DIALECTS: dict[str, Callable[[], Objects]] = {
    "koordinator": lambda: [
        network_topology(("RackLayer", None, [RACK]), ("NodeTopologyLayer", "RackLayer", [])),
        podgroup("train", 3, **gather(("RackLayer", "MustGather"))),
        *_rack_pods(lambda p: p.group("train")),
    ],
    "volcano": lambda: [
        _hypernode("rack-1", "r1"), _hypernode("rack-2", "r2"), _volcano_hard(),
        *_rack_pods(lambda p: p.annotate("scheduling.k8s.io/group-name", "train")),
    ],
    "kueue": lambda: [
        *_kueue_topology(), podgroup("train", 3),
        *_rack_pods(lambda p: p.group("train").annotate(
            "kueue.x-k8s.io/podset-required-topology", RACK)),
    ],
    "workload-api": lambda: [
        workload_podgroup("train", 3, topology=RACK),
        *_rack_pods(lambda p: p.scheduling_group("train")),
    ],
    "kai": lambda: [
        _kai_topology(),
        _kai_group(3, topologyConstraint={"topology": "t", "requiredTopologyLevel": RACK}),
        *_rack_pods(lambda p: p.annotate("pod-group-name", "train")),
    ],
    "godel": lambda: [
        godel_podgroup("train", 3, {"required": [{"topologyKey": RACK}]}),
        *_rack_pods(lambda p: p.annotate("godel.bytedance.com/pod-group-name", "train")),
    ],
}  # fmt: skip

# dialect -> (the rule in its words, its domains' names, the topology change in its words)
KEYED = ("example.com/rack:r1", "example.com/rack:r2")
TOPOLOGY_WORDS: dict[str, tuple[str, tuple[str, str], str]] = {
    "koordinator": ("one RackLayer domain (MustGather)", ("r1", "r2"),
                    "PreferGather instead of MustGather"),
    "volcano": ("one HyperNode within its highestTierAllowed", ("rack-1", "rack-2"),
                "networkTopology mode soft instead of hard"),
    "kueue": (f"one {RACK} domain (Kueue required)", ("r1", "r2"),
              "podset-preferred-topology instead of podset-required-topology"),
    "workload-api": (f"one {RACK} domain (Workload API schedulingConstraints.topology)", KEYED,
                     f"without schedulingConstraints.topology {RACK}"),
    "kai": (f"one {RACK} domain (KAI requiredTopologyLevel)", KEYED,
            f"preferredTopologyLevel {RACK} instead of requiredTopologyLevel"),
    "godel": (f"one {RACK} domain (Godel podGroupAffinity required)", KEYED,
              f"podGroupAffinity preferred instead of required ({RACK})"),
}  # fmt: skip
WHOLE = ("koordinator", "kueue")  # all pending pods of the group together: no minMember cut


@pytest.mark.parametrize("dialect", TOPOLOGY_DIALECTS)
def test_domain_and_its_changes_in_each_topology_dialect(dialect: str) -> None:
    rule, (best, next_), relaxed = TOPOLOGY_WORDS[dialect]
    cert, found = _answer([*_racks(), *TOPOLOGY_DIALECTS[dialect]()])
    assert (cert.kind, cert.constraint, cert.needed, cert.offered) == ("domain", rule, 24, 16)
    assert cert.places == ((best, 16), (next_, 12))
    assert cert.sentence == (
        f"gang {GANG} needs 24 nvidia.com/gpu inside {rule}; the largest offers 16 ({best}), "
        f"the next 12 ({next_})"
    )
    assert found == [
        ("nodes", 1, f"+1 node(s) like r1-a in {best}, empty"),
        *([] if dialect in WHOLE else [("min-member", 1, "minMember 2 instead of 3")]),
        ("topology", 1, relaxed),
    ]


# ----------------------------------------------------------------------------- queues
#
#   n [16 GPU]     eng (a limit of 4 GPU) ─ team-a (no limit of its own)
#   train in team-a: 3 × 2 GPU = 6 > 4: the ancestor's limit binds; +2 on eng runs it
def _kai_queue(name: str, gpu_limit: int, parent: str | None = None) -> dict[str, Any]:
    open_ = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"resources": {
        "gpu": {"quota": 0, "limit": gpu_limit, "overQuotaWeight": 1}, "cpu": open_,
        "memory": open_}}  # fmt: skip
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def _volcano_in(queue_name: str) -> Objects:
    pg = podgroup("train", 3, "volcano")
    pg["spec"]["queue"] = queue_name
    link = GANG_DIALECTS["volcano"](3)[1]
    return [pg, *(link(p).obj() for p in _pods(3, cpu=1, gpu=2))]


QUEUE_DIALECTS: dict[str, tuple[Objects, str, str, str]] = {
    # dialect: (queues and job, the queue that binds, the certificate's words, the change's)
    "volcano": (
        [queue("team-a", capability={"nvidia.com/gpu": 4}), *_volcano_in("team-a")],
        "team-a", "queue team-a: gang default/train needs 6 nvidia.com/gpu; its limit (4) "
        "leaves 4 (0 held)", "+2 nvidia.com/gpu capability on queue team-a",
    ),
    "volcano ancestor": (
        [queue("eng", capability={"nvidia.com/gpu": 4}), queue("team-a", "eng"),
         *_volcano_in("team-a")],
        "eng", "queue team-a: gang default/train needs 6 nvidia.com/gpu; its ancestor eng's "
        "limit (4) leaves 4 (0 held)", "+2 nvidia.com/gpu capability on queue eng",
    ),
    "kai ancestor": (
        [_kai_queue("eng", 4), _kai_queue("team-a", -1, "eng"),
         _kai_group(3, queue="team-a"),
         *(p.annotate("pod-group-name", "train").obj() for p in _pods(3, cpu=1, gpu=2))],
        "eng", "queue team-a: gang default/train needs 6 nvidia.com/gpu; its ancestor eng's "
        "limit (4) leaves 4 (0 held)", "+2 nvidia.com/gpu limit on KAI queue eng",
    ),
}  # fmt: skip


@pytest.mark.parametrize("dialect", QUEUE_DIALECTS)
def test_quota_and_its_change_in_each_queue_dialect(dialect: str) -> None:
    objects, binding, sentence, raised = QUEUE_DIALECTS[dialect]
    cert, found = _answer([node("n").cpu("64").gpu(16).obj(), *objects])
    assert (cert.kind, cert.constraint, cert.needed, cert.offered) == (
        "quota", f"queue {binding}", 6, 4)  # fmt: skip
    assert cert.sentence == sentence
    assert found == [("quota", 2, raised), ("min-member", 1, "minMember 2 instead of 3")]


# ----------------------------------------------------------------------------- devices
#
#   gpu-a [GPU0 GPU1]      train: 3 pods of 0.6 GPU, each on one device: 2 devices take 2
def _share(dialect: str, i: int) -> dict[str, Any]:
    p = pod(f"train-{i}").requests(cpu="1").group("train").obj()
    requests = p["spec"]["containers"][0]["resources"]["requests"]
    annotations = p["metadata"]["annotations"]
    if dialect == "koordinator":
        requests.update({"koordinator.sh/gpu-core": "60", "koordinator.sh/gpu-memory-ratio": "60"})
    elif dialect == "hami":
        requests.update({"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-cores": "60"})
    elif dialect == "kai":
        annotations["gpu-fraction"] = "0.6"
    else:
        annotations.update({"alibabacloud.com/gpu-milli": "600", "alibabacloud.com/gpu-count": "1"})
    return p


@pytest.mark.parametrize("dialect", ["koordinator", "hami", "kai", "openb"])
def test_devices_and_their_changes_in_each_sharing_dialect(dialect: str) -> None:
    hami = {"volcano.sh/vgpu-number": 20, "volcano.sh/vgpu-memory": 49152,
            "volcano.sh/vgpu-cores": 200}  # fmt: skip
    objects = [
        gpu_node("gpu-a", **hami),
        podgroup("train", 3),
        *(_share(dialect, i) for i in range(3)),
    ]
    cert, found = _answer(objects)
    assert (cert.kind, cert.needed, cert.offered, cert.places) == ("devices", 3, 2, (("gpu-a", 2),))
    assert cert.sentence.endswith("each on one device; the devices with that share free take 2: "
                                  "gpu-a 2")  # fmt: skip
    assert found == [("nodes", 1, "+1 node(s) like gpu-a, empty"),
                     ("min-member", 1, "minMember 2 instead of 3")]  # fmt: skip


# ----------------------------------------------------------------------------- blocked
def test_a_job_refused_at_enqueue_is_blocked_and_gets_the_capability_it_lacks() -> None:
    """Volcano's enqueue (a batch.volcano.sh Job's minResources, 3 cpu, against queue small's
    2): the job never reaches allocate; +1 cpu lets it in and run."""
    cert, found = _answer(
        [
            node("n").cpu("16").obj(),
            queue("small", capability={"cpu": "2"}),
            volcano_batch_job("train", "small", 3),
        ]
    )
    assert (cert.kind, cert.constraint) == ("blocked", "enqueue")
    assert cert.sentence.startswith("not enqueued: queue small: cpu 3 requested")
    assert found == [("quota", 1000, "+1 cpu capability on queue small (to enter it)")]


@pytest.mark.parametrize("dialect", ["workload-api", "kai", "godel"])
def test_running_members_in_two_domains_block_a_required_topology(dialect: str) -> None:
    """Two members already run in r1 and r2: no one domain holds the gang, in any dialect
    whose rule pins the domain by its running members; nothing the job or cluster could
    change lets the pending one join."""
    objects = TOPOLOGY_DIALECTS[dialect]()
    for i, where in ((0, "r1-a"), (1, "r2-a")):
        member = next(o for o in objects if o["metadata"]["name"] == f"train-{i}")
        member["spec"]["nodeName"], member["status"] = where, {"phase": "Running"}
    cert, found = _answer([*_racks(), *objects])
    assert (cert.kind, cert.constraint, cert.sentence) == (
        "blocked", "gang", f"gang {GANG}: assigned pods are in different topologies")  # fmt: skip
    assert [kind for kind, _, _ in found] == ["topology"]  # as a preference, it runs


def test_a_job_refused_only_because_of_jobs_admitted_ahead_is_competition() -> None:
    """Queue small (3 cpu): first (2 cpu) is admitted, then train (2 cpu) is refused, 2 + 2 >
    3; at the start of the cycle small had room for it, so the refusal is competition
    (examples/queues/hierarchy-engineering.yaml's web-train is the same case), and alone it
    needs no change."""
    cert, found = _answer(
        [node("n").cpu("16").obj(), queue("small", capability={"cpu": "3"}),
         volcano_batch_job("first", "small", 2), volcano_batch_job("train", "small", 2)]
    )  # fmt: skip
    assert (cert.kind, cert.constraint, cert.rivals) == (
        "competition",
        "enqueue",
        ("default/first",),
    )
    assert cert.sentence == (
        "not enqueued: queue small: cpu 2 requested + 2 in use > realCapability 3 (over by 1); "
        "at the start of the cycle its queue had room: it went to default/first, admitted "
        "ahead of it"
    )
    assert found == []
