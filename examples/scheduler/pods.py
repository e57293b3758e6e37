"""Print the pods of a cluster as `kubectl get pods -o wide` and `kubectl describe` would
show what `gangplan scheduler` wrote: the node of each bound pod, and for a pending one
its `PodScheduled` condition's reason and message. Uses the official Kubernetes client.

    python examples/scheduler/pods.py KUBECONFIG [--wait N]   # wait until N pods are bound
"""

from __future__ import annotations

import argparse
import time

from kubernetes import client, config


def _conditions(pod: client.V1Pod) -> list[client.V1PodCondition]:
    return list((pod.status.conditions if pod.status else None) or [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kubeconfig")
    ap.add_argument("--namespace", default="default")
    ap.add_argument("--wait", type=int, default=0, help="until this many pods are bound")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    config.load_kube_config(args.kubeconfig)
    core = client.CoreV1Api()
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            pods = core.list_namespaced_pod(args.namespace).items
        except Exception:  # the API server may not be up yet
            pods = []
        bound = [p for p in pods if p.spec.node_name]
        waiting = [p for p in pods if not p.spec.node_name]
        explained = all(any(c.type == "PodScheduled" for c in _conditions(p)) for p in waiting)
        if (len(bound) >= args.wait and explained) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    width = max([len("NAME"), *(len(p.metadata.name) for p in pods)]) + 1
    print(f"{'NAME':<{width}} {'NODE':<8} REASON")
    for p in sorted(pods, key=lambda p: p.metadata.name):
        scheduled = next((c for c in (p.status.conditions or []) if c.type == "PodScheduled"), None)
        why = (
            ""
            if p.spec.node_name or scheduled is None
            else f"{scheduled.reason}: {scheduled.message}"
        )
        print(f"{p.metadata.name:<{width}} {p.spec.node_name or '<none>':<8} {why[:110]}")
    if len(bound) < args.wait:
        raise SystemExit(f"only {len(bound)} of {args.wait} pods bound")


if __name__ == "__main__":
    main()
