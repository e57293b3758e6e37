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
from tests.kube.test_kai_allocate import CASES, RACK, ZONE

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
