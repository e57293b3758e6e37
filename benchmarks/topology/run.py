"""Topology benchmark: Koordinator offer-slot gather at 10,240 nodes (greedy engine).

Cluster: 20 spines × 16 blocks × 32 nodes, each node 8 GPUs / 96 cpu / 1 TiB, pre-loaded
so that 60% of the GPUs are busy (per node ~ Binomial(8, 0.6), fixed seed). Gangs of
64 … 2,048 pods × (1 GPU, 8 cpu), one gang group each, with
`MustGather SpineLayer` + `PreferGather BlockLayer` (2,048: PreferGather only, since no
spine holds it at this load). Each gang is placed against the same pre-loaded cluster
`--reps` times; the time is `gather_unit` + committing the plan (what the greedy engine
does per topology unit), excluding compile. Output: a markdown table on stdout and
`results.json` next to this script.

    .venv/bin/python benchmarks/topology/run.py [--reps 200] [--seed 7]
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

from solver import SchedulerConf  # noqa: E402
from solver.compile import compile_problem  # noqa: E402
from solver.config import PluginConf, TierConf  # noqa: E402
from solver.engines import SolveParams  # noqa: E402
from solver.engines.cpsat import solve_cpsat  # noqa: E402
from solver.features.topology import GatherBlock  # noqa: E402
from solver.features.topology.koordinator.gather import gather_unit  # noqa: E402
from solver.kube import RawObject, build_model  # noqa: E402
from solver.problem import Problem, evaluate  # noqa: E402

SHAPE = (20, 16, 32)  # spines, blocks per spine, nodes per block
SIZES = (64, 128, 256, 512, 1024, 2048)
SMOKE_SHAPE, SMOKE_SIZES = (2, 2, 8), (8, 16)  # `--smoke`: seconds
SPEC_SPINE = json.dumps(
    {
        "gatherStrategy": [
            {"layer": "SpineLayer", "strategy": "MustGather"},
            {"layer": "BlockLayer", "strategy": "PreferGather"},
        ]
    }
)
SPEC_PREFER = json.dumps({"gatherStrategy": [{"layer": "BlockLayer", "strategy": "PreferGather"}]})


CARDS = ("NVIDIA-A100", "NVIDIA-H100")


def card_conf() -> SchedulerConf:
    """The default plugins with capacity-card instead of capacity (card awareness, no queues)."""
    plugins = [p for p in SchedulerConf.default().tiers[0].plugins if p.name != "capacity"]
    return SchedulerConf(tiers=(TierConf(plugins=[*plugins, PluginConf(name="capacity-card")]),))


def objects(
    seed: int,
    cards: bool = False,
    shape: tuple[int, int, int] = SHAPE,
    sizes: tuple[int, ...] = SIZES,
) -> list[dict[str, Any]]:
    """The instance; with `cards`, spines alternate A100/H100 nodes and every pod accepts
    `NVIDIA-A100|NVIDIA-H100` (A100 preferred)."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.koordinator.sh/v1alpha1",
            "kind": "ClusterNetworkTopology",
            "metadata": {"name": "default"},
            "spec": {
                "networkTopologySpec": [
                    {"topologyLayer": "SpineLayer", "labelKey": ["spine"]},
                    {
                        "topologyLayer": "BlockLayer",
                        "parentTopologyLayer": "SpineLayer",
                        "labelKey": ["block"],
                    },
                    {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "BlockLayer"},
                ]
            },
        }
    ]
    spines, blocks, nodes = shape
    for s in range(spines):
        for b in range(blocks):
            for n in range(nodes):
                name = f"n-{s:02d}-{b:02d}-{n:02d}"
                out.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {
                            "name": name,
                            "labels": {
                                "spine": f"s{s:02d}",
                                "block": f"s{s:02d}-b{b:02d}",
                                **(
                                    {
                                        "nvidia.com/gpu.product": CARDS[s % 2],
                                        "nvidia.com/gpu.count": "8",
                                        "nvidia.com/gpu.memory": "81920",
                                    }
                                    if cards
                                    else {}
                                ),
                            },
                        },
                        "status": {
                            "allocatable": {
                                "cpu": "96",
                                "memory": "1Ti",
                                "nvidia.com/gpu": "8",
                                "pods": "110",
                            }
                        },
                    }
                )
                used = int(rng.binomial(8, 0.6))
                if used:
                    out.append(
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "metadata": {"name": f"load-{name}", "namespace": "load"},
                            "spec": {
                                "nodeName": name,
                                "containers": [
                                    {
                                        "name": "c",
                                        "resources": {
                                            "requests": {
                                                "cpu": str(used * 8),
                                                "nvidia.com/gpu": str(used),
                                            }
                                        },
                                    }
                                ],
                            },
                            "status": {"phase": "Running"},
                        }
                    )
    for size in sizes:
        spec = SPEC_PREFER if size >= 2048 else SPEC_SPINE
        gang = f"job-{size}"
        out.append(
            {
                "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {
                    "name": gang,
                    "namespace": "default",
                    "annotations": {"gang.scheduling.koordinator.sh/network-topology-spec": spec},
                },
                "spec": {"minMember": size},
            }
        )
        for i in range(size):
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{gang}-{i:04d}",
                        "namespace": "default",
                        "labels": {"pod-group.scheduling.sigs.k8s.io": gang},
                        "annotations": {
                            "gang.scheduling.koordinator.sh/network-topology-index": str(i),
                            **({"volcano.sh/card.name": "|".join(CARDS)} if cards else {}),
                        },
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "resources": {"requests": {"cpu": "8", "nvidia.com/gpu": "1"}},
                            }
                        ]
                    },
                }
            )
    return out


