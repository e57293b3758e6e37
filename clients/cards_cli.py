"""`gangplan cards`: the GPU card types each node offers (Volcano capacity-card discovery)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from clients._exit import fail
from clients._options import Files, Output, OutputFormat
from clients.render import write_data
from solver import GangplanError, load_manifests
from solver.model import discover_cards

__all__ = ["cards_cmd"]


def cards_cmd(
    files: Files,
    output: OutputFormat = Output.table,
) -> None:
    """Card types per node and cluster totals (whole cards, MPS, MIG) from labels and allocatable."""
    try:
        model = load_manifests(*files)
    except GangplanError as err:
        fail(err)
    cards = discover_cards(model.nodes)
    if output is not Output.table:
        data = {"nodes": cards.per_node, "total": dict(sorted(cards.total.items()))}
        write_data(data, output)
        return
    table = Table(title="Card types")
    table.add_column("node")
    table.add_column("card type")
    table.add_column("count", justify="right")
    for node, found in sorted(cards.per_node.items()):
        for name, count in sorted(found.items()):
            table.add_row(node, name, str(count))
    for name, count in sorted(cards.total.items()):
        table.add_row("[bold]total[/bold]", name, f"[bold]{count}[/bold]")
    Console().print(table)
