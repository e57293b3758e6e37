"""`gangplan scheduler` (a Kubernetes scheduler for the pods that name it) and
`gangplan kube-fake` (the fake API server its tests use, to try it without a cluster)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
import yaml

from clients.kubefake import FakeApiServer, default_resources, kubeconfig_for, load
from clients.kubefake.store import ApiError
from clients.scheduler import CycleOptions, SchedulerService, connect, setup_logging
from clients.scheduler.kube import ApiException, KubeApi
from solver import GangplanError, conf_from_text, load_conf
from solver.errors import InputError
from solver.kube import read_sources
from solver.kube.workloads import expand_workloads

__all__ = ["kube_fake_cmd", "scheduler_cmd"]


def _conf_from_config_map(api: KubeApi, ref: str) -> str:
    """`NS/NAME[:KEY]` -> the conf text (KEY default: the map's only key)."""
    where, _, key = ref.partition(":")
    ns, _, name = where.rpartition("/")
    try:
        cm = api.request("GET", f"/api/v1/namespaces/{ns or 'default'}/configmaps/{name}")
    except ApiException as err:
        raise InputError(f"--config-map {ref}: cannot read it: HTTP {err.status}") from None
    data = cm.get("data") or {}
    if not key:
        if len(data) != 1:
            raise InputError(
                f"--config-map {ref}: name the key (NS/NAME:KEY), it has {sorted(data)}"
            )
        key = next(iter(data))
    if key not in data:
        raise InputError(f"--config-map {ref}: no key {key!r} (it has {sorted(data)})")
    return str(data[key])


def _checked_conf(text: str, where: str) -> str:
    """Validate a ConfigMap's conf as `--config` files are validated; returns the text."""
    conf_from_text(text, where)
    return text


def scheduler_cmd(
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig", help="Kubeconfig file (default: in-cluster, else ~/.kube/config)."
        ),
    ] = None,
    context: Annotated[str | None, typer.Option("--context", help="Kubeconfig context.")] = None,
    scheduler_name: Annotated[
        list[str] | None,
        typer.Option("--scheduler-name", help="Schedule pods naming this (repeatable)."),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="A gangplan service, HOST:PORT (default: one embedded in this process).",
        ),
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="Scheduler conf (Volcano format) file.")
    ] = None,
    config_map: Annotated[
        str | None,
        typer.Option("--config-map", help="Scheduler conf from a ConfigMap, NS/NAME[:KEY]."),
    ] = None,
    engine: Annotated[str, typer.Option("--engine", help="greedy, auto or cpsat.")] = "greedy",
    time_limit: Annotated[
        float, typer.Option("--time-limit", min=0.05, help="Seconds per decision.")
    ] = 5.0,
    workers: Annotated[int, typer.Option("--workers", min=1, help="CP-SAT workers.")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="CP-SAT seed.")] = 0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Shadow mode: decide and log, write nothing.")
    ] = False,
    http_port: Annotated[
        int, typer.Option("--http-port", min=0, help="/healthz, /readyz, /metrics (0: any).")
    ] = 10259,
    bind_workers: Annotated[
        int, typer.Option("--bind-workers", min=1, help="Binds in flight at once.")
    ] = 16,
    snapshot_id: Annotated[
        str, typer.Option("--snapshot-id", help="The snapshot's id on the service.")
    ] = "gangplan-scheduler",
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning.")] = "info",
) -> None:
    """Run a Kubernetes scheduler for the pods whose schedulerName is one of yours."""
    setup_logging(log_level)
    try:
        if config and config_map:
            raise InputError("--config and --config-map: give one")
        conf_text = ""
        if config:  # a local file: checked before anything reaches for the cluster
            load_conf(config)
            conf_text = Path(config).read_text(encoding="utf-8")
    except GangplanError as err:
        sys.stderr.write(f"error: {err}\n")
        raise typer.Exit(2) from None
    try:
        api = connect(kubeconfig, context=context)
    except Exception as err:  # kubeconfig errors come in many types
        where = f"--kubeconfig {kubeconfig}" if kubeconfig else "the cluster configuration"
        sys.stderr.write(f"error: {where}: cannot load it: {err}\n")
        raise typer.Exit(2) from None
    try:
        if config_map:
            conf_text = _checked_conf(
                _conf_from_config_map(api, config_map), f"--config-map {config_map}"
            )
    except GangplanError as err:
        sys.stderr.write(f"error: {err}\n")
        raise typer.Exit(2) from None
    options = CycleOptions(
        scheduler_names=frozenset(scheduler_name or ["gangplan"]),
        engine=engine,
        scheduler_conf=conf_text,
        time_limit=time_limit,
        workers=workers,
        seed=seed,
        dry_run=dry_run,
        snapshot_id=snapshot_id,
    )
    service = SchedulerService(
        api,
        options,
        server=server,
        token=os.environ.get("GANGPLAN_TOKEN") or None,
        http_port=http_port,
        bind_workers=bind_workers,
    )
    service.run()


def kube_fake_cmd(
    files: Annotated[
        list[str] | None, typer.Option("-f", "--filename", help="Objects to create first.")
    ] = None,
    port: Annotated[int, typer.Option("--port", min=0, help="Port on 127.0.0.1 (0: any).")] = 0,
    kubeconfig: Annotated[
        str | None, typer.Option("--kubeconfig", help="Write a kubeconfig for it here.")
    ] = None,
) -> None:
    """Serve a fake Kubernetes API server (the one the scheduler is tested against) with
    these objects, until SIGTERM. Workload objects (Job, JobSet, Volcano Job, ...) become
    the pods their controllers would create. Not a cluster: nothing runs the pods it binds."""
    try:
        expanded, expand_notes = expand_workloads(read_sources(files or []))
    except GangplanError as err:
        sys.stderr.write(f"error: {err}\n")
        raise typer.Exit(2) from None
    objects = [raw.body for raw in expanded]
    fake = FakeApiServer(default_resources(), port=port)
    try:
        notes = load(fake.store, objects)
    except ApiError as err:
        sys.stderr.write(f"error: {err.message}\n")
        raise typer.Exit(2) from None
    for note in (*expand_notes, *notes):
        sys.stderr.write(f"note: {note}\n")
    if kubeconfig:
        Path(kubeconfig).write_text(yaml.safe_dump(kubeconfig_for(fake.url)), encoding="utf-8")
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    fake.start()
    print(json.dumps({"url": fake.url, "objects": len(objects)}), flush=True)
    while not stop.wait(0.5):
        pass
    fake.stop()
