"""Cluster scale: what one call costs as the pods already running grow from 0 to 200k.

    .venv/bin/python benchmarks/scale/run.py                      # the committed run
    .venv/bin/python benchmarks/scale/run.py --running 0 10000 --reps 3   # a quick look

For each count of running pods, a fresh `gangplan serve` (subprocess, 4 RPC threads) gets
one PutSnapshot of the cluster below, then over gRPC on loopback:

- PlaceJob 64:   a 64-pod gang (4 GPUs, 8 cpu, 32 Gi each), greedy and auto engines;
- PlaceJob 512:  a 512-pod gang (1 GPU each) with Koordinator gather (MustGather spine,
                 PreferGather block) and card-type alternatives `NVIDIA-H100|NVIDIA-A100`,
                 conf with `network-topology` and `capacity-card`, engine auto (CP-SAT
                 1 worker, seed 0, budget = the deadline), its status and objective tiers;
- Preempt 256:   a 256-pod gang (8 GPUs each, priority 1000) with preemption on;
- Enqueue:       a 64-pod gang in queue q3 (capacity plugin; running pods charge q0..q9);
- UpdateSnapshot: 1,000 new running pods bound, then the same 1,000 removed (100 times);
- server RSS after the Put, less the RSS before it, per running pod;

and the same calls in this process (codec -> Snapshot -> schedule, no gRPC). Then, once at
the largest count: 1,000 pending gangs in one PlaceJob, the same with 1,000 queues, binding
100k pods in one UpdateSnapshot. Results go to results.json beside this file (with the git
SHA and the machine); `plot.py`-style log-log figure to scale.png; the README reads them.

Cluster: 10,240 nodes = 20 spines × 16 blocks × 32 nodes (NVIDIA topograph labels), each
96 cpu / 1 TiB / 8 GPUs, half labelled NVIDIA-A100 and half NVIDIA-H100 cards (capacity-card
discovery labels). Running pod i: 1 cpu, 4 Gi, on node i mod 10,240, every 10th with 1 GPU
(and its card name), queue annotation q(i mod 10), priority 0 — so at 200k pods every node
holds ~20 pods and 6 free GPUs.
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
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gangplan.v1 import cluster_pb2 as pb  # noqa: E402
from gangplan.v1 import placement_service_pb2 as spb  # noqa: E402
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc  # noqa: E402
from solver import SCHEMA, Workload, load_conf, schedule  # noqa: E402
from solver.codec import job_from_proto, snapshot_from_proto  # noqa: E402

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024
UPDATE_REPS = 100  # 1,000-pod deltas: enough for a p99 that is not just the maximum
GI = 2**30
# a smoke (this script's or an importer's, `benchmarks/why`) builds 2 spines: 1,024 nodes
SMOKE = "--smoke" in sys.argv[1:]
SPINES, BLOCKS, PER_BLOCK = (2 if SMOKE else 20), 16, 32
NODES = SPINES * BLOCKS * PER_BLOCK
SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
CARDS = ("NVIDIA-A100", "NVIDIA-H100")
GATHER = json.dumps(
    {
        "gatherStrategy": [
            {"layer": "SpineLayer", "strategy": "MustGather"},
            {"layer": "BlockLayer", "strategy": "PreferGather"},
        ]
    }
)
TOPO_CONF = """actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
  - name: gang
  - name: binpack
  - name: network-topology
  - name: capacity-card
    arguments:
      cardUnlimitedCpuMemory: true
