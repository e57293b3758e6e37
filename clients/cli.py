"""The `gangplan` command line.

    gangplan schedule -f FILE... [--config CONF] [--engine auto|cpsat|greedy]
                      [--time-limit S] [--workers N] [--seed N] [-o json|yaml|table]
                      [--scheduler-name NAME]... [-n NAMESPACE]... [-A] [--server HOST:PORT]
                      [--kubeconfig F [--context C]]   (the live cluster, plus the files)
    gangplan why      -f FILE... (--gang NS/NAME | --pod NS/NAME) [--config CONF]
                      [--engine E] [--preempt] [--server HOST:PORT] [-o json|yaml|table]
    gangplan defrag   -f FILE... [--level KEY] [--count N | --max-pods K] [--max-gangs J]
                      [--shape RES=QTY]... [--protect-priority P] [--protect-namespace NS]...
                      [--protect-label K=V]... [--max-cost-per-domain C] [--engine E]
                      [--server HOST:PORT] [-o json|yaml|table]     (clients/defrag_cli.py)
    gangplan explain  -f FILE... [--config CONF] --pod NS/NAME [-o json|yaml|table]
                      [--kubeconfig F [--context C]]
    gangplan topology -f FILE... [-o json|yaml|table] [--nodes]
    gangplan config show [--config CONF] [-o json|yaml|table]
    gangplan expand   -f FILE... [-o json|yaml|table]
    gangplan queues validate|tree -f FILE... [-o json|yaml|table]
    gangplan cards    -f FILE... [-o json|yaml|table]
    gangplan plan     -f FILE... --catalog CAT [--cluster F...] [--trace CSV] [-o json|yaml|table]
                      [--plot PNG] | --sweep SWEEP.yaml [--executor process|ray|dask]
    gangplan health   [--server HOST:PORT] [--service NAME] [-o json|yaml|table]
    gangplan serve    [--port N] [--tls-cert F --tls-key F [--client-ca F]] [--token-file F]
                      [--workers N] [--grace S] [--max-snapshot-mb MB]
    gangplan scheduler [--kubeconfig F] [--scheduler-name NAME]... [--server HOST:PORT]
                      [--config CONF | --config-map NS/NAME[:KEY]] [--engine E] [--dry-run]
                      [--preempt] [--leader-elect ...] [--http-host H] [--http-port N]
                      [--bind-workers N]       (clients/scheduler/)
    gangplan kube-fake -f FILE... [--port N] [--kubeconfig OUT]  (clients/kubefake/)
    gangplan dump     [--kubeconfig F] [--context C] [-o yaml|json]   (the live cluster)
    gangplan --version

Every `-o` is the one option of `clients._options`: json and yaml carry the same data in
machine units (milli-CPU, bytes), table shows cores, GiB and GPU counts (`clients.render`).
`-f -` reads standard input; a directory reads its *.yaml, *.yml and *.json files.
Invalid input exits 2 with one message naming the file, document and field, and prints
nothing on standard output; a fault inside gangplan (a bug: please report it) exits 3.
Notes (skipped kinds, ignored plugins) go to standard error.
"""

from __future__ import annotations

import gc
import sys
from typing import Annotated

import typer
from rich.console import Console

from clients._exit import fail
from clients._options import Context, Files, Kubeconfig, LiveFiles, Output, OutputFormat
from clients.cards_cli import cards_cmd
from clients.config_cli import config_app
from clients.defrag_cli import defrag_cmd
from clients.expand_cli import expand_cmd
from clients.health_cli import health_cmd
from clients.plan_cli import plan_cmd
from clients.queues_cli import queues_app
from clients.render import explain_table, write_data
from clients.schedule_cli import (
    Config,
    SchedulerNames,
    model_of,
    notes,
    schedule_cmd,
    selection_of,
    why_cmd,
)
from clients.scheduler_cli import dump_cmd, kube_fake_cmd, scheduler_cmd
from gangplan import __version__
from server.main import run
from solver import (
    ClusterModel,
    GangplanError,
    explain,
    load_conf,
    load_manifests,
)
from solver.errors import InputError
from solver.views import (
    build_hypernode_tree,
    build_tree,
    hypernode_view,
    render_hypernode_tree,
    render_tree,
    topology_view,
)

__all__ = ["app", "main"]

