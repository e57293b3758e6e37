"""Soak: `gangplan serve` for `--minutes` under open-loop load with everything an operator's
day brings, and a SIGTERM and restart every `--restart-every` seconds.

    .venv/bin/python benchmarks/soak/run.py              # 30 minutes
    .venv/bin/python benchmarks/soak/run.py --smoke      # 5 s, nothing written

Every restart imports the tree as it is then: run it from a checkout nobody edits for the
half hour (`git worktree add`), or the lives measure different commits.

The server runs as a subprocess on a fixed loopback port with `--grace`; one snapshot of
`--nodes` 8-GPU nodes and `--running` running pods is put at every start. Then, at once:

* **Load** (open loop, `--rate` calls/s, each call due at its time whether or not earlier
  ones are answered): PlaceJob on the snapshot, 70 % one pod (greedy), 20 % an 8-pod gang
  (`auto`), 10 % a 64-pod gang (greedy); a 2 s deadline.
* **Injected faults**, 5 % of calls each: cancelled by the caller after 0–20 ms; given a
  5 ms deadline (a miss is expected and counted apart).
* **Snapshot deltas** every `--update-every` s: 20 running pods added and the 20 oldest
  removed (the snapshot's size stays put, its content turns over).
* **Restarts**: SIGTERM; calls keep coming (they must be refused with UNAVAILABLE, not
  admitted and dropped); when the process has exited, a new one starts on the same port
  and the snapshot is put again.

Every call sent more than `SETTLE` s before a SIGTERM was admitted (or refused with
RESOURCE_EXHAUSTED): it must end OK, or as its fault says (CANCELLED by us, or
DEADLINE_EXCEEDED on 5 ms). Any other ending of such a call is a **lost call**. Calls sent
later may be refused (UNAVAILABLE). The server's resident memory is sampled every 5 s.
Appends one row to results.jsonl (git SHA, machine, totals, memory per server life) and
writes the last run's samples to samples.json; `plot.py` draws soak.png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import grpc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results import provenance  # noqa: E402
from gangplan.v1 import cluster_pb2 as pb  # noqa: E402
from gangplan.v1 import placement_service_pb2 as spb  # noqa: E402
from gangplan.v1 import placement_service_pb2_grpc as spb_grpc  # noqa: E402

SNAPSHOT = "soak"
SETTLE = 0.05  # s: a call sent this long before SIGTERM has reached the server
DEADLINE = 2.0  # s, every call but the injected misses
MB = 1024 * 1024
KINDS = [(0.7, 1, "greedy"), (0.2, 8, "auto"), (0.1, 64, "greedy")]  # share, pods, engine


def cluster(nodes: int, running: int) -> pb.Cluster:
    return pb.Cluster(
        nodes=[
            pb.Node(
                name=f"node-{i:05d}",
                labels={"rack": f"rack-{i // 16:04d}"},
                allocatable={"cpu": 96_000, "memory": 1024 * 2**30, "nvidia.com/gpu": 8},
            )
            for i in range(nodes)
        ],
        pods=[running_pod(i, nodes) for i in range(running)],
    )


def running_pod(i: int, nodes: int) -> pb.Pod:
    return pb.Pod(
        namespace="run",
        name=f"r-{i:07d}",
        node_name=f"node-{i % nodes:05d}",
        phase="Running",
        requests={"cpu": 1000, "memory": 4 * 2**30},
    )


def job(name: str, size: int) -> pb.Job:
    return pb.Job(
        gangs=[pb.Gang(namespace="soak", name=name, min_member=size)],
        pods=[
            pb.Pod(
                namespace="soak",
                name=f"{name}-{i}",
                gang=f"soak/{name}",
                requests={"cpu": 8000, "memory": 64 * 2**30, "nvidia.com/gpu": 1 + i % 8},
            )
            for i in range(size)
        ],
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@dataclass
class Life:
    """One server process: when it started and stopped, and its memory."""

    started: float
    sigterm: float | None = None
    exited: float | None = None
    exit_code: int | None = None
    drain_s: float | None = None
    put_s: float | None = None
    rss: list[tuple[float, float]] = field(default_factory=list)  # (s since soak start, MB)


@dataclass
class Tally:
    codes: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    sent: int = 0


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.port = free_port()
        self.rng = random.Random(0)
        self.tally = Tally()
        self.lives: list[Life] = []
        self.proc: subprocess.Popen[str] | None = None
        self.t0 = time.monotonic()
        self.windows: list[list[float]] = []  # [SIGTERM - SETTLE, back up] (monotonic)
        self.up = asyncio.Event()
        self.next_pod = args.running
        self.oldest = 0
        self.updates = Counter[str]()
        self.source = provenance()  # at the start: restarts import the tree as it is then

    # ------------------------------------------------------------------ the server's lives

    async def start(self) -> None:
        env = {**os.environ, "GANGPLAN_LOG_LEVEL": "WARNING", "GANGPLAN_MAX_MESSAGE_MB": "256"}
        command = [sys.executable, "-c", "from clients.cli import main; main()", "serve"]
        command += ["--port", str(self.port), "--metrics-port", "0"]
        command += ["--grace", str(self.args.grace)]
        self.proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        line = await asyncio.to_thread(self.proc.stdout.readline)
        if "listening" not in line:
            raise SystemExit(f"server did not start: {line!r}")
        life = Life(started=time.monotonic() - self.t0)
        self.lives.append(life)
        started = time.perf_counter()
        await self.stub.PutSnapshot(
            spb.PutSnapshotRequest(
                snapshot_id=SNAPSHOT, cluster=cluster(self.args.nodes, self.args.running)
            ),
            timeout=600,
            wait_for_ready=True,  # the channel may still be backing off from the last life
        )
        life.put_s = round(time.perf_counter() - started, 2)
        if self.windows:
            self.windows[-1][1] = time.monotonic()
        self.next_pod, self.oldest = self.args.running, 0
        self.up.set()

    async def restart(self) -> None:
        await self.terminate()
        await self.start()

    async def terminate(self) -> None:
        """SIGTERM, and wait for the drain to end."""
        assert self.proc is not None
        life = self.lives[-1]
        self.windows.append([time.monotonic() - SETTLE, float("inf")])
        life.sigterm = time.monotonic() - self.t0
        self.proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(self.proc.wait, self.args.grace + 30)
        life.exited = time.monotonic() - self.t0
        life.exit_code = code
        life.drain_s = round(life.exited - life.sigterm, 2)
        self.up.clear()

    # ------------------------------------------------------------------ what runs at once

    def restarting(self, sent: float) -> bool:
        """Was the call sent while a server drained or the next one started?"""
        return any(start <= sent <= end for start, end in self.windows)

    async def sample(self, until: float) -> None:
        while time.monotonic() < until:
            if self.proc is not None and self.up.is_set():
                mb = rss_mb(self.proc.pid)
                if mb is not None:
                    self.lives[-1].rss.append((round(time.monotonic() - self.t0, 1), mb))
            await asyncio.sleep(5.0)

    async def update(self, until: float) -> None:
        while time.monotonic() < until:
            await asyncio.sleep(self.args.update_every)
            if not self.up.is_set():
                continue
            n = self.args.nodes
            add = [running_pod(i, n) for i in range(self.next_pod, self.next_pod + 20)]
            gone = [f"run/r-{i:07d}" for i in range(self.oldest, self.oldest + 20)]
            request = spb.UpdateSnapshotRequest(
                snapshot_id=SNAPSHOT, upsert_pods=add, remove_pods=gone
            )
            try:
                await self.stub.UpdateSnapshot(request, timeout=DEADLINE)
                self.next_pod += 20
                self.oldest += 20
                self.updates["OK"] += 1
            except grpc.aio.AioRpcError as err:
                self.updates[err.code().name] += 1

    async def restarts(self, until: float) -> None:
        while True:
            await asyncio.sleep(self.args.restart_every)
            if time.monotonic() + 5 >= until:
                return
            await self.restart()

    async def load(self, until: float) -> None:
        calls: list[asyncio.Task[None]] = []
        period = 1.0 / self.args.rate
        due = time.monotonic()
        k = 0
        while due < until:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            calls.append(asyncio.create_task(self.call(k)))
            k += 1
            due += period
        await asyncio.gather(*calls)

    async def call(self, k: int) -> None:
        rng = self.rng
        _, size, engine = rng.choices(KINDS, [share for share, _, _ in KINDS])[0]
        fault = rng.choices(["none", "cancel", "miss"], [0.9, 0.05, 0.05])[0]
        request = spb.PlaceJobRequest(
            snapshot=spb.SnapshotRef(id=SNAPSHOT),
            job=job(f"j{k}", size),
            options=spb.SolveOptions(engine=engine, workers=1),
        )
        timeout = 0.005 if fault == "miss" else DEADLINE
        sent = time.monotonic()
        self.tally.sent += 1
        rpc = self.stub.PlaceJob(request, timeout=timeout)
        if fault == "cancel":
            cancel_after = rng.uniform(0.0, 0.02)
            asyncio.get_running_loop().call_later(cancel_after, rpc.cancel)
        try:
            await rpc
            code, details = "OK", ""
            self.tally.latencies.append(time.monotonic() - sent)
        except asyncio.CancelledError:
            code, details = "CANCELLED", ""
        except grpc.aio.AioRpcError as err:
            code = err.code().name
            details = err.details() or ""
        self.tally.codes[f"{fault}:{code}"] += 1
        expected = {
            "none": {"OK"},
            "cancel": {"OK", "CANCELLED"},
            "miss": {"OK", "DEADLINE_EXCEEDED"},
        }
        if code in expected[fault] or code == "RESOURCE_EXHAUSTED":
            return
        if code in ("UNAVAILABLE", "NOT_FOUND", "CANCELLED") and self.restarting(sent):
            # refused while draining (UNAVAILABLE; CANCELLED when grpc's own stop met it on
            # its way in), or sent before the next server had its snapshot (NOT_FOUND)
            return
        self.tally.lost.append(
            f"{k} {fault} {size}-pod {engine}: {code} ({details[:120]}) sent at "
            f"{sent - self.t0:.2f} s, SIGTERMs at "
            f"{[round(start + SETTLE - self.t0, 2) for start, _ in self.windows]}"
        )

    async def run(self) -> dict[str, object]:
        options = [
            ("grpc.max_send_message_length", 256 * MB),
            ("grpc.max_receive_message_length", 256 * MB),
        ]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{self.port}", options=options) as ch:
            self.stub = spb_grpc.PlacementServiceStub(ch)
            await self.start()
            until = time.monotonic() + self.args.minutes * 60
            await asyncio.gather(
                self.load(until), self.update(until), self.sample(until), self.restarts(until)
            )
            await self.terminate()
        return self.report()

    def report(self) -> dict[str, object]:
        lat = sorted(self.tally.latencies)

        def pct(q: float) -> float | None:
            return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 1) if lat else None

        lives = []
        for life in self.lives:
            mbs = [mb for _, mb in life.rss]
            settled = [mb for t, mb in life.rss if t - life.started >= 60] or mbs
            lives.append(
                {
                    "started_s": round(life.started, 1),
                    "put_s": life.put_s,
                    "drain_s": life.drain_s,
                    "exit_code": life.exit_code,
                    "rss_first_mb": round(mbs[0], 1) if mbs else None,
                    "rss_after_1min_mb": round(settled[0], 1) if settled else None,
                    "rss_last_mb": round(mbs[-1], 1) if mbs else None,
                    "rss_max_mb": round(max(mbs), 1) if mbs else None,
                }
            )
        return {
            **self.source,
            "minutes": self.args.minutes,
            "nodes": self.args.nodes,
            "running_pods": self.args.running,
            "rate": self.args.rate,
            "grace_s": self.args.grace,
            "restart_every_s": self.args.restart_every,
            "calls": self.tally.sent,
            "codes": dict(sorted(self.tally.codes.items())),
            "updates": dict(self.updates),
            "lost": len(self.tally.lost),
            "lost_examples": self.tally.lost[:20],
            "p50_ms": pct(0.5),
            "p99_ms": pct(0.99),
            "lives": lives,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--running", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=20.0, help="PlaceJob calls/s offered")
    parser.add_argument("--update-every", type=float, default=0.5, help="s between deltas")
    parser.add_argument("--restart-every", type=float, default=300.0, help="s between SIGTERMs")
    parser.add_argument("--grace", type=float, default=5.0, help="the server's --grace")
    parser.add_argument("--smoke", action="store_true", help="5 s, small, nothing written")
    args = parser.parse_args()
    if args.smoke:
        args.minutes, args.nodes, args.running, args.restart_every = 5 / 60, 64, 500, 2.0
    soak = Soak(args)
    try:
        row = asyncio.run(soak.run())
    finally:
        if soak.proc is not None and soak.proc.poll() is None:
            soak.proc.kill()
    print(json.dumps({k: v for k, v in row.items() if k != "lives"}, indent=2))
    for life in row["lives"]:  # type: ignore[attr-defined]
        print(life)
    if not args.smoke:
        with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        samples = [{"started_s": life.started, "rss": life.rss} for life in soak.lives]
        (HERE / "samples.json").write_text(json.dumps({**soak.source, "lives": samples}) + "\n")
    if row["lost"]:
        sys.exit(f"{row['lost']} lost call(s): {row['lost_examples']}")


if __name__ == "__main__":
    main()
