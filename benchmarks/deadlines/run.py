"""Deadline sweep: does every PlaceJob answer before its deadline on an instance CP-SAT
cannot finish, and with what?

A `gangplan serve` subprocess (CP-SAT 1 worker, seed 0), one PlaceJob of 30 gangs × 40
pods on 400 nodes (1,200 pods; CP-SAT does not prove it optimal within a minute), engine
`auto`, with deadlines from 0.05 s to 5 s, `--reps` calls each, in three set-ups: the
cluster sent inline with the job (no running pods), and a stored snapshot of it with 0
and with 20,000 running pods (50 per node, 250m CPU each: they take CPU and pod slots,
not GPUs, so the gangs stay as hard to pack). Per set-up and deadline: calls answered,
calls the server refused at once (`REFUSED`: its own DEADLINE_EXCEEDED, sent when decoding
left less than answering takes), calls cut off at the deadline (`DEADLINE_EXCEEDED`), other codes, statuses, and the worst and median time to the answer
as a share of the deadline (the client's clock). Appends one JSON row to results.jsonl
(git SHA, machine); `plot.py` draws the latest as deadlines.png.

    .venv/bin/python benchmarks/deadlines/run.py            # ~6 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import grpc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from gangplan.v1 import cluster_pb2 as pb  # noqa: E402
from gangplan.v1 import placement_service_pb2 as spb  # noqa: E402
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc  # noqa: E402

GPU = "nvidia.com/gpu"
DEADLINES = [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0]


RUNNING_PER_NODE = 50
SNAPSHOT = "deadlines"


def hard_cluster(running_per_node: int = 0) -> pb.Cluster:
    nodes = [
        pb.Node(
            name=f"n{i:04d}",
            allocatable={"cpu": 32_000 + 1000 * (i % 7), GPU: 8, "pods": 110},
        )
        for i in range(400)
    ]
    running = [
        pb.Pod(
            namespace="batch",
            name=f"r{i:04d}-{k}",
            node_name=node.name,
            requests={"cpu": 250},
        )
        for i, node in enumerate(nodes)
        for k in range(running_per_node)
    ]
    return pb.Cluster(nodes=nodes, pods=running)


def hard_job() -> pb.Job:
    job = pb.Job()
    for g in range(30):
        gang = f"g{g:02d}"
        job.gangs.add(namespace="default", name=gang, min_member=40)
        job.pods.extend(
            pb.Pod(
                namespace="default",
                name=f"{gang}-{i}",
                gang=f"default/{gang}",
                requests={"cpu": 1000, GPU: 1 + g % 2},
            )
            for i in range(40)
        )
    return job


OPTIONS = spb.SolveOptions(engine="auto", workers=1, seed=0)
SETUPS = [("inline", 0), ("snapshot", 0), ("snapshot", RUNNING_PER_NODE)]


def requests(
    stub: spb_grpc.PlacementServiceStub, source: str, per_node: int
) -> spb.PlaceJobRequest:
    """The PlaceJob request of a set-up (storing its snapshot first)."""
    if source == "inline":
        return spb.PlaceJobRequest(cluster=hard_cluster(per_node), job=hard_job(), options=OPTIONS)
    stub.PutSnapshot(
        spb.PutSnapshotRequest(snapshot_id=SNAPSHOT, cluster=hard_cluster(per_node)), timeout=60
    )
    return spb.PlaceJobRequest(
        snapshot=spb.SnapshotRef(id=SNAPSHOT), job=hard_job(), options=OPTIONS
    )


def sweep(
    stub: spb_grpc.PlacementServiceStub,
    request: spb.PlaceJobRequest,
    reps: int,
    deadlines: list[float] = DEADLINES,
) -> list[dict[str, object]]:
    stub.PlaceJob(request, timeout=min(30.0, 2 * max(deadlines)))  # warm
    rows = []
    for deadline in deadlines:
        codes: Counter[str] = Counter()
        statuses: Counter[str] = Counter()
        shares = []
        for _ in range(reps):
            started = time.perf_counter()
            try:
                answer = stub.PlaceJob(request, timeout=deadline)
                codes["OK"] += 1
                statuses[answer.decision.status] += 1
            except grpc.RpcError as err:
                # the server's own refusal, sent at once when decoding left less than
                # answering takes, apart from a call the deadline cut off
                refused = "the deadline left" in (err.details() or "")
                codes["REFUSED" if refused else err.code().name] += 1
            shares.append((time.perf_counter() - started) / deadline)
        rows.append(
            {
                "deadline_s": deadline,
                "codes": dict(codes),
                "statuses": dict(statuses),
                "median_share": round(statistics.median(shares), 3),
                "max_share": round(max(shares), 3),
            }
        )
    return rows


def machine() -> str:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    match = re.search(r"model name\s*:\s*(.+)", text)
    cpu = match.group(1).strip() if match else platform.machine()
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def git_sha() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    return done.stdout.decode().strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument(
        "--smoke", action="store_true", help="seconds: inline, 2 deadlines, 1 call, no results"
    )
    args = parser.parse_args()
    setups, deadlines = (SETUPS[:1], [0.2, 1.0]) if args.smoke else (SETUPS, DEADLINES)
    if args.smoke:
        args.reps = 1
    env = {**os.environ, "GANGPLAN_LOG_LEVEL": "WARNING", "GANGPLAN_SOLVER_WORKERS": "1"}
    command = [str(Path(sys.executable).with_name("gangplan")), "serve", "--port", "0"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = re.search(r"127\.0\.0\.1:(\d+)", proc.stdout.readline())
    assert port is not None
    rows = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port.group(1)}") as channel:
            stub = spb_grpc.PlacementServiceStub(channel)
            for source, per_node in setups:
                request = requests(stub, source, per_node)
                for row in sweep(stub, request, args.reps, deadlines):
                    row = {"source": source, "running_pods": per_node * 400, **row}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    finally:
        proc.terminate()
        proc.wait(30)
    if args.smoke:
        return
    result = {"sha": git_sha(), "machine": machine(), "reps": args.reps, "rows": rows}
    with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
