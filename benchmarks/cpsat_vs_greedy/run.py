"""Solver vs heuristic: greedy and CP-SAT on generated GPU clusters (an experiment, not a test).

For clusters of 100, 1,000 and 10,000 eight-GPU nodes (pre-loaded at random) and gangs of
8 to 1,024 one-GPU pods it reports the model size before/after aggregation, the greedy's
time, CP-SAT's time to its first solution and to proven optimality, and the gap at 1 s.

    .venv/bin/python benchmarks/cpsat_vs_greedy/run.py            # full table (a few minutes)
    .venv/bin/python benchmarks/cpsat_vs_greedy/run.py --quick    # 100 and 1,000 nodes only

Results are appended as JSON lines to results.jsonl (git SHA and machine in every row)
and the markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from solver import SchedulerConf, compile_problem, schedule
from solver.engines import SolveParams
from solver.engines.cpsat import solve_cpsat
from solver.engines.greedy import solve_greedy
from solver.model import ClusterModel, Gang, Node, Pod

HERE = Path(__file__).resolve().parent
GPU = "nvidia.com/gpu"
GiB = 2**30


def cluster(num_nodes: int, gangs: list[tuple[str, int, int, int]], seed: int) -> ClusterModel:
    """8-GPU nodes, each pre-loaded with a running pod of 0–8 GPUs (8 cores, 64 GiB per GPU);
    `gangs` = (name, pods, minMember, GPUs per pod)."""
    rng = np.random.default_rng(seed)
    nodes, pods, gang_objs = [], [], {}
    alloc = {"cpu": 96_000, "memory": 1024 * GiB, GPU: 8, "pods": 110}
    for i in range(num_nodes):
        name = f"node-{i:05d}"
        nodes.append(Node(name=name, allocatable=alloc))
        used = int(rng.integers(0, 9))
        if used:
            pods.append(
                Pod(
                    namespace="load",
                    name=f"load-{i:05d}",
                    node_name=name,
                    phase="Running",
                    gang=f"load/load-{i:05d}",
                    requests={"cpu": 8_000 * used, "memory": 64 * GiB * used, GPU: used, "pods": 1},
                )
            )
            gang_objs[f"load/load-{i:05d}"] = Gang(
                id=f"load/load-{i:05d}",
                namespace="load",
                name=f"load-{i:05d}",
                dialect="none",
                min_member=1,
                total_number=1,
                members=(f"load/load-{i:05d}",),
            )
    for name, size, min_member, gpus in gangs:
        members = []
        for j in range(size):
            pods.append(
                Pod(
                    namespace="train",
                    name=f"{name}-{j:04d}",
                    gang=f"train/{name}",
                    requests={"cpu": 8_000 * gpus, "memory": 64 * GiB * gpus, GPU: gpus, "pods": 1},
                )
            )
            members.append(f"train/{name}-{j:04d}")
        gang_objs[f"train/{name}"] = Gang(
            id=f"train/{name}",
            namespace="train",
            name=name,
            dialect="scheduling.sigs.k8s.io",
            min_member=min_member,
            total_number=size,
            members=tuple(sorted(members)),
        )
    return ClusterModel(
        nodes=tuple(nodes), pods=tuple(sorted(pods, key=lambda p: p.key)), gangs=gang_objs
    )


SCENARIOS: list[tuple[str, int, list[tuple[str, int, int, int]]]] = [
    (f"{n} nodes, gang of {g}", n, [("job", g, g, 1)])
    for n in (100, 1000, 10000)
    for g in (8, 64, 256, 1024)
] + [
    (
        f"{n} nodes, 6 competing gangs (1/4-GPU pods)",
        n,
        [
            ("a", n // 2, n // 2, 4),
            ("b", n // 4, n // 4, 1),
            ("c", n, n // 2, 1),
            ("d", n // 8, n // 8, 4),
            ("e", n * 2, n, 1),
            ("f", 16, 16, 8),
        ],
    )
    for n in (100, 1000, 10000)
]


def measure(
    name: str, num_nodes: int, gangs: list[tuple[str, int, int, int]], workers: int
) -> dict[str, Any]:
    model = cluster(num_nodes, gangs, seed=1)
    conf = SchedulerConf.default()
    started = time.perf_counter()
    problem = compile_problem(model, conf)
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    solve_greedy(problem)
    greedy_s = time.perf_counter() - started
    full = solve_cpsat(problem, SolveParams(time_limit=30, workers=workers, seed=0))
    one = solve_cpsat(problem, SolveParams(time_limit=1.0, workers=workers, seed=0))
    d_greedy = schedule(model, conf, engine="greedy")
    d_one = schedule(model, conf, engine="cpsat", time_limit=1.0, workers=workers)
    gap_1s = d_one.gap
    return {
        "scenario": name,
        "nodes": num_nodes,
        "pending_pods": problem.num_pods,
        "vars_before": full.stats["vars_before"],
        "vars_after": full.stats["vars_after"],
        "node_classes": full.stats["node_classes"],
        "compile_ms": round(compile_s * 1000, 1),
        "greedy_ms": round(greedy_s * 1000, 2),
        "first_solution_s": round(float(full.stats.get("first_solution_seconds", float("nan"))), 3),
        "optimal_s": round(
            float(full.stats["build_seconds"]) + float(full.stats["solve_seconds"]), 3
        )
        if full.status in ("OPTIMAL", "INFEASIBLE")
        else None,
        "status_30s": full.status,
        "status_1s": one.status,
        "gap_1s": None if gap_1s is None else round(gap_1s, 6),
        "greedy_groups": d_greedy.tiers["placed_groups"],
        "cpsat_groups_1s": d_one.tiers["placed_groups"],
        "greedy_pods": d_greedy.tiers["placed_pods"],
        "cpsat_pods_1s": d_one.tiers["placed_pods"],
        "greedy_opened": d_greedy.tiers["opened_nodes"],
        "cpsat_opened_1s": d_one.tiers["opened_nodes"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--smoke", action="store_true", help="seconds: the first scenario, no results"
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    machine = f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    rows = []
    for name, n, gangs in SCENARIOS[:1] if args.smoke else SCENARIOS:
        if args.quick and n > 1000:
            continue
        row = measure(name, n, gangs, args.workers)
        row.update({"git_sha": sha, "machine": machine, "workers": args.workers})
        rows.append(row)
        if not args.smoke:
            with (HERE / "results.jsonl").open("a") as f:
                f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    cols = [
        "scenario",
        "vars_before",
        "vars_after",
        "node_classes",
        "greedy_ms",
        "first_solution_s",
        "optimal_s",
        "gap_1s",
        "greedy_groups",
        "cpsat_groups_1s",
        "greedy_opened",
        "cpsat_opened_1s",
    ]
    print(f"\ngit {sha}, {machine}, CP-SAT workers {args.workers}\n")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
