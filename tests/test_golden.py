"""Every Decision of the golden corpus is still given, exactly, by both engines.

The corpus (`tests/golden/corpus.jsonl.gz`) was recorded from the test suite's own
`schedule()` calls before the per-policy architecture and the incremental snapshot landed;
a refactor must not change any answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.golden.corpus import replay, rows

ROWS = rows()


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize("row", ROWS, ids=[f"case{i}" for i in range(len(ROWS))])
def test_decision_unchanged(row: dict[str, Any], engine: str) -> None:
    assert replay(row, engine) == row[engine]
