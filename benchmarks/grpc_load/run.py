"""Bounded loopback load test of `gangplan serve`: concurrent PlaceJob calls on a big snapshot.

    .venv/bin/python benchmarks/grpc_load/run.py --nodes 10240 --clients 32 --calls 10

Starts `gangplan serve` as a subprocess on 127.0.0.1 (port 0), stores one snapshot of
`--nodes` 8-GPU nodes, then runs `--clients` concurrent asyncio clients, each making
`--calls` PlaceJob calls of one `--gang`-pod gang (8 GPUs per pod, all required). Calls are
read-only, so every call sees the same free cluster. The run stops by itself after
`--max-seconds`. Prints throughput, p50/p99 latency and errors, and appends one JSON row
(with the git SHA and the machine) to results.jsonl beside this file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc

from gangplan.v1 import cluster_pb2 as pb
from gangplan.v1 import placement_service_pb2 as spb
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MB = 1024 * 1024


def cluster(nodes: int, running: int = 0) -> pb.Cluster:
    """`nodes` nodes; `running` pods already bound round-robin over every node (1 cpu,
    4 Gi, no GPU: at 100k pods each node runs ~10 and still has its 8 GPUs for the gangs,
    so the cost of the running pods is measured, not a full cluster)."""
    return pb.Cluster(
        pods=[
            pb.Pod(
                namespace="run",
                name=f"r-{i:06d}",
                node_name=f"node-{i % nodes:05d}",
                phase="Running",
                requests={"cpu": 1000, "memory": 4 * 2**30},
            )
            for i in range(running)
        ],
        nodes=[
            pb.Node(
                name=f"node-{i:05d}",
                labels={"rack": f"rack-{i // 16:04d}", "block": f"block-{i // 256:03d}"},
                allocatable={"cpu": 96_000, "memory": 1024 * 2**30, "nvidia.com/gpu": 8},
            )
            for i in range(nodes)
        ],
    )


def job(name: str, size: int) -> pb.Job:
    return pb.Job(
        gangs=[pb.Gang(namespace="bench", name=name, min_member=size)],
        pods=[
            pb.Pod(
                namespace="bench",
                name=f"{name}-{i}",
                gang=f"bench/{name}",
                requests={"cpu": 8000, "memory": 64 * 2**30, "nvidia.com/gpu": 8},
            )
            for i in range(size)
        ],
    )


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        text = Path("/proc/cpuinfo").read_text()
        match = re.search(r"model name\s*:\s*(.+)", text)
        cpu = match.group(1).strip() if match else cpu
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def git_sha() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


OPTIONS = [
    ("grpc.max_send_message_length", 256 * MB),
    ("grpc.max_receive_message_length", 256 * MB),
]


async def put(port: int, args: argparse.Namespace) -> float:
    """Store the snapshot every call names; the seconds it took."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as channel:
        stub = spb_grpc.PlacementServiceStub(channel)
        started = time.perf_counter()
        await stub.PutSnapshot(
            spb.PutSnapshotRequest(cluster=cluster(args.nodes, args.running), snapshot_id="bench"),
            timeout=600,
        )
        return time.perf_counter() - started


async def load(port: int, args: argparse.Namespace, put_seconds: float) -> dict[str, object]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as channel:
        stub = spb_grpc.PlacementServiceStub(channel)
        # Warm-up: one call so imports and caches are not in the numbers.
        await stub.PlaceJob(
            spb.PlaceJobRequest(snapshot=spb.SnapshotRef(id="bench"), job=job("warm", args.gang)),
            timeout=60,
        )
        latencies: list[float] = []
        errors: dict[str, int] = {}
        placed_pods = 0
        deadline = time.monotonic() + args.max_seconds

        async def client(c: int) -> None:
            nonlocal placed_pods
            for k in range(args.calls):
                if time.monotonic() > deadline:
                    return
                due = None
                if args.rate > 0:
                    # Open loop: call k of client c is due at (k * clients + c) / rate, and
                    # its latency counts from then (no coordinated omission when behind).
                    due = t0 + (k * args.clients + c) / args.rate
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                sent = time.perf_counter() if due is None else due
                try:
                    if args.rpc == "validate":  # the server's floor: no solver work
                        await stub.ValidateQueues(
                            spb.ValidateQueuesRequest(snapshot=spb.SnapshotRef(id="bench")),
                            timeout=args.timeout,
                        )
                    else:
                        request = spb.PlaceJobRequest(
                            snapshot=spb.SnapshotRef(id="bench"),
                            job=job(f"c{c}-{k}", args.gang),
                            options=spb.SolveOptions(engine=args.engine),
                        )
                        response = await stub.PlaceJob(request, timeout=args.timeout)
                        placed_pods += sum(1 for p in response.decision.placements if p.node)
                except grpc.aio.AioRpcError as err:
                    errors[err.code().name] = errors.get(err.code().name, 0) + 1
                    continue
                latencies.append(time.perf_counter() - sent)

        t0 = time.perf_counter()
        cpu0 = cpu_seconds(args.server_pid)
        await asyncio.gather(*(client(c) for c in range(args.clients)))
        wall = time.perf_counter() - t0
        server_cpu = cpu_seconds(args.server_pid) - cpu0
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return {
        "sha": git_sha(),
        "machine": machine(),
        "nodes": args.nodes,
        "running_pods": args.running,
        "gang": args.gang,
        "clients": args.clients,
        "calls": len(latencies) + sum(errors.values()),
        "rate": args.rate or None,
        "engine": args.engine,
        "server_workers": args.workers,
        "put_snapshot_s": round(put_seconds, 3),
        "wall_s": round(wall, 2),
        "rpc": args.rpc,
        "calls_per_s": round(len(latencies) / wall, 1),
        "server_cpu_share": round(server_cpu / wall, 2),  # 1.0 = one core
        "server_cpu_ms_per_call": round(1000 * server_cpu / len(latencies), 2)
        if latencies
        else None,
        "pods_per_s": round(placed_pods / wall, 0),
        "p50_ms": round(pct(0.50), 1) if latencies else None,
        "p99_ms": round(pct(0.99), 1) if latencies else None,
        "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else None,
        "errors": errors,
    }


