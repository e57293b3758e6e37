"""Fair share (`proportion`): what the weighted deserved shares cost a call.

    .venv/bin/python benchmarks/fairshare/run.py              # the committed run (~3 min)
    .venv/bin/python benchmarks/fairshare/run.py --smoke      # seconds

The cluster of `benchmarks/scale` (10,240 nodes, 8 GPUs each; running pods round-robin,
1 cpu and 4 Gi, every 10th with a GPU), with Q queues of weights 1..10 (queue k: weight
1 + k mod 10) charged round-robin by the running pods. In this process (codec -> Snapshot
-> schedule, the greedy), per count of running pods, p50 / p99 over `--reps` calls of:

- one 64-pod gang (4 GPUs, 8 cpu, 32 Gi each) in queue q3;
- `--gangs` gangs of 4 pods (1 GPU each) spread over the queues, in one call;
- `--elastic` elastic jobs (minMember 1) of 100 one-GPU pods over queues q0..q9, in one
  call: Volcano's allocate loop gives each a pod a turn;

each under `capacity` (every queue capability-limited, the scale benchmark's conf) and
under `proportion` (Volcano's default conf: deserved water-filled by weight over every
queue with jobs), so the difference is the fair share's cost; and the same two calls on
KAI-Scheduler Queues in a 3-level tree (`--fan` 10: 1,110 queues, the gangs in its 1,000
leaves), under KAI's `proportion` (fair share divided down the tree per call). Also: pods placed per queue
weight under proportion (the share it enforces), and the water-fill alone. Rows go to
results.json with the git SHA and the machine; the README reads them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results import provenance, running_pods_args, write_results  # noqa: E402
from benchmarks.scale.run import (  # noqa: E402
    NODES,
    gang_job,
    job,
    node,
    running_pod,
    timed,
)
from gangplan.v1 import cluster_pb2 as pb  # noqa: E402
from solver import SCHEMA, SchedulerConf, Workload, schedule  # noqa: E402
from solver.codec import job_from_proto, snapshot_from_proto  # noqa: E402
from solver.config import conf_from_text  # noqa: E402
from solver.features.proportion import Claim, water_fill  # noqa: E402

GI = 2**30
CAPACITY = conf_from_text(
    'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: gang\n'
    "  - name: binpack\n  - name: capacity\n",
    "capacity",
)
KAI = SchedulerConf.default()  # KAI's Queues: KAI's proportion, whatever the conf lists
PROPORTION = conf_from_text(
    'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: gang\n'
    "  - name: binpack\n  - name: proportion\n",
    "proportion",
)


def cluster(running: int, queues: int) -> pb.Cluster:
    pods = [running_pod(i) for i in range(running)]
    for i, p in enumerate(pods):
        p.annotations["scheduling.volcano.sh/queue-name"] = f"q{i % queues}"
    return pb.Cluster(
        nodes=[node(i) for i in range(NODES)],
        pods=pods,
        queues=[
            pb.Queue(
                name=f"q{k}",
                weight=1 + k % 10,
                capability={"cpu": 10_000_000, "nvidia.com/gpu": 100_000},
            )
            for k in range(queues)
        ],
    )


def kai_queue(name: str, parent: str, quota: float, weight: float) -> pb.Queue:
    return pb.Queue(
        name=name,
        parent=parent,
        kai=pb.KaiQueueResources(
            quota={"nvidia.com/gpu": quota, "cpu": -1, "memory": -1},
            limit={"nvidia.com/gpu": -1, "cpu": -1, "memory": -1},
            over_quota_weight={"nvidia.com/gpu": weight, "cpu": 1, "memory": 1},
        ),
    )


def kai_cluster(running: int, fan: int) -> tuple[pb.Cluster, list[str]]:
    """KAI Queues in a 3-level tree of `fan` departments x `fan` sub-departments x `fan`
    leaves (GPU quota 8 a leaf, 80 a sub-department, 800 a department; over-quota weights
    1..3); the running pods labelled `kai.scheduler/queue` round-robin over the leaves."""
    queues, leaves = [], []
    for a in range(fan):
        queues.append(kai_queue(f"d{a}", "", 800, 1 + a % 3))
        for b in range(fan):
            queues.append(kai_queue(f"d{a}s{b}", f"d{a}", 80, 1 + b % 3))
            for c in range(fan):
                leaves.append(f"d{a}s{b}q{c}")
                queues.append(kai_queue(leaves[-1], f"d{a}s{b}", 8, 1 + c % 3))
    pods = [running_pod(i) for i in range(running)]
    for i, p in enumerate(pods):
        p.labels["kai.scheduler/queue"] = leaves[i % len(leaves)]
    return pb.Cluster(nodes=[node(i) for i in range(NODES)], pods=pods, queues=queues), leaves


def one_gang(k: int) -> pb.Job:
    requests = {"cpu": 8000, "memory": 32 * GI, "nvidia.com/gpu": 4}
    return job(gang_job(f"g64-{k}", 64, requests, queue="q3"))


def many(k: int, gangs: int, queues: int) -> pb.Job:
    requests = {"cpu": 2000, "memory": 8 * GI, "nvidia.com/gpu": 1}
    return job(
        *(gang_job(f"m{k}-{g:05d}", 4, requests, queue=f"q{g % queues}") for g in range(gangs))
    )


def elastic(k: int, jobs: int, pods: int) -> pb.Job:
    """`jobs` elastic jobs (minMember 1) of `pods` one-GPU pods over queues q0..q9: Volcano's
    allocate loop gives them a pod a turn (`features/queues/loop.py`)."""
    requests = {"cpu": 2000, "memory": 8 * GI, "nvidia.com/gpu": 1}
    parts = [gang_job(f"e{k}-{j:03d}", pods, requests, queue=f"q{j % 10}") for j in range(jobs)]
    for gangs, _ in parts:
        for gang in gangs:
            gang.min_member = 1
    return job(*parts)


def caller(snapshot: Any, conf: Any) -> Callable[[pb.Job], Any]:
    def call(message: pb.Job) -> Any:
        pods, given, named = job_from_proto(message, "job", snapshot)
        workload = Workload.of(snapshot, pods, named, given)
        return schedule(snapshot, conf, workload=workload, engine="greedy")

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--running", type=int, nargs="+", default=[0, 100_000])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=1000)
    parser.add_argument("--fan", type=int, default=10, help="KAI tree: fan^3 leaf queues")
    parser.add_argument("--elastic", type=int, default=20, help="elastic jobs of 100 pods")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--engines", nargs="+", default=["greedy"])
    parser.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    args = running_pods_args(parser)
    if args.smoke:
        args.queues, args.gangs, args.fan, args.elastic = 20, 20, 3, 2
    source = provenance()
    rows = []
    for running in args.running:
        snapshot = snapshot_from_proto(cluster(running, args.queues), "cluster", SCHEMA)
        row: dict[str, Any] = {"running": running, "queues": args.queues, "gangs": args.gangs}
        for name, conf in (("capacity", CAPACITY), ("proportion", PROPORTION)):
            call = caller(snapshot, conf)

            k = iter(range(10**9))
            call(one_gang(next(k)))  # warm the snapshot's memos
            row[f"{name}_one"], _ = timed(call, [one_gang(next(k)) for _ in range(args.reps)])
            inputs = [many(next(k), args.gangs, args.queues) for _ in range(max(2, args.reps // 2))]
            row[f"{name}_many"], decision = timed(call, inputs)
            row[f"{name}_many_placed"] = len(decision.placed)
            inputs = [elastic(next(k), args.elastic, 100) for _ in range(max(2, args.reps // 2))]
            row[f"{name}_elastic"], decision = timed(call, inputs)
            row[f"{name}_elastic_placed"] = len(decision.placed)
            if name == "proportion":
                by_weight: dict[int, int] = {}
                for key in decision.placed:
                    g = int(key.split("-")[-2]) % args.queues
                    by_weight[1 + g % 10] = by_weight.get(1 + g % 10, 0) + 1
                row["proportion_placed_by_weight"] = dict(sorted(by_weight.items()))
        kai, leaves = kai_cluster(running, args.fan)
        snapshot = snapshot_from_proto(kai, "cluster", SCHEMA)
        call = caller(snapshot, KAI)
        k = iter(range(10**9))
        big = {"cpu": 8000, "memory": 32 * GI, "nvidia.com/gpu": 4}
        small = {"cpu": 2000, "memory": 8 * GI, "nvidia.com/gpu": 1}
        call(job(gang_job(f"kw{next(k)}", 64, big, queue=leaves[3])))  # warm the memos
        row["kai_queues"] = len(kai.queues)
        row["kai_one"], _ = timed(
            call, [job(gang_job(f"k{next(k)}", 64, big, queue=leaves[3])) for _ in range(args.reps)]
        )
        inputs = [
            job(*(gang_job(f"km{next(k)}-{g:05d}", 4, small, queue=leaves[g % len(leaves)])
                  for g in range(args.gangs)))
            for _ in range(max(2, args.reps // 2))
        ]  # fmt: skip
        row["kai_many"], decision = timed(call, inputs)
        row["kai_many_placed"] = len(decision.placed)
        claims = {
            f"q{k}": Claim(
                1 + k % 10, {}, {"cpu": 8000 * (k + 1), "nvidia.com/gpu": 4 * (k + 1)}, {}
            )
            for k in range(args.queues)
        }
        total = {"cpu": NODES * 96_000, "nvidia.com/gpu": NODES * 8}
        row["water_fill"], _ = timed(partial(water_fill, total), [claims] * args.reps)
        print(row, flush=True)
        rows.append(row)
    write_results(args.out, source, rows)


if __name__ == "__main__":
    main()
