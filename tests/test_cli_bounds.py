"""Numeric flags are bounded where the engines are: out of range is a usage error naming
the flag (exit 2), not a crash, a traceback or an hour of work."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clients.cli import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLAN = ["plan", "-f", str(EXAMPLES / "plan" / "workload.yaml")]
SCHEDULE = ["schedule", "-f", str(EXAMPLES / "plan" / "workload.yaml")]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        ([*PLAN, "--parts", "1000000"], "--parts"),
        ([*PLAN, "--parts", "0"], "--parts"),
        ([*PLAN, "--seed", "2147483648"], "--seed"),
        ([*PLAN, "--seed", "-1"], "--seed"),
        ([*PLAN, "--workers", "100000"], "--workers"),
        ([*SCHEDULE, "--seed", "99999999999999999999"], "--seed"),
        ([*SCHEDULE, "--workers", "-3"], "--workers"),
        ([*SCHEDULE, "--time-limit", "1e300"], "--time-limit"),
        ([*SCHEDULE, "--time-limit", "nan"], "--time-limit"),
    ],
)
def test_out_of_range_flags_are_usage_errors(args: list[str], flag: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert flag in result.output and "Traceback" not in result.output
