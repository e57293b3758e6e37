"""Draw results.json as scale.png: per-call p50 against running pods, log-log, one line per
call (gRPC, as a front end sees it). Zero running pods is drawn at 1,000 (a log axis has no
zero) and labelled so.

    .venv/bin/python benchmarks/scale/plot.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.results import figure_path

HERE = Path(__file__).resolve().parent
CALLS = {
    "place64_greedy": "PlaceJob 64 pods (greedy)",
    "place64_auto": "PlaceJob 64 pods (auto)",
    "place512_topology_cards": "PlaceJob 512 pods, gather + card alternatives (auto)",
    "preempt256": "Preempt 256 pods",
    "enqueue": "Enqueue",
    "update_bind_1000": "UpdateSnapshot: bind 1,000",
    "update_remove_1000": "UpdateSnapshot: remove 1,000",
}
ZERO_AT = 1_000


def main() -> None:
    out = figure_path(__doc__.splitlines()[0], HERE / "scale.png")
    result = json.loads((HERE / "results.json").read_text())
    rows = result["rows"]
    xs = [max(r["running_pods"], ZERO_AT) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5))
    for key, label in CALLS.items():
        ys = [r["grpc"][key]["p50_ms"] for r in rows]
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs, [f"{r['running_pods']:,}" for r in rows])
    ax.set_xlabel("running pods in the snapshot (10,240 nodes; 0 drawn at 1,000)")
    ax.set_ylabel("p50 per call over gRPC (ms)")
    ax.set_title(f"gangplan {result['sha']}: a call costs its job, not the cluster")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
