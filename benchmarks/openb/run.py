"""The openb study: online policies vs published FGD numbers, offline CP-SAT packing of the
same arrivals, solver vs heuristic on 500 / 2,000 / 8,152 pods, and full-trace planning.

    .venv/bin/python benchmarks/openb/run.py            # everything (resumes), then README
    .venv/bin/python benchmarks/openb/run.py --report   # only regenerate tables and plots

Results are appended to results.jsonl (one row per run, with the git SHA) and a run already
there is skipped, so an interrupted study resumes. CP-SAT: num_workers=2, seed = the run's
seed, explicit time limits. The whole study is time-bounded (about 20 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.openb.replay import DATA, MILLI, arrivals, load_cluster, load_pods, replay  # noqa: E402
from solver.plan import (  # noqa: E402
    PlanOptions,
    Shape,
    Workload,
    cluster_from_csv,
    load_catalog,
    make_input,
    plan,
    verify_plan,
    workload_from_trace,
)
from solver.plan.catalog import Catalog  # noqa: E402

RESULTS = HERE / "results.jsonl"
LISTS = {"default": "openb_pod_list_default.csv", "gpuspec33": "openb_pod_list_gpuspec33.csv"}
SEEDS = range(10)
PUBLISHED = {
    ("default", "bestfit"): 0.9308,
    ("default", "fgd"): 0.9539,
    ("gpuspec33", "bestfit"): 0.9309,
    ("gpuspec33", "fgd"): 0.9455,
}
OFFLINE_LIMIT = 20.0
PACK_SIZES = (500, 2000, 8152)
PACK_LIMITS = (1.0, 10.0, 60.0)
WORKERS = 2


def sha() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    )
    return out.stdout.strip()


def load_rows() -> list[dict[str, Any]]:
    if not RESULTS.exists():
        return []
    rows = []
    for line in RESULTS.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["stage"],
        row.get("list"),
        row.get("policy"),
        row.get("size"),
        row.get("limit"),
        row.get("seed"),
    )


def save(row: dict[str, Any]) -> None:
    row["git_sha"] = SHA
    with RESULTS.open("a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
    print(json.dumps({k: row[k] for k in sorted(row) if k not in ("git_sha",)}), flush=True)


def online(done: set[tuple[Any, ...]]) -> None:
    cluster = load_cluster()
    for name, file in LISTS.items():
        pods = load_pods(DATA / file, cluster.models)
        for seed in SEEDS:
            order = arrivals(pods, int(cluster.gpus.sum()) * MILLI, seed)
            for policy in ("bestfit", "fgd"):
                row: dict[str, Any] = {
                    "stage": "online",
                    "list": name,
                    "policy": policy,
                    "seed": seed,
                }
                if key(row) in done:
                    continue
                t = time.perf_counter()
                row.update(replay(cluster, pods, order, policy, seed=seed))
                row["seconds"] = time.perf_counter() - t
                save(row)


def offline(done: set[tuple[Any, ...]]) -> None:
    """The same arrivals packed offline: maximise allocated GPU milli with the planner."""
    cluster = load_cluster()
    existing = cluster_from_csv(DATA / "openb_node_list_gpu_node.csv")
    capacity = int(cluster.gpus.sum()) * MILLI
    for name, file in LISTS.items():
        pods = load_pods(DATA / file, cluster.models)
        for seed in SEEDS:
            row = {
                "stage": "offline",
                "list": name,
                "policy": "cpsat",
                "limit": OFFLINE_LIMIT,
                "seed": seed,
            }
            if key(row) in done:
                continue
            order = arrivals(pods, capacity, seed)
            w = Workload()
            shape_of: dict[int, int] = {}
            for i in order:
                models = (
                    frozenset(pods.spec[i].split("|")) if pods.spec[i] and pods.ngpu[i] else None
                )
                shape = Shape(
                    requests=tuple(
                        sorted(
                            (("cpu", int(pods.cpu[i])), ("memory", int(pods.mem[i])), ("pods", 1))
                        )
                    ),
                    gpus=int(pods.ngpu[i]),
                    gpu_milli=int(pods.milli[i]) if pods.ngpu[i] else MILLI,
                    models=models,
                )
                shape_of[int(i)] = w.shape(shape)
                w.add_job(pods.names[i], [shape], weight=int(pods.ngpu[i] * pods.milli[i]))
            inp = make_input(w, Catalog(types=()), existing)
            # warm start: the online FGD placement of the same arrivals (node -> class)
            kept: list[Any] = []
            online = replay(cluster, pods, order, "fgd", keep=kept, seed=seed)
            klass = {}
            for t, tt in enumerate(inp.types):
                klass[(tt.capacity("cpu"), tt.capacity("memory"), tt.gpus, tt.gpu_model)] = t
            initial = []
            for n, placed in enumerate(kept[0].where):
                t = klass[
                    (
                        int(cluster.cpu[n]),
                        int(cluster.mem[n]),
                        int(cluster.gpus[n]),
                        cluster.models[cluster.model[n]] if cluster.model[n] >= 0 else None,
                    )
                ]
                pattern: dict[int, int] = {}
                for i in placed:
                    pattern[shape_of[i]] = pattern.get(shape_of[i], 0) + 1
                initial.append((t, pattern))
            started = time.perf_counter()
            r = plan(
                inp,
                PlanOptions(time_limit=OFFLINE_LIMIT, workers=WORKERS, seed=seed),
                initial=initial,
            )
            assert verify_plan(inp, r) == []
            total = float((pods.ngpu[order] * pods.milli[order]).sum())
            row.update(
                gpu_alloc_ratio=(total - r.objective) / capacity,
                upper_bound_ratio=(total - r.bound) / capacity,
                greedy_ratio=(total - r.stats["greedy_objective"]) / capacity,
                start_ratio=online["gpu_alloc_ratio"],
                status=r.status,
                seconds=time.perf_counter() - started,
                shapes=int(r.stats["shapes"]),
                columns=int(r.stats["columns"]),
            )
            save(row)


def packing(done: set[tuple[Any, ...]]) -> None:
    """First N pods of the default list onto identical G2 nodes: minimise nodes."""
    g2 = load_catalog(HERE / "catalog.yaml").types[0]
    catalog = Catalog(types=(g2.__class__(**{**g2.__dict__, "cost": 1.0}),))
    for size in PACK_SIZES:
        inp = make_input(workload_from_trace(DATA / LISTS["default"], limit=size), catalog)
        for limit in PACK_LIMITS:
            row = {"stage": "packing", "list": "default", "size": size, "limit": limit, "seed": 0}
            if key(row) in done:
                continue
            t = time.perf_counter()
            r = plan(inp, PlanOptions(time_limit=limit, workers=WORKERS, seed=0))
            assert verify_plan(inp, r) == []
            row.update(
                nodes=r.cost,
                greedy_nodes=r.stats["greedy_objective"],
                bound=r.bound,
                l1=r.bounds["l1"],
                devices=r.bounds["devices"],
                config_lp=r.bounds["config_lp"],
                dropped=r.total_pods - r.placed_pods,
                first_s=r.stats.get("first_solution_seconds"),
                best_s=r.stats.get("best_solution_seconds"),
                greedy_s=r.stats["greedy_seconds"],
                status=r.status,
                gap=r.gap,
                seconds=time.perf_counter() - t,
            )
            save(row)


def catalogue(done: set[tuple[Any, ...]]) -> None:
    """All 8,152 pods onto the 7-model catalogue: cost within what gap in 30 s."""
    cat = load_catalog(HERE / "catalog.yaml")
    for name, file in LISTS.items():
        row = {"stage": "catalogue", "list": name, "limit": 30.0, "seed": 0}
        if key(row) in done:
            continue
        inp = make_input(workload_from_trace(DATA / file), cat)
        t = time.perf_counter()
        r = plan(inp, PlanOptions(time_limit=30.0, workers=WORKERS, seed=0))
        assert verify_plan(inp, r) == []
        row.update(
            cost=r.cost,
            greedy_cost=r.stats["greedy_objective"],
            bound=r.bound,
            l1=r.bounds["l1"],
            devices=r.bounds["devices"],
            config_lp=r.bounds["config_lp"],
            lp_value=r.stats["lp_value"],
            gap=r.gap,
            add=r.add,
            shapes=int(r.stats["shapes"]),
            columns=int(r.stats["columns"]),
            seconds=time.perf_counter() - t,
            status=r.status,
        )
        save(row)


# ----------------------------------------------------------------------------- report


def report(out_dir: Path = HERE) -> None:
    """The README's results section and the plots, into `out_dir` (the README read from
    here)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = load_rows()
    by: dict[tuple[Any, ...], dict[str, Any]] = {key(r): r for r in rows}
    rows = list(by.values())
    out: list[str] = []
    shas = sorted({r["git_sha"] for r in rows})
    out.append(
        f"Measured at git SHA {', '.join(shas)} on {platform.machine()} with {os.cpu_count()} cores "
        f"(Python {platform.python_version()}, OR-Tools CP-SAT num_workers={WORKERS}); seeds 0-9.\n"
    )
    # online + offline
    out.append("### GPU allocation ratio at 130% arrived load (mean ± std over seeds)\n")
    out.append("| pod list | policy | ours | published (FGD paper) | seeds | s/run |")
    out.append("| --- | --- | ---: | ---: | ---: | ---: |")
    fig, ax = plt.subplots(figsize=(8, 3.6))
    labels, means, errs = [], [], []
    for name in LISTS:
        for policy, stage, label in (
            ("bestfit", "online", "best-fit (online)"),
            ("fgd", "online", "FGD (online)"),
            ("cpsat", "offline", f"CP-SAT offline ({OFFLINE_LIMIT:g} s)"),
        ):
            vals = [
                r
                for r in rows
                if r["stage"] == stage and r["list"] == name and r["policy"] == policy
            ]
            if not vals:
                continue
            # online: the published metric (allocation at 130% arrived); offline: at the end
            ratios = np.array([r.get("gpu_alloc_ratio_at_130", r["gpu_alloc_ratio"]) for r in vals])
            pub = PUBLISHED.get((name, policy))
            out.append(
                f"| {name} | {label} | {100 * ratios.mean():.2f}% ± {100 * ratios.std():.2f} | "
                f"{'' if pub is None else f'{100 * pub:.2f}%'} | {len(vals)} | "
                f"{np.mean([r['seconds'] for r in vals]):.1f} |"
            )
            labels.append(f"{name}\n{policy}")
            means.append(100 * ratios.mean())
            errs.append(100 * ratios.std())
            if stage == "offline":
                ub = np.minimum(
                    1.0, np.array([r["upper_bound_ratio"] for r in vals])
                )  # capacity caps it
                gr = np.array([r["greedy_ratio"] for r in vals])
                out.append(
                    f"| {name} | offline upper bound (device LP) | ≤ {100 * ub.mean():.2f}% | | {len(vals)} | |"
                )
                out.append(
                    f"| {name} | offline FFD greedy (planner's first stage) | {100 * gr.mean():.2f}% | | {len(vals)} | |"
                )
    out.append("")
    ax.bar(range(len(labels)), means, yerr=errs, color="#4C72B0")
    for (name, policy), pub in PUBLISHED.items():
        lab = f"{name}\n{policy}"
        if lab in labels:
            ax.plot([labels.index(lab) - 0.4, labels.index(lab) + 0.4], [100 * pub] * 2, "r--")
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(88, 100.5)
    ax.set_ylabel("GPU allocation ratio (%)")
    ax.set_title("openb, 130% arrived load (red: published)")
    fig.tight_layout()
    fig.savefig(out_dir / "allocation.png", dpi=110)
    plt.close(fig)
    # packing
    out.append(
        "### Solver vs heuristic: pods of the default list onto identical G2 nodes (min nodes)\n"
    )
    out.append(
        "| pods | limit | greedy nodes | solver nodes | best bound | L1 | device LP | config LP | gap | first sol. s | best sol. s | dropped (too big) |"
    )
    out.append(
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for size in PACK_SIZES:
        vals = sorted(
            (r for r in rows if r["stage"] == "packing" and r["size"] == size),
            key=lambda r: r["limit"],
        )
        for r in vals:
            cfg = "—" if r["config_lp"] is None else f"{r['config_lp']:g}"
            dev = "—" if r.get("devices") is None else f"{r['devices']:g}"
            out.append(
                f"| {size} | {r['limit']:g} s | {r['greedy_nodes']:g} | {r['nodes']:g} | {r['bound']:g} | "
                f"{r['l1']:g} | {dev} | {cfg} | {100 * r['gap']:.1f}% | {r['first_s']:.2f} | {r['best_s']:.2f} | {r['dropped']} |"
            )
        if vals:
            ax.plot(
                [r["limit"] for r in vals],
                [100 * (r["nodes"] / r["bound"] - 1) for r in vals],
                "o-",
                label=f"solver {size} pods",
            )
            ax.plot(
                [r["limit"] for r in vals],
                [100 * (r["greedy_nodes"] / r["bound"] - 1) for r in vals],
                "x--",
                label=f"greedy {size} pods",
            )
    out.append("")
    ax.set_xscale("log")
    ax.set_xlabel("time limit (s)")
    ax.set_ylabel("nodes above the best bound (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "packing.png", dpi=110)
    plt.close(fig)
    # catalogue
    out.append("### Capacity planning: all 8,152 pods onto the 7-model catalogue (30 s)\n")
    out.append(
        "| pod list | shapes | greedy cost | plan cost | best bound | L1 | device LP | config-LP Lagrangian | LP value (not a bound) | gap vs bound | gap vs LP value | s |"
    )
    out.append(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for r in rows:
        if r["stage"] == "catalogue":
            cfg = "—" if r["config_lp"] is None else f"{r['config_lp']:g}"
            dev = "—" if r.get("devices") is None else f"{r['devices']:g}"
            out.append(
                f"| {r['list']} | {r['shapes']} | {r['greedy_cost']:g} | {r['cost']:g} | {r['bound']:g} | {r['l1']:g} | {dev} | {cfg} | "
                f"{r['lp_value']:.1f} | {100 * r['gap']:.2f}% | {100 * (r['cost'] / r['lp_value'] - 1):.2f}% | {r['seconds']:.0f} |"
            )
    out.append("")
    readme = HERE / "README.md"
    text = readme.read_text() if readme.exists() else "<!-- results -->\n<!-- /results -->\n"
    head, _, rest = text.partition("<!-- results -->")
    _, _, tail = rest.partition("<!-- /results -->")
    (out_dir / "README.md").write_text(
        head + "<!-- results -->\n" + "\n".join(out) + "\n<!-- /results -->" + tail
    )


def smoke() -> None:
    cluster = load_cluster()
    pods = load_pods(DATA / LISTS["default"], cluster.models)
    order = arrivals(pods, int(cluster.gpus.sum()) * MILLI, 0)[:300]
    for policy in ("bestfit", "fgd"):
        print(json.dumps({"policy": policy, **replay(cluster, pods, order, policy, seed=0)}))
    report(Path(tempfile.mkdtemp()))


SHA = sha()

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--report", action="store_true", help="only regenerate the README tables and plots"
    )
    ap.add_argument(
        "--stage", action="append", choices=["online", "offline", "packing", "catalogue"]
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: 300 arrivals online with both policies, the report into a temporary folder",
    )
    args = ap.parse_args()
    if args.smoke:
        smoke()
    elif not args.report:
        done = {key(r) for r in load_rows()}
        for stage in args.stage or ["online", "packing", "catalogue", "offline"]:
            globals()[stage](done)
    if not args.smoke:
        report()
