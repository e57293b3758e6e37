"""Sub-groups each in one domain of their own (`Gang.topology_sub_groups`, KAI-Scheduler's
`subGroups[].topologyConstraint.requiredTopologyLevel`), on both engines, every decision
verified inside `schedule`; and `verify`'s own rule. KAI's upstream cases are in
`tests/kube/test_kai_allocate.py`; these are the rule's edges.

The cluster (2 GPUs a node):

    zone z1 ─┬─ rack r1: n1 n2
             └─ rack r2: n3 n4
    zone z2 ─┬─ rack r3: n5 n6
             └─ rack r4: n7 n8
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from solver import SchedulerConf, schedule
from solver.decision import Decision
from solver.features.topology.workload_api.subgroups import level_domains
from solver.model import ClusterModel, TopologySubGroup
from solver.schedule import snapshot_of
from solver.verify import verify
from tests.builders import gather, groups_annotation, model, network_topology, node, pod, podgroup
from tests.features.topology.kueue import helpers as kueue

ENGINES = ["greedy", "cpsat"]
LABEL = "kai.scheduler/subgroup-name"
ZONE, RACK = "topology/zone", "topology/rack"
RACKS = {"r1": "z1", "r2": "z1", "r3": "z2", "r4": "z2"}


def nodes() -> list[dict[str, Any]]:
    return [
        node(f"n{2 * i + k + 1}").gpu(2).label(ZONE, z).label(RACK, r).obj()
        for i, (r, z) in enumerate(RACKS.items())
        for k in range(2)
    ]


def sub(name: str, *values: str, level: str = RACK) -> TopologySubGroup:
    levels = (ZONE, RACK) if level == RACK else (ZONE,)
    return TopologySubGroup(name=name, label=LABEL, values=values or (name,), levels=levels)


def job(
    members: dict[str, int],
    subs: list[TopologySubGroup],
    *extra: dict[str, Any],
    gpus: int = 2,
    min_member: int | None = None,
    topology_key: str | None = None,
    **annotations: str,
) -> ClusterModel:
    """Gang `job` with `members[leaf]` pods labelled `leaf`, and its sub-groups."""
    pods = [
        pod(f"{leaf}-{i}").group("job").label(LABEL, leaf).requests(gpu=gpus).obj()
        for leaf, n in members.items()
        for i in range(n)
    ]
    total = sum(members.values())
    cluster = model(*nodes(), podgroup("job", min_member or total, **annotations), *pods, *extra)
    gang = cluster.gangs["default/job"].model_copy(
        update={"topology_sub_groups": tuple(subs), "topology_key": topology_key}
    )
    return cluster.model_copy(update={"gangs": {**cluster.gangs, gang.id: gang}})


def run(cluster: ClusterModel, engine: str) -> Decision:
    """The engine's own answer: one `verify` refused (and replaced) fails the test."""
    d = schedule(cluster, SchedulerConf.default(), engine=engine, workers=1, seed=0, time_limit=10)
    assert not d.stats.get("verify_fallback"), d.notes
    return d


