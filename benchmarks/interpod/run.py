"""Inter-pod terms at cluster scale: a 512-pod one-per-node gang and a zone-spread gang.

    .venv/bin/python benchmarks/interpod/run.py              # the committed run
    .venv/bin/python benchmarks/interpod/run.py --running 0 --reps 1   # a quick look

Cluster: 10,240 nodes (32 zones × 320 nodes, `kubernetes.io/hostname` and `zone` labels),
each 96 cpu / 1 TiB / 8 GPUs. Running pods: 1 cpu / 4 Gi on node i mod 10,240, labelled
`app=svc-(i mod 50)`; every 100th carries required anti-affinity against `app=batch` by
zone (its zone repels batch pods), and every 70th is labelled `app=train` (the gang's own
label: the one-per-node term sees them). Counts of running pods vary: 0, 20k, 100k.

Gangs (one PlaceJob each, through `schedule`: compile, engine, verify):

- anti-512:   512 pods × (1 GPU, 8 cpu) labelled app=train, required anti-affinity
              app=train by hostname (one worker per node, none beside a running trainer);
- spread-512: 512 pods × (1 GPU, 8 cpu) labelled app=web, DoNotSchedule spread by zone,
              maxSkew 1 (16 per zone).

Engines: greedy, and cpsat (1 worker, seed 0, 60 s budget). Each figure is the median of
`--reps` calls (the first call of a snapshot generation pays the per-generation counts).
Results: results.json beside this file (git SHA, machine) and a table on stdout.
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
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results import running_pods_args  # noqa: E402
from solver import SchedulerConf, Workload, schedule  # noqa: E402
from solver.model import (  # noqa: E402
    Gang,
    InterPodTerms,
    LabelSelector,
    Node,
    Pod,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from solver.snapshot import RunningPod, Snapshot  # noqa: E402

HERE = Path(__file__).resolve().parent
ZONES, PER_ZONE = 32, 320
HOST = "kubernetes.io/hostname"
GI = 2**30


def nodes() -> list[Node]:
    return [
        Node(
            name=f"n{z:02d}-{i:03d}",
            labels={HOST: f"n{z:02d}-{i:03d}", "zone": f"z{z:02d}"},
            allocatable={"cpu": 96_000, "memory": 1024 * GI, "pods": 110, "nvidia.com/gpu": 8},
        )
        for z in range(ZONES)
        for i in range(PER_ZONE)
    ]


def running(count: int, names: list[str], unique: bool = False) -> list[RunningPod]:
    """`unique`: every pod also carries its own `pod-name` label (as StatefulSet pods do),
    so the snapshot holds one label set per pod."""
    guard = InterPodTerms(
        anti_affinity=(
            PodAffinityTerm(
                selector=LabelSelector(match_labels=(("app", "batch"),)),
                namespaces=("default",),
                topology_key="zone",
            ),
        )
    )
    requests = {"cpu": 1000, "memory": 4 * GI, "pods": 1}
    labels = [{"app": f"svc-{k}"} for k in range(50)]
    trainer = {"app": "train"}
    return [
        RunningPod(
            key=f"default/r-{i}",
            node=names[i % len(names)],
            requests=requests,
            labels={**(trainer if i % 70 == 0 else labels[i % 50]), "pod-name": f"r-{i}"}
            if unique
            else trainer
            if i % 70 == 0
            else labels[i % 50],
            terms=guard if i % 100 == 0 else None,
        )
        for i in range(count)
    ]


def gang(kind: str) -> tuple[list[Pod], Gang]:
    app = "train" if kind == "anti" else "web"
    selector = LabelSelector(match_labels=(("app", app),))
    inter_pod = None
    spread: tuple[TopologySpreadConstraint, ...] = ()
    if kind == "anti":
        term = PodAffinityTerm(selector=selector, namespaces=("default",), topology_key=HOST)
        inter_pod = InterPodTerms(anti_affinity=(term,))
    else:
        spread = (
            TopologySpreadConstraint(
                max_skew=1,
                topology_key="zone",
                when_unsatisfiable="DoNotSchedule",
                selector=selector,
            ),
        )
    gid = f"default/{kind}"
    pods = [
        Pod(
            namespace="default",
            name=f"{kind}-{i:03d}",
            labels={"app": app},
            requests={"cpu": 8000, "nvidia.com/gpu": 1, "pods": 1},
            inter_pod=inter_pod,
            spread=spread,
            gang=gid,
        )
        for i in range(512)
    ]
    g = Gang(
        id=gid,
        namespace="default",
        name=kind,
        dialect="scheduling.sigs.k8s.io",
        min_member=512,
        total_number=512,
        members=tuple(p.key for p in pods),
    )
    return pods, g


def measure(snapshot: Snapshot, kind: str, engine: str, reps: int) -> dict[str, Any]:
    pods, g = gang(kind)
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
    placed = [p.node for p in decision.placements.values() if p.node]
    zones = Counter(n.split("-")[0] for n in placed)
    return {
        "seconds": statistics.median(times),
        "placed": len(placed),
        "distinct_nodes": len(set(placed)),
        "zone_spread": [min(zones.values(), default=0), max(zones.values(), default=0)],
        "status": decision.status,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--running", type=int, nargs="+", default=[0, 20_000, 100_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["greedy", "cpsat"])
    parser.add_argument("--unique-labels", action="store_true", help="one label set per pod")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    args = running_pods_args(parser)
    base = nodes()
    names = [n.name for n in base]
    rows = []
    for count in args.running:
        snapshot = Snapshot.build(base, running(count, names, args.unique_labels))
        for kind in ("anti", "spread"):
            for engine in args.engines:
                result = measure(snapshot, kind, engine, args.reps)
                rows.append({"running": count, "gang": f"{kind}-512", "engine": engine, **result})
                print(
                    f"| {count:>7,} | {kind}-512 | {engine:6} | {result['seconds'] * 1000:9.0f} ms "
                    f"| {result['placed']} placed on {result['distinct_nodes']} nodes, zones "
                    f"{result['zone_spread'][0]}..{result['zone_spread'][1]} | {result['status']} |",
                    flush=True,
                )
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    out = {
        "git": sha,
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