def cpsat_rows(
    seed: int,
    time_limit: float,
    workers: int,
    cards: bool = False,
    shape: tuple[int, int, int] = SHAPE,
    sizes: tuple[int, ...] = SIZES,
) -> list[dict[str, Any]]:
    """The same cluster with one gang at a time, solved by the cpsat engine (greedy hint)."""
    everything = objects(seed, cards, shape, sizes)
    conf = card_conf() if cards else SchedulerConf.default()
    rows = []
    for size in sizes:
        gang = f"job-{size}"
        keep = [
            o
            for o in everything
            if o["kind"] not in ("Pod", "PodGroup")
            or o["metadata"].get("namespace") == "load"
            or o["metadata"]["name"].startswith(gang + "-")
            or o["metadata"]["name"] == gang
        ]
        model = build_model(
            RawObject(source="bench", document=str(i), body=o) for i, o in enumerate(keep, 1)
        )
        problem = compile_problem(model, conf)
        result = solve_cpsat(problem, SolveParams(time_limit=time_limit, workers=workers, seed=0))
        used = np.concatenate([row[row >= 0] for row in result.pod_node])
        tiers = evaluate(problem, result.pod_node)
        topology = _topology(problem)
        spine = topology.layers.index("SpineLayer")
        block = topology.layers.index("BlockLayer")
        rows.append(
            {
                "pods": size,
                "status": result.status,
                "seconds": round(
                    float(result.stats.get("build_seconds", 0))
                    + float(result.stats.get("solve_seconds", 0)),
                    2,
                ),
                "first_solution_s": round(
                    float(result.stats.get("first_solution_seconds", float("nan"))), 3
                ),
                "vars": result.stats.get("vars_after"),
                "classes": result.stats.get("node_classes"),
                "spines": int(np.unique(topology.node_domain[spine][used]).size),
                "blocks": int(np.unique(topology.node_domain[block][used]).size),
                "nodes": int(np.unique(used).size),
                "objective_vs_greedy": tiers["objective"]
                - int(result.stats.get("greedy_objective", 0)),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _topology(problem: Problem) -> GatherBlock:
    block = problem.block(GatherBlock)
    assert block is not None, "the instance has a ClusterNetworkTopology"
    return block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cpsat", action="store_true", help="also solve each gang with CP-SAT")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cards", action="store_true", help="A100/H100 spines, pods A100|H100")
    parser.add_argument(
        "--smoke", action="store_true", help="seconds: 32 nodes, gangs of 8 and 16, no results"
    )
    args = parser.parse_args()
    suffix = "_cards" if args.cards else ""
    shape, sizes = (SMOKE_SHAPE, SMOKE_SIZES) if args.smoke else (SHAPE, SIZES)
    if args.smoke:
        args.reps, args.time_limit = 3, 2.0
    if args.cpsat:
        solved = cpsat_rows(args.seed, args.time_limit, args.workers, args.cards, shape, sizes)
        if not args.smoke:
            (Path(__file__).parent / f"results_cpsat{suffix}.json").write_text(
                json.dumps(solved, indent=2) + "\n"
            )
        print(
            "| gang pods | CP-SAT status | seconds (build + solve) | first solution (s) | vars | node classes | spines | blocks | nodes | objective − greedy |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in solved:
            print(
                f"| {r['pods']} | {r['status']} | {r['seconds']} | {r['first_solution_s']} | {r['vars']} | "
                f"{r['classes']} | {r['spines']} | {r['blocks']} | {r['nodes']} | {r['objective_vs_greedy']} |"
            )
        return

    started = time.perf_counter()
    model = build_model(
        RawObject(source="bench", document=str(i), body=o)
        for i, o in enumerate(objects(args.seed, args.cards, shape, sizes), 1)
    )
    built = time.perf_counter() - started
    started = time.perf_counter()
    problem = compile_problem(model, card_conf() if args.cards else SchedulerConf.default())
    compiled = time.perf_counter() - started
    gpu = problem.resources.index("nvidia.com/gpu")
    busy = 1 - problem.free[:, gpu].sum() / problem.capacity[:, gpu].sum()
    topology = _topology(problem)
    spine_layer = topology.layers.index("SpineLayer")
    block_layer = topology.layers.index("BlockLayer")

    rows: list[dict[str, Any]] = []
    for u, unit_id in enumerate(problem.unit_ids):
        if not topology.is_gather(u):
            continue  # the load pods (bound, gangs of one)
        gangs = [int(g) for g in np.flatnonzero(problem.gang_unit == u)]
        size = int(sum(problem.gang_pending[g] for g in gangs))
        times: list[float] = []
        outcome = None
        for _ in range(args.reps):
            free = problem.free.copy()
            t0 = time.perf_counter()
            outcome = gather_unit(problem, topology, u, gangs, free)
            for t, nodes in outcome.pod_node.items():
                np.subtract.at(free, nodes[nodes >= 0], problem.type_demand[t])
            times.append(time.perf_counter() - t0)
        assert outcome is not None
        used = (
            np.concatenate([n[n >= 0] for n in outcome.pod_node.values()])
            if outcome.pod_node
            else np.empty(0, dtype=np.int64)
        )
        rows.append(
            {
                "gang": unit_id,
                "pods": size,
                "placed": int(used.size),
                "candidate": outcome.candidate or outcome.message[:60],
                "spines": int(np.unique(topology.node_domain[spine_layer][used]).size),
                "blocks": int(np.unique(topology.node_domain[block_layer][used]).size),
                "nodes": int(np.unique(used).size),
                "p50_ms": float(np.percentile(times, 50) * 1000),
                "p99_ms": float(np.percentile(times, 99) * 1000),
            }
        )

    rows.sort(key=lambda r: r["pods"])
    cpu = platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    meta = {
        "git": sha,
        "machine": f"{cpu}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}, numpy {np.__version__}",
        "nodes": problem.num_nodes,
        "gpu_busy": round(float(busy), 3),
        "build_model_s": round(built, 2),
        "compile_s": round(compiled, 2),
        "reps": args.reps,
    }
    if not args.smoke:
        (Path(__file__).parent / f"results{suffix}.json").write_text(
            json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n"
        )
    print(
        f"git {sha} · {meta['machine']} · {problem.num_nodes} nodes, {busy:.0%} GPUs busy · "
        f"model {built:.1f} s, compile {compiled:.1f} s · {args.reps} reps per gang\n"
    )
    print(
        "| gang pods | placed | chosen domain | spines | blocks | nodes | greedy p50 (ms) | greedy p99 (ms) |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['pods']} | {r['placed']} | {r['candidate']} | {r['spines']} | {r['blocks']} | "
            f"{r['nodes']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
