"""Draw the latest row of results.jsonl as deadlines.png: the worst time to the answer as a
share of the deadline, against the deadline, one line per set-up; above 1.0 is late.

    .venv/bin/python benchmarks/deadlines/plot.py
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
    out = figure_path(__doc__.splitlines()[0], HERE / "deadlines.png")
    result = json.loads((HERE / "results.jsonl").read_text().strip().splitlines()[-1])
    setups: dict[str, list[dict[str, float]]] = {}
    for row in result["rows"]:
        label = f"{row['source']}, {row['running_pods']:,} running pods"
        setups.setdefault(label, []).append(row)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, rows in setups.items():
        xs = [r["deadline_s"] for r in rows]
        (line,) = ax.plot(xs, [r["max_share"] for r in rows], marker="o", label=f"worst, {label}")
        ax.plot(xs, [r["median_share"] for r in rows], ls=":", color=line.get_color())
    ax.axhline(1.0, color="red", lw=1)
    ax.set_xscale("log")
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.set_ylim(0, 1.2)
    ax.set_xlabel("PlaceJob deadline (s), 1,200 pods on 400 nodes, engine auto")
    ax.set_ylabel("time to the answer ÷ deadline")
    ax.set_title(f"gangplan {result['sha']}: answers before the deadline (dotted: median)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
