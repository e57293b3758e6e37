"""`gangplan scheduler` end to end against the fake API server: pods bound per second, the
time from a gang's last pod created to its last pod bound, the cycle's split, and each
process's CPU.

Three processes share the machine: the fake API server (`serve`: a synthetic cluster of
`--nodes` 8-GPU nodes in spines of 1,024 and blocks of 32, a Koordinator
ClusterNetworkTopology, and `--running` running pods, 1 cpu and 4 Gi each, round-robin),
`gangplan scheduler` (embedded gangplan, greedy engine), and this driver, which creates a
stream of gangs through the API (PodGroup, then its pods) at `--rate` pods per second for
`--seconds`, then waits for every pod to be bound. Gang sizes are drawn from SIZES (1 to
512 pods, 1 GPU each); `--gather` of the gangs of 8 or more pods carry a Koordinator
network-topology-spec (MustGather on the block layer for gangs of up to 32 pods, on the
spine layer above). Each run appends a JSON row to results.jsonl.

    .venv/bin/python benchmarks/frontend/run.py --nodes 5000 --running 100000 --rate 1000
    .venv/bin/python benchmarks/frontend/run.py --smoke
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import urllib3
import urllib3.connectionpool
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.frontend.report import RESULTS, plot, preemption_table, table  # noqa: E402
from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for  # noqa: E402

SIZES = (
    [1] * 50
    + [2] * 10
    + [4] * 10
    + [8] * 10
    + [16] * 8
    + [32] * 6
    + [64] * 4
    + [128] * 1
    + [512] * 1
)
GPU = "nvidia.com/gpu"
TERMINATION = 0.5  # seconds an evicted pod takes to go (`--preempt`; the kubelet's part)
TOPOLOGY = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "ClusterNetworkTopology",
    "metadata": {"name": "default"},
    "spec": {
        "networkTopologySpec": [
            {"topologyLayer": "SpineLayer", "labelKey": ["network/spine"]},
            {
                "topologyLayer": "BlockLayer",
                "parentTopologyLayer": "SpineLayer",
                "labelKey": ["network/block"],
            },
            {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "BlockLayer"},
        ]
    },
}


CARDS = ("NVIDIA-A100", "NVIDIA-H100")
# `--cards`: the default plugins with capacity-card in place of capacity (no queues)
CARD_CONF = """actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
  - name: gang
  - name: binpack
  - name: nodeorder
  - name: network-topology
  - name: job-affinity
  - name: capacity-card
    arguments: {cardUnlimitedCpuMemory: true}
