"""The scheduler front end's read path per pod, without HTTP: what the cycle pays to turn
watched pods into an UpdateSnapshot delta (`translate`: gangplan's Kubernetes reader, then
the codec) and what the service pays to decode it (`delta_from_proto`).

    .venv/bin/python benchmarks/frontend/read_path.py           # seconds; writes read_path.json
    .venv/bin/python benchmarks/frontend/read_path.py --smoke   # nothing written

`--gangs` coscheduling PodGroups of `--size` pods each (1 cpu, 1 GPU, the scheduler name
`gangplan`), every pod with its own name, uid and creation time, as a controller creates
them, put into the scheduler's `Mirror` as watch events; then one delta of all of them.
`distinct` rows give every pod an annotation of its own (the Koordinator gather index the
live benchmark's gathered gangs carry), so no two pods share a template. Best of `--reps`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results import provenance, write_results  # noqa: E402
from clients.scheduler.kinds import KINDS  # noqa: E402
from clients.scheduler.mirror import Mirror  # noqa: E402
from clients.scheduler.translate import translate  # noqa: E402
from solver import SCHEMA  # noqa: E402
from solver.codec import delta_from_proto  # noqa: E402

KIND = {k.kind: k for k in KINDS if k.group in ("", "scheduling.sigs.k8s.io")}
GROUP = "pod-group.scheduling.sigs.k8s.io"


def _pod(gang: int, i: int, distinct: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"g{gang}-{i}",
        "namespace": "default",
        "uid": f"uid-{gang}-{i}",
        "creationTimestamp": f"2026-11-30T06:{gang % 60:02d}:{i % 60:02d}Z",
        "labels": {GROUP: f"g{gang}"},
    }
    if distinct:
        meta["annotations"] = {"gang.scheduling.koordinator.sh/network-topology-index": str(i)}
    requests = {"cpu": "1", "nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": "gangplan",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Pending"},
    }


def measure(gangs: int, size: int, distinct: bool, reps: int) -> dict[str, Any]:
    best = {"translate": float("inf"), "decode": float("inf")}
    for _ in range(reps):
        mirror = Mirror(KIND.values())
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}, "status": {}}
        mirror.replace(KIND["Node"], [node])
        mirror.take_changes()
        for g in range(gangs):
            group = {
                "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": f"g{g}", "namespace": "default"},
                "spec": {"minMember": size},
            }
            mirror.apply(KIND["PodGroup"], "ADDED", group)
            for i in range(size):
                mirror.apply(KIND["Pod"], "ADDED", _pod(g, i, distinct))
        changes = mirror.take_changes()
        t0 = time.perf_counter()
        delta = translate(mirror, changes)
        t1 = time.perf_counter()
        delta_from_proto(delta.request, SCHEMA)
        t2 = time.perf_counter()
        best["translate"] = min(best["translate"], t1 - t0)
        best["decode"] = min(best["decode"], t2 - t1)
    pods = gangs * size
    return {
        "pods": pods,
        "distinct": distinct,
        "translate_us_per_pod": round(best["translate"] / pods * 1e6, 1),
        "decode_us_per_pod": round(best["decode"] / pods * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gangs", type=int, default=250)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="seconds; nothing written")
    parser.add_argument("--out", default=str(Path(__file__).with_name("read_path.json")))
    args = parser.parse_args()
    if args.smoke:
        args.gangs, args.reps = 10, 1
    rows = [measure(args.gangs, args.size, distinct, args.reps) for distinct in (False, True)]
    source = provenance()
    for row in rows:
        print({**source, **row})
    if not args.smoke:
        write_results(args.out, source, rows)


if __name__ == "__main__":
    main()
