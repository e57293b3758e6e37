"""Certificates, one table row per kind, on every engine: the same kind, sentence and
numbers whichever engine answered, and `proven` only where it is.

Each row draws its cluster; `[4 GPU]` is a node's free room before the cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solver import SchedulerConf, load_manifests, schedule
from solver.decision import Certificate
from tests.builders import (
    BLOCK,
    SPINE,
    gather,
    groups_annotation,
    model,
    node,
    pod,
    podgroup,
    queue,
    spine_block_topology,
    volcano_job,
)

ENGINES = ["greedy", "cpsat", "auto"]
ROOT = Path(__file__).resolve().parents[2]


def gang(name: str, size: int, min_member: int, **requests: Any) -> list[dict[str, Any]]:
    pods = [
        pod(f"{name}-{i}").group(name).requests(**(requests or {"cpu": 1, "gpu": 1})).obj()
        for i in range(size)
    ]
    return [podgroup(name, min_member), *pods]


def hosts(*names: str, cpu: str = "8") -> list[dict[str, Any]]:
    return [node(n).cpu(cpu).label("kubernetes.io/hostname", n).obj() for n in names]


def rack_nodes(spine: str, block: str, *names: str, gpu: int = 8) -> list[dict[str, Any]]:
    return [node(n).cpu("64").gpu(gpu).label(SPINE, spine).label(BLOCK, block).obj() for n in names]


CASES: dict[str, tuple[list[dict[str, Any]], str, Certificate]] = {
    #   n1 [4 GPU]  n2 [8 GPU]        train: 16 × 1 GPU, all required
    "capacity": (
        [node("n1").gpu(4).obj(), node("n2").gpu(8).obj(), *gang("train", 16, 16)],
        "default/train",
        Certificate(
            "capacity",
            "nvidia.com/gpu",
            "gang default/train needs 16 × 1 nvidia.com/gpu (16 in all); its 2 eligible "
            "node(s) have 12 free (n2: 8, n1: 4)",
            True,
            unit="nvidia.com/gpu",
            needed=16,
            offered=12,
            places=(("n2", 8), ("n1", 4)),
        ),
    ),
    #   n1 [3 pods]                   many: 4 × 100m cpu
    "pod slots": (
        [node("n1").pods(3).obj(), *gang("many", 4, 4, cpu="100m")],
        "default/many",
        Certificate(
            "capacity",
            "pods",
            "gang default/many needs 4 pod slots; its 1 eligible node(s) have 3 free (n1: 3)",
            True,
            needed=4,
            offered=3,
            places=(("n1", 3),),
        ),
    ),
    #   n1 [3 cpu]  n2 [3 cpu]        wide: 3 × 2 cpu: 6 cpu fit in sum, one pod per node
    "pods": (
        [node("n1").cpu("3").obj(), node("n2").cpu("3").obj(), *gang("wide", 3, 3, cpu="2")],
        "default/wide",
        Certificate(
            "pods",
            "pods",
            "gang default/wide needs 3 pods of 2 cpu; its 2 eligible node(s) take 2 of them "
            "(n1: 1, n2: 1)",
            True,
            needed=3,
            offered=2,
            places=(("n1", 1), ("n2", 1)),
        ),
    ),
    #   n1 zone=a  n2 taint dedicated=infer      z: selector zone=b
    "predicates": (
        [
            node("n1").gpu(8).label("zone", "a").obj(),
            node("n2").gpu(8).taint("dedicated", "infer").obj(),
            podgroup("z", 2),
            *[pod(f"z-{i}").group("z").requests(gpu=1).selector(zone="b").obj() for i in range(2)],
        ],
        "default/z",
        Certificate(
            "predicates",
            "predicates",
            "no node passes the filters of gang default/z: 1 node(s) didn't match Pod's node "
            "affinity/selector, 1 node(s) had untolerated taint {dedicated: infer}",
            True,
        ),
    ),
    #   s1 ─ b1: a1 [8]  a2 [8]           train: 3 × 8 GPU, MustGather in one block
    #   s1 ─ b2: a3 [8]
    #   s2 ─ b3: a4 [8]  a5 [4]
    "domain": (
        [
            spine_block_topology(),
            *rack_nodes("s1", "b1", "a1", "a2"),
            *rack_nodes("s1", "b2", "a3"),
            *rack_nodes("s2", "b3", "a4"),
            *rack_nodes("s2", "b3", "a5", gpu=4),
            podgroup("train", 3, **gather(("BlockLayer", "MustGather"))),
            *[pod(f"train-{i}").group("train").requests(gpu=8).obj() for i in range(3)],
        ],
        "default/train",
        Certificate(
            "domain",
            "one BlockLayer domain (MustGather)",
            "gang default/train needs 24 nvidia.com/gpu inside one BlockLayer domain "
            "(MustGather); the largest offers 16 (b1), the next 12 (b3), 8 (b2)",
            True,
            unit="nvidia.com/gpu",
            needed=24,
            offered=16,
            places=(("b1", 16), ("b3", 12), ("b2", 8)),
        ),
    ),
    #   s1 ─ b1: a1 [1 cpu]    s2 ─ b2: a2 [1 cpu]    two: 2 × 1 cpu, minMember 1, MustGather
    #   per spine: Koordinator gathers all pending pods of the group or none
    "whole gather": (
        [
            spine_block_topology(),
            node("a1").cpu("1").label(SPINE, "s1").label(BLOCK, "b1").obj(),
            node("a2").cpu("1").label(SPINE, "s2").label(BLOCK, "b2").obj(),
            podgroup("two", 1, **gather(("SpineLayer", "MustGather"))),
            *[pod(f"two-{i}").group("two").requests(cpu="1").obj() for i in range(2)],
        ],
        "default/two",
        Certificate(
            "domain",
            "one SpineLayer domain (MustGather), all its pending pods together (Koordinator "
            "gather)",
            "gang default/two needs 2 cpu inside one SpineLayer domain (MustGather), all its "
            "pending pods together (Koordinator gather); the largest offers 1 (s1), the next 1 (s2)",
            True,
            unit="cpu",
            needed=2000,
            offered=1000,
            places=(("s1", 1000), ("s2", 1000)),
        ),
    ),
    #   n [16 cpu], queue small: capability 2 cpu     vj: 3 × 1 cpu (PodGroup, no minResources)
    "quota": (
        [
            node("n").cpu("16").obj(),
            queue("small", capability={"cpu": "2"}),
            {**podgroup("vj", 3, "volcano"), "spec": {"minMember": 3, "queue": "small"}},
            *[
                pod(f"vj-{i}")
                .annotate("scheduling.k8s.io/group-name", "vj")
                .requests(cpu="1")
                .obj()
                for i in range(3)
            ],
        ],
        "default/vj",
        Certificate(
            "quota",
            "queue small",
            "queue small: gang default/vj needs 3 cpu; its limit (2) leaves 2 (0 held)",
            True,
            unit="cpu",
            needed=3000,
            offered=2000,
            places=(("small", 2000),),
        ),
    ),
    #   n [16 cpu], eng (capability 2 cpu) ─ eng-a (no capability)    job of 3 × 1 cpu in eng-a
    "quota at an ancestor": (
        [
            node("n").cpu("16").obj(),
            queue("eng", capability={"cpu": "2"}),
            queue("eng-a", "eng"),
            {**podgroup("vj", 3, "volcano"), "spec": {"minMember": 3, "queue": "eng-a"}},
            *[
                pod(f"vj-{i}")
                .annotate("scheduling.k8s.io/group-name", "vj")
                .requests(cpu="1")
                .obj()
                for i in range(3)
            ],
        ],
        "default/vj",
        Certificate(
            "quota",
            "queue eng",
            "queue eng-a: gang default/vj needs 3 cpu; its ancestor eng's limit (2) leaves 2 "
            "(0 held)",
            True,
            unit="cpu",
            needed=3000,
            offered=2000,
            places=(("eng", 2000),),
        ),
    ),
    #   n1 [8 cpu]  n2 [8 cpu]        aa: 3 pods, required anti-affinity per hostname
    "anti-affinity": (
        [
            *hosts("n1", "n2"),
            podgroup("aa", 3),
            *[
                pod(f"aa-{i}")
                .group("aa")
                .requests(cpu="1")
                .label("app", "aa")
                .anti_affinity("kubernetes.io/hostname", app="aa")
                .obj()
                for i in range(3)
            ],
        ],
        "default/aa",
        Certificate(
            "anti-affinity",
            "anti-affinity app=aa by kubernetes.io/hostname",
            "gang default/aa needs 3 pods, at most one per kubernetes.io/hostname "
            "(anti-affinity app=aa by kubernetes.io/hostname); its eligible nodes with room "
            "give 2",
            True,
            needed=3,
            offered=2,
            places=(("n1", 3), ("n2", 3)),  # pod slots per node (a new node: one domain more)
        ),
    ),
    #   zone a: na [8 cpu]   zone b: nb [1 cpu]    sp: 4 pods spread by zone, maxSkew 1:
    #   b takes 1, so a at most 2 — no bound sees it, CP-SAT's core does
    "rules": (
        [
            node("na").cpu("8").label("zone", "a").obj(),
            node("nb").cpu("1").label("zone", "b").obj(),
            podgroup("sp", 4),
            *[
                pod(f"sp-{i}")
                .group("sp")
                .requests(cpu="1")
                .label("app", "sp")
                .spread("zone", 1, app="sp")
                .obj()
                for i in range(4)
            ],
        ],
        "default/sp",
        Certificate(
            "rules",
            "",
            # a core of two families: neither the room nor the spread alone rules it out
            "gang default/sp needs 4 × 1 cpu (4 in all), eligible nodes offer 9 before this "
            "cycle; the pods' own affinity, anti-affinity and spread terms cannot all hold "
            "(spread zone maxSkew 1)",
            True,
        ),
    ),
    #   n [4 cpu]        a (priority 10) and b: 3 cpu each: b fits alone, a took the room
    "competition": (
        [
            node("n").cpu("4").obj(),
            queue("q"),
            *volcano_job("a", "q", 1, gpu=0, cpu=3, priority=10),
            *volcano_job("b", "q", 1, gpu=0, cpu=3),
        ],
        "default/b",
        Certificate(
            "competition",
            "competition",
            "gang default/b fits on the cluster on its own; the room went to default/a, "
            "placed ahead of it",
            True,
            rivals=("default/a",),
        ),
    ),
    #   n1 [2 GPU], GangGroup {m (no requests), w: 3 × 1 GPU}
    "gang group": (
        [
            node("n1").gpu(2).obj(),
            podgroup("m", 1, **groups_annotation("default/m", "default/w")),
            pod("m-0").group("m").obj(),
            podgroup("w", 3, **groups_annotation("default/m", "default/w")),
            *[pod(f"w-{i}").group("w").requests(gpu=1).obj() for i in range(3)],
        ],
        "default/m",
        Certificate(
            "capacity",
            "nvidia.com/gpu",
            "gang default/w needs 3 × 1 nvidia.com/gpu (3 in all); its 1 eligible node(s) "
            "have 2 free (n1: 2)",
            True,
            unit="nvidia.com/gpu",
            needed=3,
            offered=2,
            places=(("n1", 2),),
        ),
    ),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_kind_is_the_same_on_every_engine(
    case: tuple[list[dict[str, Any]], str, Certificate], engine: str
) -> None:
    objects, gang_id, expected = case
    d = schedule(model(*objects), SchedulerConf.default(), engine=engine, workers=1)
    assert d.certificates[gang_id] == expected
    reason = d.podgroups[gang_id].reason
    assert reason.startswith(expected.sentence), reason
    assert "greedy" not in reason and "CP-SAT" not in reason  # no engine named


@pytest.mark.parametrize("engine", ENGINES)
def test_placed_gangs_get_no_certificate(engine: str) -> None:
    d = schedule(model(node("n").gpu(8).obj(), *gang("ok", 4, 4)), engine=engine, workers=1)
    assert d.placed and d.certificates == {}


def test_a_pod_without_a_gang_is_certified_by_its_key() -> None:
    d = schedule(model(node("n").gpu(1).obj(), pod("solo").requests(gpu=2).obj()))
    cert = d.certificates["default/solo"]
    assert cert.kind == "capacity" and cert.proven
    assert d.placements["default/solo"].reason.startswith(cert.sentence)


def test_with_preemption_the_bound_is_the_allocatable() -> None:
    """A 16-GPU gang on 12 GPUs of nodes full of lower-priority pods: even evicting every
    running pod leaves it short, and the certificate says so."""
    objs = [
        node("n1").gpu(4).obj(),
        node("n2").gpu(8).obj(),
        pod("low-1").requests(gpu=4).on("n1").obj(),
        pod("low-2").requests(gpu=8).on("n2").obj(),
        *gang("train", 16, 16),
    ]
    d = schedule(model(*objs), preempt=True, workers=1)
    cert = d.certificates["default/train"]
    assert cert.kind == "capacity" and cert.proven and cert.offered == 12
    assert "allocatable (every running pod evicted)" in cert.sentence


def test_auto_builds_no_model_when_what_is_left_out_is_impossible() -> None:
    """n [4 GPU]: `small` (2 × 1 GPU) placed on the one node, `big` (8 × 1 GPU) proven
    impossible: `auto` answers OPTIMAL with the greedy's placement and no CP-SAT model."""
    d = schedule(model(node("n").gpu(4).obj(), *gang("small", 2, 2), *gang("big", 8, 8)))
    assert d.status == "OPTIMAL" and d.bound == d.objective and len(d.placed) == 2
    assert d.stats["proven_by_bound"] == 1 and d.stats["impossible_gangs"] == 1
    assert "vars_after" not in d.stats and d.certificates["default/big"].kind == "capacity"


