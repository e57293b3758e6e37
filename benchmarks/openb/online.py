"""Online replay of the openb arrivals through gangplan's own PlaceJob path.

    .venv/bin/python benchmarks/openb/online.py               # seed 0, both policies
    .venv/bin/python benchmarks/openb/online.py --limit 500   # a quick look

The FGD study's workload (`replay.py`: the default pod list inflated to 130% of the GPU
capacity, seed 0) arrives pod by pod, in order, with no lookahead: each arrival is one
`schedule` call (compile, greedy, verify — what the PlaceJob RPC runs) on the current
snapshot, and a placed pod is bound into the snapshot (`Snapshot.apply`, what UpdateSnapshot
does) as a running pod carrying its openb annotations (`alibabacloud.com/gpu-milli`,
`gpu-count`, and the `gpu-index` gangplan wrote). A pod that does not fit is dropped, as in
the simulator. GPU models: node label `alibabacloud.com/gpu-card-model`, a pod's
`gpu_spec` as required node affinity.

Policies: `binpack` (gangplan's default: Volcano binpack and nodeorder choose the node, best
fit the device) and `fgd` (`deviceshare.SchedulePolicy: fgd`, target workload = the
simulator's typical shapes of the pod list; GPU-model access of a shape is not modelled).
`--weight`: deviceshare.ScheduleWeight of the FGD score (1 and 1000: FGD's score is a
sigmoid close to 50 whose spread is small beside binpack's 0-100, and the simulator runs it
alone). Reported: the GPU allocation ratio at 130% arrived (the published metric), pods placed and
the time per call. Results: online.json beside this file (git SHA, machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from replay import (  # noqa: E402
    DATA,
    MILLI,
    Cluster,
    Pods,
    arrivals,
    discrete_alloc,
    load_cluster,
    load_pods,
    typical_shapes,
)

from benchmarks.results import provenance, write_results  # noqa: E402
from solver import SCHEMA, Workload, schedule  # noqa: E402
from solver.config import PluginConf, SchedulerConf, TierConf  # noqa: E402
from solver.model import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod  # noqa: E402
from solver.snapshot import Delta, RunningPod, Snapshot  # noqa: E402

MODEL = "alibabacloud.com/gpu-card-model"
MIB = 2**20


def nodes(c: Cluster) -> list[Node]:
    return [
        Node(
            name=f"node-{i:04d}",
            labels={MODEL: c.models[int(c.model[i])]} if c.model[i] >= 0 else {},
            allocatable={
                "cpu": int(c.cpu[i]),
                "memory": int(c.mem[i]) * MIB,
                "pods": 100_000,
                "nvidia.com/gpu": int(c.gpus[i]),
            },
        )
        for i in range(len(c.cpu))
    ]


def pod(p: Pods, i: int, t: int) -> Pod:
    k, milli = int(p.ngpu[i]), int(p.milli[i])
    key = f"openb/a{t:05d}"
    affinity = None
    if k and p.spec[i]:
        term = NodeSelectorTerm(
            match_expressions=(
                NodeSelectorRequirement(
                    key=MODEL, operator="In", values=tuple(p.spec[i].split("|"))
                ),
            )
        )
        affinity = (term,)
    return Pod(
        namespace="openb",
        name=key.split("/")[1],
        annotations={"alibabacloud.com/gpu-milli": str(milli), "alibabacloud.com/gpu-count": str(k)}
        if k
        else {},
        requests={"cpu": int(p.cpu[i]), "memory": int(p.mem[i]) * MIB, "pods": 1},
        required_affinity=affinity,
        gang=key,
    )


def conf(policy: str, p: Pods, weight: float) -> SchedulerConf | None:
    if policy == "binpack":
        return None
    shapes, counts = typical_shapes(p)
    target = [
        {"cpu": cpu, "gpuMilli": milli, "gpus": k, "count": int(n)}
        for (cpu, milli, k, _), n in zip(shapes, counts.tolist(), strict=True)
    ]
    base = SchedulerConf.default()
    args = {
        "deviceshare.SchedulePolicy": "fgd",
        "deviceshare.ScheduleWeight": weight,
        "deviceshare.fgd.targetWorkload": target,
    }
    plugins = [
        *base.tiers[0].plugins,
        PluginConf.model_validate({"name": "deviceshare", "arguments": args}),
    ]
    return base.model_copy(update={"tiers": (TierConf(plugins=plugins), *base.tiers[1:])})


def run(policy: str, limit: int | None, seed: int, weight: float) -> dict[str, Any]:
    cluster = load_cluster()
    pods = load_pods(DATA / "openb_pod_list_default.csv", cluster.models)
    capacity = int(cluster.gpus.sum()) * MILLI
    order = arrivals(pods, capacity, seed)[:limit]
    c = conf(policy, pods, weight)
    snapshot = Snapshot.build(nodes(cluster), schema=SCHEMA)
    allocated, total, placed = 0, 0, 0
    arrived = np.zeros(len(order), dtype=np.int64)
    used = np.zeros(len(order), dtype=np.int64)
    times = []
    for t, i in enumerate(order.tolist()):
        arrival = pod(pods, i, t)
        started = time.perf_counter()
        decision = schedule(snapshot, c, workload=Workload.of(snapshot, [arrival]), engine="greedy")
        times.append(time.perf_counter() - started)
        where = decision.placements[arrival.key]
        demand = int(pods.ngpu[i] * pods.milli[i])
        total += demand
        if where.node is not None:
            placed += 1
            allocated += demand
            bound = RunningPod(
                key=arrival.key,
                node=where.node,
                requests=arrival.requests,
                annotations={**arrival.annotations, **where.annotations},
            )
            snapshot = snapshot.apply(Delta(upsert_pods=(bound,)))
        arrived[t], used[t] = total, allocated
    return {
        "policy": policy,
        "weight": weight if policy == "fgd" else None,
        "seed": seed,
        "arrived": len(order),
        "placed": placed,
        "gpu_alloc_ratio": allocated / capacity,
        "gpu_alloc_ratio_at_130": discrete_alloc(arrived, used, capacity, 130),
        "median_call_ms": 1000 * statistics.median(times),
        "p99_call_ms": 1000 * float(np.percentile(times, 99)),
        "seconds": sum(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policies", nargs="+", default=["binpack", "fgd"])
    parser.add_argument("--limit", type=int, default=None, help="first N arrivals only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weight", type=float, nargs="+", default=[1.0, 1000.0])
    parser.add_argument("--out", default=str(HERE / "online.json"))
    args = parser.parse_args()
    source = provenance()  # before the runs: the code they measure
    rows = []
    for policy in args.policies:
        for weight in args.weight if policy == "fgd" else [1.0]:
            row = run(policy, args.limit, args.seed, weight)
            rows.append(row)
            print(json.dumps(row), flush=True)
    write_results(args.out, source, rows)


if __name__ == "__main__":
    main()
