"""gangplan's greedy with the FGD simulator's conf (predicates, gang, deviceshare
`bestfit` or `fgd` as the only score) is the simulator's policy, pod for pod: the first
arrivals of the openb study (`benchmarks/openb/online.py`, through `schedule` and
`Snapshot.apply` as a front end calls them) land on the node `benchmarks/openb/replay.py`
(the simulator's re-implementation, aligned with the original on seed 42) picks. The full
10-seed comparison is `benchmarks/openb/README.md`'s table.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ONLINE = Path(__file__).resolve().parents[3] / "benchmarks" / "openb" / "online.py"


def _online() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openb_online", ONLINE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("openb_online", module)
    spec.loader.exec_module(module)
    return module


online = _online()


@pytest.mark.parametrize("trace", ["default", "gpuspec33"])
@pytest.mark.parametrize("policy", ["bestfit", "fgd"])
def test_the_engine_places_each_arrival_where_the_simulator_does(trace: str, policy: str) -> None:
    row = online.run(trace, policy, seed=3, limit=250, check=True)
    assert row["harness_same_node"] == row["arrived"] == 250, row.get("harness_first_difference")


def test_the_window_keeps_its_fragmentation_mirror_current() -> None:
    """The window scores candidates against a mirror of the snapshot; after a run its F per
    node is what a fresh measure of the mirror's free cpu and devices gives, and each
    window kept the answer of one of its candidates."""
    cluster = online.load_cluster()
    pods = online.load_pods(online.DATA / "openb_pod_list_default.csv", cluster.models)
    window = online.Window(cluster, pods, online.node_ranks(cluster, 0))
    mirror = window.mirror
    one = [i for i in range(50) if pods.ngpu[i] == 1][:3]
    busy = [(5, one[0], [0]), (5, one[1], [1]), (9, one[2], [0])]
    assert (mirror.dev[[5, 9], 0] == online.MILLI).all() and mirror.dev[5, 1] == online.MILLI
    before = mirror.frag.copy()
    gpu, less = window.score(busy)
    assert gpu == sum(int(pods.ngpu[i] * pods.milli[i]) for _, i, _ in busy)
    window.commit(busy)
    fresh = mirror._frag(mirror.cpu, mirror.dev, cluster.model)
    assert (mirror.frag == fresh).all()
    assert -less == float(fresh.sum() - before.sum())
    row = online.run("default", "window", seed=3, window=8, limit=120)
    assert sum(row["window_kept"].values()) == row["calls"] == 15


ALIGNED = ONLINE.parent / "aligned.py"


def test_a_simulator_log_gives_its_arrival_order_node_names_and_nodes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("openb_aligned", ALIGNED)
    assert spec is not None and spec.loader is not None
    aligned = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(aligned)
    log = tmp_path / "log-1.log"
    log.write_text(
        "I1127 [0] attempt to create pod(default/openb-pod-0001)\n"
        "I1127 pod(default/openb-pod-0001) is scheduled to node(0042-openb-node-0003)\n"
        "I1127 [1] attempt to create pod(default/openb-pod-0000-tuned-7)\n"
        "I1127 [1] failed to schedule pod(default/openb-pod-0000-tuned-7)\n"
        "I1127 [2] attempt to create pod(default/openb-pod-0002)\n"
        "I1127 pod(default/openb-pod-0002) is scheduled to node(0007-openb-node-0000)\n"
    )
    parsed = aligned.parse(log, "default")
    assert parsed["order"].tolist() == [1, 0, 2]
    assert parsed["simulated"].tolist() == [3, -1, 0]
    rank = parsed["rank"]
    assert rank[3] == 42 and rank[0] == 7 and rank[1] == 8000 and rank[2] == 8001
