"""Deadline sweep: does every PlaceJob answer before its deadline on an instance CP-SAT
cannot finish, and with what?

A `gangplan serve` subprocess (4 RPC threads, CP-SAT 1 worker, seed 0), one PlaceJob of
30 gangs × 40 pods on 400 nodes (1,200 pods; CP-SAT does not prove it optimal within a
minute) sent inline, engine `auto`, with deadlines from 0.05 s to 5 s, `--reps` calls
each. Per deadline: calls answered, `DEADLINE_EXCEEDED`, other codes, statuses, and the
worst and median time to the answer as a share of the deadline (the client's clock).
Appends one JSON row to results.jsonl (git SHA, machine).

    .venv/bin/python benchmarks/deadlines/run.py            # ~2 minutes
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


def hard_request() -> spb.PlaceJobRequest:
    nodes = [
        pb.Node(
            name=f"n{i:04d}",
            allocatable={"cpu": 16_000 + 1000 * (i % 7), GPU: 8, "pods": 110},
        )
        for i in range(400)
    ]
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
    return spb.PlaceJobRequest(
        cluster=pb.Cluster(nodes=nodes),
        job=job,
        options=spb.SolveOptions(engine="auto", workers=1, seed=0),
    )


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
    args = parser.parse_args()
    env = {**os.environ, "GANGPLAN_LOG_LEVEL": "WARNING", "GANGPLAN_SOLVER_WORKERS": "1"}
    command = [str(Path(sys.executable).with_name("gangplan")), "serve", "--port", "0"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = re.search(r"127\.0\.0\.1:(\d+)", proc.stdout.readline())
    assert port is not None
    request = hard_request()
    rows = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port.group(1)}") as channel:
            stub = spb_grpc.PlacementServiceStub(channel)
            stub.PlaceJob(request, timeout=30)  # warm
            for deadline in DEADLINES:
                codes: Counter[str] = Counter()
                statuses: Counter[str] = Counter()
                shares = []
                for _ in range(args.reps):
                    started = time.perf_counter()
                    try:
                        answer = stub.PlaceJob(request, timeout=deadline)
                        codes["OK"] += 1
                        statuses[answer.decision.status] += 1
                    except grpc.RpcError as err:
                        codes[err.code().name] += 1
                    shares.append((time.perf_counter() - started) / deadline)
                row = {
                    "deadline_s": deadline,
                    "codes": dict(codes),
                    "statuses": dict(statuses),
                    "median_share": round(statistics.median(shares), 3),
                    "max_share": round(max(shares), 3),
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        proc.terminate()
        proc.wait(30)
    result = {"sha": git_sha(), "machine": machine(), "reps": args.reps, "rows": rows}
    with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