"""


def _node(i: int) -> dict[str, Any]:
    """Spines alternate A100 and H100 nodes (Volcano's card labels; read only by
    capacity-card)."""
    name = f"n{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "network/spine": f"s{i // 1024}",
                "network/block": f"b{i // 32}",
                "nvidia.com/gpu.product": CARDS[(i // 1024) % 2],
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.memory": "81920",
            },
        },
        "status": {
            "allocatable": {"cpu": "96", "memory": "1Ti", GPU: "8", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(
    name: str,
    *,
    node: str = "",
    gpus: int = 0,
    gang: str = "",
    index: int = -1,
    card: str = "",
    priority: int | None = None,
) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": "1", "memory": "4Gi"}
    if gpus:
        requests[GPU] = str(gpus)
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if gang:
        meta["labels"] = {"pod-group.scheduling.sigs.k8s.io": gang}
        meta["annotations"] = {"gang.scheduling.koordinator.sh/network-topology-index": str(index)}
    if card:
        meta.setdefault("annotations", {})["volcano.sh/card.name"] = card
    spec: dict[str, Any] = {
        "schedulerName": "gangplan" if not node else "default-scheduler",
        "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def serve(nodes: int, running: int, full: bool = False) -> None:
    """The fake API server with the synthetic cluster, until SIGTERM. `full`: every GPU is
    taken by a 1-GPU pod of priority 0 (preemption's victims), which terminates for
    TERMINATION seconds once evicted."""
    fake = FakeApiServer(default_resources())
    store = fake.store
    for i in range(nodes):
        store.create("", "nodes", "", _node(i))
    store.create("scheduling.koordinator.sh", "clusternetworktopologies", "", TOPOLOGY)
    for j in range(running):
        store.create("", "pods", "default", _pod(f"run-{j}", node=f"n{j % nodes:05d}"))
    if full:
        store.termination_seconds = TERMINATION
        for i in range(nodes):
            for k in range(8):
                low = _pod(f"low-{i}-{k}", node=f"n{i:05d}", gpus=1, priority=0)
                store.create("", "pods", "default", low)
    fake.start()
    print(fake.url, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    fake.stop()


def _cpu(pid: int) -> float:
    return _cpu_of(Path(f"/proc/{pid}/stat").read_text())


def _cpu_of(stat: str) -> float:
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _metrics(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(
            (
                "gangplan_scheduler_cycle_seconds_",
                "gangplan_scheduler_reports_dropped_total",
                "gangplan_scheduler_snapshot_resyncs_total",
                "gangplan_scheduler_watch_restarts_total",
            )
        ):
            name, value = line.rsplit(" ", 1)
            if "_bucket" not in name:
                out[name] = float(value)
    return out


def _delta(m0: dict[str, float], m1: dict[str, float], prefix: str) -> int:
    """How much the counters named `prefix` (all labels) grew."""
    return int(
        sum(v for k, v in m1.items() if k.startswith(prefix))
        - sum(v for k, v in m0.items() if k.startswith(prefix))
    )


def _gangs(
    rate: float, seconds: float, gather: float, cards: float, rng: random.Random
) -> list[tuple[float, str, int, str, str]]:
    """(due time, gang name, size, gather layer or "", card alternatives or "") until
    rate x seconds pods."""
    out, t, total, k = [], 0.0, 0, 0
    while total < rate * seconds:
        size = rng.choice(SIZES)
        layer = ""
        if size >= 8 and rng.random() < gather:
            layer = "BlockLayer" if size <= 32 else "SpineLayer"
        card = "|".join(CARDS) if rng.random() < cards else ""
        out.append((t, f"g{k}", size, layer, card))
        total += size
        t += size / rate
        k += 1
    return out


CREATORS = 8  # the driver's concurrent pod creates (a controller manager's workers)


def drive(
    url: str, gangs: list[tuple[float, str, int, str, str]], priority: int | None = None
) -> tuple[dict[str, list[str]], float]:
    """Create the gangs at their due times: each gang's PodGroup in this thread, then its
    pods by CREATORS threads at once (as a controller manager's workers create them), so
    the offered rate is delivered even when one create takes a few milliseconds. Bodies are
    encoded before the clock starts; the writes go straight to one connection pool."""
    pool = urllib3.connectionpool.connection_from_url(url, maxsize=CREATORS + 1, block=True)
    headers = {"Content-Type": "application/json"}
    members: dict[str, list[str]] = {}
    work: list[tuple[float, bytes, list[bytes]]] = []
    for due, name, size, layer, card in gangs:
        annotations = {}
        if layer:
            spec = {"gatherStrategy": [{"layer": layer, "strategy": "MustGather"}]}
            annotations["gang.scheduling.koordinator.sh/network-topology-spec"] = json.dumps(spec)
        group = {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations},
            "spec": {"minMember": size},
        }
        pods = [
            _pod(f"{name}-{i}", gpus=1, gang=name, index=i, card=card, priority=priority)
            for i in range(size)
        ]
        work.append((due, json.dumps(group).encode(), [json.dumps(p).encode() for p in pods]))
        members[name] = [f"default/{name}-{i}" for i in range(size)]

    def post(path: str, body: bytes) -> None:
        r = pool.urlopen("POST", path, body=body, headers=headers)
        assert r.status == 201, (r.status, r.data[:200])

    groups = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups"
    start = time.monotonic()
    with ThreadPoolExecutor(CREATORS) as creators:
        pending: list[Future[None]] = []
        for due, group_body, pod_bodies in work:
            delay = start + due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            post(groups, group_body)
            pending += [
                creators.submit(post, "/api/v1/namespaces/default/pods", body)
                for body in pod_bodies
            ]
        for f in pending:
            f.result()
    return members, time.monotonic() - start


def _evictions(evictions: list[tuple[str, int, float]]) -> dict[str, Any]:
    """The preemption row's extra columns: pods evicted, and per second from the first
    eviction to the last."""
    done = sorted(t for _, code, t in evictions if code == 201)
    span = done[-1] - done[0] if len(done) > 1 else 0.0
    return {
        "preempt": True,
        "evicted": len(done),
        "evictions_refused": sum(1 for _, code, _ in evictions if code != 201),
        "evictions_per_s": round(len(done) / span, 1) if span > 0 else None,
    }


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="run", choices=["run", "serve", "table", "plot"])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--running", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=1000.0, help="pods created per second")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--gather", type=float, default=0.3)
    ap.add_argument(
        "--cards",
        type=float,
        default=0.0,
        help="share of gangs whose pods accept NVIDIA-A100|NVIDIA-H100 (capacity-card conf)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bind-workers", type=int, default=0, help="the scheduler's (0: its default)")
    ap.add_argument(
        "--smoke", action="store_true", help="a few seconds: 64 nodes, 200 pods, 30%% card gangs"
    )
    ap.add_argument(
        "--preempt",
        action="store_true",
        help="every GPU taken by priority-0 pods; the gangs (priority 1000) evict their way in",
    )
    ap.add_argument(
        "--service",
        choices=["embedded", "process"],
        default="embedded",
        help="gangplan in the scheduler's process, or `gangplan serve` in its own (--server)",
    )
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--profile", help="py-spy the scheduler into this raw (collapsed) file")
    ap.add_argument("--profile-fake", help="py-spy the fake API server into this raw file")
    args = ap.parse_args()
    if args.mode == "serve":
        serve(args.nodes, args.running, args.preempt)
        return
    if args.mode == "table":
        print(table())
        print()
        print(preemption_table())
        return
    if args.mode == "plot":
        plot(RESULTS.with_name("throughput.png"))
        return
    if args.smoke:
        args.nodes, args.running, args.rate, args.seconds, args.no_write = 64, 200, 100, 2, True
        args.cards = args.cards or 0.3  # the capacity-card conf and card alternatives too
    py = sys.executable
    fake = subprocess.Popen(
        [
            *(py, __file__, "serve", "--nodes", str(args.nodes), "--running", str(args.running)),
            *(["--preempt"] if args.preempt else []),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    procs = [fake]
    spies: set[int] = set()
    try:
        assert fake.stdout is not None
        url = fake.stdout.readline().strip()
        conf = Path(tempfile.mkdtemp()) / "kubeconfig"
        conf.write_text(yaml.safe_dump(kubeconfig_for(url)))
        t0 = time.monotonic()
        server: list[str] = []
        service = None
        if args.service == "process":
            service = subprocess.Popen(
                [py, "-m", "gangplan", "serve", "--port", "0"],
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env={**os.environ, "GANGPLAN_LOG_LEVEL": "WARNING"},
            )
            procs.append(service)
            assert service.stdout is not None
            found = re.search(r"127\.0\.0\.1:(\d+)", service.stdout.readline())
            if not found:
                sys.exit("gangplan serve did not start")
            server = ["--server", f"127.0.0.1:{found.group(1)}"]
        sched = subprocess.Popen(
            [
                py,
                "-m",
                "gangplan",
                "scheduler",
                "--kubeconfig",
                str(conf),
                "--http-port",
                "0",
                "--log-level",
                "warning",
                *server,
                *(["--bind-workers", str(args.bind_workers)] if args.bind_workers else []),
                *(["--preempt"] if args.preempt else []),
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        procs.append(sched)
        assert sched.stdout is not None
        line = sched.stdout.readline()
        port = int(line.rsplit(":", 1)[1])
        while True:
            try:
                if (
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5).status
                    == 200
                ):
                    break
            except OSError:
                pass
            time.sleep(0.2)
        startup = time.monotonic() - t0
        for pid, out in ((sched.pid, args.profile), (fake.pid, args.profile_fake)):
            if not out:
                continue
            # py-spy is not a dependency: install it to profile (pip install py-spy)
            procs.append(
                subprocess.Popen(
                    [
                        *(str(Path(py).with_name("py-spy")), "record", "--gil", "--nonblocking"),
                        *("--pid", str(pid), "--rate", "200"),
                        *("--format", "raw", "--output", out),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            )
            spies.add(procs[-1].pid)
        pids = {"fake": fake.pid, "scheduler": sched.pid}
        if service is not None:
            pids["service"] = service.pid
        cpu0 = {k: _cpu(pid) for k, pid in pids.items()} | {"driver": time.process_time()}
        m0 = _metrics(port)
        gangs = _gangs(args.rate, args.seconds, args.gather, args.cards, random.Random(args.seed))
        members, created_in = drive(url, gangs, 1000 if args.preempt else None)
        want = {p for ps in members.values() for p in ps}
        deadline = time.monotonic() + 120
        # every bind the fake counts is one of the driver's pods (the running ones were
        # created bound); the whole record is read once, after the CPU is counted
        while True:
            counts = json.loads(
                urllib.request.urlopen(url + "/fake/stats?count", timeout=60).read()
            )
            if counts["bound"] >= len(want) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        cpu1 = {k: _cpu(pid) for k, pid in pids.items()} | {"driver": time.process_time()}
        m1 = _metrics(port)
        stats = json.loads(urllib.request.urlopen(url + "/fake/stats", timeout=60).read())
        bound = {p: t for p, _, code, t in stats["binds"] if code == 201 and p in want}
    finally:
        for p in reversed(procs):
            # py-spy writes its file on SIGINT
            p.send_signal(signal.SIGINT if p.pid in spies else signal.SIGTERM)
            p.wait(60)
    created = stats["created"]
    first = min(created[p] for p in want)
    last_bind = max(bound.values()) if bound else first
    lags = []
    for gang_pods in members.values():
        if all(p in bound for p in gang_pods):
            lags.append(max(bound[p] for p in gang_pods) - max(created[p] for p in gang_pods))
    big = [lag for (name, lag) in zip(members, lags, strict=False) if len(members[name]) >= 512]
    wall = last_bind - first
    phases = {}
    for phase in ("sync", "decide", "bind", "report", "total"):
        key = f'{{phase="{phase}"}}'
        n = m1.get(f"gangplan_scheduler_cycle_seconds_count{key}", 0) - m0.get(
            f"gangplan_scheduler_cycle_seconds_count{key}", 0
        )
        s = m1.get(f"gangplan_scheduler_cycle_seconds_sum{key}", 0) - m0.get(
            f"gangplan_scheduler_cycle_seconds_sum{key}", 0
        )
        phases[phase] = {
            "cycles": int(n),
            "mean_ms": round(1000 * s / n, 2) if n else None,
            "seconds": round(s, 2),
        }
    row = {
        "git": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip(),
        "machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python {platform.python_version()}",
        "nodes": args.nodes,
        "running": args.running,
        "offered_pods_per_s": args.rate,
        "gather": args.gather,
        "cards": args.cards,
        "bind_workers": args.bind_workers or 16,
        "service": args.service,
        "reports_dropped": int(
            m1.get("gangplan_scheduler_reports_dropped_total", 0)
            - m0.get("gangplan_scheduler_reports_dropped_total", 0)
        ),
        "resyncs": _delta(m0, m1, "gangplan_scheduler_snapshot_resyncs_total"),
        "watch_restarts": _delta(m0, m1, "gangplan_scheduler_watch_restarts_total"),
        "seconds": args.seconds,
        "gangs": len(members),
        "pods": len(want),
        "bound": len(bound),
        "startup_s": round(startup, 1),
        "created_in_s": round(created_in, 1),
        "bound_pods_per_s": round(len(bound) / wall, 1) if wall > 0 else None,
        "lag_p50_s": round(_pct(lags, 0.5), 3),
        "lag_p99_s": round(_pct(lags, 0.99), 3),
        "lag_512_max_s": round(max(big), 3) if big else None,
        "cpu_s": {k: round(cpu1[k] - cpu0[k], 1) for k in cpu0},
        "phases": phases,
        **(_evictions(stats["evictions"]) if args.preempt else {}),
    }
    print(json.dumps(row, indent=1))
    if not args.no_write:
        with RESULTS.open("a") as f:
            f.write(json.dumps(row) + "\n")
    if len(bound) != len(want):
        sys.exit(f"only {len(bound)} of {len(want)} pods bound")


if __name__ == "__main__":
    main()
