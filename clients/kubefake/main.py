"""`gangplan kube-fake` as a function: serve the fake API server with objects from files
until SIGTERM; exit status 0, or 2 for input it cannot take (one line)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import yaml

from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for, load
from clients.kubefake.store import ApiError
from solver import GangplanError
from solver.kube import read_sources
from solver.kube.workloads import expand_workloads

__all__ = ["serve"]


def serve(files: list[str] | None, port: int, kubeconfig: str | None) -> int:
    """The fake with these objects (workload objects become their pods, as their
    controllers would make them), until SIGTERM or SIGINT."""
    try:
        expanded, expand_notes = expand_workloads(read_sources(files or []))
    except GangplanError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    objects = [raw.body for raw in expanded]
    fake = FakeApiServer(default_resources(), port=port)
    try:
        notes = load(fake.store, objects)
    except ApiError as err:
        sys.stderr.write(f"error: {err.message}\n")
        return 2
    for note in (*expand_notes, *notes):
        sys.stderr.write(f"note: {note}\n")
    if kubeconfig:
        Path(kubeconfig).write_text(yaml.safe_dump(kubeconfig_for(fake.url)), encoding="utf-8")
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    fake.start()
    print(json.dumps({"url": fake.url, "objects": len(objects)}), flush=True)
    while not stop.wait(0.5):
        pass
    fake.stop()
    return 0
