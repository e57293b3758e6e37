"""Draw results.json as defrag.png: racks freed with at most 100 pods moved per load
(greedy, CP-SAT and the bound, mean over the seeds; left) and CP-SAT's gap to the bound per
instance (right).

    .venv/bin/python benchmarks/defrag/plot.py
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
    out = figure_path(__doc__.splitlines()[0], HERE / "defrag.png")
    result = json.loads((HERE / "results.json").read_text())
    rows = [r for r in result["rows"] if r["goal"] == "racks"]
    loads = sorted({r["load"] for r in rows})
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    width = 0.27
    series = (
        ("greedy (emptiest rack first)", "greedy", "freed"),
        ("CP-SAT, 10 s", "cpsat", "freed"),
        ("bound", "cpsat", "bound"),
    )
    for k, (label, engine, column) in enumerate(series):
        means = []
        for load in loads:
            values = [r[column] for r in rows if r["load"] == load and r["engine"] == engine]
            means.append(sum(values) / len(values) if values else 0)
        left.bar([i + k * width for i in range(len(loads))], means, width, label=label)
    left.set_xticks(
        [i + width for i in range(len(loads))], [f"{load:.0%} GPUs used" for load in loads]
    )
    left.set_ylabel("racks of 16 freed (mean over seeds)")
    left.legend()
    exact = [r for r in rows if r["engine"] == "cpsat"]
    right.scatter([r["running_pods"] for r in exact], [100 * (r["gap"] or 0) for r in exact])
    right.set_xlabel("running pods")
    right.set_ylabel("CP-SAT gap to the bound (%)")
    fig.suptitle(
        f"defrag, 1,000 openb-shaped nodes, ≤ 100 pods moved ({result['git']}, {result['machine']})"
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
