"""KAI's preferred levels and packing order on the wire: the same gang and the same placement
through the codec as from the files, and bad values reported with their field paths."""

from __future__ import annotations

import pytest

from gangplan.v1 import cluster_pb2 as pb
from solver import SCHEMA, SchedulerConf, schedule
from solver.codec import Violations, cluster_to_proto, gang_from_proto, snapshot_from_proto
from solver.kube import load_objects
from solver.model import ClusterModel, PodSelection
from solver.schedule import snapshot_of
from solver.snapshot import Workload
from tests.builders import raw
from tests.kube.test_kai_allocate import CASES, RACK, SUB_CASES, SUB_DEPARTURES, ZONE

PREFERRED = next(c for c in CASES if c.upstream.startswith("Bin Packing - Pack Top-Most"))


def _place(source: object) -> dict[str, str | None]:
    snapshot = snapshot_of(source) if isinstance(source, ClusterModel) else source
    workload, _ = Workload.everything(snapshot).select(  # type: ignore[arg-type]
        PodSelection(scheduler_names=frozenset({"kai-scheduler"}))
    )
    d = schedule(snapshot, SchedulerConf.default(), workload=workload, engine="greedy")  # type: ignore[arg-type]
    return {k: p.node for k, p in d.placements.items()}


def test_preferred_levels_and_packing_round_trip() -> None:
    cluster = load_objects(raw(*PREFERRED.objects))
    gang = cluster.gangs["default/pending-job0"]
    assert gang.preferred_keys == (ZONE, "k8s.io/spine", RACK)
    assert gang.topology_pack == ("GPU", "CPU", "Memory")
    message = pb.Cluster.FromString(cluster_to_proto(cluster).SerializeToString())
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    again = rebuilt.gangs["default/pending-job0"]
    assert (again.preferred_keys, again.topology_pack) == (gang.preferred_keys, gang.topology_pack)
    assert _place(rebuilt) == _place(load_objects(raw(*PREFERRED.objects)))


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"preferred_topology_keys": [""]}, "gangs[0].preferred_topology_keys[0]"),
        ({"preferred_topology_keys": ["r", "r"]}, "gangs[0].preferred_topology_keys[1]"),
        (
            {"topology_key": "r", "preferred_topology_keys": ["r"]},
            "gangs[0].preferred_topology_keys[0]",
        ),
        (
            {"preferred_topology_keys": [f"l{i}" for i in range(17)]},
            "gangs[0].preferred_topology_keys",
        ),
        ({"topology_pack": ["TPU"]}, "gangs[0].topology_pack[0]"),
        ({"topology_pack": ["GPU", "GPU"]}, "gangs[0].topology_pack[1]"),
        (
            {"preferred_topology_keys": ["r"], "affinity": pb.GangAffinity()},
            "gangs[0].preferred_topology_keys",
        ),
    ],
)
def test_bad_preferred_levels_name_their_field(fields: dict[str, object], path: str) -> None:
    out = Violations()
    gang_from_proto(pb.Gang(name="g", min_member=1, **fields), "gangs[0]", out)  # type: ignore[arg-type]
    assert any(field == path for field, _ in out.items), out.items


SUB_GROUPED = next(c for c in SUB_DEPARTURES if "rack, spine and zone" in c.upstream)


def test_sub_groups_round_trip_and_place_the_same() -> None:
    """KAI sub-groups with their own levels travel as `Gang.topology_sub_groups` (field 28):
    the same gang, and the same placement, through the codec as from the files."""
    cluster = load_objects(raw(*SUB_GROUPED.objects))
    gang = cluster.gangs["default/pending-job0"]
    assert [s.name for s in gang.topology_sub_groups] == [
        "replica1",
        "rep1-sub-a",
        "rep1-sub-b",
        "replica2",
        "rep2-sub-a",
        "rep2-sub-b",
    ]
    message = pb.Cluster.FromString(cluster_to_proto(cluster).SerializeToString())
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    assert rebuilt.gangs["default/pending-job0"].topology_sub_groups == gang.topology_sub_groups
    assert _place(rebuilt) == _place(load_objects(raw(*SUB_GROUPED.objects)))