"""
QUEUES = 10


# ----------------------------------------------------------------------------- inputs


def node(i: int) -> pb.Node:
    card = CARDS[i % 2]
    return pb.Node(
        name=f"node-{i:05d}",
        labels={
            SPINE: f"spine-{i // (BLOCKS * PER_BLOCK):02d}",
            BLOCK: f"block-{i // PER_BLOCK:03d}",
            "nvidia.com/gpu.product": card,
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.memory": "81920",
        },
        allocatable={"cpu": 96_000, "memory": 1024 * GI, "nvidia.com/gpu": 8, "pods": 110},
    )


def running_pod(i: int, prefix: str = "r") -> pb.Pod:
    gpu = i % 10 == 0
    annotations = {"scheduling.volcano.sh/queue-name": f"q{i % QUEUES}"}
    requests = {"cpu": 1000, "memory": 4 * GI}
    if gpu:
        requests["nvidia.com/gpu"] = 1
        annotations["volcano.sh/card.name"] = CARDS[(i % NODES) % 2]
    return pb.Pod(
        namespace="run",
        name=f"{prefix}-{i:06d}",
        node_name=f"node-{i % NODES:05d}",
        phase="Running",
        requests=requests,
        annotations=annotations,
    )


def cluster(running: int, queues: int = QUEUES) -> pb.Cluster:
    return pb.Cluster(
        nodes=[node(i) for i in range(NODES)],
        pods=[running_pod(i) for i in range(running)],
        queues=[
            pb.Queue(name=f"q{k}", capability={"cpu": 10_000_000, "nvidia.com/gpu": 100_000})
            for k in range(queues)
        ],
        topology=pb.NetworkTopology(
            layers=[
                pb.TopologyLayer(name="SpineLayer", label_keys=[SPINE]),
                pb.TopologyLayer(name="BlockLayer", parent="SpineLayer", label_keys=[BLOCK]),
                pb.TopologyLayer(name="NodeTopologyLayer", parent="BlockLayer"),
            ]
        ),
    )


def gang_job(
    name: str,
    size: int,
    requests: dict[str, int],
    *,
    annotations: dict[str, str] | None = None,
    pod_annotations: dict[str, str] | None = None,
    queue: str = "",
    priority: int = 0,
) -> tuple[list[pb.Gang], list[pb.Pod]]:
    gang = pb.Gang(
        namespace="bench", name=name, min_member=size, queue=queue, annotations=annotations or {}
    )
    pods = [
        pb.Pod(
            namespace="bench",
            name=f"{name}-{i:04d}",
            gang=f"bench/{name}",
            requests=requests,
            annotations=pod_annotations or {},
            priority=priority,
        )
        for i in range(size)
    ]
    return [gang], pods


def job(*parts: tuple[list[pb.Gang], list[pb.Pod]]) -> pb.Job:
    return pb.Job(gangs=[g for p in parts for g in p[0]], pods=[x for p in parts for x in p[1]])


def job64(k: int) -> pb.Job:
    return job(gang_job(f"j64-{k}", 64, {"cpu": 8000, "memory": 32 * GI, "nvidia.com/gpu": 4}))


def job512(k: int) -> pb.Job:
    return job(
        gang_job(
            f"j512-{k}",
            512,
            {"cpu": 4000, "memory": 16 * GI, "nvidia.com/gpu": 1},
            annotations={"gang.scheduling.koordinator.sh/network-topology-spec": GATHER},
            pod_annotations={"volcano.sh/card.name": "NVIDIA-H100|NVIDIA-A100"},
        )
    )


def job_preempt(k: int) -> pb.Job:
    requests = {"cpu": 8000, "memory": 32 * GI, "nvidia.com/gpu": 8}
    return job(gang_job(f"p256-{k}", 256, requests, priority=1000))


def job_enqueue(k: int) -> pb.Job:
    requests = {"cpu": 8000, "memory": 32 * GI, "nvidia.com/gpu": 4}
    return job(gang_job(f"e64-{k}", 64, requests, queue="q3"))


def many_gangs(count: int, queues: int) -> pb.Job:
    requests = {"cpu": 2000, "memory": 8 * GI, "nvidia.com/gpu": 1}
    return job(
        *(
            gang_job(f"m{g:04d}", 4, requests, queue=f"q{g % queues}" if queues else "")
            for g in range(count)
        )
    )


# ----------------------------------------------------------------------------- measuring


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    match = re.search(r"model name\s*:\s*(.+)", text)
    cpu = match.group(1).strip() if match else cpu
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def git_sha() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def reset_peak(pid: int) -> None:
    """Start VmHWM afresh (Linux clear_refs "5"), so a peak belongs to the calls after."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """Resident bytes now (VmRSS) or at the peak so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    return 0


def timed(fn: Callable[[Any], Any], inputs: list[Any]) -> tuple[dict[str, float], Any]:
    """p50 / p99 in ms of `fn(x)` over `inputs` (built before the clock starts), and the
    last result."""
    times, result = [], None
    for x in inputs:
        started = time.perf_counter()
        result = fn(x)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p90 = times[min(len(times) - 1, int(0.90 * len(times)))]
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
    stats = {"p50_ms": statistics.median(times), "p90_ms": p90, "p99_ms": p99}
    return {name: round(value, 1) for name, value in stats.items()}, result


