"""A PNG of a plan: utilisation per resource and card type, and the objective against
each lower bound (the gap). matplotlib with the non-interactive Agg backend."""

from __future__ import annotations

from pathlib import Path

from solver.errors import InputError
from solver.plan._model import PlanResult

__all__ = ["plot_plan"]


def plot_plan(result: PlanResult, path: str | Path, title: str = "gangplan plan") -> None:
    """Write the PNG; InputError when matplotlib (the `plot` extra) is not installed."""
    try:
        import matplotlib  # optional extra

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # optional extra
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'gangplan[plot]'") from None

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = list(result.utilisation)
    ratios = [100.0 * result.utilisation[n]["ratio"] for n in names]
    left.barh(names, ratios, color="#4C72B0")
    left.set_xlim(0, 105)
    left.set_xlabel("utilisation of the planned cluster (%)")
    left.invert_yaxis()
    for y, r in enumerate(ratios):
        left.text(min(r + 1, 95), y, f"{r:.1f}%", va="center", fontsize=8)
    labels = ["plan"] + [k for k, v in result.bounds.items() if v is not None]
    values = [result.objective] + [v for v in result.bounds.values() if v is not None]
    colors = ["#DD8452"] + ["#55A868"] * (len(labels) - 1)
    right.bar(labels, values, color=colors)
    right.axhline(result.bound, color="black", linestyle="--", linewidth=1)
    right.set_ylabel("objective (cost + penalty)")
    right.set_title(f"gap {100 * result.gap:.2f}% vs best bound {result.bound:g}", fontsize=10)
    fig.suptitle(f"{title}: {result.status}, cost {result.cost:g}")
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)
    plt.close(fig)
