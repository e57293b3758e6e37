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
