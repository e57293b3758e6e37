"""Defragmentation: free whole racks (and whole 8-GPU nodes) of a busy openb-shaped cluster.

    .venv/bin/python benchmarks/defrag/run.py            # the committed run (~3 min)
    .venv/bin/python benchmarks/defrag/run.py --smoke    # seconds, nothing written

Cluster: 1,000 GPU nodes drawn (seeded) from the openb node list (its models and GPU
counts), sorted by model and size and cut into racks of 16 nodes and blocks of 4 racks
(labels `gangplan.io/topology-rack`, `gangplan.io/topology-block`, the model as
`nvidia.com/gpu.product`: a pod moves only between nodes of its model). Loaded to
`--loads` of its GPUs (40 / 60 / 80 %: the running pods vary with it): a third by training
gangs of 2–4 whole-node pods inside one rack, the rest by single pods of the openb pod
list's whole-GPU shapes (cpu, memory, 1–8 GPUs; fractional shares are left out: a pod
sharing a device is not moved) placed on random nodes with room — the "jagged" cluster.

Goal 1 (racks): free as many whole racks as possible with at most 100 pods moved. The
greedy (emptiest rack first, best-fit) beside CP-SAT (10 s, 2 workers, seed 0): racks
freed, pods and gangs moved, the bound and the gap, seconds.

Goal 2 (nodes): the same nodes after arrivals asking for 100 % of their GPUs (random fit
of the openb whole-GPU shapes; an arrival that finds no room is gone, as in the openb
replay's load), then free whole 8-GPU nodes with at most 50 pods moved (`level node`,
`shape nvidia.com/gpu=8`).

Every plan is checked by `verify_moves` inside `defragment` (a failure would fall back and
say so in its notes: the rows record the notes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.openb.replay import DATA, Cluster, Pods, load_cluster, load_pods  # noqa: E402
from benchmarks.results import provenance, write_results  # noqa: E402
from solver.defrag import DefragGoal, defragment  # noqa: E402
from solver.model import Node  # noqa: E402
from solver.snapshot import RunningPod, Snapshot  # noqa: E402

HERE = Path(__file__).resolve().parent
RACK, BLOCK = "gangplan.io/topology-rack", "gangplan.io/topology-block"
MODEL = "nvidia.com/gpu.product"
MIB = 2**20
GPU = "nvidia.com/gpu"


def cluster_nodes(c: Cluster, count: int, seed: int) -> list[Node]:
    rng = np.random.default_rng(seed)
    take = np.sort(rng.choice(len(c.gpus), size=min(count, len(c.gpus)), replace=False))
    take = take[np.lexsort((take, -c.gpus[take], c.model[take]))]
    out = []
    for i, n in enumerate(take.tolist()):
        rack = i // 16
        labels = {
            "kubernetes.io/hostname": f"n{i:04d}",
            RACK: f"rack-{rack:03d}",
            BLOCK: f"block-{rack // 4:02d}",
            MODEL: c.models[int(c.model[n])],
        }
        alloc = {"cpu": int(c.cpu[n]), "memory": int(c.mem[n]) * MIB, GPU: int(c.gpus[n])}
        out.append(Node(name=f"n{i:04d}", labels=labels, allocatable={**alloc, "pods": 110}))
    return out


class Filler:
    """Places running pods on random nodes with room (the jagged cluster)."""

    def __init__(self, nodes: list[Node], pods: Pods, seed: int) -> None:
        self.nodes = nodes
        self.rng = np.random.default_rng(seed)
        self.free = np.array([[n.allocatable["cpu"], n.allocatable["memory"], n.allocatable[GPU]]
                              for n in nodes], dtype=np.int64)  # fmt: skip
        self.models = [n.labels[MODEL] for n in nodes]
        whole = (pods.ngpu >= 1) & (pods.milli == 1000)
        self.shapes = np.flatnonzero(whole)
        self.pods = pods
        self.running: list[RunningPod] = []
        self.last = -1  # the shape of the last arrival

    @property
    def gpus_used(self) -> int:
        total = sum(n.allocatable[GPU] for n in self.nodes)
        return total - int(self.free[:, 2].sum())

    def gang(self, k: int, size: int) -> bool:
        """A training gang: `size` whole-node pods inside one rack."""
        racks = sorted({n.labels[RACK] for n in self.nodes})
        rack = racks[int(self.rng.integers(len(racks)))]
        spots = [i for i, n in enumerate(self.nodes) if n.labels[RACK] == rack
                 and self.free[i, 2] == n.allocatable[GPU] and n.allocatable[GPU] == 8]  # fmt: skip
        if len(spots) < size:
            return False
        for j, i in enumerate(self.rng.choice(spots, size=size, replace=False).tolist()):
            need = np.array([32000, 256 * 2**30, 8])
            need = np.minimum(need, self.free[i])
            self.free[i] -= need
            self.running.append(RunningPod(
                key=f"train/g{k}-{j}", node=self.nodes[i].name, priority=10, gang=f"train/g{k}",
                requests={"cpu": int(need[0]), "memory": int(need[1]), GPU: 8},
            ))  # fmt: skip
        return True

    def single(self, k: int) -> bool:
        p = self.last = int(self.shapes[int(self.rng.integers(self.shapes.size))])
        need = np.array([self.pods.cpu[p], self.pods.mem[p] * MIB, self.pods.ngpu[p]])
        fits = np.flatnonzero((self.free >= need).all(axis=1))
        if fits.size == 0:
            return False
        i = int(fits[int(self.rng.integers(fits.size))])
        self.free[i] -= need
        self.running.append(RunningPod(
            key=f"serve/p{k}", node=self.nodes[i].name, priority=0,
            requests={"cpu": int(need[0]), "memory": int(need[1]), GPU: int(need[2])},
        ))  # fmt: skip
        return True


def loaded(nodes: list[Node], pods: Pods, load: float, seed: int) -> Snapshot:
    fill = Filler(nodes, pods, seed)
    total = sum(n.allocatable[GPU] for n in nodes)
    k = 0
    while fill.gpus_used < load * total / 3 and k < 10_000:
        fill.gang(k, int(fill.rng.integers(2, 5)))
        k += 1
    misses = 0
    while fill.gpus_used < load * total and misses < 200:
        k += 1
        misses = 0 if fill.single(k) else misses + 1
    return Snapshot.build(nodes, fill.running)


def full(nodes: list[Node], pods: Pods, seed: int) -> Snapshot:
    """Arrivals (random whole-GPU openb shapes, random fit) until the GPUs they ask for
    reach 100 % of the cluster's, as the openb replay counts its load: the ones that found
    no room are gone, their share of the GPUs is the fragmentation."""
    fill = Filler(nodes, pods, seed)
    total = sum(n.allocatable[GPU] for n in nodes)
    asked, k = 0, 0
    while asked < total:
        k += 1
        before = len(fill.running)
        fill.single(k)
        asked += (
            int(fill.pods.ngpu[fill.last])
            if len(fill.running) == before
            else int(fill.running[-1].requests[GPU])
        )
    return Snapshot.build(nodes, fill.running)


def measure(snapshot: Snapshot, goal: DefragGoal, engine: str, limit: float) -> dict[str, Any]:
    started = time.perf_counter()
    plan = defragment(snapshot, goal, engine=engine, time_limit=limit, workers=2, seed=0)
    return {
        "engine": engine,
        "status": plan.status,
        "freed": len(plan.freed),
        "pods_moved": plan.pods_moved,
        "gangs_moved": plan.gangs_moved,
        "bound": plan.bound,
        "gap": plan.gap,
        "candidates": plan.candidates,
        "seconds": round(time.perf_counter() - started, 3),
        "notes": [n for n in plan.notes if "failed its check" in n],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--loads", type=float, nargs="+", default=[0.4, 0.6, 0.8])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--out", default=str(HERE / "results.json"))
    parser.add_argument("--smoke", action="store_true", help="seconds: 128 nodes, one load")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.loads, args.seeds, args.time_limit = 128, [0.6], [0], 2.0
        args.out = str(Path(tempfile.mkdtemp()) / "results.json")
    source = provenance()
    c = load_cluster()
    pods = load_pods(DATA / "openb_pod_list_default.csv", c.models)
    rows = []
    for seed in args.seeds:
        nodes = cluster_nodes(c, args.nodes, seed)
        for load in args.loads:
            snapshot = loaded(nodes, pods, load, seed)
            base = {"goal": "racks", "nodes": len(nodes), "load": load, "seed": seed,
                    "running_pods": len(snapshot.running.rows())}  # fmt: skip
            goal = DefragGoal(level=RACK, max_pods=100)
            for engine in ("greedy", "cpsat"):
                rows.append({**base, **measure(snapshot, goal, engine, args.time_limit)})
                print(rows[-1], flush=True)
        snapshot = full(nodes, pods, seed)
        base = {"goal": "8-GPU nodes", "nodes": len(nodes), "load": 1.0, "seed": seed,
                "running_pods": len(snapshot.running.rows())}  # fmt: skip
        goal = DefragGoal(max_pods=50, shape={GPU: 8})
        for engine in ("greedy", "cpsat"):
            rows.append({**base, **measure(snapshot, goal, engine, args.time_limit)})
            print(rows[-1], flush=True)
    write_results(args.out, source, rows)


if __name__ == "__main__":
    main()
