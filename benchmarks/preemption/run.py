"""Preemption benchmark: a 256-pod high-priority gang on 5,000 full nodes (an experiment).

5,000 nodes × 8 GPUs, fully used by 20,000 low-priority pods (2 GPUs each) in 2,000 jobs of
10 pods spread over random nodes, job priorities 1–5 (seeded). A 256-pod gang (2 GPUs per
pod, priority 1000) must preempt. Reports the greedy preemption step's p50/p99 latency
(Koordinator's algorithm: dry run, cost-ordered nodes, reprieve) over `--reps` runs, and
for `--seeds` random instances whether CP-SAT with a 1 s budget finds a strictly cheaper
plan (Σ rank of evicted jobs, then evicted pods); the budget covers building the model too.

    .venv/bin/python benchmarks/preemption/run.py [--reps 50] [--seeds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from solver import SchedulerConf, compile_problem, snapshot_of
from solver.engines.greedy import solve_greedy
from solver.features.preemption import preempt
from solver.features.preemption.victims import PreemptionInput, compile_preemption
from solver.model import ClusterModel, Gang, Node, Pod
from solver.problem import IntArray, Problem
from solver.snapshot import Workload

HERE = Path(__file__).resolve().parent
GPU = "nvidia.com/gpu"
JOB = "scheduling.koordinator.sh/questioned-object-key"


def instance(
    seed: int, nodes: int = 5000, jobs: int = 2000, per_job: int = 10, gang: int = 256
) -> ClusterModel:
    rng = np.random.default_rng(seed)
    node_objs = [
        Node(name=f"n{i:05d}", allocatable={"cpu": 64_000, "memory": 2**38, GPU: 8, "pods": 110})
        for i in range(nodes)
    ]
    slots = [f"n{i:05d}" for i in range(nodes) for _ in range(4)]
    order = rng.permutation(len(slots))
    pods, gangs = [], {}
    k = 0
    for j in range(jobs):
        prio = int(rng.integers(1, 6))
        for i in range(per_job):
            name = f"j{j:04d}-{i}"
            pods.append(
                Pod(
                    namespace="batch",
                    name=name,
                    node_name=slots[order[k]],
                    phase="Running",
                    priority=prio,
                    labels={JOB: f"j{j:04d}"},
                    gang=f"batch/{name}",
                    requests={"cpu": 2000, GPU: 2, "pods": 1},
                )
            )
            gangs[f"batch/{name}"] = Gang(
                id=f"batch/{name}",
                namespace="batch",
                name=name,
                dialect="none",
                min_member=1,
                total_number=1,
                members=(f"batch/{name}",),
            )
            k += 1
    members = []
    for i in range(gang):
        pods.append(
            Pod(
                namespace="train",
                name=f"hi-{i:03d}",
                priority=1000,
                gang="train/hi",
                requests={"cpu": 2000, GPU: 2, "pods": 1},
            )
        )
        members.append(f"train/hi-{i:03d}")
    gangs["train/hi"] = Gang(
        id="train/hi",
        namespace="train",
        name="hi",
        dialect="scheduling.sigs.k8s.io",
        min_member=gang,
        total_number=gang,
        members=tuple(members),
    )
    return ClusterModel(
        nodes=tuple(node_objs), pods=tuple(sorted(pods, key=lambda p: p.key)), gangs=gangs
    )


def dry_run_input(
    model: ClusterModel, conf: SchedulerConf
) -> tuple[Problem, PreemptionInput, list[IntArray]]:
    """What `preempt` reads for a model: its Problem, the potential victims and the greedy
    placement it runs after."""
    snapshot = snapshot_of(model)
    workload = Workload.everything(snapshot)
    problem = compile_problem(snapshot, conf, workload)
    placed = solve_greedy(problem).pod_node
    return problem, compile_preemption(snapshot, workload, problem), placed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--cpsat-limit", type=float, default=1.0, help="seconds for the CP-SAT step"
    )
    parser.add_argument("--smoke", action="store_true", help="seconds: one seed, one rep")
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.reps, args.cpsat_limit = 1, 1, 0.5
    conf = SchedulerConf.default()
    rows = []
    latencies: list[float] = []
    for seed in range(args.seeds):
        problem, pre, placed = dry_run_input(instance(seed), conf)
        times = []
        for _ in range(args.reps if seed == 0 else 3):
            t0 = time.perf_counter()
            greedy = preempt(
                problem, pre, placed, exact=False, workers=1, seed=0,
                deadline=time.perf_counter() + 10,
            )  # fmt: skip
            times.append(time.perf_counter() - t0)
        latencies += times
        t0 = time.perf_counter()
        exact = preempt(
            problem, pre, placed, exact=True, workers=args.workers, seed=0,
            deadline=time.perf_counter() + args.cpsat_limit,
        )  # fmt: skip
        cpsat_s = time.perf_counter() - t0
        g, c = greedy.plans[0], exact.plans[0]
        rows.append(
            {
                "seed": seed,
                "greedy_cost": g.cost,
                "greedy_victims": len(g.victims),
                "cpsat_cost": c.cost,
                "cpsat_victims": len(c.victims),
                "cpsat_engine": c.engine,
                "cpsat_seconds": round(cpsat_s, 2),
                "strictly_cheaper": (c.cost, len(c.victims)) < (g.cost, len(g.victims)),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    summary = {
        "git": sha,
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "greedy_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 1),
        "greedy_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 1),
        "cpsat_strictly_cheaper": sum(bool(r["strictly_cheaper"]) for r in rows),
        "instances": len(rows),
        "cpsat_limit_s": args.cpsat_limit,
    }
    if not args.smoke:
        (HERE / "results.json").write_text(
            json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n"
        )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
