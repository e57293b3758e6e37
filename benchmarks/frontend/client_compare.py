"""Which Kubernetes client for the front end: the official `kubernetes` (threads) or
`kubernetes_asyncio` (one event loop)? Both send the same writes the binder sends —
`pods/binding` for pending pods — to the fake API server in its own process, `--concurrency`
in flight, and the client process's CPU per request is what counts (the scheduler process
is CPU-bound, so a cheaper request is more pods per second).

    .venv/bin/python benchmarks/frontend/client_compare.py --requests 3000
(kubernetes_asyncio is not a dependency: `pip install kubernetes_asyncio` to run its half.)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kubernetes import client as k8s  # noqa: E402
from kubernetes import config as kc  # noqa: E402

from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for  # noqa: E402
from clients.scheduler.kube import KubeApi  # noqa: E402


def _optional(module: str) -> Any:
    """`kubernetes_asyncio` is not a dependency: only this comparison uses it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


ak8s = _optional("kubernetes_asyncio.client")
akc = _optional("kubernetes_asyncio.config")


def serve(pods: int) -> None:
    fake = FakeApiServer(default_resources())
    fake.store.create("", "nodes", "", {"metadata": {"name": "n"}})
    for i in range(pods):
        fake.store.create("", "pods", "default", {"metadata": {"name": f"p{i}"}, "spec": {}})
    fake.start()
    print(fake.url, flush=True)
    signal.sigwait({signal.SIGTERM})
    fake.stop()


def _binding(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": f"p{i}", "namespace": "default"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n"},
    }


def sync_client(url: str, ids: range, concurrency: int) -> None:
    conf = k8s.Configuration()
    kc.load_kube_config_from_dict(kubeconfig_for(url), client_configuration=conf)  # type: ignore[no-untyped-call]
    conf.connection_pool_maxsize = concurrency
    api = KubeApi(k8s.ApiClient(conf))

    def one(i: int) -> None:
        api.request("POST", f"/api/v1/namespaces/default/pods/p{i}/binding", body=_binding(i))

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, ids))


def async_client(url: str, ids: range, concurrency: int) -> None:
    if ak8s is None or akc is None:
        raise ImportError("kubernetes_asyncio is not installed")

    async def main() -> None:
        conf = ak8s.Configuration()
        await akc.load_kube_config_from_dict(kubeconfig_for(url), client_configuration=conf)
        conf.connection_pool_maxsize = concurrency
        async with ak8s.ApiClient(conf) as api:
            core = ak8s.CoreV1Api(api)
            gate = asyncio.Semaphore(concurrency)

            async def one(i: int) -> None:
                async with gate:
                    await core.create_namespaced_pod_binding(
                        f"p{i}",
                        "default",
                        _binding(i),  # a dict body is sent as is
                        _preload_content=False,
                    )

            await asyncio.gather(*(one(i) for i in ids))

    asyncio.run(main())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="run", choices=["run", "serve"])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--smoke", action="store_true", help="seconds: 50 requests each")
    args = ap.parse_args()
    if args.smoke:
        args.requests = 50
    if args.mode == "serve":
        serve(2 * args.requests)
        return
    rows: list[dict[str, Any]] = []
    for name, fn, first in (
        ("kubernetes (threads)", sync_client, 0),
        ("kubernetes_asyncio", async_client, args.requests),
    ):
        fake = subprocess.Popen(
            [sys.executable, __file__, "serve", "--requests", str(args.requests)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert fake.stdout is not None
            url = fake.stdout.readline().strip()
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                fn(url, range(first, first + args.requests), args.concurrency)
            except ImportError as err:
                rows.append({"client": name, "skipped": str(err)})
                continue
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            fake.send_signal(signal.SIGTERM)
            fake.wait(30)
        rows.append(
            {
                "client": name,
                "requests": args.requests,
                "concurrency": args.concurrency,
                "requests_per_s": round(args.requests / wall),
                "client_cpu_ms_per_request": round(1000 * cpu / args.requests, 3),
                "cores": os.cpu_count(),
            }
        )
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
