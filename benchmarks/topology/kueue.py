"""Kueue TAS benchmark: 512-pod pod sets on a 10,240-node block/rack/hostname cluster.

Cluster (fixed seed): 20 blocks × 16 racks × 32 nodes, each 8 GPUs / 96 cpu / 110 pods, one
Kueue Topology (block, rack, hostname) and one TAS flavor over every node. Running pods:
0, 20,000 or 100,000, spread over random nodes, each 1 cpu; the first ones on a node also
take a GPU until ~60% of that node's GPUs are busy (Binomial(8, 0.6)). Pending: one pod set
of 512 pods × (1 GPU, 8 cpu) per row, asking Kueue for

* `required block`  (podset-required-topology),
* `preferred rack`  (podset-preferred-topology: no rack holds 512, so Kueue climbs to block),
* `block + rack slices of 32` (required block, podset-slice-required-topology rack, size 32).

Each row is solved by the greedy (Kueue's algorithm) and by CP-SAT (2 workers, seed 0,
`--time-limit` s), both through `schedule` (verified). Reported: solve seconds as the
Decision states them, the blocks / racks / nodes each plan uses (the greedy's are Kueue's
choice). Output: a markdown table on stdout and `results_kueue.json` next to this script.

    PYTHONPATH=. .venv/bin/python benchmarks/topology/kueue.py [--time-limit 30]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from solver import SchedulerConf, schedule, snapshot_of  # noqa: E402
from solver.decision import Decision  # noqa: E402
from solver.model import (  # noqa: E402
    ClusterModel,
    Gang,
    KueueFlavor,
    KueueTopology,
    NetworkTopology,
    Node,
    Pod,
)
from solver.snapshot import Workload  # noqa: E402

BLOCKS, RACKS, NODES = 20, 16, 32
LEVELS = ("cloud.com/block", "cloud.com/rack", "kubernetes.io/hostname")
GPU = "nvidia.com/gpu"
POD_SET = 512
LOADS = (0, 20_000, 100_000)
MODES: dict[str, dict[str, str]] = {
    "required block": {"kueue.x-k8s.io/podset-required-topology": LEVELS[0]},
    "preferred rack": {"kueue.x-k8s.io/podset-preferred-topology": LEVELS[1]},
    "block + rack slices of 32": {
        "kueue.x-k8s.io/podset-required-topology": LEVELS[0],
        "kueue.x-k8s.io/podset-slice-required-topology": LEVELS[1],
        "kueue.x-k8s.io/podset-slice-size": "32",
    },
}


def running_load(
    nodes: list[Node], running: int, rng: np.random.Generator
) -> tuple[list[Pod], dict[str, Gang]]:
    """`running` pods of 1 cpu on random nodes, the first ones on a node also taking a GPU
    until Binomial(8, 0.6) of its GPUs are busy; each its own gang."""
    gpus_busy = rng.binomial(8, 0.6, size=len(nodes))
    on = rng.integers(0, len(nodes), size=running)
    given = np.zeros(len(nodes), dtype=np.int64)
    pods: list[Pod] = []
    gangs: dict[str, Gang] = {}
    for i, n in enumerate(on.tolist()):
        requests = {"cpu": 1000, "pods": 1}
        if given[n] < gpus_busy[n]:
            requests[GPU] = 1
            given[n] += 1
        gid = f"run/r{i}"
        gangs[gid] = Gang(
            id=gid, namespace="run", name=f"r{i}", dialect="none", min_member=1, total_number=1
        )
        pods.append(
            Pod(namespace="run", name=f"r{i}", requests=requests, node_name=nodes[n].name,
                phase="Running", gang=gid)
        )  # fmt: skip
    return pods, gangs


def cluster(running: int, seed: int) -> ClusterModel:
    rng = np.random.default_rng(seed)
    nodes = []
    for b in range(BLOCKS):
        for r in range(RACKS):
            for n in range(NODES):
                name = f"b{b:02d}-r{r:02d}-n{n:02d}"
                labels = {LEVELS[0]: f"b{b:02d}", LEVELS[1]: f"b{b:02d}-r{r:02d}", LEVELS[2]: name}
                nodes.append(
                    Node(
                        name=name,
                        labels={**labels, "pool": "tas"},
                        allocatable={"cpu": 96_000, "memory": 2**40, GPU: 8, "pods": 110},
                    )
                )
    pods, gangs = running_load(nodes, running, rng)
    for mode, wanted in MODES.items():
        name = mode.replace(" ", "-").replace("+", "and")
        gid = f"ml/{name}"
        members = []
        for j in range(POD_SET):
            pod = Pod(
                namespace="ml",
                name=f"{name}-{j}",
                annotations=wanted,
                requests={"cpu": 8000, GPU: 1, "pods": 1},
                gang=gid,
            )
            pods.append(pod)
            members.append(pod.key)
        gangs[gid] = Gang(
            id=gid, namespace="ml", name=name, dialect="scheduling.sigs.k8s.io",
            min_member=POD_SET, total_number=POD_SET, members=tuple(sorted(members)),
        )  # fmt: skip
    topology = NetworkTopology(
        kueue_topologies=(KueueTopology(name="default", levels=LEVELS),),
        kueue_flavors=(KueueFlavor(name="tas", topology="default", node_labels={"pool": "tas"}),),
    )
    return ClusterModel(
        nodes=tuple(nodes),
        pods=tuple(sorted(pods, key=lambda p: p.key)),
        gangs=gangs,
        topology=topology,
    )


def used(decision: Decision, gid: str) -> dict[str, int]:
    nodes = [p.node for k, p in decision.placements.items() if k.startswith(gid + "-") and p.node]
    return {
        "placed": len(nodes),
        "blocks": len({n[:3] for n in nodes}),
        "racks": len({n[:7] for n in nodes}),
        "nodes": len(set(nodes)),
    }


def _in_gang(gang: str, pod: Pod) -> bool:
    return pod.gang == gang


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--smoke", action="store_true", help="seconds: no running pods, 1 s limit, no results"
    )
    args = parser.parse_args()
    if args.smoke:
        args.time_limit = 1.0
    conf = SchedulerConf.default()
    rows: list[dict[str, Any]] = []
    for load in LOADS[:1] if args.smoke else LOADS:
        started = time.perf_counter()
        snapshot = snapshot_of(cluster(load, args.seed))
        build = time.perf_counter() - started
        everything = Workload.everything(snapshot)
        for mode in MODES:
            gid = "ml/" + mode.replace(" ", "-").replace("+", "and")
            workload = everything.only(partial(_in_gang, gid))
            row: dict[str, Any] = {"running": load, "mode": mode, "model_seconds": round(build, 2)}
            for engine in ("greedy", "cpsat"):
                decision = schedule(
                    snapshot, conf, workload=workload, engine=engine,
                    time_limit=args.time_limit, workers=2, seed=0,
                )  # fmt: skip
                row[engine] = {
                    "status": decision.status,
                    "seconds": round(decision.seconds, 3),
                    **used(decision, gid),
                    "objective": decision.objective,
                    "tiers": decision.tiers,
                }
            rows.append(row)
            print(json.dumps(row), flush=True)
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    meta = {
        "git": sha,
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_version()}",
        "time_limit": args.time_limit,
        "workers": 2,
        "seed": 0,
    }
    if not args.smoke:
        out = Path(__file__).with_name("results_kueue.json")
        out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print("| running | pod set | greedy s | greedy blocks/racks/nodes | CP-SAT status | CP-SAT s "
          "| CP-SAT blocks/racks/nodes |")  # fmt: skip
    print("|---:|---|---:|---|---|---:|---|")
    for r in rows:
        g, c = r["greedy"], r["cpsat"]
        print(
            f"| {r['running']:,} | {r['mode']} | {g['seconds']} | {g['blocks']}/{g['racks']}/"
            f"{g['nodes']} | {c['status']} | {c['seconds']} | {c['blocks']}/{c['racks']}/{c['nodes']} |"
        )


if __name__ == "__main__":
    main()
