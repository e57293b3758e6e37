"""KAI sub-groups benchmark: replicas each in a rack of their own, on 10,240 nodes.

Cluster (fixed seed): 10 zones × 4 spines × 8 racks × 32 nodes, each 8 GPUs / 96 cpu / 110
pods; a KAI Topology zone → spine → rack as node labels. Running pods: 0, 20,000 or
100,000, spread over random nodes, each 1 cpu; the first ones on a node also take a GPU
until ~60% of that node's GPUs are busy (Binomial(8, 0.6)). Pending, one job per row (a
KAI PodGroup, every pod required, pods of 4 GPUs, 8 cpu):

* `16 replicas × 8, rack each, one zone`: the PodGroup requires a zone, each replica's 8
  pods (prefill and decode, two leaf sub-groups under it) one rack;
* `4 × 4 replicas × 8, spine then rack`: 4 groups each in one spine, each of their 4
  replicas in one rack (nested sub-groups), no level on the PodGroup.

Each row is solved by the greedy (KAI's allocate order: domains most packed first, rolled
back to the next domain when something below fails) and by CP-SAT (2 workers, seed 0,
`--time-limit` s), both through `schedule` (verified). Reported: solve seconds as the
Decision states them, zones / racks / nodes used. Output: table rows on stdout and
`results_kai.json` next to this script (git SHA, machine, settings, rows).

    PYTHONPATH=. .venv/bin/python benchmarks/topology/kai.py [--time-limit 30]
    PYTHONPATH=. .venv/bin/python benchmarks/topology/kai.py --smoke     # seconds
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results import provenance, running_pods_args, write_results  # noqa: E402
from benchmarks.topology.kueue import running_load  # noqa: E402
from solver import SchedulerConf, schedule, snapshot_of  # noqa: E402
from solver.decision import Decision  # noqa: E402
from solver.model import ClusterModel, Gang, Node, Pod, TopologySubGroup  # noqa: E402
from solver.snapshot import Workload  # noqa: E402

ZONES, SPINES, RACKS, NODES = 10, 4, 8, 32
ZONE, SPINE, RACK = "topology/zone", "topology/spine", "topology/rack"
GPU = "nvidia.com/gpu"
LABEL = "kai.scheduler/subgroup-name"
LOADS = (0, 20_000, 100_000)
JOBS = ("16 replicas × 8, rack each, one zone", "4 × 4 replicas × 8, spine then rack")


def nodes() -> list[Node]:
    out = []
    for z in range(ZONES):
        for s in range(SPINES):
            for r in range(RACKS):
                for n in range(NODES):
                    name = f"z{z}-s{s}-r{r}-n{n:02d}"
                    labels = {ZONE: f"z{z}", SPINE: f"z{z}-s{s}", RACK: f"z{z}-s{s}-r{r}"}
                    out.append(
                        Node(
                            name=name,
                            labels=labels,
                            allocatable={"cpu": 96_000, "memory": 2**40, GPU: 8, "pods": 110},
                        )
                    )
    return out


def _sub(name: str, leaves: list[str], levels: tuple[str, ...]) -> TopologySubGroup:
    return TopologySubGroup(name=name, label=LABEL, values=tuple(leaves), levels=levels)


def job(index: int, title: str) -> tuple[Gang, list[Pod]]:
    """The job of one row: its gang (with its sub-groups) and its pods."""
    gid = f"ml/job{index}"
    pods: list[Pod] = []
    subs: list[TopologySubGroup] = []
    groups = 1 if index == 0 else 4
    replicas = 16 if index == 0 else 4
    for g in range(groups):
        group_leaves = []
        for r in range(replicas):
            leaves = [f"g{g}-r{r}-prefill", f"g{g}-r{r}-decode"]
            group_leaves += leaves
            subs.append(_sub(f"g{g}-replica{r}", leaves, (ZONE, SPINE, RACK)))
            for leaf in leaves:
                for i in range(4):
                    pods.append(
                        Pod(
                            namespace="ml",
                            name=f"job{index}-{leaf}-{i}",
                            labels={LABEL: leaf},
                            requests={"cpu": 8000, GPU: 4, "pods": 1},
                            gang=gid,
                        )
                    )
        if index == 1:
            subs.append(_sub(f"group{g}", group_leaves, (ZONE, SPINE)))
    gang = Gang(
        id=gid,
        namespace="ml",
        name=f"job{index}",
        dialect="scheduling.sigs.k8s.io",
        min_member=len(pods),
        total_number=len(pods),
        topology_key=ZONE if index == 0 else None,
        topology_pack=("GPU", "CPU", "Memory"),
        topology_sub_groups=tuple(subs),
        members=tuple(sorted(p.key for p in pods)),
    )
    return gang, pods


def cluster(running: int, seed: int) -> ClusterModel:
    all_nodes = nodes()
    pods, gangs = running_load(all_nodes, running, np.random.default_rng(seed))
    for index, title in enumerate(JOBS):
        gang, members = job(index, title)
        gangs[gang.id] = gang
        pods += members
    return ClusterModel(
        nodes=tuple(all_nodes), pods=tuple(sorted(pods, key=lambda p: p.key)), gangs=gangs
    )


def used(decision: Decision, gid: str) -> dict[str, int]:
    prefix = gid.split("/")[1] + "-"
    nodes = [p.node for k, p in decision.placements.items() if prefix in k and p.node]
    return {
        "placed": len(nodes),
        "zones": len({n.split("-")[0] for n in nodes}),
        "racks": len({n.rsplit("-", 1)[0] for n in nodes}),
        "nodes": len(set(nodes)),
    }


def _in_gang(gang: str, pod: Pod) -> bool:
    return pod.gang == gang


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--running", type=int, nargs="+", default=list(LOADS))
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--engines", nargs="+", default=["greedy", "cpsat"])
    parser.add_argument("--out", default=str(Path(__file__).with_name("results_kai.json")))
    args = running_pods_args(parser)
    if args.smoke:
        args.time_limit = 1.0
    source = {**provenance(), "time_limit": str(args.time_limit), "workers": "2", "seed": "0"}
    rows: list[dict[str, Any]] = []
    for load in args.running:
        started = time.perf_counter()
        snapshot = snapshot_of(cluster(load, args.seed))
        build = time.perf_counter() - started
        everything = Workload.everything(snapshot)
        for index, title in enumerate(JOBS):
            gid = f"ml/job{index}"
            workload = everything.only(partial(_in_gang, gid))
            row: dict[str, Any] = {"running": load, "job": title, "model_seconds": round(build, 2)}
            for engine in args.engines:
                decision = schedule(
                    snapshot, SchedulerConf.default(), workload=workload, engine=engine,
                    time_limit=args.time_limit, workers=2, seed=0,
                )  # fmt: skip
                row[engine] = {
                    "status": decision.status,
                    "seconds": round(decision.seconds, 3),
                    **used(decision, gid),
                    "objective": decision.objective,
                }
            rows.append(row)
            print(json.dumps(row), flush=True)
    write_results(args.out, source, rows)
    for r in rows:
        cells = [f"{r['running']:,}", r["job"]]
        for engine in args.engines:
            e = r[engine]
            cells += [e["status"], str(e["seconds"]), str(e["placed"])]
            cells.append(f"{e['zones']}/{e['racks']}/{e['nodes']}")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
