"""Volcano HyperNode topology at cluster scale: a 512-pod hard-topology gang on 10,240 nodes.

    .venv/bin/python benchmarks/topology/hypernode.py             # the committed run
    .venv/bin/python benchmarks/topology/hypernode.py --running 0  # a quick look

Cluster: 10,240 nodes (96 cpu / 1 TiB / 8 GPUs each) under a 3-tier HyperNode tree:
320 leaves (tier 1, 32 nodes each, members by `regexMatch`), 20 spines (tier 2, 16
leaves each), 2 pods (tier 3, 10 spines each), plus the virtual cluster-top (tier 4).
Running pods: 1 cpu / 4 Gi on node i·7919 mod 10,240; every third also holds one GPU
(0 / 20k / 100k running pods).

Gangs (one PlaceJob each, through `schedule`: compile, engine, verify), 512 pods ×
(1 GPU, 8 cpu), Volcano PodGroup with minMember 512:

- hard-2: `networkTopology: {mode: hard, highestTierAllowed: 2}` — 512 GPUs fit no leaf
  (256), so Volcano's search settles in the best spine;
- soft:   `mode: soft` — the same search, up to the cluster-top.

Engines: greedy (Volcano's allocate search, upstream's choice) and CP-SAT (2 workers,
seed 0, 60 s limit, greedy hint). Reported: median seconds over `--reps`, HyperNodes used
per tier (leaves, spines, pods) by each engine, the CP-SAT status. The scheduler conf lists
`network-topology-aware` with default arguments. Results: hypernode.json beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results import running_pods_args  # noqa: E402
from solver import SchedulerConf, Workload, schedule  # noqa: E402
from solver.config import PluginConf, TierConf  # noqa: E402
from solver.features.topology.hypernode.tree import hypernode_tree_of  # noqa: E402
from solver.model import (  # noqa: E402
    Gang,
    HyperNode,
    HyperNodeMember,
    NetworkTopology,
    Node,
    Pod,
    VolcanoNetworkTopology,
)
from solver.snapshot import RunningPod, Snapshot  # noqa: E402

HERE = Path(__file__).resolve().parent
LEAVES, PER_LEAF, LEAVES_PER_SPINE, SPINES_PER_POD = 320, 32, 16, 10
GI = 2**30
GPU = "nvidia.com/gpu"


def nodes() -> list[Node]:
    return [
        Node(
            name=f"l{leaf:03d}-n{i:02d}",
            allocatable={"cpu": 96_000, "memory": 1024 * GI, "pods": 110, GPU: 8},
        )
        for leaf in range(LEAVES)
        for i in range(PER_LEAF)
    ]


def hypernodes() -> tuple[HyperNode, ...]:
    def node_member(pattern: str) -> HyperNodeMember:
        return HyperNodeMember(type="Node", regex=pattern)

    def child(name: str) -> HyperNodeMember:
        return HyperNodeMember(type="HyperNode", exact_name=name)

    spines = LEAVES // LEAVES_PER_SPINE
    out = [
        HyperNode(
            name=f"leaf-{x:03d}", tier=1, tier_name="leaf", members=(node_member(f"^l{x:03d}-"),)
        )
        for x in range(LEAVES)
    ]
    out += [
        HyperNode(
            name=f"spine-{s:02d}",
            tier=2,
            tier_name="spine",
            members=tuple(
                child(f"leaf-{s * LEAVES_PER_SPINE + k:03d}") for k in range(LEAVES_PER_SPINE)
            ),
        )
        for s in range(spines)
    ]
    out += [
        HyperNode(
            name=f"pod-{p}",
            tier=3,
            tier_name="pod",
            members=tuple(
                child(f"spine-{p * SPINES_PER_POD + k:02d}") for k in range(SPINES_PER_POD)
            ),
        )
        for p in range(spines // SPINES_PER_POD)
    ]
    return tuple(sorted(out, key=lambda h: h.name))


def running(count: int, names: list[str]) -> list[RunningPod]:
    plain = {"cpu": 1000, "memory": 4 * GI, "pods": 1}
    with_gpu = {**plain, GPU: 1}
    return [
        RunningPod(
            key=f"default/r-{i}",
            node=names[(i * 7919) % len(names)],
            requests=with_gpu if i % 3 == 0 else plain,
            labels={},
        )
        for i in range(count)
    ]


def gang(kind: str) -> tuple[list[Pod], Gang]:
    gid = f"default/{kind}"
    pods = [
        Pod(
            namespace="default",
            name=f"{kind}-{i:03d}",
            requests={"cpu": 8000, GPU: 1, "pods": 1},
            gang=gid,
        )
        for i in range(512)
    ]
    topology = (
        VolcanoNetworkTopology(mode="hard", highest_tier_allowed=2)
        if kind == "hard-2"
        else VolcanoNetworkTopology(mode="soft")
    )
    g = Gang(
        id=gid,
        namespace="default",
        name=kind,
        dialect="scheduling.volcano.sh",
        min_member=512,
        total_number=512,
        queue="default",
        network_topology=topology,
        members=tuple(p.key for p in pods),
    )
    return pods, g


def conf() -> SchedulerConf:
    base = SchedulerConf.default()
    plugins = [*base.tiers[0].plugins, PluginConf(name="network-topology-aware")]
    return base.model_copy(update={"tiers": (TierConf(plugins=plugins),)})


def measure(snapshot: Snapshot, kind: str, engine: str, reps: int) -> dict[str, Any]:
    pods, g = gang(kind)
    times = []
    decision = None
    for _ in range(reps):
        workload = Workload.of(snapshot, pods, gangs_given={g.id: g})
        started = time.perf_counter()
        decision = schedule(
            snapshot, conf(), workload=workload, engine=engine, workers=2, seed=0, time_limit=60
        )
        times.append(time.perf_counter() - started)
    assert decision is not None
    placed = [p.node for p in decision.placements.values() if p.node]
    leaves = {n.split("-")[0] for n in placed}
    spines = {int(leaf[1:]) // LEAVES_PER_SPINE for leaf in leaves}
    pods_used = {s // SPINES_PER_POD for s in spines}
    return {
        "seconds": statistics.median(times),
        "placed": len(placed),
        "leaves": len(leaves),
        "spines": len(spines),
        "pods": len(pods_used),
        "nodes": len(set(placed)),
        "tiers": {k: v for k, v in decision.tiers.items() if k.startswith("hypernodes:")},
        "status": decision.status,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--running", type=int, nargs="+", default=[0, 20_000, 100_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["greedy", "cpsat"])
    parser.add_argument("--out", default=str(HERE / "hypernode.json"))
    args = running_pods_args(parser)
    base = nodes()
    names = [n.name for n in base]
    topology = NetworkTopology(name="", hypernodes=hypernodes())
    rows = []
    for count in args.running:
        snapshot = Snapshot.build(base, running(count, names), topology=topology)
        started = time.perf_counter()
        hypernode_tree_of(snapshot.nodes, topology.hypernodes)
        tree_seconds = time.perf_counter() - started
        for kind in ("hard-2", "soft"):
            for engine in args.engines:
                r = measure(snapshot, kind, engine, args.reps)
                rows.append(
                    {
                        "running": count,
                        "gang": kind,
                        "engine": engine,
                        "tree_seconds": tree_seconds,
                        **r,
                    }
                )
                print(
                    f"| {count:>7,} | {kind:6} | {engine:6} | {r['seconds'] * 1000:8.0f} ms | "
                    f"{r['placed']} placed | pods {r['pods']} / spines {r['spines']} / leaves "
                    f"{r['leaves']} / nodes {r['nodes']} | {r['status']} |",
                    flush=True,
                )
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    out = {
        "git": sha,
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, {platform.processor() or 'cpu'}, "
        f"Python {platform.python_version()}",
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
