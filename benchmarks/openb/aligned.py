"""gangplan's engine against a run of the original FGD simulator, arrival by arrival.

    .venv/bin/python benchmarks/openb/aligned.py <simon log-*.log> [--policy fgd] [--trace default]

The simulator (hkust-adsl/kubernetes-scheduler-simulator, run as `../shared/anchors/fgd/`
runs it) logs each arrival (`[i] attempt to create pod(ns/NAME)`, a copy of the 130%
inflation named `NAME-tuned-k`) and where it went (`pod(ns/NAME) is scheduled to
node(PPPP-NODE)`, PPPP the node's random name prefix). This feeds that exact arrival order
and node naming to `online.run` (the PlaceJob path, one call per arrival) and counts the
arrivals the engine places on another node (or places where the simulator dropped, or the
reverse). The allocation the simulator reports (`[Alloc]` lines: used GPU milli, arrived
GPU milli) is printed beside the engine's, at 130% as `merge_alloc_discrete.py` computes it.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.openb.online import TRACES, run  # noqa: E402
from benchmarks.openb.replay import DATA, MILLI, load_cluster, load_pods  # noqa: E402

CREATE = re.compile(r"\[(\d+)\] attempt to create pod\([^/]+/([^)]+)\)")
SCHEDULED = re.compile(r"pod\([^/]+/([^)]+)\) is scheduled to node\((\d{4})-([^)]+)\)")
ALLOC = re.compile(r": (\d+)")
COPY = re.compile(r"-tuned-\d+$")


def parse(log: Path, trace: str) -> dict[str, object]:
    cluster = load_cluster()
    pods = load_pods(DATA / f"openb_pod_list_{trace}.csv", cluster.models)
    names = [
        line.split(",")[0]
        for line in (DATA / "openb_node_list_gpu_node.csv").read_text().splitlines()[1:]
    ]
    node_row = {name: i for i, name in enumerate(names)}
    pod_row = {name: i for i, name in enumerate(pods.names)}
    arrivals: list[str] = []
    order: list[int] = []
    placed: dict[str, int] = {}
    rank: dict[int, int] = {}
    alloc: list[list[int]] = []
    with log.open() as lines:
        for line in lines:
            if m := CREATE.search(line):
                arrivals.append(m.group(2))
                order.append(pod_row[COPY.sub("", m.group(2))])
            elif m := SCHEDULED.search(line):
                n = node_row[m.group(3)]
                placed[m.group(1)] = n
                rank[n] = int(m.group(2))
            elif "[Alloc];" in line:
                alloc.append([int(x) for x in ALLOC.findall(line)])
    # nodes the log never names sort after every named one
    unnamed = iter(range(8000, 8000 + len(names)))  # 4 digits, as the names compare
    ranks = np.array([rank[n] if n in rank else next(unnamed) for n in range(len(names))])
    simulated = np.array([placed.get(a, -1) for a in arrivals], dtype=np.int64)
    return {"order": np.array(order), "rank": ranks, "simulated": simulated, "alloc": alloc}


def compare(log: Path, policy: str, trace: str) -> None:
    """Replay the log's arrivals with the engine and print where the two differ."""
    parsed = parse(log, trace)
    simulated = parsed["simulated"]
    assert isinstance(simulated, np.ndarray)
    row = run(trace, policy, seed=0, given=(parsed["order"], parsed["rank"]))  # type: ignore[arg-type]
    mine = np.array(row["nodes"])
    same = int((mine == simulated).sum())
    print(
        f"arrivals {len(mine):,}; the engine's node = the simulator's for {same:,} ({100 * same / len(mine):.2f}%)"
    )
    for t in np.flatnonzero(mine != simulated)[:20].tolist():
        print(f"  arrival {t}: simulator node row {simulated[t]}, engine {mine[t]}")
    alloc = np.array(
        parsed["alloc"]
    )  # used nodes, used GPUs, used milli, total GPUs, arrived milli
    if alloc.size:
        capacity = int(alloc[0, 3]) * MILLI
        at = np.round(100.0 * alloc[:, 4] / capacity, 0) == 130
        print(
            f"GPU allocation at 130%: simulator {100 * alloc[at, 2].mean() / capacity:.2f}%, "
            f"engine {100 * row['at_130']:.2f}%"
        )


def smoke_log(trace: str, arrivals: int = 200) -> Path:
    """A log in the simulator's format, written from the engine's own run of the first
    `arrivals` of a seeded order (the simulator itself does not run here)."""
    cluster = load_cluster()
    pods = load_pods(DATA / f"openb_pod_list_{trace}.csv", cluster.models)
    names = [
        line.split(",")[0]
        for line in (DATA / "openb_node_list_gpu_node.csv").read_text().splitlines()[1:]
    ]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(pods.names))[:arrivals]
    rank = rng.permutation(len(names))
    row = run(trace, "fgd", seed=0, given=(order, rank))
    lines = []
    for i, (p, n) in enumerate(zip(order.tolist(), row["nodes"], strict=True)):
        lines.append(f"[{i}] attempt to create pod(default/{pods.names[p]})")
        if n >= 0:
            lines.append(
                f"pod(default/{pods.names[p]}) is scheduled to node({rank[n]:04d}-{names[n]})"
            )
    log = Path(tempfile.mkdtemp()) / "smoke.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log", type=Path, nargs="?")
    parser.add_argument("--policy", choices=("bestfit", "fgd"), default="fgd")
    parser.add_argument("--trace", choices=TRACES, default="default")
    parser.add_argument(
        "--smoke", action="store_true", help="seconds: a 200-arrival log made by the engine"
    )
    args = parser.parse_args()
    if args.log is None and not args.smoke:
        parser.error("the simulator's log is required (or --smoke)")
    compare(smoke_log(args.trace) if args.smoke else args.log, args.policy, args.trace)


if __name__ == "__main__":
    main()
