"""The frontend benchmark's results as the README's tables and its plot (`run.py table`,
`run.py plot`): placement rows (`run.py`), and preemption rows (`run.py --preempt`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["RESULTS", "plot", "preemption_table", "table"]

RESULTS = Path(__file__).with_name("results.jsonl")


def _rows(preempt: bool) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines()]
    return [r for r in rows if bool(r.get("preempt")) == preempt]


def table() -> str:
    """results.jsonl as the README's Markdown table. `created pods/s` is what the driver
    delivered (pods ÷ the seconds it took to create them); CPU seconds are per process, the
    scheduler's `+ service` when gangplan ran in its own process (`--service process`)."""
    head = (
        "| git | nodes | running | gather / cards | offered pods/s | created pods/s | pods "
        "| bound pods/s | lag p50 s | lag p99 s "
        "| 512-pod gang s | cycles | sync ms | decide ms | CPU s fake / scheduler / driver |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | --- |"
    )
    rows = [head]
    for r in _rows(preempt=False):
        ph, cpu = r["phases"], r["cpu_s"]
        scheduler = f"{cpu['scheduler']}" + (f" + {cpu['service']}" if "service" in cpu else "")
        created = r["pods"] / r["created_in_s"] if r.get("created_in_s") else None
        rows.append(
            f"| {r['git']} | {r['nodes']:,} | {r['running']:,} "
            f"| {r.get('gather', 0.3):.0%} / {r.get('cards', 0.0):.0%} "
            f"| {r['offered_pods_per_s']:,.0f} | {f'{created:,.0f}' if created else '—'} "
            f"| {r['pods']:,} | {r['bound_pods_per_s']:,.0f} | {r['lag_p50_s']} | {r['lag_p99_s']} "
            f"| {r['lag_512_max_s']} | {ph['total']['cycles']} | {ph['sync']['mean_ms']} "
            f"| {ph['decide']['mean_ms']} | {cpu['fake']} / {scheduler} / {cpu['driver']} |"
        )
    return "\n".join(rows)


def plot(out: Path) -> None:
    """Bound vs offered pods/s and the gang lag, per node count, from results.jsonl (the
    rows with 100,000 running pods, no card alternatives and gangplan embedded, the latest
    per point)."""
    rows: dict[tuple[int, float], dict[str, Any]] = {}
    for r in _rows(preempt=False):
        if r["running"] == 100_000 and not r.get("cards") and r.get("service") != "process":
            rows[(r["nodes"], r["offered_pods_per_s"])] = r
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for nodes in sorted({n for n, _ in rows}):
        points = sorted((rate, r) for (n, rate), r in rows.items() if n == nodes)
        rates = [rate for rate, _ in points]
        left.plot(rates, [r["bound_pods_per_s"] for _, r in points], "o-", label=f"{nodes:,} nodes")
        right.plot(rates, [r["lag_p99_s"] for _, r in points], "o-", label=f"{nodes:,} nodes")
    left.plot([0, 1000], [0, 1000], ":", color="grey", label="bound = offered")
    left.set(xlabel="offered pods/s", ylabel="bound pods/s", title="throughput (100k running)")
    right.set(
        xlabel="offered pods/s",
        ylabel="seconds",
        yscale="log",
        title="last pod created -> last pod bound, p99",
    )
    left.legend()
    right.legend()
    sha = json.loads(RESULTS.read_text().splitlines()[-1])["git"]
    fig.suptitle(f"gangplan scheduler vs the fake API server, 2 cores (rows up to {sha})")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def preemption_table() -> str:
    """The `--preempt` rows: high-priority gangs into a cluster whose GPUs are all taken."""
    head = (
        "| git | nodes | running | offered pods/s | pods | evicted | evictions/s | bound pods/s "
        "| lag p50 s | lag p99 s | 512-pod gang s | CPU s fake / scheduler / driver |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    )
    rows = [head]
    for r in _rows(preempt=True):
        cpu = r["cpu_s"]
        rows.append(
            f"| {r['git']} | {r['nodes']:,} | {r['running']:,} | {r['offered_pods_per_s']:,.0f} "
            f"| {r['pods']:,} | {r['evicted']:,} | {r['evictions_per_s']:,.0f} "
            f"| {r['bound_pods_per_s']:,.0f} | {r['lag_p50_s']} | {r['lag_p99_s']} "
            f"| {r['lag_512_max_s']} | {cpu['fake']} / {cpu['scheduler']} / {cpu['driver']} |"
        )
    return "\n".join(rows)
