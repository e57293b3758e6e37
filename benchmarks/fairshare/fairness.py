"""How fair: CP-SAT's `fair_share` tier against the greedy, on openb-shaped queues.

    .venv/bin/python benchmarks/fairshare/fairness.py            # the committed run
    .venv/bin/python benchmarks/fairshare/fairness.py --smoke    # seconds

Workload (trace-shaped): the openb GPU pod list (`benchmarks/data/openb`, Alibaba's
production GPU pods) in the simulator's random arrival order, the whole-GPU pods only (1-8
GPUs, their CPU and memory), on the first `--nodes` GPU nodes of the openb node list. Each
pod is a job of one pod in one of `--queues` queues, drawn Zipf-skewed (queue k with
probability ∝ 1/(k+1): a few busy teams, a long tail), weights 1 + k mod 4. First
`--running` × capacity of GPUs of arrivals run (first fit, in order: the running pods,
varied per row); the next arrivals up to 1.5 × the room left are pending in one call.

Per queue dialect — Volcano `capacity` (deserved: the cluster's GPUs split by weight) and
KAI-Scheduler (quota 0, over-quota weight = weight, no limit) — the same call by the
greedy (upstream's queue order) and by CP-SAT (`--workers`, `--seed`, `--time-limit`),
both verified. Reported: pods placed, `fair_share` (the least-served queue's dominant
share of its fair-share target, ×1000; `solver/features/queues/fairness.py`), Jain's index
over the queues' shares s_q / 1000, and the seconds. Rows to fairness.json with the git SHA
and machine; the README reads them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.openb.replay import DATA, arrivals, load_cluster, load_pods  # noqa: E402
from benchmarks.results import provenance, write_results  # noqa: E402
from solver import SchedulerConf, Workload, schedule  # noqa: E402
from solver.compile import compile_problem  # noqa: E402
from solver.features.queues import QuotaBlock  # noqa: E402
from solver.features.queues.fairness import FAIR_SCALE, placed_use, queue_shares  # noqa: E402
from solver.kube import load_objects  # noqa: E402
from solver.kube.loader import RawObject  # noqa: E402
from solver.schedule import snapshot_of  # noqa: E402

GPU = "nvidia.com/gpu"


def _raw(objs: list[dict[str, Any]]) -> list[RawObject]:
    return [RawObject("bench", str(i + 1), o) for i, o in enumerate(objs)]


def workload(
    nodes: int, queues: int, running: float, seed: int, dialect: str
) -> list[dict[str, Any]]:
    cluster = load_cluster()
    pods = load_pods(DATA / "openb_pod_list_default.csv", cluster.models)
    gpu_nodes = [i for i in range(len(cluster.gpus)) if cluster.gpus[i] > 0][:nodes]
    cap = int(cluster.gpus[gpu_nodes].sum())
    order = arrivals(pods, cap * 1000, seed)
    whole = [int(i) for i in order if pods.ngpu[i] >= 1 and pods.milli[i] == 1000]
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, queues + 1)
    owner = rng.choice(queues, size=len(whole), p=zipf / zipf.sum())
    weights = [1 + k % 4 for k in range(queues)]
    objs: list[dict[str, Any]] = []
    free = {}
    for i in gpu_nodes:
        name = f"n{i:04d}"
        free[name] = [int(cluster.cpu[i]), int(cluster.mem[i]), int(cluster.gpus[i])]
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                     "status": {"allocatable": {"cpu": f"{cluster.cpu[i]}m", "memory": f"{cluster.mem[i]}Mi",
                                                GPU: str(cluster.gpus[i]), "pods": "110"}}})  # fmt: skip
    total_w = sum(weights)
    for k in range(queues):
        name = f"q{k:02d}"
        if dialect == "kai":
            objs.append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name},
                         "spec": {"resources": {
                             "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": weights[k]},
                             "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                             "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}})  # fmt: skip
        else:
            deserved = max(1, cap * weights[k] // total_w)
            objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                         "metadata": {"name": name}, "spec": {"weight": weights[k],
                         "deserved": {GPU: str(deserved)}}})  # fmt: skip
    budget = running * cap
    used = 0
    pending_gpus = 0
    room = None
    for j, i in enumerate(whole):
        q = f"q{owner[j]:02d}"
        need = [int(pods.cpu[i]), int(pods.mem[i]), int(pods.ngpu[i])]
        meta: dict[str, Any] = {"name": f"p{j:05d}", "namespace": "default"}
        if dialect == "kai":
            meta["labels"] = {"kai.scheduler/queue": q}
        else:
            meta["annotations"] = {"scheduling.volcano.sh/queue-name": q}
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {
            "cpu": f"{need[0]}m", "memory": f"{need[1]}Mi", GPU: str(need[2])}, "limits": {GPU: str(need[2])}}}]}  # fmt: skip
        if dialect == "kai":
            spec["schedulerName"] = "kai-scheduler"
        if used < budget:
            host = next(
                (n for n, f in free.items() if all(f[r] >= need[r] for r in range(3))), None
            )
            if host is None:
                continue
            for r in range(3):
                free[host][r] -= need[r]
            used += need[2]
            objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                         "spec": {**spec, "nodeName": host}, "status": {"phase": "Running"}})  # fmt: skip
            continue
        if room is None:
            room = 1.5 * sum(f[2] for f in free.values())
        if pending_gpus >= room:
            break
        pending_gpus += need[2]
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return objs


def shares(snapshot: Any, conf: SchedulerConf, decision: Any) -> tuple[int, float, int]:
    """(fair_share, Jain's index over the queues' s_q / S, queues counted) of an answer."""
    problem = compile_problem(snapshot, conf, Workload.everything(snapshot))
    block = problem.block(QuotaBlock)
    if block is None or not block.fair_target.any():
        return FAIR_SCALE, 1.0, 0
    index = {name: n for n, name in enumerate(problem.node_names)}
    pod_node = [
        np.array([index.get(decision.placements[k].node or "", -1) for k in pods], dtype=np.int64)
        for pods in problem.type_pods
    ]
    placed = placed_use(
        problem, block.type_queues, block.type_quota_demand, pod_node, len(block.queue_names)
    )
    per_queue = queue_shares(block.fair_target, block.allocated, placed)
    x = np.array(list(per_queue.values()), dtype=np.float64) / FAIR_SCALE
    jain = float(x.sum() ** 2 / (len(x) * (x**2).sum())) if (x**2).sum() else 1.0
    return min(per_queue.values()), jain, len(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--queues", type=int, default=12)
    parser.add_argument("--running", type=float, nargs="+", default=[0.0, 0.5, 0.8])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--out", default=str(Path(__file__).with_name("fairness.json")))
    parser.add_argument("--smoke", action="store_true", help="seconds: 16 nodes, one row")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.running, args.seeds, args.time_limit = 16, [0.5], [1], 2.0
        args.out = str(Path(tempfile.mkdtemp()) / "fairness.json")
    source = provenance()
    rows = []
    for dialect in ("capacity", "kai"):
        for running in args.running:
            for seed in args.seeds:
                objs = workload(args.nodes, args.queues, running, seed, dialect)
                snapshot = snapshot_of(load_objects(_raw(objs)))
                conf = SchedulerConf.default()
                row: dict[str, Any] = {
                    "dialect": dialect, "running": running, "seed": seed, "nodes": args.nodes,
                    "queues": args.queues, "running_pods": len(snapshot.running),
                    "pending_pods": len(snapshot.pending),
                }  # fmt: skip
                for engine in ("greedy", "cpsat"):
                    started = time.perf_counter()
                    d = schedule(
                        snapshot, conf, engine=engine, workers=args.workers, seed=0,
                        time_limit=args.time_limit,
                    )  # fmt: skip
                    seconds = time.perf_counter() - started
                    fair, jain, counted = shares(snapshot, conf, d)
                    row[engine] = {
                        "placed": len(d.placed), "fair_share": fair, "jain": round(jain, 4),
                        "status": d.status, "seconds": round(seconds, 3),
                        "tier": d.tiers.get("fair_share"),
                    }  # fmt: skip
                    row["queues_counted"] = counted
                rows.append(row)
                print(json.dumps(row))
    write_results(args.out, source, rows)


if __name__ == "__main__":
    main()
