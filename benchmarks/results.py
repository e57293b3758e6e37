"""Where a benchmark's numbers come from: the commit and the machine, taken when the run
starts (the code measured is the code imported then), written beside the rows."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def provenance() -> dict[str, str]:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    machine = f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}"
    return {"git": sha, "machine": machine}


def write_results(path: str | Path, source: dict[str, str], rows: list[dict[str, Any]]) -> None:
    Path(path).write_text(json.dumps({**source, "rows": rows}, indent=2) + "\n")


def running_pods_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The arguments of a running-pods sweep (`--running`, `--reps`, `--engines`, `--out`
    added by the script), with `--smoke`: 1,000 running pods, the greedy, one rep,
    the results to a temporary file (seconds; CI runs it so the script cannot rot)."""
    parser.add_argument(
        "--smoke", action="store_true", help="seconds: 1,000 running pods, greedy, 1 rep"
    )
    args = parser.parse_args()
    if args.smoke:
        args.running, args.reps, args.engines = [1000], 1, ["greedy"]
        args.out = str(Path(tempfile.mkdtemp()) / Path(args.out).name)
    return args


def figure_path(description: str, default: Path) -> Path:
    """Where a plot script draws: `default`, or with `--smoke` a temporary file (the
    drawing code still runs on the committed results)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--smoke", action="store_true", help="draw into a temporary file")
    if parser.parse_args().smoke:
        return Path(tempfile.mkdtemp()) / default.name
    return default
