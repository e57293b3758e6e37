"""The front-end benchmark cannot rot: its `--smoke` run (three processes, a few seconds)
binds every pod it creates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_frontend_benchmark_smoke_run_binds_everything() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/frontend/run.py"), "--smoke", "--cards", "0.3"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert '"bound": ' in run.stdout
