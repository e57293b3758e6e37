"""Where a benchmark's numbers come from: the commit and the machine, taken when the run
starts (the code measured is the code imported then), written beside the rows."""

from __future__ import annotations

import json
import os
import platform
import subprocess
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
