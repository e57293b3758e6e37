"""`gangplan scheduler` (a Kubernetes scheduler for the pods that name it), `gangplan
kube-fake` (the fake API server its tests use, to try it without a cluster), `gangplan dump`
(the live cluster as gangplan reads it) and `live_model` (the other commands' `--kubeconfig`).

They load their packages when they run: the Kubernetes client's import (a quarter of a
second) is paid only by the commands that talk to a cluster."""

from __future__ import annotations

from typing import Annotated

import typer

from clients._exit import fail
from clients._options import Context, Output
from clients.render import write_data
from solver import ClusterModel, GangplanError, load_objects
from solver.errors import InputError

__all__ = ["dump_cmd", "kube_fake_cmd", "live_model", "scheduler_cmd"]

ClusterKubeconfig = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig", help="Kubeconfig file (default: in-cluster, else ~/.kube/config)."
    ),
]


def live_model(files: list[str], kubeconfig: str, context: str | None) -> ClusterModel:
    """The live cluster's objects plus the files' (a file's object replaces the cluster's
    of the same name), read as `-f` reads files; InputError when the cluster cannot be
    read."""
    from clients.scheduler.live import merged_sources, read_cluster

    objects, notes = read_cluster(kubeconfig, context)
    raws, replaced = merged_sources(objects, files)
    return load_objects(raws, (*notes, *replaced))


def dump_cmd(
    kubeconfig: ClusterKubeconfig = None,
    context: Context = None,
    output: Annotated[
        Output, typer.Option("-o", "--output", help="yaml or json (a v1 List).")
    ] = Output.yaml,
) -> None:
    """Write the cluster as gangplan reads it (every kind `gangplan scheduler` watches, one
    v1 List): attach it to a bug report, or replay it with `-f dump.yaml`. Read-only."""
    from clients.scheduler.live import cluster_list, read_cluster

    if output is Output.table:
        fail(InputError("-o table: a dump is data; use -o yaml or -o json"))
    try:
        objects, notes = read_cluster(kubeconfig, context)
    except GangplanError as err:
        fail(err)
        return
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    write_data(cluster_list(objects), output)


def scheduler_cmd(
    kubeconfig: ClusterKubeconfig = None,
    context: Context = None,
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
    preempt: Annotated[
        bool,
        typer.Option(
            "--preempt",
            help="A gang that does not fit may evict lower-priority pods (pods/eviction, "
            "PodDisruptionBudgets honoured); also on when the conf lists preempt/reclaim.",
        ),
    ] = False,
    http_port: Annotated[
        int, typer.Option("--http-port", min=0, help="/healthz, /readyz, /metrics (0: any).")
    ] = 10259,
    http_host: Annotated[
        str, typer.Option("--http-host", help="Address of the HTTP port (0.0.0.0 in a pod).")
    ] = "127.0.0.1",
    bind_workers: Annotated[
        int, typer.Option("--bind-workers", min=1, help="Binds in flight at once.")
    ] = 16,
    snapshot_id: Annotated[
        str, typer.Option("--snapshot-id", help="The snapshot's id on the service.")
    ] = "gangplan-scheduler",
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning.")] = "info",
    leader_elect: Annotated[
        bool,
        typer.Option(
            "--leader-elect",
            help="Of several replicas only the holder of a coordination.k8s.io Lease writes; "
            "the others keep their snapshot warm and take over when it stops.",
        ),
    ] = False,
    lease_duration: Annotated[
        float, typer.Option("--leader-elect-lease-duration", min=1, help="Seconds.")
    ] = 15.0,
    renew_deadline: Annotated[
        float, typer.Option("--leader-elect-renew-deadline", min=0.1, help="Seconds.")
    ] = 10.0,
    retry_period: Annotated[
        float, typer.Option("--leader-elect-retry-period", min=0.05, help="Seconds.")
    ] = 2.0,
    lease_namespace: Annotated[
        str | None,
        typer.Option(
            "--leader-elect-resource-namespace",
            help="The Lease's namespace (default: the pod's own, else default).",
        ),
    ] = None,
    lease_name: Annotated[
        str, typer.Option("--leader-elect-resource-name", help="The Lease's name.")
    ] = "gangplan-scheduler",
) -> None:
    """Run a Kubernetes scheduler for the pods whose schedulerName is one of yours."""
    from clients.scheduler.main import run

    status = run(
        kubeconfig=kubeconfig,
        context=context,
        scheduler_name=scheduler_name,
        server=server,
        config=config,
        config_map=config_map,
        engine=engine,
        time_limit=time_limit,
        workers=workers,
        seed=seed,
        dry_run=dry_run,
        preempt=preempt,
        http_port=http_port,
        http_host=http_host,
        bind_workers=bind_workers,
        snapshot_id=snapshot_id,
        log_level=log_level,
        lease=(
            (lease_namespace, lease_name, lease_duration, renew_deadline, retry_period)
            if leader_elect
            else None
        ),
    )
    if status:
        raise typer.Exit(status)


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
    from clients.kubefake.main import serve

    status = serve(files, port, kubeconfig)
    if status:
        raise typer.Exit(status)
