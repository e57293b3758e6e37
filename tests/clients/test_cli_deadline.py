"""`gangplan schedule --time-limit`: the work after the engine is kept back per pod, and
what the CLI imported is frozen out of the collector's full passes."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from typer.testing import CliRunner

from clients.cli import app
from clients.schedule_cli import _left
from solver.schedule import AFTER_ENGINE_PER_POD

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ganggroup-gpu.yaml"


def test_the_engine_gets_the_limit_less_reading_and_the_work_after_it() -> None:
    started = time.perf_counter()
    small, large = _left(started, 2.0, 0), _left(started, 2.0, 10_000)
    assert 0 < small - large - 10_000 * AFTER_ENGINE_PER_POD < 0.01
    assert _left(started, 0.1, 100_000) == 0.05  # the engine's floor


def test_a_run_freezes_what_was_imported() -> None:
    gc.unfreeze()
    try:
        result = CliRunner().invoke(app, ["schedule", "-f", str(EXAMPLE), "--engine", "greedy"])
        assert result.exit_code == 0, result.output
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
