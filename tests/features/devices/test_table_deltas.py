"""The device table kept by deltas (`Snapshot.derive`) equals the table built from scratch,
whatever the deltas: recorded shares, whole GPUs without a record, removals, upserts that
move a pod, an index the node does not have.

    g0..g3: 4 GPUs each (nvidia.com/gpu: 4), openb gpu-milli pods and plain whole-GPU pods
"""

from __future__ import annotations

import random

import pytest

from solver import SCHEMA
from solver.features.devices import table as table_module
from solver.features.devices.table import device_table
from solver.model import Node
from solver.snapshot import Delta, RunningPod, Snapshot

NODES = [
    Node(
        name=f"g{i}", allocatable={"cpu": 64000, "memory": 2**40, "pods": 110, "nvidia.com/gpu": 4}
    )
    for i in range(4)
]


def _pod(rng: random.Random, key: str) -> RunningPod:
    node = f"g{rng.randrange(4)}"
    kind = rng.randrange(4)
    if kind == 0:  # whole GPUs, the device plugin chose (no record)
        return RunningPod(
            key=key, node=node, requests={"cpu": 1000, "nvidia.com/gpu": rng.randint(1, 2)}
        )
    milli = rng.choice([100, 250, 500, 1000])
    index = rng.randrange(5)  # 4: an index the node does not have
    annotations = {
        "alibabacloud.com/gpu-milli": str(milli),
        "alibabacloud.com/gpu-count": "1",
        "alibabacloud.com/gpu-index": str(index),
    }
    return RunningPod(key=key, node=node, requests={"cpu": 1000}, annotations=annotations)


def _same(a: Snapshot) -> None:
    kept, fresh = device_table(a), device_table(a.rebuild())
    assert kept.core_free.tolist() == fresh.core_free.tolist()
    assert kept.memory_free.tolist() == fresh.memory_free.tolist()
    assert (kept.shared_use, kept.unplaced) == (fresh.shared_use, fresh.unplaced)


@pytest.mark.parametrize("seed", range(12))
def test_device_table_by_deltas_equals_a_rebuild(seed: int) -> None:
    rng = random.Random(seed)
    snapshot = Snapshot.build(NODES, schema=SCHEMA)
    device_table(snapshot)  # the first generation builds; every later one moves by its delta
    keys: list[str] = []
    for step in range(40):
        upserts, removes = [], []
        for _ in range(rng.randint(0, 3)):
            if keys and rng.random() < 0.3:  # an upsert of a running pod: it may move
                upserts.append(_pod(rng, rng.choice(keys)))
            else:
                keys.append(f"ns/p{step}-{len(keys)}")
                upserts.append(_pod(rng, keys[-1]))
        if keys and rng.random() < 0.4:
            gone = rng.choice([k for k in keys if k not in {u.key for u in upserts}] or [None])
            if gone is not None:
                removes.append(gone)
                keys.remove(gone)
        snapshot = snapshot.apply(Delta(upsert_pods=tuple(upserts), remove_pods=tuple(removes)))
        _same(snapshot)


def test_a_delta_pays_for_its_rows_not_the_running_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the first generation builds the table from the running pods; the next ones
    move it by their deltas."""
    built: list[int] = []
    build = table_module._build
    monkeypatch.setattr(table_module, "_build", lambda s: built.append(1) or build(s))
    rng = random.Random(0)
    snapshot = Snapshot.build(NODES, [_pod(rng, f"ns/r{i}") for i in range(20)], schema=SCHEMA)
    device_table(snapshot)
    for step in range(5):
        snapshot = snapshot.apply(Delta(upsert_pods=(_pod(rng, f"ns/a{step}"),)))
        device_table(snapshot)
    assert built == [1]
    _same(snapshot)