def matrix(args: argparse.Namespace) -> None:
    """The per-call cost table: every size × engine × loop, on one server per running
    level (the snapshot put once)."""
    levels = [0, 100_000] if args.running == 0 and not args.smoke else [args.running]
    sizes = [8] if args.smoke else [1, 8, 64]
    for running in levels:
        args.running = running
        with serve(args) as port:
            put_seconds = asyncio.run(put(port, args))
            # the floor: what the server costs a call that asks the solver nothing
            args.rpc, args.rate, args.calls, args.gang = "validate", 0.0, 10**6, 1
            floor = asyncio.run(load(port, args, put_seconds))
            _report(floor, args)
            args.rpc = "place"
            for size in sizes:
                for engine in ["greedy", "auto"]:
                    args.gang, args.engine, args.rate = size, engine, 0.0
                    args.calls = 10**6  # bounded by --max-seconds
                    closed = asyncio.run(load(port, args, put_seconds))
                    rows = [closed]
                    for share in (0.25, 0.5, 0.8):
                        saturation = closed["calls_per_s"]
                        assert isinstance(saturation, float)
                        args.rate = max(1.0, round(share * saturation, 1))
                        rows.append(asyncio.run(load(port, args, put_seconds)))
                    for row in rows:
                        _report(row, args)


def _report(row: dict[str, object], args: argparse.Namespace) -> None:
    print(json.dumps({k: row[k] for k in ["rpc", *SHOWN]}))
    if not args.smoke:
        with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({**row, "matrix": True}) + "\n")


SHOWN = [
    "running_pods",
    "gang",
    "engine",
    "rate",
    "calls_per_s",
    "pods_per_s",
    "p50_ms",
    "p99_ms",
    "server_cpu_ms_per_call",
    "errors",
]


@contextlib.contextmanager
def serve(args: argparse.Namespace) -> Iterator[int]:
    """`gangplan serve` as a subprocess for the block; its port."""
    env = {
        **os.environ,
        "GANGPLAN_LOG_LEVEL": "WARNING",
        "GANGPLAN_WORKERS": str(args.workers),
        "GANGPLAN_MAX_QUEUED": str(args.clients + 8),
        "GANGPLAN_MAX_MESSAGE_MB": "256",
    }
    command = [str(Path(sys.executable).with_name("gangplan")), "serve", "--port", "0"]
    command += ["--metrics-port", "0"]
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            match = re.search(r"127\.0\.0\.1:(\d+)", server.stdout.readline())
            if not match:
                sys.exit("server did not start")
            args.server_pid = server.pid
            yield int(match.group(1))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_240)
    parser.add_argument(
        "--running", type=int, default=0, help="running pods (1 cpu, 4 Gi) in the snapshot"
    )
    parser.add_argument("--gang", type=int, default=64, help="pods per PlaceJob gang")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--calls", type=int, default=10, help="PlaceJob calls per client")
    parser.add_argument("--workers", type=int, default=4, help="server RPC threads")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="offered PlaceJob calls/s over all clients (open loop); 0 = each client calls "
        "again as soon as it has its answer (closed loop, saturation)",
    )
    parser.add_argument("--engine", default="greedy")
    parser.add_argument(
        "--rpc",
        choices=["place", "validate"],
        default="place",
        help="place: PlaceJob; validate: ValidateQueues on the snapshot (the server's floor "
        "per call: gRPC, interceptors, admission, no solver work)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="deadline per call (s)")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="stop issuing after")
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="per --running value given (default 0 and 100,000): 1-, 8- and 64-pod calls, "
        "greedy and auto, closed loop then open loop at 25/50/80 %% of that saturation "
        "(--max-seconds each); one row per cell",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="seconds: a tiny matrix (64 nodes), no results"
    )
    args = parser.parse_args()
    if args.smoke:  # the matrix, tiny: every code path in seconds
        args.nodes, args.running, args.clients, args.max_seconds = 64, 100, 2, 0.5
        args.matrix = True
    if args.matrix:
        matrix(args)
        return

    with serve(args) as port:
        result = asyncio.run(load(port, args, asyncio.run(put(port, args))))
    print(json.dumps(result, indent=2))
    if not args.smoke:
        with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