def racks_of(d: Decision, leaf: str) -> set[str]:
    return {
        f"r{(int(n[1:]) + 1) // 2}" for k, n in d.placed.items() if k.startswith(f"default/{leaf}-")
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_each_replica_in_a_rack_of_its_own_inside_one_zone(engine: str) -> None:
    """Two replicas of enc + dec (4 GPUs each), each in one rack, the job in one zone: one
    rack holds a replica, no rack holds both, zone z1 holds the job."""
    subs = [sub("replica1", "enc1", "dec1"), sub("replica2", "enc2", "dec2")]
    d = run(job({"enc1": 1, "dec1": 1, "enc2": 1, "dec2": 1}, subs, topology_key=ZONE), engine)
    assert len(d.placed) == 4
    one = racks_of(d, "enc1") | racks_of(d, "dec1")
    two = racks_of(d, "enc2") | racks_of(d, "dec2")
    assert len(one) == 1 and len(two) == 1 and one != two, (one, two)
    assert len({RACKS[r] for r in one | two}) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_nested_sub_group_keeps_its_rack_inside_its_parents_zone(engine: str) -> None:
    """replica (zone) holds enc (rack) and dec: enc's 2 pods share a rack, all 3 one zone;
    the zone z1 is half taken, so all goes to z2."""
    busy = [pod(f"busy-{i}").requests(gpu=2).on(f"n{i}").obj() for i in (1, 3)]
    subs = [sub("replica", "enc", "dec", level=ZONE), sub("enc")]
    d = run(job({"enc": 2, "dec": 1}, subs, *busy), engine)
    assert len(d.placed) == 3
    assert len(racks_of(d, "enc")) == 1
    assert {RACKS[r] for r in racks_of(d, "enc") | racks_of(d, "dec")} == {"z2"}


@pytest.mark.parametrize("engine", ENGINES)
def test_running_pods_fix_their_sub_groups_domain(engine: str) -> None:
    """enc's running pod is in r4: its new pod joins it there, though r1 is emptier first."""
    running = pod("enc-run").group("job").label(LABEL, "enc").requests(gpu=2).on("n7").obj()
    d = run(job({"enc": 1}, [sub("enc")], running, min_member=1), engine)
    assert racks_of(d, "enc") == {"r4"}, d.placed


@pytest.mark.parametrize("engine", ENGINES)
def test_running_pods_in_two_racks_keep_the_new_ones_out(engine: str) -> None:
    """(KAI would take either rack; then the sub-group spans two.)"""
    running = [
        pod(f"enc-run{i}").group("job").label(LABEL, "enc").requests(gpu=2).on(n).obj()
        for i, n in enumerate(("n1", "n5"))
    ]
    d = run(job({"enc": 1}, [sub("enc")], *running, min_member=1), engine)
    assert not d.placed
    reason = d.podgroups["default/job"].reason
    assert "its running pods are in no one topology/rack domain" in reason, reason


@pytest.mark.parametrize("engine", ENGINES)
def test_an_elastic_sub_group_takes_the_rack_where_most_fit(engine: str) -> None:
    """enc has 5 pods of 1 GPU and the job needs 3: no rack holds 5, the greedy takes the
    most that fit in one rack (4); CP-SAT proves 4 is the most."""
    d = run(job({"enc": 5}, [sub("enc")], gpus=1, min_member=3), engine)
    assert len(d.placed) == 4 and len(racks_of(d, "enc")) == 1, d.placed


@pytest.mark.parametrize("engine", ENGINES)
def test_nodes_without_the_levels_are_not_used(engine: str) -> None:
    """A node with a rack but no zone label is in no domain of (zone, rack)."""
    bare = node("n0").gpu(8).label(RACK, "r0").obj()
    d = run(job({"enc": 2}, [sub("enc")], bare), engine)
    assert "default/enc-0" in d.placed and "n0" not in d.placed.values()


@pytest.mark.parametrize(
    "annotations",
    [
        groups_annotation("default/job", "default/other"),
        gather(("ZoneLayer", "MustGather")),
    ],
    ids=["gang group", "koordinator gather"],
)
def test_sub_groups_in_a_gang_group_or_gather_are_refused_not_dropped(
    annotations: dict[str, str],
) -> None:
    """The rule applies to a PodGroup placed alone; elsewhere the gang waits and says why
    (ignoring it would give an answer `verify` refuses)."""
    tree = network_topology(("ZoneLayer", None, [ZONE]), ("NodeTopologyLayer", "ZoneLayer", []))
    other = [podgroup("other", 1), pod("o-0").group("other").requests(gpu=1).obj(), tree]
    d = run(job({"enc": 1}, [sub("enc")], *other, **annotations), "greedy")
    assert not any(k.startswith("default/enc-") for k in d.placed)
    assert "apply to a PodGroup placed alone" in d.podgroups["default/job"].reason


def test_verify_refuses_a_sub_group_across_racks() -> None:
    """`verify` re-reads the rule from the gang and the nodes' labels, not the engine's."""
    cluster = job({"enc": 2}, [sub("enc")])
    d = run(cluster, "greedy")
    assert len(racks_of(d, "enc")) == 1
    moved = dict(d.placements)
    key = "default/enc-1"
    moved[key] = replace(moved[key], node="n7" if moved[key].node != "n7" else "n1")
    problems = verify(snapshot_of(cluster), SchedulerConf.default(), replace(d, placements=moved))
    assert any("sub-group enc spans topology/rack domains" in p for p in problems), problems


@pytest.mark.parametrize(
    "rule", [{"levels": (kueue.RACK,)}, {"min_member": 1}], ids=["level", "minimum"]
)
def test_sub_groups_under_kueue_tas_are_refused_not_dropped(rule: dict[str, Any]) -> None:
    """A Kueue TAS pod set places under Kueue's rule; sub-groups on its gang (a level or a
    minimum) wait with the same reason, on both engines."""
    base = kueue.cluster(kueue.DEFAULT, kueue.THREE, 2, {kueue.REQUIRED: kueue.RACK})
    gang = base.gangs["default/job"]
    pods = [p.model_copy(update={"labels": {**p.labels, LABEL: "a"}}) for p in base.pods]
    subs = (TopologySubGroup(name="a", label=LABEL, values=("a",), **rule),)
    cluster = base.model_copy(
        update={
            "pods": pods,
            "gangs": {gang.id: gang.model_copy(update={"topology_sub_groups": subs})},
        }
    )
    assert kueue.run(base, "greedy").placed  # placed without the sub-groups
    for engine in ENGINES:
        d = kueue.run(cluster, engine)
        assert not d.placed
        assert "apply to a PodGroup placed alone" in d.podgroups["default/job"].reason


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sub_group_no_rack_holds_is_proven_in_its_own_words(engine: str) -> None:
    """enc's 3 pods of 2 GPUs need 6 in one rack of 4: a proof (issue 40's certificate),
    not the greedy's count, and the same from either engine."""
    d = run(job({"enc": 3, "dec": 1}, [sub("enc"), sub("dec")]), engine)
    assert not d.placed
    cert = d.certificates["default/job"]
    assert cert.proven and cert.kind == "domain"
    assert cert.sentence == (
        "gang default/job needs 6 nvidia.com/gpu inside one topology/rack domain (sub-group "
        "enc); the largest offers 4 (z1.r1), the next 4 (z1.r2), 4 (z2.r3)"
    )


def test_an_elastic_gang_gets_no_sub_group_proof() -> None:
    """With fewer pods needed than pending (3 of 5), a sub-group may place fewer than all
    of its pods: the whole-sub-group bound does not apply, and no proof is claimed from it
    (2 pods of 2 GPUs fit a rack; the gang waits on the counted reason)."""
    d = run(job({"enc": 5}, [sub("enc")], min_member=3), "greedy")
    assert not d.placed
    assert not d.certificates["default/job"].proven or "sub-group" not in (
        d.certificates["default/job"].sentence
    )


def minimums(**need: int) -> list[TopologySubGroup]:
    return [
        TopologySubGroup(name=leaf, label=LABEL, values=(leaf,), min_member=n)
        for leaf, n in need.items()
    ]


def crowded(*free: str) -> list[dict[str, Any]]:
    """Every node but `free` full (a 2-GPU pod of another job)."""
    return [
        pod(f"busy-{n}").requests(gpu=2).on(n).obj()
        for n in (f"n{i}" for i in range(1, 9))
        if n not in free
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_leaf_keeps_its_min_member(engine: str) -> None:
    """a (3 pods, minMember 2) and b (2 pods, minMember 2), room for 4 pods: a's minimum,
    then b's, then a's third finds no room. Filled type by type, a would take 3 and b 1,
    meeting the gang's 4 but not b's 2."""
    cluster = job(
        {"a": 3, "b": 2},
        minimums(a=2, b=2),
        *crowded("n5", "n6", "n7", "n8"),
        min_member=4,
    )
    d = run(cluster, engine)
    counts = {leaf: sum(k.startswith(f"default/{leaf}-") for k in d.placed) for leaf in "ab"}
    assert counts == {"a": 2, "b": 2}, d.placed


@pytest.mark.parametrize("engine", ENGINES)
def test_a_leaf_below_its_min_member_keeps_the_gang_waiting(engine: str) -> None:
    """Room for 3 pods: a's 2 and b's 2 cannot both be met (the gang's own 3 could)."""
    d = run(
        job({"a": 3, "b": 2}, minimums(a=2, b=2), *crowded("n5", "n6", "n7"), min_member=3), engine
    )
    assert not d.placed
    assert "sub-group b: 1 of 2 required pod(s) fit" in d.podgroups["default/job"].reason


def test_verify_refuses_a_leaf_below_its_min_member() -> None:
    cluster = job({"a": 3, "b": 2}, minimums(a=2, b=2), min_member=4)
    d = run(cluster, "greedy")
    moved = dict(d.placements)
    moved["default/b-1"] = replace(moved["default/b-1"], node=None)
    problems = verify(snapshot_of(cluster), SchedulerConf.default(), replace(d, placements=moved))
    assert any(
        "sub-group b has 1 pod(s) running or placed, below its minMember 2" in p for p in problems
    ), problems


def preferring(name: str, *levels: str) -> TopologySubGroup:
    return TopologySubGroup(name=name, label=LABEL, values=(name,), preferred=levels)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("pods", "racks", "zones"), [(2, 1, 1), (3, 2, 1), (5, 3, 2)])
def test_a_preferred_rack_then_zone_is_a_preference_never_a_rule(
    engine: str, pods: int, racks: int, zones: int
) -> None:
    """enc prefers a rack (4 GPUs), then a zone (8): 2 pods of 2 GPUs share a rack, 3 a zone
    over 2 racks, 5 spill into the other zone; never left pending for the preference."""
    busy = [pod(f"busy-{n}").requests(gpu=2).on(n).obj() for n in ("n1", "n5")]
    d = run(job({"enc": pods}, [preferring("enc", ZONE, RACK)], *busy), engine)
    assert len(d.placed) == pods
    used = racks_of(d, "enc")
    assert (len(used), len({RACKS[r] for r in used})) == (racks, zones), d.placed
    assert d.tiers["preferred_domains"] > 0


def test_domains_are_told_apart_by_their_values_not_their_joined_names() -> None:
    """Zone `a.b` with rack `c` and zone `a` with rack `b.c` both read `a.b.c` when joined:
    they stay two domains (label values may hold dots)."""
    cluster = model(
        node("x").label(ZONE, "a.b").label(RACK, "c").obj(),
        node("y").label(ZONE, "a").label(RACK, "b.c").obj(),
    )
    row, names = level_domains(snapshot_of(cluster).nodes, (ZONE, RACK))
    assert row[0] != row[1] and len(names) == 2
