"""PNGs: a plan (utilisation per resource and card type, and the objective against each
lower bound: the gap), and a sweep (cost and unplaced pods per scenario). matplotlib with
the non-interactive Agg backend; the `plot` extra."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from solver.errors import InputError
from solver.plan._model import PlanResult

__all__ = ["plot_plan", "plot_sweep"]


def _pyplot() -> ModuleType:
    """matplotlib.pyplot on Agg; InputError when matplotlib (the `plot` extra) is missing."""
    try:
        import matplotlib  # optional extra

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # optional extra
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'gangplan[plot]'") from None
    return plt


def plot_plan(result: PlanResult, path: str | Path, title: str = "gangplan plan") -> None:
    plt: Any = _pyplot()
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


def plot_sweep(rows: list[dict[str, Any]], path: str | Path, title: str = "gangplan sweep") -> None:
    """Cost of each scenario's plan (bars, with its gap) and the pods it leaves unplaced."""
    plt: Any = _pyplot()
    names = [str(r["scenario"]) for r in rows]
    fig, (cost, left) = plt.subplots(1, 2, figsize=(11, 0.9 + 0.35 * max(len(rows), 3)))
    cost.barh(names, [float(r["cost"]) for r in rows], color="#DD8452")
    cost.set_xlabel("cost of the nodes added")
    for y, r in enumerate(rows):
        cost.text(
            float(r["cost"]), y, f" gap {100 * float(r['gap']):.1f}%", va="center", fontsize=8
        )
    left.barh(names, [int(r["total_pods"]) - int(r["placed_pods"]) for r in rows], color="#4C72B0")
    left.set_xlabel("pods still unplaced")
    for ax in (cost, left):
        ax.invert_yaxis()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)
    plt.close(fig)
