"""Kueue's ClusterQueues: what the admission cycles cost a call, classical and fair sharing.

    .venv/bin/python benchmarks/fairshare/kueue.py              # the committed run
    .venv/bin/python benchmarks/fairshare/kueue.py --smoke      # seconds

The cluster of `benchmarks/scale` (10,240 nodes of 8 GPUs, 96 cpus, 1 TiB), one
ResourceFlavor (no node labels: every node), and `--cohorts` cohorts of `--per` ClusterQueues
(cpu, memory and GPUs nominal: the cluster split evenly; every ClusterQueue may borrow),
each with one LocalQueue. 0 or 100,000 running pods (1 cpu, 4 Gi, every 10th with a GPU)
labelled round-robin with the LocalQueues. In this process (codec -> Snapshot ->
`schedule`, the greedy, verified), p50 / p99 over `--reps` calls of: one 64-pod gang (4
GPUs each), and `--gangs` gangs of 4 one-GPU pods spread over the LocalQueues in one call
(every cycle takes a head per ClusterQueue); under Kueue's classical order and with
`fairSharing` (the tournament by dominant resource share). With running pods, also the
first one-gang call on each of `--reps` generations after a delta removing 1,000 running
pods (what the running usage kept by deltas costs a new generation). Rows go to
kueue.json with the git SHA and the machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.fairshare.run import caller  # noqa: E402
from benchmarks.results import provenance, write_results  # noqa: E402
from benchmarks.scale.run import NODES, gang_job, job, node, running_pod, timed  # noqa: E402
from gangplan.v1 import cluster_pb2 as pb  # noqa: E402
from solver import SCHEMA, SchedulerConf  # noqa: E402
from solver.codec import snapshot_from_proto  # noqa: E402
from solver.snapshot import Delta  # noqa: E402

GI = 2**30
CLASSICAL = SchedulerConf.default()
FAIR = CLASSICAL.model_copy(update={"fair_sharing": True})
KUEUE = "kueue.x-k8s.io/queue-name"


def cluster(running: int, cohorts: int, per: int) -> tuple[pb.Cluster, list[str]]:
    queues, locals_ = [], []
    count = cohorts * per
    share = {"cpu": NODES * 96_000 // count, "memory": NODES * 1024 * GI // count,
             "nvidia.com/gpu": NODES * 8 // count}  # fmt: skip
    for c in range(cohorts):
        queues.append(pb.Queue(name=f"org{c}", kueue=pb.KueueQueue(kind="Cohort")))
        for k in range(per):
            name = f"cq{c}-{k}"
            group = pb.KueueResourceGroup(
                covered_resources=list(share),
                flavors=[pb.KueueFlavorQuotas(name="default", resources=[
                    pb.KueueResourceQuota(name=r, nominal_quota=v) for r, v in share.items()])],
            )  # fmt: skip
            kueue = pb.KueueQueue(kind="ClusterQueue", resource_groups=[group])
            kueue.fair_weight = 1 + k % 3
            queues.append(pb.Queue(name=name, parent=f"org{c}", kueue=kueue))
            local = f"bench/{name}"
            locals_.append(name)
            queues.append(pb.Queue(name=local, parent=name, kueue=pb.KueueQueue(kind="LocalQueue")))
    pods = [running_pod(i) for i in range(running)]
    for i, p in enumerate(pods):
        p.annotations.clear()
        p.namespace = "bench"
        p.labels[KUEUE] = locals_[i % len(locals_)]
    return pb.Cluster(nodes=[node(i) for i in range(NODES)], pods=pods, queues=queues), locals_


def labelled(parts: list[tuple[list[pb.Gang], list[pb.Pod]]], queues: list[str]) -> pb.Job:
    for g, (_, pods) in enumerate(parts):
        for p in pods:
            p.labels[KUEUE] = queues[g % len(queues)]
    return job(*parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--per", type=int, default=100, help="ClusterQueues per cohort")
    parser.add_argument("--gangs", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--running", type=int, nargs="+", default=[0, 100_000])
    args = parser.parse_args()
    if args.smoke:
        args.cohorts, args.per, args.gangs, args.reps, args.running = 2, 5, 20, 1, [0, 2000]
    rows: list[dict[str, Any]] = []
    for running in args.running:
        pbc, queues = cluster(running, args.cohorts, args.per)
        snapshot = snapshot_from_proto(pbc, "cluster", SCHEMA)
        row: dict[str, Any] = {"running_pods": running, "cluster_queues": len(queues)}
        for label, conf in (("classical", CLASSICAL), ("fair", FAIR)):
            call = caller(snapshot, conf)
            one = [labelled([gang_job(f"g64-{k}", 64, {"cpu": 8000, "memory": 32 * GI,
                                                        "nvidia.com/gpu": 4})], queues[3:4])
                   for k in range(args.reps)]  # fmt: skip
            row[f"{label}_one"], _ = timed(call, one)
            many = [labelled([gang_job(f"m{k}-{g:05d}", 4, {"cpu": 2000, "memory": 8 * GI,
                                                             "nvidia.com/gpu": 1})
                              for g in range(args.gangs)], queues)
                    for k in range(max(1, args.reps - 1))]  # fmt: skip
            row[f"{label}_many"], decision = timed(call, many)
            row[f"{label}_many_placed"] = len(decision.placed)
        if running:  # the first call on the generations after a delta of 1,000 removed pods
            later, times = snapshot, []
            for k in range(args.reps):
                gone = later.running.keys(later.running.rows()[:1000])
                later = later.apply(Delta(remove_pods=tuple(gone)))
                first = [labelled([gang_job(f"d64-{k}", 64, {"cpu": 8000, "memory": 32 * GI,
                                                           "nvidia.com/gpu": 4})], queues[3:4])]  # fmt: skip
                times.append(timed(caller(later, CLASSICAL), first)[0]["p50_ms"])
            row["after_delta_one_ms"] = sorted(times)
        rows.append(row)
        print(row, flush=True)
    out = Path(__file__).with_name("kueue.json")
    if args.smoke:
        out = Path(tempfile.mkdtemp()) / out.name
    write_results(out, provenance(), rows)


if __name__ == "__main__":
    main()
