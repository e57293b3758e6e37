"""Draw the last soak's memory as soak.png: the server's resident memory over the run, one
line per server life (each SIGTERM starts a new one), from samples.json.

    .venv/bin/python benchmarks/soak/plot.py
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
    out = figure_path(__doc__.splitlines()[0], HERE / "soak.png")
    data = json.loads((HERE / "samples.json").read_text())
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, life in enumerate(data["lives"]):
        if not life["rss"]:
            continue
        minutes = [t / 60 for t, _ in life["rss"]]
        ax.plot(minutes, [mb for _, mb in life["rss"]], color=f"C{i % 10}")
        ax.axvline(life["started_s"] / 60, color="grey", lw=0.5, ls=":")
    ax.set_xlabel("minutes into the soak (dotted: a server starts after SIGTERM)")
    ax.set_ylabel("server resident memory (MB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"gangplan serve under load, restarts every few minutes ({data['git']})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
