"""Draw results_topology.json as topology.png: per dialect and running level, the greedy's
p50 / p99 (left) and CP-SAT's cost as a share of the greedy's (right, per seed).

    .venv/bin/python benchmarks/preemption/plot_topology.py
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


def main() -> None:
    out = figure_path(__doc__.splitlines()[0], HERE / "topology.png")
    result = json.loads((HERE / "results_topology.json").read_text())
    summary, rows = result["summary"], result["rows"]
    dialects = list(dict.fromkeys(s["dialect"] for s in summary))
    levels = sorted({s["running"] for s in summary})
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    width = 0.8 / len(levels)
    for k, running in enumerate(levels):
        mine = {s["dialect"]: s for s in summary if s["running"] == running}
        xs = [i + k * width for i in range(len(dialects))]
        left.bar(
            xs,
            [mine[d]["greedy_p99_ms"] for d in dialects],
            width,
            alpha=0.35,
            color=f"C{k}",
            label=f"p99, {running:,} running",
        )
        left.bar(
            xs,
            [mine[d]["greedy_p50_ms"] for d in dialects],
            width,
            color=f"C{k}",
            label=f"p50, {running:,} running",
        )
        for i, d in enumerate(dialects):
            ratios = [
                r["cpsat_cost"] / r["greedy_cost"]
                for r in rows
                if r["dialect"] == d and r["running"] == running and r.get("greedy_cost")
            ]
            right.scatter([i + k * width] * len(ratios), ratios, color=f"C{k}", s=14)
    left.axhline(100, color="red", linestyle="--", linewidth=1, label="target p99 100 ms")
    for ax in (left, right):
        ax.set_xticks([i + width * (len(levels) - 1) / 2 for i in range(len(dialects))])
        ax.set_xticklabels(dialects, fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    left.set_ylabel("greedy preemption step (ms)")
    left.legend(fontsize=7)
    right.axhline(1.0, color="gray", linewidth=1)
    right.set_ylabel(f"CP-SAT cost / greedy cost ({result['cpsat_limit_s']} s, per seed)")
    fig.suptitle(
        f"gangplan {result['git']}: a 256-pod gang preempting inside one block, 5,000 nodes"
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