def test_the_bundled_example_still_thinks_about_its_placed_gangs() -> None:
    """The bundled example: train-big is impossible, but the greedy's placement of the
    GangGroup does not reach the lower tiers' bounds, so CP-SAT still runs for them."""
    d = schedule(load_manifests(str(ROOT / "examples" / "ganggroup-gpu.yaml")), workers=1)
    assert d.status == "OPTIMAL" and "vars_after" in d.stats


@pytest.mark.parametrize("engine", ENGINES)
def test_kueue_required_topology_is_a_domain_certificate(engine: str) -> None:
    """Kueue's own required-rack Job sample: 10 pods of 1 cpu, the largest rack has room for
    8; Kueue keeps it pending with "allows to fit only 8 out of 10 pod(s)", which follows
    the certificate."""
    cluster = load_manifests(str(ROOT / "examples" / "topology" / "kueue-job.yaml"))
    d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1)
    gang = next(g for g in d.certificates if "required" in g)
    cert = d.certificates[gang]
    assert (cert.kind, cert.proven, cert.needed, cert.offered) == ("domain", True, 10_000, 8_000)
    assert cert.constraint == "one cloud.provider.com/topology-rack domain (Kueue required)"
    assert cert.places[0] == ("b2/r3", 8_000)
    assert "allows to fit only 8 out of 10 pod(s)" in d.podgroups[gang].reason
