"""GPU sharing at cluster scale: one PlaceJob of fractional-GPU pods on a busy cluster.

    .venv/bin/python benchmarks/gpushare/run.py              # the committed run
    .venv/bin/python benchmarks/gpushare/run.py --running 0 --reps 1   # a quick look

Cluster: 10,240 nodes, each 96 cpu / 1 TiB / 8 GPUs of 80 GiB (`nvidia.com/gpu.memory`).
Running pods (0, 20k, 100k) on node i mod 10,240, 1 cpu / 4 Gi each; every 4th holds a GPU
share recorded the openb way (`alibabacloud.com/gpu-milli` 250 or 500, `gpu-index` on
device (i div 10,240) mod 8), so device states differ from node to node.

The job (one gang, min 512, through `schedule`: compile, engine, verify): 256 KAI pods of
`gpu-fraction: 0.5` and 256 openb pods of 300 milli, each 4 cpu.

Engines: greedy, and cpsat (1 worker, seed 0, 60 s budget). Each figure is the median of
`--reps` calls. Results: results.json beside this file (git SHA, machine), a table on stdout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results import provenance, running_pods_args, write_results  # noqa: E402
from solver import SCHEMA, SchedulerConf, Workload, schedule  # noqa: E402
from solver.model import Gang, Node, Pod  # noqa: E402
from solver.snapshot import RunningPod, Snapshot  # noqa: E402

HERE = Path(__file__).resolve().parent
NODES = 10_240
GI = 2**30


def nodes() -> list[Node]:
    return [
        Node(
            name=f"n{i:05d}",
            labels={"nvidia.com/gpu.memory": "81920"},
            allocatable={"cpu": 96_000, "memory": 1024 * GI, "pods": 110, "nvidia.com/gpu": 8},
        )
        for i in range(NODES)
    ]


def running(count: int, names: list[str]) -> list[RunningPod]:
    requests = {"cpu": 1000, "memory": 4 * GI, "pods": 1}
    out = []
    for i in range(count):
        share = i % 4 == 0
        annotations = (
            {
                "alibabacloud.com/gpu-milli": "250" if i % 8 == 0 else "500",
                "alibabacloud.com/gpu-index": str((i // len(names)) % 8),
            }
            if share
            else {}
        )
        out.append(
            RunningPod(
                key=f"default/r-{i}",
                node=names[i % len(names)],
                requests=requests,
                annotations=annotations,
            )
        )
    return out


def job() -> tuple[list[Pod], Gang]:
    gid = "default/share"
    pods = []
    for i in range(512):
        kai = i % 2 == 0
        pods.append(
            Pod(
                namespace="default",
                name=f"share-{i:03d}",
                annotations={"gpu-fraction": "0.5"}
                if kai
                else {"alibabacloud.com/gpu-milli": "300"},
                requests={"cpu": 4000, "pods": 1},
                gang=gid,
            )
        )
    g = Gang(
        id=gid,
        namespace="default",
        name="share",
        dialect="scheduling.sigs.k8s.io",
        min_member=512,
        total_number=512,
        members=tuple(p.key for p in pods),
    )
    return pods, g


def measure(snapshot: Snapshot, engine: str, reps: int) -> dict[str, Any]:
    pods, g = job()
    conf = SchedulerConf.default()
    times = []
    decision = None
    for _ in range(reps):
        workload = Workload.of(snapshot, pods, gangs_given={g.id: g})
        started = time.perf_counter()
        decision = schedule(
            snapshot, conf, workload=workload, engine=engine, workers=1, seed=0, time_limit=60
        )
        times.append(time.perf_counter() - started)
    assert decision is not None
    placed = [p for p in decision.placements.values() if p.node]
    devices = {(p.node, d) for p in placed for d in p.devices}
    return {
        "seconds": statistics.median(times),
        "placed": len(placed),
        "nodes": len({p.node for p in placed}),
        "devices": len(devices),
        "status": decision.status,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--running", type=int, nargs="+", default=[0, 20_000, 100_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["greedy", "cpsat"])
    parser.add_argument("--out", default=str(HERE / "results.json"))
    args = running_pods_args(parser)
    base = nodes()
    names = [n.name for n in base]
    source = provenance()  # before the runs: the code they measure
    rows = []
    for count in args.running:
        snapshot = Snapshot.build(base, running(count, names), schema=SCHEMA)
        for engine in args.engines:
            result = measure(snapshot, engine, args.reps)
            rows.append({"running": count, "engine": engine, **result})
            print(
                f"| {count:>7,} | {engine:6} | {result['seconds'] * 1000:9.0f} ms "
                f"| {result['placed']} placed on {result['devices']} devices of "
                f"{result['nodes']} nodes | {result['status']} |",
                flush=True,
            )
    write_results(args.out, source, rows)


if __name__ == "__main__":
    main()