class Server:
    def __init__(self) -> None:
        env = {
            **os.environ,
            "GANGPLAN_LOG_LEVEL": "WARNING",
            "GANGPLAN_WORKERS": "4",
            "GANGPLAN_MAX_MESSAGE_MB": "512",
            "GANGPLAN_SOLVER_WORKERS": "1",
        }
        command = [str(Path(sys.executable).with_name("gangplan")), "serve", "--port", "0"]
        self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        match = re.search(r"127\.0\.0\.1:(\d+)", self.proc.stdout.readline())
        if not match:
            raise SystemExit("server did not start")
        options = [
            ("grpc.max_send_message_length", 512 * MB),
            ("grpc.max_receive_message_length", 512 * MB),
        ]
        self.channel = grpc.insecure_channel(f"127.0.0.1:{match.group(1)}", options=options)
        self.stub = spb_grpc.PlacementServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.proc.terminate()
        self.proc.wait(60)


def options(engine: str, conf: str = "") -> spb.SolveOptions:
    return spb.SolveOptions(engine=engine, scheduler_conf=conf, workers=1, seed=0)


def tiers(decision: spb.Decision) -> dict[str, int]:
    return {t.name: t.value for t in decision.objective_tiers}


def over_grpc(server: Server, running: int, msg: pb.Cluster, reps: int) -> dict[str, Any]:
    stub = server.stub
    out: dict[str, Any] = {}
    before = rss_bytes(server.proc.pid)
    started = time.perf_counter()
    stub.PutSnapshot(spb.PutSnapshotRequest(cluster=msg, snapshot_id="s"), timeout=600)
    out["put_s"] = round(time.perf_counter() - started, 2)
    time.sleep(0.5)
    out["rss_mb"] = round(rss_bytes(server.proc.pid) / MB, 1)
    out["rss_bytes_per_running_pod"] = (
        round((rss_bytes(server.proc.pid) - before) / running) if running else None
    )
    ref = spb.SnapshotRef(id="s")
    k = iter(range(10**9))

    def placing(make: Callable[[int], pb.Job], engine: str, n: int, conf: str = "") -> list[Any]:
        return [
            spb.PlaceJobRequest(snapshot=ref, job=make(next(k)), options=options(engine, conf))
            for _ in range(n)
        ]

    def place(t: float) -> Callable[[Any], Any]:
        return lambda request: stub.PlaceJob(request, timeout=t)

    place(30)(placing(job64, "greedy", 1)[0])  # warm-up: this generation's caches, imports
    out["place64_greedy"], r = timed(place(30), placing(job64, "greedy", reps))
    out["place64_greedy"]["placed"] = r.placed
    out["place64_auto"], r = timed(place(5), placing(job64, "auto", reps))
    out["place64_auto"]["status"] = r.decision.status
    few = max(2, reps // 4)
    out["place512_topology_cards"], r = timed(place(10), placing(job512, "auto", few, TOPO_CONF))
    out["place512_topology_cards"].update(
        status=r.decision.status,
        placed=r.placed,
        objective_set=r.decision.HasField("objective"),
        tiers=tiers(r.decision),
    )
    preempts = [
        spb.PreemptRequest(snapshot=ref, job=job_preempt(next(k)), options=options("greedy"))
        for _ in range(reps)
    ]
    out["preempt256"], r = timed(lambda req: stub.Preempt(req, timeout=30), preempts)
    out["preempt256"].update(placed=r.placed, victims=len(r.decision.victims))
    enqueues = [spb.EnqueueRequest(snapshot=ref, job=job_enqueue(next(k))) for _ in range(reps)]
    out["enqueue"], r = timed(lambda req: stub.Enqueue(req, timeout=30), enqueues)
    out["enqueue"]["admitted"] = all(a.admitted for a in r.admissions)
    binds = [
        spb.UpdateSnapshotRequest(
            snapshot_id="s",
            upsert_pods=[running_pod(b * 1000 + i, prefix=f"u{b}") for i in range(1000)],
        )
        for b in range(max(reps, UPDATE_REPS if reps > 1 else 5))  # a smoke's 1 rep: 5
    ]
    removes = [
        spb.UpdateSnapshotRequest(
            snapshot_id="s", remove_pods=[f"run/{p.name}" for p in bind.upsert_pods]
        )
        for bind in binds
    ]
    update = lambda req: stub.UpdateSnapshot(req, timeout=30)  # noqa: E731
    out["update_bind_1000"], _ = timed(update, binds)
    out["update_remove_1000"], _ = timed(update, removes)
    return out


def in_process(msg: pb.Cluster, reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    started = time.perf_counter()
    snapshot = snapshot_from_proto(msg, "cluster", SCHEMA)
    out["snapshot_s"] = round(time.perf_counter() - started, 2)
    default, topo = load_conf(None), load_conf_text(TOPO_CONF)
    k = iter(range(10**9))
    few = max(2, reps // 4)

    def call(conf: Any, engine: str, **kw: Any) -> Callable[[pb.Job], Any]:
        def run(message: pb.Job) -> Any:
            pods, given, named = job_from_proto(message, "job", snapshot)
            workload = Workload.of(snapshot, pods, named, given)
            return schedule(snapshot, conf, workload=workload, engine=engine, workers=1, **kw)

        return run

    def jobs(make: Callable[[int], pb.Job], n: int) -> list[pb.Job]:
        return [make(next(k)) for _ in range(n)]

    call(default, "greedy")(job64(-1))
    out["place64_greedy"], _ = timed(call(default, "greedy"), jobs(job64, reps))
    out["place512_topology_cards"], d = timed(call(topo, "auto", time_limit=10), jobs(job512, few))
    out["place512_topology_cards"]["status"] = d.status
    out["preempt256"], _ = timed(call(default, "greedy", preempt=True), jobs(job_preempt, reps))
    return out


def load_conf_text(text: str) -> Any:
    path = HERE / ".conf.yaml"
    path.write_text(text)
    try:
        return load_conf(str(path))
    finally:
        path.unlink()


def big_calls(server: Server, running: int) -> dict[str, Any]:
    """Once, on a snapshot of `running` pods: many gangs, many queues, a 100k-pod delta."""
    stub = server.stub
    out: dict[str, Any] = {}
    for queues in (0, 1000):
        msg = cluster(running, queues=queues)
        stub.PutSnapshot(spb.PutSnapshotRequest(cluster=msg, snapshot_id="big"), timeout=600)
        time.sleep(1)  # the server settles (collects, trims) 0.2 s after a Put
        before = rss_bytes(server.proc.pid)
        reset_peak(server.proc.pid)
        many = spb.PlaceJobRequest(
            snapshot=spb.SnapshotRef(id="big"),
            job=many_gangs(1000, queues),
            options=options("greedy"),
        )
        stub.PlaceJob(many, timeout=120)  # warm: the generation's memoised queue tree
        stats, r = timed(lambda req: stub.PlaceJob(req, timeout=120), [many] * 5)
        stats["placed_gangs"] = sum(1 for g in r.decision.gangs if g.placed)
        stats["peak_growth_mb"] = round((rss_bytes(server.proc.pid, "VmHWM") - before) / MB, 1)
        out[f"gangs1000_queues{queues}"] = stats
    stub.PutSnapshot(spb.PutSnapshotRequest(cluster=cluster(0), snapshot_id="bind"), timeout=600)
    pods = [running_pod(i, prefix="b") for i in range(100_000)]
    request = spb.UpdateSnapshotRequest(snapshot_id="bind", upsert_pods=pods)
    started = time.perf_counter()
    stub.UpdateSnapshot(request, timeout=600)
    out["update_bind_100k_s"] = round(time.perf_counter() - started, 2)
    keys = [f"run/b-{i:06d}" for i in range(100_000)]
    started = time.perf_counter()
    stub.UpdateSnapshot(
        spb.UpdateSnapshotRequest(snapshot_id="bind", remove_pods=keys), timeout=600
    )
    out["update_remove_100k_s"] = round(time.perf_counter() - started, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--running", type=int, nargs="+", default=[0, 10_000, 50_000, 100_000, 200_000]
    )
    parser.add_argument("--reps", type=int, default=20, help="calls per measurement")
    parser.add_argument("--no-big", action="store_true", help="skip the 1,000-gang calls")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: 1,024 nodes, 1,000 running pods, 1 rep, no big",
    )
    args = parser.parse_args()
    if args.smoke:
        args.running, args.reps, args.no_big = [1000], 1, True
        args.out = str(Path(tempfile.mkdtemp()) / "results.json")
    rows = []
    for running in args.running:
        msg = cluster(running)
        server = Server()
        try:
            row: dict[str, Any] = {"running_pods": running}
            row["grpc"] = over_grpc(server, running, msg, args.reps)
            print(json.dumps(row), flush=True)
            if running == max(args.running) and not args.no_big:
                row["big"] = big_calls(server, running)
        finally:
            server.close()
        row["in_process"] = in_process(msg, args.reps)
        print(json.dumps(row), flush=True)
        rows.append(row)
    result = {"sha": git_sha(), "machine": machine(), "nodes": NODES, "rows": rows}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