def _sub(**fields: object) -> pb.TopologySubGroup:
    base: dict[str, object] = {"name": "s", "label": "app", "values": ["a"], "levels": ["rack"]}
    return pb.TopologySubGroup(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("subs", "extra", "path"),
    [
        ([_sub(name="")], {}, "gangs[0].topology_sub_groups[0].name"),
        ([_sub(label="bad key!")], {}, "gangs[0].topology_sub_groups[0].label"),
        ([_sub(values=[])], {}, "gangs[0].topology_sub_groups[0].values"),
        ([_sub(values=["ok", "bad value!"])], {}, "gangs[0].topology_sub_groups[0].values[1]"),
        ([_sub(levels=[])], {}, "gangs[0].topology_sub_groups[0]"),
        ([_sub(min_member=-1)], {}, "gangs[0].topology_sub_groups[0].min_member"),
        ([_sub(preferred=["zone"])], {}, "gangs[0].topology_sub_groups[0]"),
        (
            [_sub(preferred=["rack", "bad key!"])],
            {},
            "gangs[0].topology_sub_groups[0].preferred[1]",
        ),
        ([_sub(levels=[f"l{i}" for i in range(17)])], {}, "gangs[0].topology_sub_groups[0].levels"),
        ([_sub(levels=["rack", "rack"])], {}, "gangs[0].topology_sub_groups[0]"),
        ([_sub(), _sub()], {}, "gangs[0].topology_sub_groups[1]"),
        (
            [_sub(values=["a", "b"]), _sub(name="t", values=["b", "c"])],
            {},
            "gangs[0].topology_sub_groups[1]",
        ),
        ([_sub()] * 257, {}, "gangs[0].topology_sub_groups"),
        (
            [_sub(values=[f"v{i}" for i in range(257)])],
            {},
            "gangs[0].topology_sub_groups[0].values",
        ),
        ([_sub()], {"affinity": pb.GangAffinity()}, "gangs[0].topology_sub_groups"),
        (
            [_sub()],
            {"network_topology": pb.VolcanoNetworkTopology(mode="hard")},
            "gangs[0].topology_sub_groups",
        ),
    ],
)
def test_bad_sub_groups_name_their_field(
    subs: list[pb.TopologySubGroup], extra: dict[str, object], path: str
) -> None:
    out = Violations()
    gang_from_proto(
        pb.Gang(name="g", min_member=1, topology_sub_groups=subs, **extra),  # type: ignore[arg-type]
        "gangs[0]",
        out,
    )
    assert any(field == path for field, _ in out.items), out.items


def test_nested_sub_groups_are_accepted() -> None:
    out = Violations()
    gang = gang_from_proto(
        pb.Gang(
            name="g",
            min_member=1,
            topology_sub_groups=[_sub(values=["a", "b"]), _sub(name="t", values=["b"])],
        ),
        "gangs[0]",
        out,
    )
    assert not out.items and gang is not None and len(gang.topology_sub_groups) == 2


def test_preferred_sub_groups_round_trip_and_place_the_same() -> None:
    """Sub-groups preferring a rack (`TopologySubGroup.preferred`, field 6) travel too."""
    case = next(c for c in SUB_CASES if "Conflicting" in c.upstream)
    cluster = load_objects(raw(*case.objects))
    gang = cluster.gangs["default/pending-job0"]
    assert [s.preferred for s in gang.topology_sub_groups if s.preferred] == [
        (ZONE, "k8s.io/spine", RACK)
    ] * 2
    message = pb.Cluster.FromString(cluster_to_proto(cluster).SerializeToString())
    rebuilt = snapshot_from_proto(message, "cluster", SCHEMA)
    assert rebuilt.gangs["default/pending-job0"].topology_sub_groups == gang.topology_sub_groups
    assert _place(rebuilt) == _place(load_objects(raw(*case.objects)))