app = typer.Typer(
    help="gangplan: placement optimizer for gang-scheduled AI and HPC jobs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stderr = Console(stderr=True, highlight=False)


def _version(shown: bool) -> None:
    if shown:
        sys.stdout.write(f"gangplan {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """gangplan: placement optimizer for gang-scheduled AI and HPC jobs."""
    # Everything imported so far (OR-Tools, numpy, pydantic's schemas) lives as long as the
    # process: frozen, a full collection (50-100 ms with them) never walks it again.
    gc.freeze()


@app.command("explain")
def explain_cmd(
    pod: Annotated[str, typer.Option("--pod", help="The pending pod, as namespace/name.")],
    files: LiveFiles = None,
    config: Config = None,
    output: OutputFormat = Output.json,
    scheduler_names: SchedulerNames = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Every node's verdict and scores for one pending pod (with --kubeconfig: in the live
    cluster, with the manifests added)."""
    try:
        conf = load_conf(config)
        selection = selection_of(scheduler_names, None, False)
        whole = model_of(files, kubeconfig, context)
        key = pod if "/" in pod else f"default/{pod}"
        left = next((p for p in whole.pods if p.key == key and p.pending), None)
        if left is not None and (why := selection.why_not(left)):
            raise InputError(f"pod {key!r} is left pending, not placed by gangplan: {why}")
        data = explain(selection.apply(whole), conf, key)
    except GangplanError as err:
        fail(err)
        return
    notes(tuple(data.get("notes", ())))
    if output is Output.table:
        explain_table(data, Console())
    else:
        write_data(data, output)


@app.command("serve")
def serve_cmd(
    host: Annotated[str | None, typer.Option("--host", help="Listen address.")] = None,
    port: Annotated[int | None, typer.Option("--port", help="gRPC port (0: any).")] = None,
    metrics_port: Annotated[
        int | None, typer.Option("--metrics-port", help="Prometheus /metrics port.")
    ] = None,
    tls_cert: Annotated[str | None, typer.Option("--tls-cert", help="Server cert (PEM).")] = None,
    tls_key: Annotated[str | None, typer.Option("--tls-key", help="Server key (PEM).")] = None,
    client_ca: Annotated[
        str | None, typer.Option("--client-ca", help="Require client certs from this CA.")
    ] = None,
    token_file: Annotated[
        str | None, typer.Option("--token-file", help="Require this bearer token (file).")
    ] = None,
    engine: Annotated[
        str | None, typer.Option("--engine", help="Engine when a request names none.")
    ] = None,
    config: Config = None,
    workers: Annotated[int | None, typer.Option("--workers", help="RPC threads.")] = None,
    grace: Annotated[
        float | None,
        typer.Option("--grace", min=0, help="SIGTERM: seconds accepted calls get (10)."),
    ] = None,
    max_snapshot_mb: Annotated[
        int | None,
        typer.Option(
            "--max-snapshot-mb",
            min=1,
            help="Memory for stored snapshots, MiB (8192); past it the least recently used go.",
        ),
    ] = None,
) -> None:
    """Run the gRPC service until SIGTERM; every flag also reads GANGPLAN_<FLAG>."""
    status = run(
        host=host,
        port=port,
        metrics_port=metrics_port,
        tls_cert=tls_cert,
        tls_key=tls_key,
        client_ca=client_ca,
        token_file=token_file,
        engine=engine,
        scheduler_conf=config,
        workers=workers,
        grace=grace,
        max_snapshot_mb=max_snapshot_mb,
    )
    if status:
        raise typer.Exit(status)


@app.command("topology")
def topology_cmd(
    files: Files,
    output: OutputFormat = Output.table,
    show_nodes: Annotated[bool, typer.Option("--nodes", help="List every node (table).")] = False,
) -> None:
    """The ClusterNetworkTopology tree with node counts (Koordinator's status.detailStatus),
    or the Volcano HyperNode tree when the input has HyperNodes."""
    try:
        model = load_manifests(*files)
        if model.topology is not None and model.topology.hypernodes:
            _hypernode_tree(model, output, show_nodes)
            return
        tree = build_tree(model.topology, model.nodes)
    except GangplanError as err:
        fail(err)
        return
    if model.topology is None:  # pragma: no cover - build_tree raised already
        fail(InputError("no ClusterNetworkTopology named default in the input"))
        return
    view = topology_view(tree, model.topology)
    if output is not Output.table:
        write_data(view, output)
        return
    sys.stdout.write(render_tree(tree, show_nodes=show_nodes) + "\n")
    if view["nodesOutOfTree"]:
        left = view["nodesOutOfTree"]
        sys.stdout.write(f"not in the tree (a topology label is missing): {', '.join(left)}\n")


def _hypernode_tree(model: ClusterModel, output: OutputFormat, show_nodes: bool) -> None:
    """`gangplan topology` over Volcano HyperNodes (and the Koordinator tree too, if any)."""
    assert model.topology is not None
    names = [n.name for n in model.nodes]
    tree = build_hypernode_tree(model.topology.hypernodes, model.nodes)
    view: dict[str, object] = {"hyperNodeTree": hypernode_view(tree, names)}
    koordinator = build_tree(model.topology, model.nodes) if model.topology.name else None
    if koordinator is not None:
        view["clusterNetworkTopology"] = topology_view(koordinator, model.topology)
    if output is not Output.table:
        write_data(view, output)
        return
    if koordinator is not None:
        sys.stdout.write(render_tree(koordinator, show_nodes=show_nodes) + "\n\n")
    sys.stdout.write(render_hypernode_tree(tree, names, show_nodes=show_nodes) + "\n")
    for note in tree.notes:
        sys.stdout.write(f"note: {note}\n")


app.command("schedule")(schedule_cmd)
app.command("why")(why_cmd)
app.command("defrag")(defrag_cmd)
app.add_typer(queues_app, name="queues")
app.add_typer(config_app, name="config")
app.command("plan")(plan_cmd)
app.command("cards")(cards_cmd)
app.command("expand")(expand_cmd)
app.command("health")(health_cmd)
app.command("scheduler")(scheduler_cmd)
app.command("kube-fake")(kube_fake_cmd)
app.command("dump")(dump_cmd)


def main() -> None:
    app()
