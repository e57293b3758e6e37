"""PodKeys against a plain dict model: key -> every row, newest wins below a length.

The hashers force the paths a real cluster reaches rarely: every key in one bucket
(each probe passes keys with the same hash), a handful of buckets (long probe
chains, rehash while colliding), and Python's own `hash`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest

from solver.snapshot._intern import NONE
from solver.snapshot._keys import PodKeys

HASHERS: dict[str, Callable[[str], int]] = {
    "builtin": hash,
    "one-bucket": lambda key: 7,
    "few-buckets": lambda key: len(key) % 3 - 1,  # negative hashes too
    "wide": lambda key: hash(key) & 0xFF,
}


def newest_below(model: dict[str, list[int]], key: str, length: int) -> int:
    rows = [row for row in model.get(key, []) if row < length]
    return rows[-1] if rows else NONE


@pytest.mark.parametrize("hasher", HASHERS.values(), ids=list(HASHERS))
@pytest.mark.parametrize("seed", range(4))
def test_find_returns_the_newest_row_below_every_length(
    hasher: Callable[[str], int], seed: int
) -> None:
    rng = random.Random(seed)
    keys = PodKeys(hasher)
    model: dict[str, list[int]] = {}
    universe = [f"ns-{i % 5}/pod-{i}" for i in range(300)] + ["", "é/ünïcode"]
    for _ in range(25):
        batch = [rng.choice(universe) for _ in range(rng.randint(0, 40))]  # repeats too
        for offset, key in enumerate(batch):
            model.setdefault(key, []).append(keys.length + offset)
        if rng.random() < 0.2:  # the per-key path as well as the batch path
            for key in batch:
                keys.append([key])
        else:
            keys.append(batch)
    assert keys.length == sum(len(rows) for rows in model.values())
    for row in range(keys.length):
        assert keys.find(keys.key(row), keys.length) >= row
    for length in sorted({0, 1, keys.length // 2, keys.length, rng.randrange(keys.length + 1)}):
        for key in [*universe, "never/seen"]:
            assert keys.find(key, length) == newest_below(model, key, length), (key, length)


def test_key_round_trips_non_ascii_and_empty_keys() -> None:
    keys = PodKeys()
    names = ["", "a/b", "ns/ポッド", "x" * 1000]
    keys.append(names)
    assert [keys.key(row) for row in range(4)] == names


@pytest.mark.parametrize("hasher", HASHERS.values(), ids=list(HASHERS))
def test_take_renumbers_rows_from_zero(hasher: Callable[[str], int]) -> None:
    keys = PodKeys(hasher)
    keys.append([f"p{i}" for i in range(50)])
    kept = keys.take(np.array([3, 10, 49], dtype=np.int64))
    assert [kept.key(row) for row in range(kept.length)] == ["p3", "p10", "p49"]
    assert kept.find("p10", kept.length) == 1
    assert kept.find("p4", kept.length) == NONE


def test_a_large_batch_grows_the_table_and_keeps_every_key() -> None:
    keys = PodKeys()
    names = [f"ns/pod-{i}" for i in range(20_000)]
    keys.append(names[:7])
    keys.append(names)  # rebinds the first seven
    assert keys.find("ns/pod-3", keys.length) == 7 + 3
    assert keys.find("ns/pod-3", 7) == 3
    assert all(keys.find(name, keys.length) == 7 + i for i, name in enumerate(names))
