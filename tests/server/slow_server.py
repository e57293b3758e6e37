"""A `gangplan serve` whose solves take `SLOW_SECONDS` (for the SIGTERM drain test).

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


def slow_schedule(snapshot: Any, conf: Any = None, **options: Any) -> Decision:
    print("solving", file=sys.stderr, flush=True)
    time.sleep(float(os.environ.get("SLOW_SECONDS", "1.0")))
    return schedule(snapshot, conf, **options)


if __name__ == "__main__":
    serve(Settings(port=0, metrics_port=None, grace=10.0), schedule_fn=slow_schedule)
