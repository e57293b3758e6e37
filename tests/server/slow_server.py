"""A `gangplan serve` whose solves take `SLOW_SECONDS` (for the SIGTERM drain tests), or
with `SLOW_SECONDS=budget` their whole time limit unless stopped (as CP-SAT searching a
hard model does); `SLOW_GRACE` is its grace (10 s).

Run as `python -m tests.server.slow_server` from the repository root; it prints the
server's "listening on" line like `gangplan serve` does.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from server.main import serve
from server.settings import Settings
from solver import Decision, schedule
from solver.gate import GATE


def slow_schedule(snapshot: Any, conf: Any = None, **options: Any) -> Decision:
    """The wait stands for a search (CP-SAT's), so it runs outside the compute gate as
    the solver's searches do: the admitted calls wait side by side."""
    print("solving", file=sys.stderr, flush=True)
    seconds = os.environ.get("SLOW_SECONDS", "1.0")
    if seconds == "budget":
        with GATE.outside():
            options["stop"].wait(options["time_limit"])
        return schedule(snapshot, conf, **{**options, "engine": "greedy"})
    with GATE.outside():
        time.sleep(float(seconds))
    return schedule(snapshot, conf, **options)


if __name__ == "__main__":
    grace = float(os.environ.get("SLOW_GRACE", "10"))
    serve(Settings(port=0, metrics_port=None, grace=grace), schedule_fn=slow_schedule)
