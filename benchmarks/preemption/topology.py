"""Topology preemption: a 256-pod gang that must run inside one block, on 5,000 full nodes.

    .venv/bin/python benchmarks/preemption/topology.py            # the committed run
    .venv/bin/python benchmarks/preemption/topology.py --smoke    # seconds

Cluster: 5,000 nodes × 8 GPUs = 50 blocks × 5 racks × 20 nodes (labels `block`, `rack`,
`kubernetes.io/hostname`), every GPU taken: with `--running 20000`, 4 pods of 2 GPUs per
node; with `--running 100000`, those plus 16 cpu-only pods per node (every one a potential
victim). Pods come in jobs of 10 scattered over random nodes, job priorities 1–5 (seeded).
The gang: 256 pods × 2 GPUs (priority 1000, all required) inside one block (800 GPUs), in
each dialect gangplan reads: the Workload API's topology key, Godel's required topology,
Kueue's `podset-required-topology`, a Volcano HyperNode `highestTierAllowed` (racks tier 1,
blocks tier 2) and Koordinator's MustGather (`BlockLayer`).

Measured per dialect, running level and seed: the preemption step alone (greedy: the
per-domain dry run and reprieve; p50 / p99 over `--reps` on seed 0, 3 on the others; full
garbage collections held, as `schedule` holds them around every call), then
CP-SAT (`exact`, `--cpsat-limit` seconds covering its model, 2 workers, seed 0): cost
(Σ rank of evicted jobs, then pods) against the greedy's, and whether it is strictly
cheaper. Seed 0's plans also go through `schedule` (so `verify`) once per dialect.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.preemption.run import dry_run_input  # noqa: E402
from solver import SchedulerConf, schedule  # noqa: E402
from solver.collector import full_collections_held  # noqa: E402
from solver.features.preemption import preempt  # noqa: E402
from solver.kube import RawObject, build_model  # noqa: E402
from solver.model import ClusterModel, Gang, Pod  # noqa: E402
from solver.snapshot import gang_of_one  # noqa: E402

HERE = Path(__file__).resolve().parent
GPU = "nvidia.com/gpu"
JOB = "scheduling.koordinator.sh/questioned-object-key"
BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
POOL = {"pool": "tas"}
Objects = list[dict[str, Any]]


def shape(smoke: bool) -> tuple[int, int, int, int]:
    """(blocks, racks per block, nodes per rack, gang pods)."""
    return (5, 5, 4, 16) if smoke else (50, 5, 20, 256)


def node_objects(blocks: int, racks: int, per_rack: int) -> Objects:
    out = []
    for b in range(blocks):
        for r in range(racks):
            for i in range(per_rack):
                name = f"b{b:02d}-r{r}-n{i:02d}"
                labels = {BLOCK: f"b{b:02d}", RACK: f"b{b:02d}-r{r}", HOST: name, **POOL}
                out.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {"name": name, "labels": labels},
                        "status": {
                            "allocatable": {
                                "cpu": "64",
                                "memory": "256Gi",
                                GPU: "8",
                                "pods": "110",
                            }
                        },
                    }
                )
    return out


def member(
    i: int, annotations: dict[str, str], labels: dict[str, str], **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"hi-{i:03d}",
            "namespace": "train",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "priority": 1000,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", GPU: "2"}}}],
            **spec,
        },
    }


def gang_objects(dialect: str, size: int, blocks: int, racks: int) -> Objects:
    sigs = {"scheduling.x-k8s.io/pod-group": "hi"}
    group: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "hi", "namespace": "train", "annotations": {}},
        "spec": {"minMember": size},
    }
    if dialect == "workload-api":
        pg = {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "hi", "namespace": "train"},
            "spec": {
                "schedulingPolicy": {"gang": {"minCount": size}},
                "schedulingConstraints": {"topology": [{"key": BLOCK}]},
                "priority": 1000,
            },
        }
        spec = {"schedulingGroup": {"podGroupName": "hi"}}
        return [pg, *(member(i, {}, {}, **spec) for i in range(size))]
    if dialect == "godel":
        pg = {
            "apiVersion": "scheduling.godel.kubewharf.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "hi", "namespace": "train"},
            "spec": {
                "minMember": size,
                "affinity": {"podGroupAffinity": {"required": [{"topologyKey": BLOCK}]}},
            },
        }
        ann = {"godel.bytedance.com/pod-group-name": "hi"}
        return [pg, *(member(i, ann, {}) for i in range(size))]
    if dialect == "kueue":
        topology = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {"levels": [{"nodeLabel": lv} for lv in (BLOCK, RACK, HOST)]},
        }
        flavor = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "tas"},
            "spec": {"nodeLabels": POOL, "topologyName": "default"},
        }
        ann = {"kueue.x-k8s.io/podset-required-topology": BLOCK}
        return [topology, flavor, group, *(member(i, ann, sigs) for i in range(size))]
    if dialect == "hypernode":
        objects: Objects = []
        for b in range(blocks):
            children = []
            for r in range(racks):
                name = f"b{b:02d}-r{r}"
                children.append(name)
                objects.append(_hypernode(name, 1, [_label_member(RACK, name)]))
            objects.append(
                _hypernode(
                    f"b{b:02d}",
                    2,
                    [
                        {"type": "HyperNode", "selector": {"exactMatch": {"name": c}}}
                        for c in children
                    ],
                )
            )
        pg = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "hi", "namespace": "train"},
            "spec": {
                "minMember": size,
                "queue": "default",
                "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
            },
        }
        ann = {"scheduling.k8s.io/group-name": "hi"}
        return [*objects, pg, *(member(i, ann, {}) for i in range(size))]
    if dialect == "koordinator":
        cnt: dict[str, Any] = {
            "apiVersion": "scheduling.koordinator.sh/v1alpha1",
            "kind": "ClusterNetworkTopology",
            "metadata": {"name": "default"},
            "spec": {
                "networkTopologySpec": [
                    {"topologyLayer": "BlockLayer", "labelKey": [BLOCK]},
                    {
                        "topologyLayer": "RackLayer",
                        "parentTopologyLayer": "BlockLayer",
                        "labelKey": [RACK],
                    },
                    {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "RackLayer"},
                ]
            },
        }
        gather = {"gatherStrategy": [{"layer": "BlockLayer", "strategy": "MustGather"}]}
        group["metadata"]["annotations"] = {
            "gang.scheduling.koordinator.sh/network-topology-spec": json.dumps(gather)
        }
        return [cnt, group, *(member(i, {}, sigs) for i in range(size))]
    raise ValueError(dialect)


def _label_member(key: str, value: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"labelMatch": {"matchLabels": {key: value}}}}


def _hypernode(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }


def running_pods(
    seed: int, node_names: list[str], running: int
) -> tuple[list[Pod], dict[str, Gang]]:
    """Every GPU taken by 2-GPU pods (4 a node); the rest of `running` cpu-only pods."""
    rng = np.random.default_rng(seed)
    gpu_pods = 4 * len(node_names)
    slots = [n for n in node_names for _ in range(4)]
    order = rng.permutation(len(slots))
    cpu_per_node = max(0, (running - gpu_pods) // len(node_names))
    pods: list[Pod] = []
    gangs: dict[str, Gang] = {}
    placements = [slots[k] for k in order] + [
        n for _ in range(cpu_per_node) for n in rng.permutation(node_names).tolist()
    ]
    for k, node_name in enumerate(placements):
        j = k // 10
        prio = int(np.random.default_rng(seed * 1_000_003 + j).integers(1, 6))
        name = f"j{j:05d}-{k % 10}"
        gpu = k < gpu_pods
        pods.append(
            Pod(
                namespace="batch",
                name=name,
                node_name=node_name,
                phase="Running",
                priority=prio,
                labels={JOB: f"j{j:05d}"},
                gang=f"batch/{name}",
                requests={"cpu": 1000 if gpu else 500, GPU: 2 if gpu else 0, "pods": 1},
            )
        )
        gangs[f"batch/{name}"] = gang_of_one(pods[-1])
    return pods, gangs


def instance(dialect: str, seed: int, running: int, smoke: bool) -> ClusterModel:
    blocks, racks, per_rack, size = shape(smoke)
    nodes = node_objects(blocks, racks, per_rack)
    objects = nodes + gang_objects(dialect, size, blocks, racks)
    raw = [RawObject(source="bench", document=str(i), body=o) for i, o in enumerate(objects)]
    base = build_model(raw)
    pods, gangs = running_pods(seed, [n["metadata"]["name"] for n in nodes], running)
    return base.model_copy(
        update={
            "pods": tuple(sorted((*base.pods, *pods), key=lambda p: p.key)),
            "gangs": {**base.gangs, **gangs},
        }
    )


def measure(
    dialect: str, seed: int, running: int, reps: int, limit: float, smoke: bool
) -> dict[str, Any]:
    conf = SchedulerConf.default()
    model = instance(dialect, seed, running, smoke)
    problem, pre, placed = dry_run_input(model, conf)
    times = []
    for _ in range(reps):
        with full_collections_held():  # as `schedule` runs every call
            t0 = time.perf_counter()
            greedy = preempt(
                problem, pre, placed, exact=False, workers=1, seed=0,
                deadline=time.perf_counter() + 10,
            )  # fmt: skip
            times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    exact = preempt(
        problem, pre, placed, exact=True, workers=2, seed=0,
        deadline=time.perf_counter() + limit,
    )  # fmt: skip
    cpsat_s = time.perf_counter() - t0
    row: dict[str, Any] = {
        "dialect": dialect,
        "running": running,
        "seed": seed,
        "greedy_ms": [round(t * 1000, 2) for t in times],
        "cpsat_seconds": round(cpsat_s, 3),
    }
    if not greedy.plans:
        row["reason"] = next(iter(greedy.reasons.values()), "")
        return row
    g, c = greedy.plans[0], exact.plans[0]
    row.update(
        greedy_cost=g.cost,
        greedy_victims=len(g.victims),
        cpsat_cost=c.cost,
        cpsat_victims=len(c.victims),
        cpsat_engine=c.engine,
        strictly_cheaper=(c.cost, len(c.victims)) < (g.cost, len(g.victims)),
        blocks=sorted({n.split("-")[0] for nodes in g.nominated.values() for n in
                       (problem.node_names[x] for x in nodes)}),
    )  # fmt: skip
    if seed == 0:  # the whole call, so the plan passes `verify`
        for engine in ("greedy", "auto"):
            d = schedule(model, conf, engine=engine, workers=2, seed=0, preempt=True,
                         time_limit=max(10.0, 4 * limit))  # fmt: skip
            row[f"verified_{engine}_victims"] = len(d.victims)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--cpsat-limit", type=float, default=1.0)
    parser.add_argument("--running", type=int, nargs="*", default=[20_000, 100_000])
    parser.add_argument(
        "--dialects",
        nargs="*",
        default=["workload-api", "godel", "kueue", "hypernode", "koordinator"],
    )
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.reps, args.cpsat_limit, args.running = 1, 2, 0.5, [400]
    rows = []
    for running in args.running:
        for dialect in args.dialects:
            for seed in range(args.seeds):
                reps = args.reps if seed == 0 else 3
                row = measure(dialect, seed, running, reps, args.cpsat_limit, args.smoke)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "greedy_ms"}), flush=True)
    summary = []
    for running in args.running:
        for dialect in args.dialects:
            mine = [r for r in rows if r["dialect"] == dialect and r["running"] == running]
            times = [t for r in mine for t in r["greedy_ms"]]
            planned = [r for r in mine if "greedy_cost" in r]
            summary.append(
                {
                    "dialect": dialect,
                    "running": running,
                    "greedy_p50_ms": round(float(np.percentile(times, 50)), 1),
                    "greedy_p99_ms": round(float(np.percentile(times, 99)), 1),
                    "cpsat_max_s": max(r["cpsat_seconds"] for r in mine),
                    "planned": len(planned),
                    "instances": len(mine),
                    "cpsat_never_costlier": all(
                        (r["cpsat_cost"], r["cpsat_victims"])
                        <= (r["greedy_cost"], r["greedy_victims"])
                        for r in planned
                    ),
                    "strictly_cheaper": sum(bool(r["strictly_cheaper"]) for r in planned),
                }
            )
            print(json.dumps(summary[-1]), flush=True)
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    machine = f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    if not args.smoke:
        (HERE / "results_topology.json").write_text(
            json.dumps(
                {
                    "git": sha,
                    "machine": machine,
                    "cpsat_limit_s": args.cpsat_limit,
                    "summary": summary,
                    "rows": rows,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
