"""Why a gang waits: the time to a certificate for gangs that cannot fit, on a busy cluster.

    .venv/bin/python benchmarks/why/run.py              # the committed run (~4 min)
    .venv/bin/python benchmarks/why/run.py --smoke      # seconds

Cluster: 10,240 nodes = 20 spines × 16 blocks × 32 nodes (`benchmarks/scale`'s tree and
nodes, 8 GPUs and 96 cpu each, plus `kubernetes.io/hostname` labels), a Koordinator
ClusterNetworkTopology over them, queues `eng` (capability 64 GPUs) and its child `eng-a`
besides `benchmarks/scale`'s ten, and `--running` running pods (1 cpu, 4 Gi, every 10th
with a GPU, round-robin). One call per gang, in this process (codec -> Snapshot ->
schedule), one CP-SAT worker:

- `domain`: 300 × 1 GPU, MustGather in one block (a block has 256 GPUs);
- `capacity`: 600 × 8 GPUs on the 512 nodes of spine-00 (4,096 GPUs);
- `quota`: 80 × 1 GPU in queue eng-a, whose parent eng is capped at 64 GPUs;
- `anti-affinity`: 40 pods, one per node (required anti-affinity by hostname), on the
  32 nodes of block-000.

Measured per case, engine and count of running pods: the whole call (p50 / p99 over
`--reps`), the certificate's own share (`stats.why_seconds`), and the certificate's kind
and whether it is proven. Rows go to results.json with the git SHA and the machine.
`--changes`: the `capacity` gang's changes and start estimate, timed, to
results_changes.json.
The anchor: KAI-Scheduler's nightly scale test takes 249.5 s on average to call a 10-pod,
80-GPU job unschedulable.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results import provenance, running_pods_args, write_results  # noqa: E402
from benchmarks.scale.run import (  # noqa: E402
    BLOCK,
    NODES,
    SPINE,
    cluster,
    gang_job,
    job,
    node,
    timed,
)
from gangplan.v1 import cluster_pb2 as pb  # noqa: E402
from solver import SCHEMA, SchedulerConf, Workload, schedule  # noqa: E402
from solver.changes import changes  # noqa: E402
from solver.codec import job_from_proto, snapshot_from_proto  # noqa: E402
from solver.snapshot import Delta  # noqa: E402
from solver.start import estimate, running_ends  # noqa: E402

HOST = "kubernetes.io/hostname"
GATHER = "gang.scheduling.koordinator.sh/network-topology-spec"
MUST_BLOCK = json.dumps({"gatherStrategy": [{"layer": "BlockLayer", "strategy": "MustGather"}]})


def the_cluster(running: int) -> pb.Cluster:
    msg = cluster(running)
    del msg.nodes[:]
    for i in range(NODES):
        n = node(i)
        n.labels[HOST] = n.name
        msg.nodes.append(n)
    msg.queues.append(pb.Queue(name="eng", capability={"nvidia.com/gpu": 64}))
    msg.queues.append(pb.Queue(name="eng-a", parent="eng"))
    return msg


def domain(k: int) -> pb.Job:
    return job(gang_job(f"dom{k}", 300, {"cpu": 1000, "nvidia.com/gpu": 1},
                        annotations={GATHER: MUST_BLOCK}))  # fmt: skip


def capacity(k: int) -> pb.Job:
    gangs, pods = gang_job(f"cap{k}", 600, {"cpu": 8000, "nvidia.com/gpu": 8})
    for p in pods:
        p.node_selector[SPINE] = "spine-00"
    return job((gangs, pods))


def quota(k: int) -> pb.Job:
    return job(gang_job(f"quo{k}", 80, {"cpu": 1000, "nvidia.com/gpu": 1}, queue="eng-a"))


def anti_affinity(k: int) -> pb.Job:
    gangs, pods = gang_job(f"aa{k}", 40, {"cpu": 1000})
    for p in pods:
        p.labels["app"] = f"aa{k}"
        p.node_selector[BLOCK] = "block-000"
        p.pod_anti_affinity.required.append(
            pb.PodAffinityTerm(
                label_selector=pb.LabelSelector(match_labels={"app": f"aa{k}"}), topology_key=HOST
            )
        )
    return job((gangs, pods))


CASES: dict[str, Callable[[int], pb.Job]] = {
    "domain": domain,
    "capacity": capacity,
    "quota": quota,
    "anti-affinity": anti_affinity,
}


def measure(running: int, engines: list[str], reps: int) -> list[dict[str, Any]]:
    snapshot = snapshot_from_proto(the_cluster(running), "cluster", SCHEMA)
    conf = SchedulerConf.default()
    rows = []
    for name, make in CASES.items():
        for engine in engines:
            whys: list[float] = []
            certs: list[Any] = []

            def call(
                message: pb.Job,
                engine: str = engine,
                whys: list[float] = whys,
                certs: list[Any] = certs,
            ) -> None:
                pods, given, named = job_from_proto(message, "job", snapshot)
                workload = Workload.of(snapshot, pods, named, given)
                d = schedule(snapshot, conf, workload=workload, engine=engine, workers=1, seed=0)
                whys.append(float(d.stats.get("why_seconds", 0.0)))
                certs.extend(d.certificates.values())

            times, _ = timed(call, [make(k) for k in range(reps + 1)])
            kinds = sorted({(c.kind, c.proven) for c in certs})
            rows.append({
                "case": name, "engine": engine, "running": running,
                "call_p50_ms": times["p50_ms"], "call_p99_ms": times["p99_ms"],
                "why_p50_ms": round(1000 * sorted(whys)[len(whys) // 2], 2),
                "why_max_ms": round(1000 * max(whys), 2),
                "certificates": [f"{k}{'' if p else ' (not proven)'}" for k, p in kinds],
                "sentence": certs[-1].sentence if certs else "",
            })  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
    return rows


def what_would(running: int) -> dict[str, Any]:
    """The `capacity` gang's changes (`solver.changes`) and start estimate (`solver.start`),
    timed once each, on the snapshot with the job in it (what the Why RPC does)."""
    snapshot = snapshot_from_proto(the_cluster(running), "cluster", SCHEMA)
    pods, given, _ = job_from_proto(capacity(1), "job", snapshot)
    base = snapshot.apply(Delta(upsert_gangs=tuple(given.values()), upsert_pods=tuple(pods)))
    cert = schedule(base, SchedulerConf.default(), engine="greedy").certificates["bench/cap1"]
    started = time.perf_counter()
    found = changes(base, None, "bench/cap1", cert)
    sized = time.perf_counter()
    ends, unknown = running_ends(base)
    estimate(base, None, "bench/cap1", datetime.now(UTC), ends, unknown)
    done = time.perf_counter()
    row = {
        "running": running,
        "changes_s": round(sized - started, 2),
        "start_s": round(done - sized, 2),
        "changes": [c.text for c in found],
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--running", type=int, nargs="+", default=[0, 20_000, 100_000])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--engines", nargs="+", default=["greedy", "auto"])
    parser.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    parser.add_argument(
        "--changes", action="store_true", help="time the changes and the start estimate instead"
    )
    args = running_pods_args(parser)
    source = provenance()
    if args.changes or args.smoke:
        rows = [what_would(running) for running in args.running]
        out = Path(args.out).with_name("results_changes.json")
        write_results(out, source, rows)
        if args.changes:
            return
    rows = [row for running in args.running for row in measure(running, args.engines, args.reps)]
    write_results(args.out, source, rows)


if __name__ == "__main__":
    main()
